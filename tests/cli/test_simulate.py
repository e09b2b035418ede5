"""``dualpath-plan simulate`` as a translator: flags in, the runner called, units and JSON keys out."""

from __future__ import annotations

import json

import pytest

from dualpath_plan.cli import main

TRACED = ["simulate", "--profile", "hopper", "--model", "ds-27b", "-P", "1", "-D", "1", "--set", "gpus_per_node=2"]
TINY = [*TRACED, "--workload", "agentic-32k", "--agents", "6"]
ISSUE_KEYS = {"jct_s", "turns_per_s", "bound_turns_per_s", "achieved_over_bound", "utilization", "snic_max_over_avg",
              "de_read_share", "wall_s"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_json_has_the_issue_keys_in_si_units(capsys):
    code, out, err = run(capsys, *TINY, "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert ISSUE_KEYS <= set(data)
    assert data["policy"] == "dualpath" and data["mode"] == "offline" and data["dt_s"] == pytest.approx(0.05)
    assert data["jct_s"] > 0 and 0 < data["achieved_over_bound"] <= 1
    assert {"pe_snic", "de_snic", "prefill_compute", "decode"} <= set(data["utilization"])
    assert set(data["latency"]) == {"ttft", "ttst", "tpot"} and "p99_s" in data["latency"]["ttft"]
    start, stop = data["steady_window_s"]  # seconds, inside the run, with what set each end (sim.steady)
    assert 0 <= start < stop <= data["jct_s"] and len(data["steady_window_by"]) == 2
    steady = data["steady_turns_per_s"]  # divided two ways, under the names the checks use
    assert data["steady_over_window_bound"] == pytest.approx(steady / data["steady_bound_turns_per_s"])
    assert data["steady_over_workload_bound"] == pytest.approx(steady / data["bound_turns_per_s"])


@pytest.mark.slow
def test_compare_puts_policies_side_by_side_with_ratios(capsys):
    code, out, _ = run(capsys, *TINY, "--compare", "basic,oracle", "--json")
    data = json.loads(out)
    assert code == 0 and list(data["policies"]) == ["basic", "oracle"] and data["ratios_to"] == "basic"
    assert data["ratios"]["oracle"]["speedup_jct"] > 0
    code, out, _ = run(capsys, *TINY, "--compare", "basic,oracle")
    assert code == 0 and "Ratios to basic" in out and "turns/s" in out and "JCT basic / JCT policy" in out


@pytest.mark.slow
def test_six_policies_split_into_tables_that_fit_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    names = ["basic", "layerwise", "dualpath-rr", "dualpath", "oracle", "split"]
    code, out, _ = run(capsys, *TINY, "--compare", ",".join(names))
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    assert "Fluid run against the LP bound (1/2)" in out and "(2/2)" in out and "(3/2)" not in out
    header_lines = [line for line in out.splitlines() if line.startswith("┃ quantity")]
    shown = [cell.strip() for line in header_lines for cell in line.split("┃")[2:-1]]
    assert shown == names  # every policy once, in the order asked


@pytest.mark.slow
def test_online_and_trace_flags(capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("[[2000, 1], [300, 40], [200, 50]]\n[[1500, 1], [250, 30]]\n")
    code, out, _ = run(capsys, *TRACED, "--trace", str(trace), "--online", "--aps", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["mode"] == "online" and data["aps"] == 2.0 and data["agents"] >= 2 and data["jct_s"] is None  # arrivals to the horizon
    assert isinstance(data["slo_met"], bool) and data["steady_state"] is True


def test_an_online_run_of_fixed_agents_says_its_verdict_is_no_steady_state(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the checks read cells whole
    trace = tmp_path / "t.jsonl"
    trace.write_text("[[2000, 1], [300, 40], [200, 50]]\n[[1500, 1], [250, 30]]\n")
    args = (*TRACED, "--trace", str(trace), "--online", "--aps", "1000", "--agents", "4")
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0 and json.loads(out)["steady_state"] is False
    code, out, _ = run(capsys, *args)
    text = " ".join(out.split())
    assert "(fixed --agents: not a steady state)" in text and "note: with --agents the arrivals end after 4 agents" in text
    assert "above the LP bound's" in text  # 1,000 agents/s: far above any bound of this cluster


@pytest.mark.parametrize(("extra", "needle"), [
    (["--policy", "fastest"], "--policy 'fastest' is not allowed; must be one of basic, layerwise"),
    (["--aps", "2"], "--aps = 2.0 agents/s needs --online"),
    (["--online"], "--online needs --aps X"),
    (["--find-capacity", "--compare", "basic,dualpath"], "--find-capacity searches one policy"),
    (["--find-capacity"], "--agents = 6 agents is not allowed with --find-capacity"),
    (["--dt-ms", "0"], "--dt-ms = 0 ms is not allowed; must be a finite number >= 1 and <= 300 (a step must resolve one forward batch under the 300 ms attention quota"),
    (["--dt-ms", "0.5"], "--dt-ms = 0.5 ms is not allowed; must be a finite number >= 1"),
    (["--agents", "300000"], "--agents = 300000 agents is not allowed; must be a whole number >= 1 and <= 262144"),
    (["--compare", "basic,nope"], "--compare 'nope' is not allowed"),
    (["-P", "8000", "-D", "193"], "-P + -D = 8193 nodes is not allowed; a cluster has at most 8192 nodes"),
    (["--agents", "0"], "--agents = 0 agents is not allowed"),
    (["--tpot-slo-ms", "-5"], "--tpot-slo-ms = -5 ms is not allowed; must be a finite number >= 1 and <= 10000"),
    (["--ttft-slo-s", "nan"], "--ttft-slo-s = nan s is not allowed"),
    (["--tpot-slo-ms", "10"], "--ttft-slo-s and --tpot-slo-ms apply to online runs"),
    (["--compare", "basic,,dualpath"], "must be distinct policy names separated by commas"),
    (["--compare", "basic,basic"], "must be distinct policy names separated by commas"),
    (["--compare", "basic", "--policy", "oracle"], "--policy oracle and --compare basic are not allowed together"),
])
def test_bad_flags_are_one_line_usage_errors(capsys, extra, needle):
    code, out, err = run(capsys, *TINY, *extra)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1


def test_a_capacity_search_whose_slo_sets_too_long_a_horizon_says_which_flags_set_it(capsys):
    """A legal --ttft-slo-s 3600 was refused with advice about --aps, which --find-capacity itself refuses."""
    code, out, err = run(capsys, "simulate", "--profile", "hopper", "--find-capacity", "--ttft-slo-s", "3600")
    needle = "(the steady state at a TTFT SLO of 3600 s and a TPOT SLO of 50 ms) are"
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1
    assert "lower the SLOs that set the horizon (--ttft-slo-s, --tpot-slo-ms)" in err and "--aps" not in err  # the search picks the rate


def test_a_cluster_the_model_does_not_fit_is_a_domain_error(capsys):
    code, _, err = run(capsys, "simulate", "--profile", "hopper", "-P", "1", "-D", "1", "--agents", "2")
    assert code == 1 and "do not fit in hbm_GB = 80 GB" in err
    code, _, err = run(capsys, "simulate", "--profile", "hopper", "-P", "1", "-D", "4", "--agents", "2")
    assert code == 1 and "prefill weights" in err and "do not fit in hbm_GB = 80 GB" in err


def test_simulate_names_the_prefill_instance_its_passes_are_for(capsys):
    code, out, _ = run(capsys, "simulate", "--profile", "hopper", "-P", "4", "-D", "4", "--agents", "8", "--prefill-instance-nodes", "4", "--json")
    assert code == 0 and json.loads(out)["prefill_instance_gpus"] == 32


def test_a_prefill_instance_larger_than_the_prefill_side_is_refused(capsys):
    code, out, err = run(capsys, "simulate", "--profile", "hopper", "--agents", "2", "--prefill-instance-nodes", "4")
    assert code == 2 and out == "" and "--prefill-instance-nodes = 4 nodes is not allowed with P = 2" in err


@pytest.mark.parametrize(("probes", "noted"), [(((1.0, True), (1.5, True)), True), (((1.0, True), (1.5, False)), False)])
def test_a_capacity_search_that_never_missed_the_slo_says_why_it_stopped(probes, noted):
    from rich.console import Console

    from dualpath_plan.model.scenario import build_scenario
    from dualpath_plan.report.simulate import render_capacity
    from dualpath_plan.sim.runner import Capacity, OnlineSpec

    console = Console(record=True, width=200)
    render_capacity(build_scenario("hopper", P=2, D=4), "synthetic", Capacity("dualpath", 1.4, 2.0, probes, None, OnlineSpec(1.0), 88.0), console)
    assert ("note: every probe met the SLO" in console.export_text()) is noted


@pytest.mark.slow
def test_an_slo_no_rate_meets_stops_at_the_floor_probe_and_says_so(capsys):
    code, out, _ = run(capsys, *TRACED, "--workload", "agentic-32k", "--find-capacity", "--ttft-slo-s", "0.01", "--json")
    data = json.loads(out)
    assert code == 0 and data["capacity_aps"] == 0 and data["ttft_slo_s"] == 0.01
    assert [p["slo_met"] for p in data["probes"]] == [False] * 4  # three halvings, then the floor probe
    assert data["probes"][-1]["aps"] == pytest.approx(data["bound_aps"] * 1e-3)
    assert data["note"].startswith("no rate met the SLO (mean TTFT <= 10 ms")


def test_a_trace_of_single_rounds_is_refused_naming_the_file(capsys, tmp_path):
    trace = tmp_path / "one.jsonl"
    trace.write_text("[[100, 20]]\n[[200, 30]]\n")
    code, _, err = run(capsys, *TRACED, "--trace", str(trace))
    assert code == 1 and err.count("\n") == 1 and f"{trace}: every trajectory has one round" in err


def test_a_trace_is_the_workload(capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("[[2000, 1], [300, 40]]\n")
    code, _, err = run(capsys, *TRACED, "--trace", str(trace), "--workload", "agentic-32k")
    assert code == 2 and "--workload agentic-32k and --trace" in err and "not allowed together" in err
    code, out, _ = run(capsys, *TRACED, "--trace", str(trace), "--json")
    assert code == 0 and json.loads(out)["workload"] is None and json.loads(out)["trajectories"] == str(trace)


@pytest.mark.slow
def test_dtype_and_decode_instance_reach_the_runner_and_its_bound(capsys):
    def oracle(*extra):
        # a fast all-to-all, so that the GEMMs (whose rate the dtype sets) bound the pass, not the exchange
        code, out, _ = run(capsys, *TINY, "--policy", "oracle", "--set", "ep_normal_GBps=5000", "--json", *extra)
        assert code == 0
        return json.loads(out)

    fp8, bf16 = oracle("--dtype", "fp8"), oracle("--dtype", "bf16")
    # compute binds the oracle; at BF16 its GEMMs run at half the peak, so the bound falls and the compute is busier
    assert bf16["bound_turns_per_s"] < fp8["bound_turns_per_s"] * 0.99
    assert bf16["utilization"]["prefill_compute"] > fp8["utilization"]["prefill_compute"]
    code, _, err = run(capsys, *TINY, "--decode-instance-nodes", "2")
    assert code == 2 and "not allowed with D = 1; the runner's decode side must be whole instances" in err


def test_a_long_python_engine_run_under_auto_gets_a_note_on_the_compiled_engine(capsys):
    from types import SimpleNamespace

    from dualpath_plan.cli import simulate as cli_simulate

    slow, fast = SimpleNamespace(engine="python", wall_s=25.0), SimpleNamespace(engine="compiled", wall_s=25.0)
    cli_simulate._engine_note("auto", {"dualpath": slow})
    assert "--engine compiled" in capsys.readouterr().err
    for engine, runs in (("python", {"dualpath": slow}), ("auto", {"dualpath": fast}),
                         ("auto", {"dualpath": SimpleNamespace(engine="python", wall_s=1.0)})):
        cli_simulate._engine_note(engine, runs)
        assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_ctrl_c_shows_the_runs_that_finished_and_exits_130(monkeypatch, capsys, tmp_path):
    from dualpath_plan.cli import main
    from dualpath_plan.sim import runner

    real, calls = runner.run, []

    def stop_on_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run", stop_on_second)
    turns = tmp_path / "turns.csv"
    code = main(["simulate", "--profile", "hopper", "--model", "ds-27b", "-P", "1", "-D", "1", "--set", "gpus_per_node=2", "--agents", "8",
                 "--engine", "python", "--compare", "basic,dualpath", "--turns", str(turns)])
    out, err = capsys.readouterr()
    assert code == 130 and "basic" in out and "error: interrupted: 1 of 2 runs finished (shown above)" in err and err.count("\n") == 1
    assert not turns.exists()  # a file holds every run or none


def test_ctrl_c_before_any_run_finished_says_so(monkeypatch, capsys):
    from dualpath_plan.cli import main
    from dualpath_plan.sim import runner

    monkeypatch.setattr(runner, "run", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    code = main(["simulate", "--profile", "hopper", "--agents", "8", "--engine", "python", "--json"])
    out, err = capsys.readouterr()
    assert code == 130 and out == "" and "error: interrupted: 0 of 1 runs finished" in err


@pytest.mark.slow
def test_a_compare_cut_short_by_ctrl_c_keeps_the_shape_of_a_finished_one(capsys, monkeypatch):
    """After Ctrl-C with one of two policies done, --json switched to a one-policy shape without its policies key."""
    from dualpath_plan.sim import runner

    whole = json.loads(run(capsys, *TINY, "--compare", "basic,dualpath", "--json")[1])
    real, calls = runner.run, []

    def second_one_interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run", second_one_interrupted)
    code, out, err = run(capsys, *TINY, "--compare", "basic,dualpath", "--json")
    partial = json.loads(out)
    assert code == 130 and "interrupted: 1 of 2 runs finished" in err
    assert set(partial) == set(whole) and set(partial["policies"]) == {"basic"} and partial["ratios"] == {}


@pytest.mark.slow
def test_a_long_run_says_before_it_starts_what_it_will_cost(capsys, monkeypatch):
    """A 12.8 M-turn trace ran past 60 s without a word: a run expected to be long says its turns, the simulated
    seconds, the wall time it expects on its engine and how to stop it, once, before the first run."""
    from dualpath_plan.cli import simulate as cli_simulate

    monkeypatch.setattr(cli_simulate, "LONG_RUN_S", 0.0)  # every run is long
    code, out, err = run(capsys, *TINY, "--compare", "dualpath,basic", "--seeds", "2", "--engine", "python", "--json")
    assert code == 0 and json.loads(out)
    note = err.splitlines()
    assert len(note) == 1 and note[0].startswith("note: 4 runs of ") and " on the python engine here; " in note[0]
    assert "Ctrl-C stops it" in note[0]


@pytest.mark.slow
def test_a_short_run_says_nothing_about_its_cost(capsys):
    code, _, err = run(capsys, *TINY, "--engine", "python")
    assert code == 0 and "note:" not in err


@pytest.mark.slow
def test_an_offline_table_says_what_set_each_end_of_its_steady_window(capsys):
    from dualpath_plan.sim.steady import ENDS

    code, out, _ = run(capsys, *TINY)
    line = " ".join(out[out.index("steady window (past"):].split())
    assert code == 0 and sum(line.count(f"({words})") for words in ENDS.values()) == 2  # one cause per end, one run


def test_an_online_run_that_does_not_fill_the_cluster_says_its_gap_is_the_load_offered(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the checks read cells whole
    trace = tmp_path / "t.jsonl"
    trace.write_text("[[2000, 1], [300, 40], [200, 50]]\n[[1500, 1], [250, 30]]\n" * 8)
    code, out, _ = run(capsys, *TRACED, "--trace", str(trace), "--online", "--aps", "0.5", "--agents", "64")
    text = " ".join(out.split())
    assert code == 0 and "note: the arrivals offer dualpath" in text and "the cluster was not full" in text


def test_a_steady_window_that_finished_fewer_turns_than_agents_is_noted():
    from types import SimpleNamespace

    from dualpath_plan.report.simulate import short_window_note

    run_ = lambda window, rate, agents, mode="offline": SimpleNamespace(steady_window_s=window, steady_turns_per_s=rate,  # noqa: E731
                                                                       agents=agents, mode=mode)
    # a trace fixture's 2,048 agents: 1.2 s at 430 turns/s; the docs' 2P4D run of 1,024 agents: 162 s at 180 turns/s
    note = short_window_note({"fixture": run_((7.67, 8.87), 430.0, 2048), "docs": run_((533.8, 695.3), 180.2, 1024)})
    assert note is not None and "(fixture 516 turns for 2,048 agents)" in note and "docs" not in note
    assert short_window_note({"online": run_((10.0, 10.5), 10.0, 2048, "online")}) is None  # online: no steady window to judge
