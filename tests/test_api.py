"""The Python API (api.py): the session of docs/api.md runs as written, and every function returns what its
command prints with --json."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dualpath_plan as dp
from dualpath_plan.cli import main

API_PAGE = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()


def cli_json(capsys, *argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _session() -> tuple[str, list[str]]:
    """The API page's session (the python block after the marker) and the output shown after it."""
    block = API_PAGE.split("<!-- api-session -->\n```python\n", 1)[1]
    code, rest = block.split("```\n", 1)
    shown = rest.split("```\n", 2)[1]
    return code, shown.splitlines()


def test_the_api_page_session_prints_what_the_page_shows_and_matches_bottleneck_json(capsys):
    code, shown = _session()
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/api.md", "exec"), namespace)
    assert out.getvalue().splitlines() == shown
    expected = cli_json(capsys, "bottleneck", "--profile", "hopper")
    assert namespace["as_json"] == expected
    printed = {line.split()[0]: (float(line.split()[1]), float(line.split()[3])) for line in shown[:3]}
    assert printed == {mode: (round(m["turns_per_s"], 1), round(m["agents_per_s"], 3)) for mode, m in expected["modes"].items()}
    best = expected["best_split"]["dualpath"]
    assert re.search(r"(\d+)P(\d+)D, ([\d.]+) turns/s", shown[-1]).groups() == (str(best["P"]), str(best["D"]), f"{best['turns_per_s']:.1f}")


def test_bound_closed_form_equals_the_lp_in_every_mode():
    sc = dp.scenario("hopper", P=3, D=5)
    for mode in ("basic", "dualpath", "oracle"):
        closed, lp = dp.bound(sc, mode), dp.bound(sc, mode, solver="lp")
        assert closed.turns_per_s == pytest.approx(lp.turns_per_s, rel=1e-9)
        assert dp.to_dict(closed)["turns_per_s"] == closed.turns_per_s


@pytest.mark.slow
def test_plan_equals_plan_json(capsys):
    result = dp.plan(["hopper"], nodes=8, alternatives=1)
    assert result.to_dict() == cli_json(capsys, "plan", "--profile", "hopper", "--nodes", "8", "--alternatives", "1")


def test_plan_with_a_dram_tier_equals_plan_json(capsys):
    result = dp.plan(["hopper"], nodes=8, alternatives=0, dram_tier_GB=50)
    assert result.tiers is not None and result.tiers.gb_per_node == 50
    assert result.to_dict() == cli_json(capsys, "plan", "--profile", "hopper", "--nodes", "8", "--alternatives", "0", "--dram-tier", "50")


def test_compare_with_a_dram_tier_equals_compare_json(capsys):
    result = dp.compare(["hopper", "h20"], gpus=48, dram_tier_GB=100)
    assert dp.to_dict(result) == cli_json(capsys, "compare", "--profile", "hopper", "--profile", "h20", "--dram-tier", "100")


def test_sweep_equals_sweep_json(capsys):
    result = dp.sweep(["hopper", "h200"], gpus=32)
    assert dp.to_dict(result) == cli_json(capsys, "sweep", "--profile", "hopper", "--profile", "h200", "--gpus", "32")


def _without_wall(value):
    if isinstance(value, dict):
        return {k: _without_wall(v) for k, v in value.items() if "wall" not in k}
    return [_without_wall(v) for v in value] if isinstance(value, list) else value


@pytest.mark.slow
def test_simulate_equals_simulate_json(capsys):
    args = dict(model="ds-27b", workload="agentic-32k", P=1, D=1, sets=["gpus_per_node=2"])
    result = dp.simulate(dp.scenario("hopper", **args), ["basic", "dualpath"], agents=6, engine="python")
    expected = cli_json(capsys, "simulate", "--profile", "hopper", "--model", "ds-27b", "--workload", "agentic-32k", "-P", "1",
                        "-D", "1", "--set", "gpus_per_node=2", "--agents", "6", "--compare", "basic,dualpath", "--engine", "python")
    assert _without_wall(result.to_dict()) == _without_wall(expected)


def test_simulate_with_a_dram_tier_equals_simulate_json(capsys):
    args = dict(model="ds-27b", workload="agentic-32k", P=1, D=1, sets=["gpus_per_node=2"], dram_tier_GB=4.0)
    result = dp.simulate(dp.scenario("hopper", **args), "dualpath", agents=6, engine="python")
    expected = cli_json(capsys, "simulate", "--profile", "hopper", "--model", "ds-27b", "--workload", "agentic-32k", "-P", "1",
                        "-D", "1", "--set", "gpus_per_node=2", "--agents", "6", "--dram-tier", "4", "--engine", "python")
    assert _without_wall(result.to_dict()) == _without_wall(expected) and expected["tier_share"] is not None


@pytest.mark.slow
def test_validate_formulas_and_profiles_equal_their_json(capsys):
    assert dp.to_dict(dp.validate(skip_sim=True)) == cli_json(capsys, "validate", "--skip-sim")
    assert dp.to_dict(dp.formulas()) == cli_json(capsys, "formulas")
    assert dp.to_dict(dp.profiles()) == cli_json(capsys, "profiles", "list")


def test_bad_input_raises_the_commands_one_line_error():
    with pytest.raises(dp.PlanError, match="snic_Gbps = -400 Gb/s is not allowed") as err:
        dp.scenario("hopper", sets=["snic_Gbps=-400"])
    assert err.value.exit_code == 2 or err.value.exit_code == 1
    with pytest.raises(dp.PlanError, match="solver = 'simplex' is not allowed"):
        dp.bound(dp.scenario(), solver="simplex")
    with pytest.raises(dp.PlanError, match="a int is not a result"):
        dp.to_dict(3)


@pytest.mark.slow
def test_importing_the_package_loads_no_solver_sympy_or_numba():
    code = ("import sys, dualpath_plan as dp; dp.bottleneck(dp.scenario('hopper')); "
            "print(sorted({m.split('.')[0] + ('.optimize' if m.startswith('scipy.optimize') else '') for m in sys.modules "
            "if m.startswith(('sympy', 'scipy.optimize', 'numba'))}))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


@pytest.mark.slow
def test_a_budget_plan_loads_no_solver_and_a_target_plan_does():
    """A budget question needs no solver (the frontier search and the closed-form relaxation); a target one solves its MILP."""
    code = ("import sys, dualpath_plan as dp; dp.plan(['hopper'], {}); print('scipy.optimize' in sys.modules)")
    run = lambda ask: subprocess.run([sys.executable, "-c", code.format(ask)], capture_output=True, text=True, check=True).stdout.strip()  # noqa: E731
    assert run("nodes=12") == "False" and run("target_turns_per_s=100.0") == "True"


def test_every_exported_name_has_a_docstring():
    for name in dp.__all__:
        assert getattr(dp, name).__doc__, name


def test_bottleneck_plan_and_simulate_count_the_same_turns_per_agent():
    """One definition of turns per agent (the replay data set's mean): bottleneck's agents/s, plan's agent targets
    and a simulated run's agents describe the same turns."""
    from dualpath_plan.model.workload import agent_turns, trajectories

    sc = dp.scenario("hopper", P=2, D=4)
    turns = agent_turns(sc.workload)
    dual = dp.bottleneck(sc).bounds["dualpath"]
    assert dual.agents_per_s * turns == pytest.approx(dual.turns_per_s)
    by_agents = dp.plan(["hopper"], target_agents_per_s=1.0, alternatives=1).to_dict()
    by_turns = dp.plan(["hopper"], target_turns_per_s=turns, alternatives=1).to_dict()
    assert by_agents == by_turns and by_agents["target_turns_per_s"] == pytest.approx(turns)
    run = trajectories(sc.workload, 2048, None, 0)
    assert run.n_rounds / run.n_agents == pytest.approx(turns, rel=0.03)


@pytest.mark.slow
def test_bottleneck_bounds_the_turns_a_run_replays():
    """The bounds' mean turn carries its share of each agent's first-round prompt, as the runs replay it, so
    bottleneck's bound and a run's own bound agree within the sampling of the agents."""
    sc = dp.scenario("hopper", P=2, D=4)
    dual = dp.bottleneck(sc).bounds["dualpath"].turns_per_s
    run = dp.simulate(sc, "dualpath", agents=2048, engine="compiled").runs["dualpath"]
    assert run.bound_turns_per_s == pytest.approx(dual, rel=0.03)


def test_a_bad_seed_is_the_same_one_line_refusal_from_the_api():
    import dualpath_plan as dp
    from dualpath_plan.model.errors import PlanError

    with pytest.raises(PlanError, match=r"^--seed = -1 is not allowed; must be a whole number >= 0"):
        dp.simulate(dp.scenario("hopper"), agents=2, seed=-1)


@pytest.mark.slow
def test_the_runner_check_and_a_money_sweep_are_reachable_from_the_api(capsys, remembered_runs):
    import dualpath_plan as dp

    sc = dp.scenario("hopper")
    result = dp.check(dp.bottleneck(sc).optimal["dualpath"], {("hopper", "hopper"): sc}, 2)
    assert dp.to_dict(result) == cli_json(capsys, "bottleneck", "--profile", "hopper", "--check", "2")["runner_check"]
    money = dp.sweep(["hopper"], budget_usd=5e6, prices_usd={"hopper": 250_000.0})
    assert dp.to_dict(money) == cli_json(capsys, "sweep", "--profile", "hopper", "--budget-usd", "5e6", "--node-cost", "hopper=250000")


@pytest.mark.slow
def test_the_modes_check_is_reachable_from_the_api_and_equals_plan_check_json(capsys, remembered_runs):
    answers = dp.plan(["hopper"], nodes=6).answers
    sc = dp.scenario("hopper")
    result = dp.check_modes({mode: a.optimal for mode, a in answers.items()}, {("hopper", "hopper"): sc}, 1)
    data = cli_json(capsys, "plan", "--profile", "hopper", "--nodes", "6", "--check", "1")["runner_check"]
    assert dp.to_dict(result) == data and set(data) == {"basic", "dualpath", "modes"}
    assert data["modes"]["bound_order"] == ["dualpath", "basic"] and data["modes"]["confirms"] is True


@pytest.mark.slow
def test_a_grid_sweep_and_its_check_equal_sweep_json_and_its_files(capsys, tmp_path, remembered_runs):
    argv = ["sweep", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k", "--nodes", "2,3",
            "--set", "snic_Gbps=400,800", "--check", "1"]  # two axes besides the profile: 8 runs each way
    grid = dp.check_grid(dp.grid_sweep(["hopper"], models=["llama-3.1-8b"], workloads=["agentic-32k"], nodes="2,3",
                                       sets=["snic_Gbps=400,800"]), 1)
    assert dp.to_dict(grid) == cli_json(capsys, *argv, "--csv", str(tmp_path / "cli.csv"))  # one CLI run: its JSON and its file
    dp.write_rows(grid, tmp_path / "api.csv")
    assert (tmp_path / "api.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()


@pytest.mark.slow
def test_the_online_check_is_reachable_from_the_api_and_equals_plan_check_online_json(capsys, remembered_runs):
    args = {"model": "llama-3.1-8b", "workload": "agentic-32k"}
    answers = dp.plan(["hopper"], nodes=3, **args).answers
    sc = dp.scenario("hopper", **args)
    result = dp.check_online({mode: a.optimal for mode, a in answers.items()}, {("hopper", "hopper"): sc}, 1, ttft_slo_s=3.0)
    data = cli_json(capsys, "plan", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k", "--nodes", "3",
                    "--check", "1", "--online", "--ttft-slo-s", "3")["runner_check"]
    assert dp.to_dict(result) == data and data["mode"] == "online" and set(data["modes"]["bound_order"]) == {"basic", "dualpath"}


@pytest.mark.slow
def test_a_grid_sweeps_online_check_equals_sweep_check_online_json(capsys, remembered_runs):
    argv = ["sweep", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k", "--nodes", "3", "--check", "1",
            "--online", "--ttft-slo-s", "3"]
    grid = dp.check_grid(dp.grid_sweep(["hopper"], models=["llama-3.1-8b"], workloads=["agentic-32k"], nodes="3"), 1, online=True,
                         ttft_slo_s=3.0)
    assert dp.to_dict(grid) == cli_json(capsys, *argv) and grid.plan.slo.ttft_slo_s == 3.0
    with pytest.raises(dp.PlanError, match="ttft_slo_s = 3.0 s is not allowed without online"):
        dp.check_grid(grid, 1, ttft_slo_s=3.0)


TRACE_V2 = Path(__file__).resolve().parents[1] / "examples" / "trace-v2-example.jsonl"
MOONCAKE = Path(__file__).resolve().parent / "fixtures" / "traces" / "mooncake" / "conversation_trace_excerpt.jsonl"


@pytest.mark.slow
def test_the_trace_functions_equal_their_commands_json(capsys, tmp_path):
    assert dp.to_dict(dp.trace_stats(TRACE_V2, model="ds-v3.2")) == cli_json(capsys, "trace", "stats", str(TRACE_V2), "--model", "ds-v3.2")
    report = dp.trace_import([MOONCAKE], "mooncake", tmp_path / "a.jsonl")
    assert dp.to_dict(report) | {"output": "x"} == cli_json(capsys, "trace", "import", "--format", "mooncake", "-o", str(tmp_path / "b.jsonl"),
                                                             str(MOONCAKE)) | {"output": "x"}
    sc = dp.scenario("hopper", workload=dp.trace_workload(TRACE_V2))
    assert dp.to_dict(dp.bottleneck(sc)) == cli_json(capsys, "bottleneck", "--profile", "hopper", "--trace", str(TRACE_V2))
    assert dp.to_dict(dp.bottleneck(sc))["tool_time"]["mean_tool_s"] == pytest.approx((4.2 + 31 + 2.5 + 12 + 1.5 + 6 + 8 + 45 + 3) / 9)


def test_trace_import_cuts_at_a_models_window_as_the_command_does(capsys, tmp_path):
    report = dp.trace_import([MOONCAKE], "mooncake", tmp_path / "a.jsonl", model="ds-v3.2")
    cli = cli_json(capsys, "trace", "import", "--format", "mooncake", "--model", "ds-v3.2", "-o", str(tmp_path / "b.jsonl"), str(MOONCAKE))
    assert dp.to_dict(report) | {"output": "x"} == cli | {"output": "x"}
    with pytest.raises(dp.PlanError, match="not allowed together"):
        dp.trace_import([MOONCAKE], "mooncake", tmp_path / "c.jsonl", model="ds-v3.2", max_context_tokens=1000)


def test_the_api_plans_the_storage_nodes_as_bottleneck_does(capsys):
    sc = dp.scenario("hopper", P=2, D=4, storage="nvme-r7725xd", storage_retention_s=600.0)
    need = dp.bottleneck(sc).storage
    assert main(["bottleneck", "--profile", "hopper", "--storage", "nvme-r7725xd", "--storage-retention-s", "600", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["storage_nodes"] == need.nodes and data["storage"]["kept_bytes"] == pytest.approx(need.kept_bytes)


def test_plan_takes_node_costs_and_rents_as_texts_or_a_dict_by_profile():
    texts = dp.to_dict(dp.plan(["h200", "blackwell"], budget_usd=5e6, node_costs=["h200=320000", "blackwell=450000"]))
    mapping = dp.to_dict(dp.plan(["h200", "blackwell"], budget_usd=5e6, node_costs={"h200": 320000, "blackwell": 450000}))
    assert texts == mapping
