"""``calibrate`` end to end (calibration/calibrate.py, profile_text.py, cli/calibrate.py): a CSV of known tables
makes a profile that loads strictly, carries those tables and bounds; bad requests are one line, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualpath_plan import api as dp
from dualpath_plan.calibration import calibrate as cal
from dualpath_plan.calibration.measurements import write_csv
from dualpath_plan.cli import main
from dualpath_plan.model.profiles import catalog, load_file
from tests.calibration.test_fits import DENSE, GROUPED, a2a_rows, gemm_rows, grouped_rows, mla_rows

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def known_csv(tmp_path) -> Path:
    path = tmp_path / "known.csv"
    path.write_text(write_csv(tuple(gemm_rows() + grouped_rows() + mla_rows() + a2a_rows())))
    return path


def test_a_csv_of_known_tables_makes_a_profile_with_those_tables_that_loads_and_bounds(known_csv, tmp_path):
    result = dp.calibrate(known_csv, base="h100-dgx")
    out = tmp_path / "mine.toml"
    out.write_text(result.text)
    hw = load_file(out)
    assert {k: v for k, v in hw.gemm_dense_frac.items()} == DENSE and hw.gemm_grouped_frac == GROUPED
    assert hw.decode_attn_frac == pytest.approx(0.6, rel=1e-3) and hw.ep_nvlink_intercept_s == pytest.approx(42e-6)
    assert hw.snic_Bps == catalog().get("hardware", "h100-dgx").snic_Bps  # the base's other fields stay
    sc = dp.scenario("mine", profile_files=[out])
    assert dp.bottleneck(sc).bounds["dualpath"].turns_per_s > 0
    assert "dualpath-plan calibrate, gemm fp8 from known.csv" in dict(hw.sources)["gemm_dense_frac"]


def test_fitting_a_profile_onto_its_own_output_gives_the_same_bytes(known_csv, tmp_path):
    first = dp.calibrate(known_csv, base="h100-dgx").text
    (tmp_path / "again.toml").write_text(first)
    second = dp.calibrate(known_csv, base="again", profile_files=[tmp_path / "again.toml"]).text
    assert second.replace("again", "") == first.replace("again", "")


def test_ops_fit_only_their_tables_and_the_rest_keep_the_base(known_csv):
    result = dp.calibrate(known_csv, base="h100-dgx", ops=("a2a_ll",))
    assert set(result.fit.values) == {"ep_nvlink_GBps", "ep_nvlink_intercept_us", "ep_dispatch_us", "ep_combine_us", "ep_ll_intercept_us"}
    assert "gemm_dense_frac = " + "{" in result.text and '"16" = 0.05' not in result.text


@pytest.mark.slow
def test_the_cli_writes_the_profile_and_prints_the_fit(known_csv, tmp_path, capsys):
    out = tmp_path / "mine.toml"
    assert main(["calibrate", "--from", str(known_csv), "--base", "h100-dgx", "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["output"] == str(out) and load_file(out).gemm_dense_frac == DENSE
    assert {t["table"] for t in data["tables"]} >= {"gemm fp8", "mla_decode fp8 KV", "a2a_ll rdma"}
    assert main(["calibrate", "--from", str(known_csv), "--base", "h100-dgx"]) == 0
    assert "no file written" in capsys.readouterr().out


@pytest.mark.parametrize("argv, needle", [
    (["--base", "h100-dgx", "--ops", "gemm,conv"], "--ops 'gemm,conv': conv is not a table family; families: gemm, grouped_gemm"),
    (["--base", "h100-dgx", "--ops", "gemm,mla_decod"], "mla_decod (did you mean 'mla_decode'?) is not a table family"),
    (["--base", "nope"], "unknown hardware profile 'nope'"),
    ([], "needs --base NAME"),
    (["--base", "h100-dgx", "--system", "h200_sxm"], "--system h200_sxm: only with --from aiconfigurator"),
    (["--base", "h100-dgx", "--keep-implausible", "--drop-implausible"], "give at most one"),
    (["--base", "h100-dgx", "-o", "x.csv"], "the file name must end in .toml"),
])
def test_a_bad_request_is_one_line_and_writes_nothing(known_csv, tmp_path, capsys, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    code = main(["calibrate", "--from", str(known_csv), *argv, *([] if "-o" in argv else ["-o", "out.toml"])])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1
    assert set(tmp_path.iterdir()) == before


def test_a_bad_csv_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("op,dtype,shape,tokens,ep_size,path,context,latency_us\ngemm,fp8,4096x7168,64,1,-,0,12us\n")
    assert main(["calibrate", "--from", str(bad), "--base", "hopper", "-o", str(tmp_path / "out.toml")]) == 2
    assert "line 2: latency_us = '12us'" in capsys.readouterr().err and not (tmp_path / "out.toml").exists()


def test_the_shipped_example_calibrates():
    result = dp.calibrate(ROOT / "examples" / "calibration.csv", base="h100-dgx")
    assert {"gemm fp8", "gemm bf16", "grouped_gemm fp8", "mla_decode fp8 KV", "mla_prefill", "a2a_ll nvlink", "a2a_ll rdma"} <= {r.table for r in result.reports}
    assert dp.to_dict(result)["base"] == "h100-dgx"


def test_a_policy_and_families_are_checked():
    assert cal.check_policy(False, False) == "refuse" and cal.check_policy(True, False) == "keep"
    assert cal.check_families(("gemm",)) == ("gemm",)
