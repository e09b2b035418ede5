"""AIConfigurator's database as measurements (calibration/aiconfigurator.py); skipped without the 'calibrate' extra."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("aiconfigurator_core")

from dualpath_plan import api as dp  # noqa: E402
from dualpath_plan.calibration import aiconfigurator as aic  # noqa: E402
from dualpath_plan.cli import main  # noqa: E402
from dualpath_plan.model.errors import PlanError  # noqa: E402
from dualpath_plan.model.profiles import load_file  # noqa: E402


@pytest.fixture(scope="module")
def h200():
    return aic.load("h200_sxm", "sglang", None, 8)


def test_the_database_gives_every_family_and_says_which_table_and_version(h200):
    rows, sources = h200
    assert {r.op for r in rows} >= {"gemm", "grouped_gemm", "mla_decode", "mla_prefill", "a2a_ll_dispatch", "a2a_normal_combine"}
    assert {(s.table, s.what) for s in sources} >= {("gemm_perf.parquet", "gemm fp8"), ("wideep_deepep_ll_perf.parquet", "a2a_ll rdma")}
    rdma = [r for r in rows if r.op == "a2a_ll_dispatch" and r.path == "rdma"]
    assert {r.ep_size for r in rdma} == {16, 32, 64}  # 2, 4 and 8 nodes of 8 GPUs
    assert all(r.where.startswith("aiconfigurator-core ") for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("families", [("mla_decode",), ("grouped_gemm", "a2a_ll")])
def test_asking_for_some_families_reads_their_rows_and_sources_and_no_other(h200, families):
    from dualpath_plan.calibration.fits import family_of

    rows, sources = aic.load("h200_sxm", "sglang", None, 8, families)
    assert rows == tuple(r for r in h200[0] if family_of(r.op) in families)
    assert sources == tuple(s for s in h200[1] if s.what.split()[0] in families)


def test_asking_for_a_family_the_system_lacks_names_the_families_it_has():
    with pytest.raises(PlanError, match=r"^no measurement of a2a_ll to fit; a100_sxm on sglang has tables of gemm, grouped_gemm$") as info:
        aic.load("a100_sxm", "sglang", None, 8, ("a2a_ll",))
    assert info.value.exit_code == 2


@pytest.mark.slow
def test_the_database_makes_a_profile_that_loads_strictly_and_bounds(tmp_path):
    result = dp.calibrate("aiconfigurator", system="h200_sxm", drop_implausible=True)
    out = tmp_path / "h200-fit.toml"
    out.write_text(result.text)
    hw = load_file(out)
    assert hw.ep_nvlink_Bps > 0 and set(hw.ep_dispatch_s) == {"16", "32", "64"}
    assert dp.bottleneck(dp.scenario("h200-fit", profile_files=[out])).bounds["dualpath"].turns_per_s > 0
    assert "aiconfigurator-core" in dict(hw.sources)["gemm_dense_frac"]


@pytest.mark.slow
def test_a_measurement_faster_than_the_datasheet_is_refused_by_default():
    with pytest.raises(PlanError, match="wideep_.*_moe_perf.parquet row .*beats the H200 SXM's datasheet"):
        dp.calibrate("aiconfigurator", system="h200_sxm", ops=("grouped_gemm",))


@pytest.mark.parametrize("argv, needle", [
    (["--system", "h999"], "--system 'h999' is not in aiconfigurator-core"),
    (["--system", "h200_sxm", "--backend", "foo"], "backends with data: sglang, trtllm, vllm"),
    (["--system", "h200_sxm", "--version", "9.9"], "versions: 0.5.16, 0.5.14"),
    ([], "needs --system; systems: a100_pcie"),
    (["--system", "l4"], "has no shipped profile to start from; give --base NAME"),
])
@pytest.mark.slow
def test_an_unknown_system_backend_or_version_lists_the_ones_there_are(capsys, argv, needle):
    assert main(["calibrate", "--from", "aiconfigurator", *argv]) == 2
    assert needle in capsys.readouterr().err


@pytest.mark.slow
def test_a_pinned_version_reads_only_that_version():
    rows, sources = aic.load("h100_sxm", "sglang", "0.5.6.post2", 8)
    assert {s.version for s in sources} == {"0.5.6.post2"} and rows


def test_the_data_root_is_the_installed_package():
    assert (aic.data_root() / "h200_sxm").is_dir() and Path(aic.data_root()).name == "data"
