"""--check K (check.py): the K best splits on the same agents, ranked by the runner, and its recommendation."""

from __future__ import annotations

import json
import pytest

from dualpath_plan.cli import main
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning import check as check_mod
from dualpath_plan.planning.executor import Outcome
from dualpath_plan.planning.sweep import optimal_splits, split_points


def _fake_runs(monkeypatch, steady):
    """The executor replaced: record every task, answer each with the steady rate ``steady(task)``."""
    calls = []

    def run_tasks(tasks, executor, jobs, address):
        calls.extend(tasks)
        return {t.key: Outcome(t.key, steady(t), 1.0, 1.0, 0.0, "python") for t in tasks}

    monkeypatch.setattr(check_mod, "run_tasks", run_tasks)
    monkeypatch.setattr(check_mod, "compile_once", lambda on_compile: None)
    return calls


def _fake_runner(monkeypatch, steady_by_P: dict[int, float]):
    """Runs answering a steady rate by P."""
    return _fake_runs(monkeypatch, lambda t: steady_by_P[t.scenario.P])


def _set():
    sc = build_scenario("hopper")
    return sc, optimal_splits(split_points(sc, 12), "dualpath")


def test_the_candidates_are_the_set_in_the_rules_order_then_the_runners_up_on_the_same_agents(monkeypatch):
    sc, s = _set()
    calls = _fake_runner(monkeypatch, {P: 1.0 for P in range(1, 12)})
    result = check_mod.check(s, {("hopper", "hopper"): sc}, 4)
    assert [(c.split.P, c.split.D) for c in result.checked] == [(x.P, x.D) for x in (*s.ranked, *s.runners_up)[:4]]
    assert result.checked[0].split == s.pick and len({(t.agents, t.seed) for t in calls}) == 1  # one draw: the same agents
    assert result.agents == check_mod.agents_for(12) == 4096 and {t.policy for t in calls} == {"dualpath"}


def test_one_seed_ranks_the_splits_but_never_moves_the_pick(monkeypatch):
    sc, s = _set()
    others = [x.P for x in (*s.ranked, *s.runners_up)[1:3]]
    _fake_runner(monkeypatch, {s.pick.P: 100.0, others[0]: 100.5, others[1]: 90.0})
    close = check_mod.check(s, {("hopper", "hopper"): sc}, 3)
    assert close.agrees and close.recommended == s.pick and close.runner_order[0].split.P == others[0]
    _fake_runner(monkeypatch, {s.pick.P: 100.0, others[0]: 105.0, others[1]: 90.0})
    far = check_mod.check(s, {("hopper", "hopper"): sc}, 3)
    assert not far.agrees and far.recommended == s.pick and far.lead_frac == pytest.approx(0.05)
    from dualpath_plan.report.check import verdict
    assert "on one seed; the pick" in verdict(far) and "--seeds 3" in verdict(far)


@pytest.mark.parametrize("count", [0, 11, -1])
def test_a_check_count_outside_its_range_is_refused(count):
    sc, s = _set()
    with pytest.raises(PlanError, match=r"^--check = .* is not allowed; must be a whole number >= 1 and <= 10"):
        check_mod.check(s, {("hopper", "hopper"): sc}, count)


@pytest.mark.parametrize("argv", [["bottleneck", "--profile", "hopper"], ["plan", "--profile", "hopper", "--nodes", "6"],
                                  ["sweep", "--profile", "hopper"]])
@pytest.mark.slow
def test_each_recommending_command_reports_the_runner_next_to_the_bound(capsys, argv, remembered_runs):
    code = main([*argv, "--check", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    check = {"sweep": lambda c: c["groups"][0]["modes"]["dualpath"] | {"agents": c["groups"][0]["agents"]},
             "plan": lambda c: c["dualpath"]}.get(argv[0], lambda c: c)(data["runner_check"])
    assert code == 0 and len(check["candidates"]) == 2 and check["agents"] == 2048
    first = check["candidates"][0]
    assert (first["P"], first["D"]) == (2, 4) and sorted(c["runner_rank"] for c in check["candidates"]) == [1, 2]
    # a hair above 1 is the window's edge (work done before it counts for the turns it finishes), not a broken bound
    assert all(c["sim_steady_turns_per_s"] > 0 and 0 < c["steady_over_window_bound"] < 1.02 for c in check["candidates"])
    code = main([*argv, "--check", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "Runner check" in out and "steady" in out


def test_over_several_seeds_a_lead_counts_only_when_the_intervals_are_apart(monkeypatch):
    sc, s = _set()
    other = (*s.ranked, *s.runners_up)[1].P
    values = {}
    _fake_runs(monkeypatch, lambda t: values[(t.scenario.P, t.seed)])
    values.update({(s.pick.P, 0): 100.0, (s.pick.P, 1): 110.0, (other, 0): 98.0, (other, 1): 122.0})  # 5 % ahead, overlapping
    close = check_mod.check(s, {("hopper", "hopper"): sc}, 2, seeds=2)
    assert close.seeds == (0, 1) and close.recommended == s.pick and close.runner_order[0].split.P == other
    from dualpath_plan.report.check import verdict
    assert "within the seeds' spread of the pick" in verdict(close)
    values.update({(s.pick.P, 0): 100.0, (s.pick.P, 1): 100.5, (other, 0): 110.0, (other, 1): 110.5})  # 10 % ahead, apart
    far = check_mod.check(s, {("hopper", "hopper"): sc}, 2, seeds=2)
    assert not far.agrees and far.recommended.P == other


def _modes(monkeypatch, steady: dict[tuple[str, int], float]):
    """Both modes' sets on 12 Hopper nodes, the runner answering a steady rate by (policy, P)."""
    sc = build_scenario("hopper")
    points = split_points(sc, 12)
    sets = {mode: optimal_splits(points, mode) for mode in ("basic", "dualpath")}
    calls = _fake_runs(monkeypatch, lambda t: steady.get((t.policy, t.scenario.P), 1.0))
    return sc, sets, calls


def test_both_modes_play_their_own_best_splits_on_the_same_agents(monkeypatch):
    sc, sets, calls = _modes(monkeypatch, {})
    result = check_mod.check_modes(sets, {("hopper", "hopper"): sc}, 2)
    assert list(result.checks) == ["basic", "dualpath"] and len({(t.agents, t.seed) for t in calls}) == 1  # the same agents
    assert {t.policy for t in calls} == {"basic", "dualpath"}
    for mode, check in result.checks.items():
        assert check.checked[0].split == sets[mode].pick and check.agents == result.checks["basic"].agents


def test_the_modes_verdict_confirms_or_contradicts_the_bounds_order(monkeypatch):
    from dualpath_plan.report.check import modes_json, modes_verdict

    sc, sets, _ = _modes(monkeypatch, {})
    pick = {mode: s.pick.P for mode, s in sets.items()}
    assert sets["dualpath"].pick.turns_per_s > sets["basic"].pick.turns_per_s  # the bounds put dualpath first
    _modes(monkeypatch, {("dualpath", pick["dualpath"]): 300.0, ("basic", pick["basic"]): 100.0})
    agree = check_mod.check_modes(sets, {("hopper", "hopper"): sc}, 1)
    assert agree.confirms and agree.bound_order == agree.runner_order == ("dualpath", "basic")
    assert "confirms the bounds' ranking" in modes_verdict(agree) and "3x steady" in modes_verdict(agree)
    _modes(monkeypatch, {("dualpath", pick["dualpath"]): 100.0, ("basic", pick["basic"]): 150.0})
    against = check_mod.check_modes(sets, {("hopper", "hopper"): sc}, 1)
    assert not against.confirms and against.runner_order == ("basic", "dualpath")
    assert "contradicts" in modes_verdict(against)
    data = modes_json(against)
    assert set(data) == {"basic", "dualpath", "modes"} and data["modes"]["confirms"] is False
    assert data["modes"]["best"]["basic"]["sim_steady_turns_per_s"] == 150.0


def test_with_one_playable_mode_the_answer_is_that_modes_check(monkeypatch):
    sc, sets, _ = _modes(monkeypatch, {})
    result = check_mod.check_modes({"dualpath": sets["dualpath"]}, {("hopper", "hopper"): sc}, 1)
    assert isinstance(result, check_mod.RunnerCheck) and result.policy == "dualpath"


def test_every_modes_runs_go_to_the_executor_at_once(monkeypatch):
    """One hand-over for both modes' candidates, so --jobs N runs basic's and DualPath's side by side."""
    sc, sets, _ = _modes(monkeypatch, {})
    batches = []
    original = check_mod.run_tasks
    monkeypatch.setattr(check_mod, "run_tasks", lambda tasks, *a: batches.append(len(tasks)) or original(tasks, *a))
    check_mod.check_modes(sets, {("hopper", "hopper"): sc}, 2, seeds=2)
    assert batches == [8]  # 2 modes x 2 candidates x 2 seeds


def test_one_ranking_rule_for_every_check():
    """planning.check.ranking, which the offline, online and sweep checks share: the first of equals is the runner's
    best, and only a lead past the tolerance with intervals apart moves the recommendation."""
    tie = check_mod.ranking([100.0, 100.0], [None, None], [None, None])
    assert (tie.best, tie.recommended, tie.agrees) == (0, 0, True)
    one_seed = check_mod.ranking([100.0, 120.0], [None, None], [None, None])
    assert (one_seed.best, one_seed.recommended, one_seed.agrees) == (1, 0, False) and one_seed.lead_frac == pytest.approx(0.2)
    apart = check_mod.ranking([100.0, 120.0, 110.0], [99.0, 118.0, 108.0], [101.0, 122.0, 112.0])
    assert apart.recommended == 1  # the highest of the rivals clearly ahead


def test_the_window_ratio_is_the_mean_over_seeds_of_steady_over_the_windows_own_bound():
    """The check's second ratio: each run's steady turns/s over the bound of the turns its window finished."""
    runs = [Outcome("a|seed=0", 90.0, 80.0, 10.0, 200.0, "python", steady_bound_turns_per_s=100.0),
            Outcome("a|seed=1", 120.0, 80.0, 10.0, 200.0, "python", steady_bound_turns_per_s=150.0)]
    assert check_mod.window_ratio(runs) == pytest.approx((0.9 + 0.8) / 2)
    assert check_mod.window_ratio([*runs, Outcome("a|seed=2", 1.0, 1.0, 1.0, 1.0, "python")]) is None  # a run without one: none
    again = Outcome.from_json(runs[0].as_json())
    assert again == runs[0] and Outcome.from_json({k: v for k, v in runs[0].as_json().items() if k != "steady_bound_turns_per_s"}) \
        .steady_bound_turns_per_s is None  # a journal written before the field reads back without it


@pytest.mark.slow
def test_plan_check_json_carries_the_window_ratio_next_to_the_workloads(capsys):
    code = main(["plan", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k", "--nodes", "3", "--alternatives", "0",
                 "--check", "1", "--json"])
    data = json.loads(capsys.readouterr().out)["runner_check"]
    for mode in ("dualpath", "basic"):
        c = data[mode]["candidates"][0]
        # work done before the window counts for the turns it finishes: a hair above 1 is its edge, not a broken bound
        assert code == 0 and 0.5 < c["steady_over_window_bound"] < 1.02 and 0 < c["steady_over_workload_bound"]


def test_a_traces_agents_start_at_zero_in_a_check_and_keep_their_tool_time(monkeypatch):
    from dualpath_plan.model.workload import trace_name

    sc = build_scenario("hopper", workload=trace_name("examples/trace-v2-example.jsonl", time_scale=2.0, tool_scale=0.5))
    calls = _fake_runs(monkeypatch, lambda t: 1.0)
    check_mod.check(optimal_splits(split_points(sc, 12), "dualpath"), {("hopper", "hopper"): sc}, 2)
    assert {t.scenario.workload.trace[2:] for t in calls} == {(0.0, 0.5)}  # starts at 0, tool time as asked
    assert check_mod.from_zero(build_scenario("hopper")) == build_scenario("hopper")  # a synthetic workload as it is


def test_a_forking_traces_sub_agents_are_named_beside_the_root_sessions(monkeypatch):
    from dataclasses import replace

    from dualpath_plan.report.check import agents_text, check_json

    sc, s = _set()
    _fake_runner(monkeypatch, {P: 1.0 for P in range(1, 12)})
    result = check_mod.check(s, {("hopper", "hopper"): sc}, 2)
    assert agents_text(result) == "4,096 agents" and check_json(result)["agents_served"] is None  # the fake runs count none
    forked = replace(result, checked=tuple(replace(c, runs=tuple(replace(r, agents=5000) for r in c.runs)) for c in result.checked))
    assert agents_text(forked) == "4,096 root sessions (5,000 agents with their sub-agents)" and check_json(forked)["agents_served"] == 5000


def test_modes_whose_bounds_tie_are_ranked_by_the_runner_without_a_contradiction(monkeypatch):
    from dataclasses import replace

    from dualpath_plan.report.check import modes_verdict

    sc, s = _set()
    _fake_runs(monkeypatch, lambda t: 200.0 if t.policy == "dualpath" else 100.0)
    same = {"basic": s, "dualpath": s}  # one set for both modes: the picks' bounds are equal
    result = check_mod.check_modes(same, {("hopper", "hopper"): sc}, 1)
    assert result.bounds_tie and result.confirms and result.runner_order[0] == "dualpath"
    assert "the bounds tie" in modes_verdict(result) and "the runner puts dualpath first (2x steady)" in modes_verdict(result)
    lower = replace(s, ranked=tuple(replace(x, bound=replace(x.bound, turns_per_s=x.turns_per_s / 2)) for x in s.ranked))
    apart = check_mod.check_modes({"basic": s, "dualpath": lower}, {("hopper", "hopper"): sc}, 1)
    assert not apart.bounds_tie and not apart.confirms and "contradicts" in modes_verdict(apart)


def test_a_check_of_one_split_says_it_has_nothing_to_rank_and_a_light_load_is_named(monkeypatch):
    from dualpath_plan.report.check import light_load_note, verdict

    sc, s = _set()
    _fake_runner(monkeypatch, {P: 1.0 for P in range(1, 12)})
    one = check_mod.check(s, {("hopper", "hopper"): sc}, 1)
    assert "played the pick" in verdict(one) and "nothing to rank it against" in verdict(one) and "stands" not in verdict(one)
    assert "at most 10.0 %" in light_load_note([0.05, 0.1, None]) and light_load_note([0.3, 0.6]) is None and light_load_note([None]) is None


def test_splits_whose_runs_stay_short_of_their_window_bound_are_named():
    from dualpath_plan.report.check import short_of_bound_note

    note = short_of_bound_note([("dualpath 6P9D", 0.533), ("basic 8P7D", 0.729), ("dualpath 5P10D", 0.95), ("x", None)])
    assert note is not None and "on basic 8P7D (72.9 %), dualpath 6P9D (53.3 %)" not in note  # in the order given
    assert "on dualpath 6P9D (53.3 %), basic 8P7D (72.9 %):" in note and "5P10D" not in note
    assert short_of_bound_note([("a", 0.95), ("b", 0.998)]) is None
    assert short_of_bound_note([("a", 0.1), ("b", 0.2)]) is None  # a light load: the light-load note says it instead


@pytest.mark.parametrize("argv", [["bottleneck", "--profile", "hopper"], ["plan", "--profile", "hopper", "--nodes", "6"]])
def test_a_check_with_a_dram_tier_plays_it_and_without_it_and_says_which_the_runner_prefers(monkeypatch, capsys, argv):
    calls = _fake_runs(monkeypatch, lambda t: 100.0)
    monkeypatch.setattr(check_mod, "run_tasks", lambda tasks, *a: calls.extend(tasks) or {
        t.key: Outcome(t.key, 90.0 if t.scenario.dram_tier_GB else 100.0, 80.0, 1.0, 120.0, "python", steady_bound_turns_per_s=110.0,
                       tier_share=0.25 if t.scenario.dram_tier_GB else None, bound_tier_share=0.5 if t.scenario.dram_tier_GB else None)
        for t in tasks})
    code = main([*argv, "--dram-tier", "100", "--check", "1"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0 and {t.scenario.dram_tier_GB for t in calls} == {100.0, None}
    assert "the DRAM tier's LRU served this share of the steady window's hit KV: " in out and "25.0 % (the bound of its run's turns: 50.0 %)" in out
    assert "with the 100 GB tier" in out and "Runner check without the tier" in out
    assert "90 turns/s steady with it against" in out and "100 turns/s without (0.9x): the tier lowers the runner's throughput here" in out
    data = json.loads(main([*argv, "--dram-tier", "100", "--check", "1", "--json"]) or capsys.readouterr().out)
    plain = data["runner_check_without_tier"]
    first = (plain.get("dualpath") or plain)["candidates"][0]
    assert first["sim_steady_turns_per_s"] == 100.0 and first["steady_tier_share"] is None
    assert "the tier lowers the runner's throughput here" in data["runner_tier_verdict"]
    checked = data["runner_check"].get("dualpath") or data["runner_check"]
    assert any("the DRAM tier's LRU served" in note for note in checked["notes"])  # the text's notes, in --json too


def test_compare_checks_each_generation_without_the_tier_and_with_it(monkeypatch, capsys):
    calls = _fake_runs(monkeypatch, lambda t: 100.0)
    code = main(["compare", "--profile", "hopper", "--dram-tier", "100", "--check", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and sorted(data["runner_check"]) == ["hopper", "hopper with the 100 GB tier"]
    assert {t.scenario.dram_tier_GB for t in calls} == {None, 100.0}
    main(["compare", "--profile", "hopper", "--dram-tier", "100", "--check", "1"])
    out = " ".join(capsys.readouterr().out.split())
    assert "hopper: Runner, with the 100 GB tier and without:" in out and "the tier leaves level" in out  # every fake run: 100 turns/s
    main(["compare", "--profile", "hopper", "--dram-tier", "100", "--check", "1", "--json"])
    assert "the tier leaves level" in json.loads(capsys.readouterr().out)["runner_tier_verdicts"]["hopper"]


def test_an_outcome_keeps_its_tier_shares_through_a_journal():
    one = Outcome("k", 1.0, 1.0, 2.0, 3.0, "compiled", None, 8, 2.5, 0.25, 0.5)
    assert Outcome.from_json(json.loads(json.dumps(one.as_json()))) == one
    with pytest.raises(ValueError, match="share"):
        Outcome.from_json(one.as_json() | {"tier_share": 1.5})
