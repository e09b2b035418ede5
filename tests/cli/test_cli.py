"""The command line as a translator (cli/): arguments in, library called, units out, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dualpath_plan.cli import main

HOPPER = Path(__file__).resolve().parents[2] / "hardware_profiles" / "hopper.toml"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_bottleneck_json_schema_on_the_papers_node(capsys):
    code, out, err = run(capsys, "bottleneck", "--profile", "hopper", "--accounting", "paper", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["symbols"] == {"P": 2, "D": 4, "g": 8, "B_Bps": 5.0e10, "s": 1.0, "M_Bps": 5.0e11}
    assert data["pd_range"]["lower"] == pytest.approx(1 / 7) and data["pd_range"]["upper"] == pytest.approx(3.5)
    assert data["pd_range"]["inside"] is True
    assert set(data["pd_range"]["limits"]) == {"pe_cnic_write", "de_cnic_read", "de_cnic_write", "de_dram"}
    basic, dual = data["modes"]["basic"], data["modes"]["dualpath"]
    assert basic["kv_Bps"] == pytest.approx(1.0e11) and basic["binding"] == ["pe_snic"]
    assert dual["kv_Bps"] == pytest.approx(3.0e11) and dual["de_read_fraction"] == pytest.approx(2 / 3)
    assert basic["utilization"]["pe_snic"] == pytest.approx(1.0)


def test_bottleneck_table_has_units(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--accounting", "paper")
    assert code == 0
    assert "300 GB/s" in out and "100 GB/s" in out and "66.7 %" in out and "0.1429 <= P/D <= 3.5" in out


def test_set_changes_one_field_for_a_what_if(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--accounting", "paper", "--set", "snic_Gbps=200", "--json")
    assert code == 0 and json.loads(out)["modes"]["basic"]["kv_Bps"] == pytest.approx(0.5e11)


def test_profile_file_then_profile_name(capsys, tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text(HOPPER.read_text().replace("dram_GBps = 500", "dram_GBps = 400", 1))
    code, out, _ = run(capsys, "bottleneck", "--profile-file", str(mine), "--profile", "mine", "--accounting", "paper", "--json")
    assert code == 0 and json.loads(out)["pd_range"]["upper"] == pytest.approx(2.5)


@pytest.mark.parametrize(
    "argv,code,needle",
    [
        (["bottleneck", "--profile", "nope"], 2, "known hardware profiles: ampere"),
        (["bottleneck"], 2, "--profile is required"),
        (["bottleneck", "--profile", "hopper", "-P", "0"], 2, "-P = 0 nodes"),
        (["bottleneck", "--profile", "hopper", "--set", "snic_Gbps=0"], 2, "snic_Gbps = 0 Gb/s"),
        (["bottleneck", "--profile", "hopper", "--set", "attn_frac=2"], 2, "attn_frac = 2 (a fraction of 1) is not allowed; must be a finite number >= 0.001 and <= 1"),
        (["bottleneck", "--profile", "hopper", "--set", "cnic_Gbps=50"], 1, "eq. (1): s = SNIC / CNIC <= g/2 = 4"),
        (["bottleneck", "--profile", "hopper", "--set", "snic_Gbps=2000"], 1, "snic_Gbps = 2000 Gb/s is not allowed with cnic_Gbps = 400 Gb/s and 8 GPUs; must be <= 1600 Gb/s"),
        (["bottleneck", "--profile", "hopper", "--set", "snic_Gbps=1e308"], 2, "snic_Gbps = 1e+308 Gb/s is not allowed"),
        (["bottleneck", "--profile", "hopper", "--set", "pe.indexer_cache=false"], 2, "'indexer_cache' is a model key, the same for both sides"),
        (["bottleneck", "--profile", "hopper", "--set", "de.foo=1"], 2, "--set de.foo=1: unknown key 'foo'"),
        (["bottleneck", "--profile", "hopper", "--set", "kv_layouts=5"], 2, "kv_layouts is a table field of model profiles, which --set does not change"),
        (["sweep", "--profile", "hopper", "--gpus", "100000000"], 2, "--gpus = 100000000 GPUs is not allowed; must be a whole number >= 1 and <= 4718592"),
        (["sweep", "--profile", "hopper", "--gpus", "4000000"], 2, "a sweep takes at most 8192"),
        (["sweep", "--profile", "hopper", "--plot", "out.txt"], 2, "--plot out.txt: the file name must end in .png"),
        (["bottleneck", "--profile", "hopper", "--set", "warp=9"], 2, "unknown key"),
        (["bottleneck", "--profile", "hopper", "--accounting", "fast"], 2, "--accounting 'fast'"),
        (["bottleneck", "--profile", "hopper", "-P", "two"], 2, "'two'"),
        (["bottleneck", "--profile", "hopper", "-P", "2.5"], 2, "-P = '2.5' is not allowed; must be a whole number (NODES)"),
        (["bottleneck", "--profile", "hopper", "-P", "3", "-P", "2.5"], 2, "-P = '2.5' is not allowed"),
        (["simulate", "--online", "--aps", "x"], 2, "--aps = 'x' is not allowed; must be a number (AGENTS/S)"),
        (["bottleneck", "--profile", "hopper", "--model", "gpt-5"], 2, "known model profiles"),
        (["profiles", "show", "nothing"], 2, "unknown profile 'nothing'"),
        (["formulas", "--accounting", "x"], 2, "--accounting 'x'"),
        (["bottleneck", "--profile", "hopper", "--set", "snic_Gbps=400", "--set", "snic_Gbps=800"], 2, "--set snic_Gbps is given more than once"),
        (["plan", "--profile", "hopper", "--nodes", "6", "--node-cost", "hopper=1", "--node-cost", "hopper=2"], 2, "--node-cost hopper is given more than once"),
        (["bottleneck", "--profile", "h200", "-P", "100000", "-D", "2"], 2, "-P = 100000 nodes is not allowed; must be a whole number >= 1 and <= 8191"),
        (["bottleneck", "--profile", "h200", "-P", "8000", "-D", "193"], 2, "-P + -D = 8193 nodes is not allowed; a cluster has at most 8192"),
        (["plan", "--profile", "hopper", "--nodes", "1000000000"], 2, "--nodes = 1000000000 nodes is not allowed; must be a whole number >= 1 and <= 4097"),
        (["plan", "--profile", "hopper", "--gpus", "40000"], 1, "plan searches budgets of at most 4,096 nodes per side"),
        (["plan", "--profile", "blackwell", "--power-kw", "171600"], 1, "budget 171,600 kW (--power-kw is in kW: 171.6 MW) allows up to"),
        (["plan", "--profile", "hopper", "--nodes", "-5"], 2, "<= 4097 (plan searches at most 4,096 nodes per side, which 4,097 nodes"),
        (["sweep", "--profile", "hopper", "--csv", "-"], 2, "--csv -: standard output is not a file name here"),
        (["sweep", "--profile", "hopper", "--csv", "same.png", "--plot", "same.png"], 2, "--csv and --plot are both same.png; give two files"),
        (["bottleneck", "--profile", ":smile:"], 2, "unknown hardware profile ':smile:'"),  # user text, not an emoji code
        (["simulate", "--profile", "hopper", "--policy", ""], 2, "--policy '' is not allowed; must be one of basic"),  # it ran dualpath
    ],
)
def test_bad_input_is_one_line_with_exit_code(capsys, argv, code, needle):
    got, out, err = run(capsys, *argv)
    assert got == code
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


def test_malformed_profile_file_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('gpus_per_node = "eight"\ncnic_Gbps = -1\n')
    got, _, err = run(capsys, "bottleneck", "--profile-file", str(bad), "--profile", "bad")
    assert got == 2 and "bad.toml" in err and err.count("\n") == 1


@pytest.mark.slow
def test_formulas_prints_the_range_and_the_eq1_note(capsys):
    code, out, _ = run(capsys, "formulas", "--accounting", "paper")
    assert code == 0 and "s/(g - s) <= P/D" in out and "s <= g/2" in out


@pytest.mark.slow
def test_every_command_defaults_to_exact_accounting(capsys):
    """One default everywhere: formulas said paper while every other command said exact."""
    import inspect

    from dualpath_plan.cli.app import app
    from dualpath_plan.cli.options import command_options

    commands = {o.command for o in command_options(app) if o.name == "--accounting"}
    callbacks = {c.callback.__name__: c.callback for c in app.registered_commands}
    assert commands and {inspect.signature(callbacks[c]).parameters["accounting"].default for c in commands} == {"exact"}
    code, out, _ = run(capsys, "formulas", "--json")
    assert code == 0 and json.loads(out)["accounting"] == "exact"


@pytest.mark.slow
def test_formulas_latex_and_json(capsys):
    code, out, _ = run(capsys, "formulas", "--latex", "--json")
    data = json.loads(out)
    assert code == 0 and data["pd_bounds"]["pe_cnic_write"]["bound"] == r"\frac{s}{g - s}"


def test_profiles_list_and_show(capsys):
    code, out, _ = run(capsys, "profiles", "list", "--json")
    assert code == 0 and "hopper" in json.loads(out)["hardware"]
    code, out, _ = run(capsys, "profiles", "show", "hopper", "--json")
    data = json.loads(out)
    assert code == 0 and data["values"]["snic_Gbps"] == 400.0 and "3FS" in data["sources"]["snic_Gbps"]


@pytest.mark.slow
def test_bottleneck_does_not_import_sympy_nor_the_calibration_database():
    code = (
        "import sys; from dualpath_plan.cli import main; "
        "rc = main(['bottleneck', '--profile', 'hopper', '--json']); "
        "assert rc == 0; heavy = [m for m in ('sympy', 'pandas', 'pyarrow', 'aiconfigurator_core') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_module_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "dualpath_plan", "bottleneck", "--profile", "hopper", "--json"], capture_output=True, text=True)
    assert result.returncode == 0 and json.loads(result.stdout)["profile"] == "hopper"


def test_the_one_formatter_prints_units():
    from dualpath_plan.model.fmt import fmt

    assert fmt(5e10, "B/s") == "50 GB/s"
    assert fmt(0.6667, "%") == "66.7 %"
    assert fmt(1.873, "x") == "1.87x"
    assert fmt(0.0123, "s") == "12.3 ms"
    assert fmt(2710301.15, "USD") == "2,710,301 USD"
    assert fmt(None, "B/s") == "n/a"


@pytest.mark.parametrize(("profile", "gpus", "path"), [("hopper", 16, "rdma"), ("h200", 8, "nvlink")])
def test_bottleneck_names_the_prefill_instance_its_rate_is_for(capsys, profile, gpus, path):
    code, out, _ = run(capsys, "bottleneck", "--profile", profile, "--json")
    limits = json.loads(out)["limits"]
    assert code == 0 and (limits["prefill_instance_gpus"], limits["prefill_all_to_all_path"]) == (gpus, path)
    code, out, _ = run(capsys, "bottleneck", "--profile", profile)
    assert code == 0 and f"instances of EP{gpus} over {'RDMA' if path == 'rdma' else 'NVLink'}" in " ".join(out.split())


@pytest.mark.parametrize(("args", "needle"), [
    (["-P", "4", "-D", "4", "--prefill-instance-nodes", "1"], "--prefill-instance-nodes = 1 nodes is not allowed for ds-v3.2 on hopper"),
    (["--prefill-instance-nodes", "4"], "--prefill-instance-nodes = 4 nodes is not allowed; an instance spans at most P = 2 prefill nodes"),
    (["--prefill-instance-nodes", "0"], "--prefill-instance-nodes = 0 nodes is not allowed"),
])
def test_a_prefill_instance_the_cluster_cannot_form_is_one_line(capsys, args, needle):
    code, out, err = run(capsys, "bottleneck", "--profile", "hopper", *args)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("P", "noted"), [(5, True), (4, False), (2, False)])
def test_bottleneck_notes_prefill_nodes_beyond_whole_instances(capsys, P, noted):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "-P", str(P), "-D", "6")
    text = " ".join(out.split())
    assert code == 0 and (f"P = {P} prefill nodes make {P // 2} whole prefill instance(s) of 2 nodes; the other 1 node(s)" in text) == noted


def test_a_chosen_prefill_instance_reaches_bottleneck(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "-P", "8", "-D", "8", "--prefill-instance-nodes", "8", "--json")
    assert code == 0 and json.loads(out)["limits"]["prefill_instance_gpus"] == 64
    code, out, _ = run(capsys, "plan", "--profile", "hopper", "--profile", "h200", "--nodes", "16", "--json")
    assert code == 0 and json.loads(out)["prefill_instance_gpus"] == {"hopper": 16, "h200": 8}
    code, out, _ = run(capsys, "plan", "--profile", "hopper", "--nodes", "16", "--prefill-instance-nodes", "4", "--json")
    assert code == 0 and json.loads(out)["prefill_instance_gpus"] == {"hopper": 32}


def test_a_cluster_that_cannot_hold_the_model_says_why(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "-P", "1", "-D", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["modes"]["dualpath"]["turns_per_s"] == 0.0 and data["limits"]["prefill_flops_per_gpu_s"] == 0.0
    from dualpath_plan.model.scenario import build_scenario
    from dualpath_plan.planning.analysis import analyze
    from dualpath_plan.report.bounds import verdict_lines

    verdict = verdict_lines(analyze(build_scenario("hopper", P=1, D=2)))[0]
    assert "cannot serve ds-v3.2: its weights do not fit in 1 prefill node(s) (needs >= 2)" in verdict


def test_a_split_that_serves_nothing_has_no_shadow_price(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the checks read cells whole
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "-P", "1", "-D", "4", "--json")
    data = json.loads(out)
    modes = data["modes"]
    assert code == 0 and all(m["shadow_prices"] == {} and m["binding_at_bound"] == [] for m in modes.values())
    assert data["serves_nothing_because"] == ["prefill_weights_do_not_fit"]
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "-P", "1", "-D", "4")
    assert "Shadow prices: none; no added unit of a resource helps a split that serves nothing" in " ".join(out.split())
    assert "per TFLOP/s added" not in out and "prefill none (prefill weights do not fit)" in " ".join(out.split())


def test_profile_files_are_checked_whole_even_when_not_selected(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('gpus_per_node = "eight"\n')
    code, _, err = run(capsys, "bottleneck", "--profile-file", str(bad), "--profile", "hopper")
    assert code == 2 and "gpus_per_node = 'eight'" in err


def test_missing_keys_are_listed_together(capsys, tmp_path):
    bad = tmp_path / "thin.toml"
    bad.write_text("gpus_per_node = 8\n")
    code, _, err = run(capsys, "bottleneck", "--profile-file", str(bad), "--profile", "thin")
    assert code == 2 and "missing required keys: description (str), gpu (str), cnic_Gbps (Gbps)" in err


def test_decode_instance_larger_than_the_decode_side_is_refused(capsys):
    code, _, err = run(capsys, "bottleneck", "--profile", "hopper", "--decode-instance-nodes", "5")
    assert code == 2 and "at most D = 4" in err


def test_sweep_checks_every_output_path_before_writing_any(capsys, tmp_path):
    csv_path = tmp_path / "points.csv"
    code, _, err = run(capsys, "sweep", "--profile", "hopper", "--csv", str(csv_path), "--plot", str(tmp_path / "no" / "p.png"))
    assert code == 2 and "does not exist" in err and not csv_path.exists()


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("dualpath-plan ") and out.strip().split()[-1][0].isdigit()


@pytest.mark.parametrize(("argv", "needle"), [
    (["bottleneck", "--profile", "hopper", "--set", "snic_Gbps=400Gb/s"], "snic_Gbps = '400Gb/s' is not allowed; must be a finite number >= 1 and <= 102400 (1 Gb/s to 100 Tb/s"),
    (["plan", "--profile", "hopper", "--nodes", "1"], "a budget of 1 node cannot buy"),
    (["plan", "--profile", "hopper", "--budget-usd", "-1"], "--budget-usd = -1 USD is not allowed"),
    (["sweep", "--profile", "hopper", "--gpus", "0"], "--gpus = 0 GPUs is not allowed"),
])
def test_error_wording_names_units_as_people_write_them(capsys, argv, needle):
    assert main(argv) in (1, 2) and needle in capsys.readouterr().err


@pytest.mark.slow
def test_a_side_key_wins_over_the_plain_key_in_either_order(capsys):
    def basic(*sets):
        assert main(["bottleneck", "--profile", "hopper", *sets, "--json"]) == 0
        return json.loads(capsys.readouterr().out)["modes"]["basic"]["turns_per_s"]

    plain_first = basic("--set", "snic_Gbps=800", "--set", "pe.snic_Gbps=200")
    assert plain_first == basic("--set", "pe.snic_Gbps=200", "--set", "snic_Gbps=800") == basic("--set", "pe.snic_Gbps=200")


@pytest.mark.parametrize(("setting", "needle"), [
    ("active_params=1e13", "active_params = 10000000000000 params is not allowed; must be <= total_params"),
    ("turns=0.5", "turns = 0.5 is not allowed; must be a finite number >= 1"),
    ("context_tokens=99999", "context_tokens = 99999 tokens is not allowed; must be <= max_len_tokens = 32768"),
    ("bf16_dense_TFLOPS=5000", "bf16_dense_TFLOPS = 5000 TFLOP/s is not allowed; must be <= fp8_dense_TFLOPS"),
])
def test_fields_that_contradict_each_other_are_refused(capsys, setting, needle):
    code = main(["bottleneck", "--profile", "hopper", "--workload", "agentic-32k", "--set", setting])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err


def _run_module(*argv: str, stdout=subprocess.PIPE, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dualpath_plan", *argv], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env=env, timeout=300)


@pytest.mark.parametrize("argv", [("bottleneck", "--profile", "hopper"), ("bottleneck", "--profile", "hopper", "--json"), ("formulas",),
                                  ("--help",), ("--version",), ()])
@pytest.mark.slow
def test_a_closed_stdout_pipe_ends_quietly_with_the_sigpipe_status(argv):
    """``dualpath-plan ... | head -1``: no traceback, no message, SIGPIPE's status (a shell's 141: killed by the signal,
    or 141 returned where the closed pipe was caught), tables and JSON alike."""
    import os
    import signal

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte
    try:
        done = _run_module(*argv, stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode in (-signal.SIGPIPE, 141) and done.stderr == ""


@pytest.mark.slow
def test_a_reader_leaving_in_the_middle_of_a_large_output_ends_the_run_with_the_sigpipe_status():
    """A reader that reads a little and goes (``| head -1``) while megabytes are still to come: Python's short write
    into the closed pipe raised nothing and the run ended 0; SIGPIPE's default action ends it as ``yes`` ends."""
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "dualpath_plan", "sweep", "--gpus", "384", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # 1.1 MB of JSON: far past a pipe's buffer
    proc.stdout.read(10)
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGPIPE and err == b""


@pytest.mark.parametrize("columns", ["0", "1"])
@pytest.mark.slow
def test_a_zero_or_one_column_terminal_gets_whole_error_lines_and_tables_laid_out_at_the_floor(columns):
    import os

    from dualpath_plan.cli.app import MIN_WIDTH

    env = {**os.environ, "COLUMNS": columns}
    bad = _run_module("bottleneck", "--profile", "nope", env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("error: unknown hardware profile 'nope'") and "mi300x" in bad.stderr
    good = _run_module("bottleneck", "--profile", "hopper", env=env)
    lines = good.stdout.splitlines()
    assert good.returncode == 0 and any(line.startswith("Verdict: with DualPath 2P4D") for line in lines)
    assert MIN_WIDTH - 10 <= max(map(len, lines))  # laid out for at least the floor, not cut to a column or two


def test_the_console_width_is_the_terminals_with_a_floor(monkeypatch):
    from dualpath_plan.cli.app import MIN_WIDTH, console_width

    monkeypatch.setenv("COLUMNS", "1")
    assert console_width() == MIN_WIDTH
    monkeypatch.setenv("COLUMNS", "200")
    assert console_width() == 200


@pytest.mark.parametrize("value, needle", [
    ("1" + "0" * 309, "a value of 310 characters; at most 200"),  # an integer that overflowed its float
    ("9" * 41, "--set snic_Gbps: a number of more than 40 digits"),
    ("[" * 40 + "]" * 40, "--set snic_Gbps: nested more than 16 deep"),
])
def test_set_values_that_broke_the_parsers_are_one_line(capsys, value, needle):
    got, out, err = run(capsys, "bottleneck", "--profile", "hopper", "--set", f"snic_Gbps={value}")
    assert (got, out) == (2, "") and needle in err and err.count("\n") == 1


@pytest.mark.parametrize("text, needle", [
    ("kind = 'hardware'\nx = " + "[" * 2000 + "]" * 2000 + "\n", "line 2: nested more than 16 deep"),
    ("kind = 'hardware'\nx = " + "9" * 5000 + "\n", "line 2: a number of more than 40 digits"),
])
def test_profile_files_that_broke_the_parser_are_one_line_even_on_the_search_path(capsys, tmp_path, monkeypatch, text, needle):
    """One such file in a DUALPATH_PLAN_PROFILES directory broke every command with a traceback."""
    (tmp_path / "bad.toml").write_text(text)
    monkeypatch.setenv("DUALPATH_PLAN_PROFILES", str(tmp_path))
    got, out, err = run(capsys, "bottleneck", "--profile", "hopper")
    assert (got, out) == (2, "") and "bad.toml" in err and needle in err and err.count("\n") == 1


def test_a_fifo_as_profile_file_or_trace_is_refused_up_front(capsys, tmp_path):
    import os

    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # reading it blocked for ever
    got, _, err = run(capsys, "bottleneck", "--profile-file", str(fifo), "--profile", "hopper")
    assert got == 2 and "fifo.toml: is not a regular file" in err and err.count("\n") == 1
    trace = tmp_path / "fifo.jsonl"
    os.mkfifo(trace)
    got, _, err = run(capsys, "simulate", "--profile", "hopper", "-P", "2", "-D", "4", "--trace", str(trace))
    assert got == 2 and "fifo.jsonl: is not a regular file" in err and err.count("\n") == 1


def test_a_trace_line_nested_2000_deep_is_one_line_naming_it(capsys, tmp_path):
    trace = tmp_path / "deep.jsonl"
    trace.write_text("[[100, 10]]\n" + "[" * 2000 + "]" * 2000 + "\n")
    got, _, err = run(capsys, "simulate", "--profile", "hopper", "-P", "2", "-D", "4", "--trace", str(trace))
    assert got == 2 and "line 2" in err and "nested too deep" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, needle", [
    (["bottleneck", "--profile", "hopper", "--set", "snic_efficiency_frac=5e-324"], "snic_efficiency_frac = 5e-324 (a fraction of 1) is not allowed"),
    (["bottleneck", "--profile", "hopper", "--set", "weight_bytes_per_param=1e300"], "weight_bytes_per_param = 1e+300 bytes is not allowed"),
    (["plan", "--profile", "hopper", "--gpus", "128", "--set", "dram_efficiency_frac=5e-324"], "dram_efficiency_frac = 5e-324"),
    (["plan", "--profile", "hopper", "--nodes", "16", "--set", "de.snic_Gbps=5e-324"], "snic_Gbps = 5e-324 Gb/s is not allowed"),
    (["simulate", "--profile", "hopper", "--agents", "4", "--set", "max_len_tokens=2147483648"], "max_len_tokens = 2147483648 tokens"),
    (["plan", "--profile", "hopper", "--target-turns-per-s", "100", "--set", "price_per_node_usd=1e30"], "price_per_node_usd = 1e+30 USD"),
])
def test_the_range_reproducers_are_refused_in_one_line_before_any_arithmetic(capsys, argv, needle):
    """Each once printed a traceback (IndexError, int of NaN, TypeError, ZeroDivisionError), ran for minutes, or
    answered 'not reachable'; now the range of the field refuses it (RANGES in model/profiles.py)."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1


@pytest.mark.slow
def test_a_reader_leaving_while_a_csv_is_copied_into_stdout_leaves_no_temporary_file(tmp_path):
    """``sweep --csv /dev/stdout | head -1``: the file is built under TMPDIR and copied; the copy meets the closed pipe,
    the temporary file goes, and the run ends quietly (SIGPIPE is ignored while a temporary file exists)."""
    import os
    import signal

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "dualpath_plan", "sweep", "--gpus", "384", "--csv", "/dev/stdout"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.read(10)
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode in (141, -signal.SIGPIPE) and err == b"" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [[], ["profiles"]])
def test_a_missing_command_prints_the_help_and_says_why_on_stderr(capsys, argv):
    """Exit 2 with an empty stderr before: a script saw a failure and no reason."""
    got, out, err = run(capsys, *argv)
    assert got == 2 and "Usage:" in out and err == "error: give a command (the help above lists them)\n"


def test_the_pd_range_json_says_which_end_each_limit_bounds(capsys):
    """pd_range.limits mixed the lower and upper ends' limits without saying which is which."""
    got, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--json")
    rng = json.loads(out)["pd_range"]
    assert got == 0 and rng["limits"] == rng["lower_limits"] | rng["upper_limits"]
    assert max(rng["lower_limits"].values()) == rng["lower"] and min(rng["upper_limits"].values()) == rng["upper"]
    assert set(rng["lower_by"]) <= set(rng["lower_limits"]) and set(rng["upper_by"]) <= set(rng["upper_limits"])


@pytest.mark.slow
def test_mtp_changes_the_decode_step_of_a_model_with_an_mtp_module_and_is_refused_for_one_without(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--model", "ds-v3", "--json")
    base = json.loads(out)["step_time"]["decode"]
    code2, out2, _ = run(capsys, "bottleneck", "--profile", "hopper", "--model", "ds-v3", "--mtp", "1", "--json")
    with_mtp = json.loads(out2)["step_time"]["decode"]
    assert code == code2 == 0 and with_mtp["work_s"] != base["work_s"]
    assert set(with_mtp["set_by"]) == {"attention", "dense_gemm", "expert_gemm"}
    code, _, err = run(capsys, "bottleneck", "--profile", "hopper", "--model", "qwen3-32b", "--mtp", "1")
    assert code == 2 and "ships no multi-token-prediction module" in err


def test_bottleneck_plans_the_storage_nodes_behind_the_snics(capsys):
    code, out, err = run(capsys, "bottleneck", "--profile", "hopper", "-P", "48", "-D", "96", "--storage", "3fs", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["storage_nodes"] == data["storage"]["nodes_needed"]["storage_read"] and data["storage_binding"] is False
    assert 150 <= data["storage_nodes"] <= 200  # 144 x 400 Gb/s of SNICs over 3FS nodes of 40.3 GB/s: 179
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--json")
    assert json.loads(out)["storage_nodes"] is None


def test_bottleneck_with_too_few_storage_nodes_says_they_bind(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--storage", "3fs", "--storage-nodes", "4")
    assert code == 0 and "Storage: 4 3fs storage nodes bind the DualPath bound" in " ".join(out.split())
    data = json.loads(run(capsys, "bottleneck", "--profile", "hopper", "--storage", "3fs", "--storage-nodes", "4", "--json")[1])
    assert data["storage_binding"] is True and "storage_read" in data["modes"]["dualpath"]["binding_at_bound"]


@pytest.mark.parametrize("args,needle", [
    (("--storage", "3f"), "unknown storage profile '3f' (did you mean '3fs'?)"),
    (("--storage", "3fs", "--storage-nodes", "0"), "--storage-nodes = 0 storage nodes is not allowed"),
    (("--storage-nodes", "4"), "--storage-nodes = 4 is not allowed without --storage"),
    (("--storage", "3fs", "--storage-retention-s", "-1"), "--storage-retention-s = -1 s is not allowed"),
    (("--set", "replicas=2"), "'replicas' is a storage profile key, and no --storage is given"),
])
def test_bad_storage_input_is_one_line(capsys, args, needle):
    code, out, err = run(capsys, "bottleneck", "--profile", "hopper", *args)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1


def test_bottleneck_reports_power_and_energy_where_the_profile_gives_power(capsys):
    data = json.loads(run(capsys, "bottleneck", "--profile", "blackwell", "--json")[1])
    dual = data["modes"]["dualpath"]["turns_per_s"]
    assert data["power_kw"] == pytest.approx(6 * 14.3) and data["joules_per_turn"] == pytest.approx(6 * 14_300 / dual)
    assert data["joules_per_output_token"] == pytest.approx(data["joules_per_turn"] / data["limits"]["gen_tokens_per_turn"])
    h20 = json.loads(run(capsys, "bottleneck", "--profile", "h20", "--json")[1])
    assert h20["power_kw"] is None and h20["power_unknown_for"] == ["h20"]
    text = " ".join(run(capsys, "bottleneck", "--profile", "blackwell")[1].split())
    assert "Power: at most 85.8 kW at full load" in text


def test_sweep_rows_carry_power_and_joules_per_turn(capsys, tmp_path):
    data = json.loads(run(capsys, "sweep", "--profile", "blackwell", "--gpus", "64", "--json")[1])
    best = data["best"]["blackwell"]["dualpath"]
    assert best["power_kw"] == pytest.approx((best["P"] + best["D"]) * 14.3)
    assert best["joules_per_turn"] == pytest.approx(best["power_kw"] * 1e3 / best["turns_per_s"])


def test_sweep_takes_the_storage_cluster_as_an_axis(capsys, tmp_path):
    code, out, err = run(capsys, "sweep", "--profile", "hopper", "--nodes", "144", "--storage", "3fs", "--storage-nodes", "60,180", "--json")
    assert code == 0 and err == ""
    groups = json.loads(out)["groups"]
    assert [g["storage_nodes"] for g in groups] == [60, 180]
    low, high = (g["picks"]["dualpath"] for g in groups)
    assert "storage_read" in low["binding"] and high["turns_per_s"] > low["turns_per_s"] and low["storage_nodes"] == 60


def test_plan_with_priced_nodes_and_unpriced_storage_says_what_to_price(capsys):
    code, out, err = run(capsys, "plan", "--profile", "blackwell", "--nodes", "12", "--storage", "3fs")
    assert code == 0 and err == ""
    assert "storage profile 3fs has no rent; give --set storage_node_rent_per_hour_usd=USD/h" in " ".join(out.split())


def test_sweep_table_costs_a_pick_with_its_storage_nodes(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one line per row: the cells unfolded
    code, out, _ = run(capsys, "sweep", "--profile", "blackwell", "--budget-usd-per-hour", "3000", "--storage", "3fs", "--storage-nodes", "40",
                       "--set", "storage_node_rent_per_hour_usd=10")
    text = " ".join(out.split())
    assert code == 0 and "+40 storage" in text and "2,945.60" in text  # 37 nodes at 68.80 USD/h plus 40 storage nodes at 10


def test_bottleneck_says_the_compute_nodes_power_when_only_the_storage_lacks_one(capsys):
    out = " ".join(run(capsys, "bottleneck", "--profile", "blackwell", "--storage", "3fs")[1].split())
    assert "Power: the compute nodes draw at most 85.8 kW at full load; storage profile 3fs gives no storage_node_power_W" in out


def test_a_power_budget_the_storage_overruns_says_so(capsys):
    """31 kW holds the smallest cluster (1 + 1 Blackwell nodes of 14.3 kW and the 3 storage nodes of 800 W its copies
    need), but with one 200 Gb/s port a storage node its bound needs 5 of them."""
    code, _, err = run(capsys, "plan", "--profile", "blackwell", "--power-kw", "31", "--storage", "3fs", "--set", "storage_node_power_W=800",
                       "--set", "nics_per_node=1")
    assert code == 1 and "can serve ds-v3.2 and buy the 3fs storage nodes its bound needs" in err
    code, _, err = run(capsys, "plan", "--profile", "blackwell", "--power-kw", "30", "--storage", "3fs", "--set", "storage_node_power_W=800")
    assert code == 2 and "(one prefill instance and one decode node and 3 3fs storage nodes, one per copy) draws 31 kW" in err


def test_plan_compares_dualpath_a_dram_tier_and_both_at_equal_cost(capsys):
    args = ("plan", "--profile", "hopper", "--budget-usd", "12e6", "--price", "300000", "--dram-tier", "500", "--dram-price", "10")
    code, out, err = run(capsys, *args, "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    tier = data["dram_tier"]
    assert tier["gb_per_node"] == 500 and tier["dram_price_per_GB"] == 10 and tier["dram_price_unit"] == "USD/GB"
    assert list(tier["options"]) == ["neither", "dualpath_alone", "tier_alone", "both"]
    assert tier["options"]["both"]["cost"] == pytest.approx(tier["options"]["both"]["P"] * 305_000 + tier["options"]["both"]["D"] * 305_000)
    assert tier["without_tier"]["dualpath"]["turns_per_s"] == tier["options"]["dualpath_alone"]["turns_per_s"]
    assert data["modes"]["dualpath"]["relaxation_turns_per_s"] is None and data["modes"]["dualpath"]["gap_frac"] is None
    assert json.loads(run(capsys, "plan", "--profile", "hopper", "--nodes", "12", "--json")[1])["dram_tier"] is None
    assert tier["options"]["both"]["served_share"] > 0 and tier["options"]["both"]["nodes"] == tier["options"]["both"]["P"] + tier["options"]["both"]["D"]
    text = " ".join(run(capsys, *args)[1].split())
    assert "Within the same budget: DualPath, a DRAM tier of 500 GB a node, both" in text
    assert "the tier's DRAM at 10 USD/GB adds 5,000 USD to every node" in text


def test_plan_with_a_tier_and_node_prices_asks_what_the_tiers_dram_costs(capsys):
    code, out, err = run(capsys, "plan", "--profile", "hopper", "--budget-usd", "12e6", "--price", "300000", "--dram-tier", "500")
    assert code == 2 and out == "" and err.startswith("error: --dram-tier = 500 GB needs --dram-price") and err.count("\n") == 1


def test_plan_says_when_both_buy_less_than_dualpath_alone(capsys):
    """GB200: the tier's inserts fill the decode GPUs' NICs DualPath reads over (docs/concepts/dram-tier.md)."""
    code, out, err = run(capsys, "plan", "--profile", "gb200", "--nodes", "12", "--dram-tier", "100")
    text = " ".join(out.split())
    assert code == 0 and "less than DualPath alone" in text and "-" not in text.split("both")[-1].split("(")[1][:2]


def test_plan_with_a_tier_over_several_node_types_names_them_in_the_table(capsys):
    code, out, err = run(capsys, "plan", "--profile", "hopper", "--profile", "blackwell", "--nodes", "12", "--dram-tier", "100")
    table = out[out.index("Within the same budget"):]
    assert code == 0 and ("hopper" in table and ("blackwell" in table or table.count("hopper") >= 4))


def test_compare_with_a_dram_tier_gives_each_generation_the_four_options(capsys):
    code, out, err = run(capsys, "compare", "--profile", "hopper", "--profile", "h20", "--dram-tier", "100", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    hopper, h20 = data["generations"]
    assert data["dram_tier_GB"] == 100 and h20["dram_tier"] is None and "no dram_GB" in h20["dram_tier_refused"]
    assert hopper["dram_tier"]["dualpath"]["served_share"] > 0 and hopper["dram_tier_refused"] is None
    plain = json.loads(run(capsys, "compare", "--profile", "hopper", "--json")[1])
    assert plain["dram_tier_GB"] is None and plain["generations"][0]["dram_tier"] is None
    code, out, err = run(capsys, "compare", "--profile", "hopper", "--dram-tier", "100")
    assert code == 0 and "A DRAM tier of 100 GB on every node, at the same 48 GPUs" in " ".join(out.split())


def test_bottleneck_compares_dualpath_a_dram_tier_and_both(capsys):
    code, out, err = run(capsys, "bottleneck", "--profile", "hopper", "--dram-tier", "20", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    tier = data["dram_tier"]
    assert tier["gb_per_node"] == 20 and tier["tier_bytes"] == pytest.approx(6 * 20e9)
    assert data["modes"]["dualpath"]["turns_per_s"] > tier["without_tier"]["dualpath"]["turns_per_s"]
    assert data["modes"]["dualpath"]["tier_Bps_at_bound"] == pytest.approx(tier["served_Bps"]["dualpath"])
    assert json.loads(run(capsys, "bottleneck", "--profile", "hopper", "--json")[1])["dram_tier"] is None
    text = " ".join(run(capsys, "bottleneck", "--profile", "hopper", "--dram-tier", "20")[1].split())
    assert "DRAM tier: 20 GB on each node" in text and "DualPath alone 190.6 turns/s; neither 63.53 turns/s" in text


def test_plan_table_shows_each_cluster_s_power_and_joules_per_turn(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one line per row
    out = run(capsys, "plan", "--profile", "blackwell", "--power-kw", "572", "--mode", "dualpath")[1]
    header = next(line for line in out.splitlines() if "┃" in line and "kW" in line)
    assert "J/turn" in header
    assert "│ 20 │ 20 │  320 │   2,752.00 │            699.6 │ 572 │  523.5 │" in out  # 40 nodes of 14.3 kW; 572 kW over 1,093 turns/s
    assert "kW" not in run(capsys, "plan", "--profile", "h20", "--nodes", "6")[1]  # h20 gives no node_power_W


def test_plan_says_when_electricity_counts_power_twice(capsys):
    args = ("plan", "--profile", "blackwell", "--budget-usd-per-hour", "3000", "--electricity-usd-per-kwh", "0.12")
    code, out, _ = run(capsys, *args)
    text = " ".join(out.split())
    assert code == 0 and "rents with power at 0.12 USD/kWh" in text and "profile rent of blackwell" in text
    data = json.loads(run(capsys, *args, "--json")[1])
    assert data["electricity_usd_per_kwh"] == 0.12 and data["electricity_counted_twice_for"] == ["blackwell"]
    own = " ".join(run(capsys, *args, "--rent", "blackwell=40")[1].split())  # a lease without power: counted once
    assert "counts twice" not in own
    assert json.loads(run(capsys, "plan", "--profile", "blackwell", "--nodes", "6", "--json")[1])["electricity_usd_per_kwh"] is None


def test_a_storage_cluster_has_a_node_per_copy(capsys):
    data = json.loads(run(capsys, "bottleneck", "--profile", "hopper", "--storage", "nvme-r7725xd", "--json")[1])
    assert data["storage"]["nodes_needed"]["copies"] == 3 and data["storage_nodes"] == 3  # its loads alone ask for 2
    code, out, err = run(capsys, "bottleneck", "--profile", "hopper", "--storage", "3fs", "--storage-nodes", "2")
    assert code == 2 and out == "" and "--storage-nodes = 2 storage nodes is not allowed; 3fs keeps 3 copies" in err
    paper = json.loads(run(capsys, "bottleneck", "--profile", "hopper", "--storage", "3fs", "--accounting", "paper", "--json")[1])
    assert paper["storage"]["nodes_needed"]["storage_write"] == 0  # paper accounting writes nothing back


@pytest.mark.parametrize("command", [("plan", "--nodes", "6"), ("bottleneck",), ("sweep", "--nodes", "6"), ("compare",)])
def test_an_offline_check_refuses_a_tpot_slo_its_runs_cannot_keep(capsys, command):
    """An offline run keeps no SLO (simulate refuses one too), so a check under --tpot-slo-ms 20 held the runner to a bound
    of 10.84 turns/s that its 180 turns/s ran past (1,663 %); with --online the SLO judges each split's capacity."""
    code, out, err = run(capsys, *command, "--profile", "hopper", "--tpot-slo-ms", "20", "--check", "1")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--tpot-slo-ms = 20 ms is not allowed with an offline --check; an offline run keeps no SLO" in err


def test_an_option_of_another_command_names_the_commands_that_have_it(capsys):
    code, _, err = run(capsys, "simulate", "--profile", "hopper", "--check", "2")
    assert code == 2 and err.strip() == "error: simulate has no option --check; bottleneck, compare, plan, sweep have it (see dualpath-plan simulate --help)"
    code, _, err = run(capsys, "trace", "stats", "x.jsonl", "--agents", "5")
    assert code == 2 and "trace stats has no option --agents; " in err and "simulate" in err


def test_a_missing_file_is_named_once(capsys):
    code, _, err = run(capsys, "bottleneck", "--profile-file", "nothere.toml")
    assert code == 2 and err.count("nothere.toml") == 1 and len(err.strip().splitlines()) == 1


def test_output_to_a_pipe_is_laid_out_at_100_columns(monkeypatch):
    import shutil
    import sys

    app = sys.modules["dualpath_plan.cli.app"]
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback: os.terminal_size(fallback))  # no terminal says
    assert app.console_width() == app.PIPE_WIDTH == 100


def test_a_table_too_wide_wraps_between_words(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, "compare", "--profile", "ampere", "--profile", "hopper", "--profile", "blackwell", "--profile", "blackwell-ultra")
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= 100
    cells = [cell.strip() for line in lines if line.startswith("│") for cell in line.strip("│").split("│")]
    words = {w for cell in cells for w in cell.split()}
    assert {"blackwell-ultra", "0.1204..4.087", "turns/s", "PFLOP/s"} <= words  # each whole on one line


def test_text_in_brackets_is_printed_as_written(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the checks read cells whole
    code, out, _ = run(capsys, "profiles", "show", "hopper")
    assert code == 0 and "[derived, a floor]" in " ".join(out.split())  # a source's tag, not rich markup
    trace = tmp_path / "[red]agents.jsonl"
    trace.write_text("[[2000, 1], [300, 40]]\n")
    code, out, _ = run(capsys, "simulate", "--profile", "hopper", "--model", "ds-27b", "-P", "1", "-D", "1", "--set", "gpus_per_node=2",
                       "--trace", str(trace), "--agents", "2", "--engine", "python")
    assert code == 0 and "[red]agents.jsonl" in "".join(out.split())


def test_a_profile_file_named_as_a_shipped_one_says_it_replaces_it(capsys, tmp_path):
    mine = tmp_path / "hopper.toml"
    mine.write_text(HOPPER.read_text())
    code, _, err = run(capsys, "bottleneck", "--profile", "hopper", "--profile-file", str(mine), "--json")
    assert code == 0 and "note: --profile-file hopper.toml replaces the shipped hardware profile 'hopper'" in " ".join(err.split())
    other = tmp_path / "mine.toml"
    other.write_text(HOPPER.read_text())
    code, _, err = run(capsys, "bottleneck", "--profile", "mine", "--profile-file", str(other), "--json")
    assert code == 0 and err == ""


def test_formulas_in_latex_are_latex_relations_too(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the checks read cells whole
    code, out, _ = run(capsys, "formulas", "--latex")
    text = " ".join(out.split())
    assert code == 0 and r"\frac{P}{D} \geq \frac{s}{g - s}" in text and r"2 s - \frac{M}{B} \leq 0" in text
    assert "P/D <=" not in text and "P/D >=" not in text


def test_compare_says_which_generations_serve_nothing_and_how_to_find_their_smallest_cluster(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one line per row
    code, out, _ = run(capsys, "compare", "--profile", "h20", "--profile", "h200", "--gpus", "16")
    row = next(line for line in out.splitlines() if line.startswith("│ h20"))
    assert code == 0 and "none: weights fit neither side" in row and "prefill weights do not fit" not in row
    assert ("note: no split of 16 GPUs serves ds-v3.2 on h20; `dualpath-plan plan --profile NAME --target-turns-per-s 1`, with this "
            "command's other flags, finds the cheapest cluster of NAME that does") in out
    code, out, _ = run(capsys, "compare", "--profile", "h200", "--gpus", "16")
    assert code == 0 and "no split of" not in out


def test_bottleneck_on_a_split_that_is_not_dualpaths_best_says_which_is(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "-P", "3", "-D", "3")  # DualPath's best of 6 is 2P4D
    text = " ".join(out.split())
    assert code == 0 and "This split is not DualPath's best here: 2P4D reaches 190.6 turns/s (Order below)." in text
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper")
    assert "not DualPath's best" not in " ".join(out.split())


def test_bottleneck_says_set_keys_after_every_profile_and_dualpaths_gain_only_where_it_gains(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--set", "tool_time_s=10")
    assert code == 0 and out.splitlines()[0] == "hopper serving ds-v3.2 on agentic-64k, exact accounting, with --set tool_time_s=10"
    assert "with fewer the cluster idles and DualPath gains less." in " ".join(out.split())
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--set", "tool_time_s=10", "--set", "snic_Gbps=1600")  # decode binds
    text = " ".join(out.split())
    assert "with fewer the cluster idles." in text and "DualPath gains less" not in text


def test_a_power_budget_has_no_note_on_costs_counted_in_nodes(capsys):
    code, out, _ = run(capsys, "plan", "--profile", "blackwell", "--power-kw", "600", "--storage", "3fs", "--set", "storage_node_power_W=1500")
    assert code == 0 and "costs are counted in nodes" not in out
    code, out, _ = run(capsys, "plan", "--profile", "blackwell", "--nodes", "12", "--storage", "3fs", "--set", "price_per_node_usd=300000")
    assert code == 0 and "storage profile 3fs has no purchase price" in " ".join(out.split())


def test_a_number_and_its_short_unit_count_as_one_word_when_a_table_is_narrowed():
    from dualpath_plan.cli.app import _words

    assert _words("3075 s") == ["3075 s"] and _words("101.9 %") == ["101.9 %"] and _words("1.5 x faster") == ["1.5 x", "faster"]
    assert _words("pe_snic de_snic") == ["pe_snic", "de_snic"] and _words("the s") == ["the", "s"]


def test_compare_explains_an_empty_range_and_nodes_of_different_sizes(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    code, out, _ = run(capsys, "compare", "--profile", "h200", "--profile", "gb200", "--workload", "agentic-48k")
    assert code == 0 and "From h200 to gb200: dense compute per node (nodes of 8 and 4 GPUs) 1.26x" in out
    assert "note: free P/D none: eq. (9)'s range is empty, so no split is bottleneck-free (gb200: lower end 0.7544 (pe_cnic_write)" in out
    code, out, _ = run(capsys, "compare", "--profile", "h200", "--profile", "blackwell")
    assert "nodes of" not in out and "range is empty" not in out
