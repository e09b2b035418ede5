"""--check K --online (planning.online): every candidate's capacity search, the probes of all of them in rounds on
the executor's workers, and the capacities' ranking of the splits and of the modes."""

from __future__ import annotations

import json

import pytest

from dualpath_plan.cli import main
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning import online as online_mod
from dualpath_plan.planning.check import Where
from dualpath_plan.planning.executor import Outcome
from dualpath_plan.planning.sweep import optimal_splits, split_points
from dualpath_plan.sim.runner import OnlineSpec
from dualpath_plan.sim.search import Bracket


def _fake(monkeypatch, share: dict[tuple[str, int], float]):
    """Probes replaced: a probe keeps the SLO when its rate is at most ``share`` of its search's bound (by policy and P)."""
    rounds = []

    def play(tasks, where, python_s, on_compile=None):
        rounds.append(tasks)
        return {t.key: Outcome(t.key, 1.0, 1.0, None, 0.0, "python", t.online.aps <= share[(t.policy, t.scenario.P)] * _bound(t), 10)
                for t in tasks}

    monkeypatch.setattr(online_mod, "play", play)
    return rounds


BOUNDS: dict[tuple[str, int], float] = {}


def _bound(task) -> float:
    return BOUNDS[(task.policy, task.scenario.P)]


def _sets(count: int = 12):
    sc = build_scenario("hopper")
    points = split_points(sc, count)
    return sc, {mode: optimal_splits(points, mode) for mode in ("dualpath", "basic")}


def _check(monkeypatch, share, width, count=1, sets=None):
    sc, sets = _sets() if sets is None else sets
    real = online_mod.bound_for

    def bound_for(scenario, source, policy, options):  # remember each search's bound, so the fake can answer by it
        b = real(scenario, source, policy, options)
        BOUNDS[(policy.value, scenario.P)] = b.turns_per_s / source.summary().mean_turns
        return b

    monkeypatch.setattr(online_mod, "bound_for", bound_for)
    rounds = _fake(monkeypatch, share)
    result = online_mod.check_online(sets, {("hopper", "hopper"): sc}, count, OnlineSpec(1.0), width=width)
    return result, rounds, sets


def _shares(sets, value_of):
    return {(online_mod.POLICY[m], s.P): value_of(m, s) for m, o in sets.items() for s in o.candidates(3)}


def test_with_one_worker_each_search_probes_as_find_capacity_does(monkeypatch):
    sc, sets = _sets()
    share = _shares(sets, lambda m, s: 0.7 if m == "basic" else 0.97)
    result, rounds, _ = _check(monkeypatch, share, 1, sets=(sc, sets))
    for mode, m in result.modes.items():
        c = m.searched[0]
        alone = Bracket(c.bound_aps)
        while rates := alone.rates(1):
            alone = alone.after([(r, r <= share[(m.policy, c.split.P)] * c.bound_aps) for r in rates])
        assert c.brackets[0].probes == alone.probes
    lengths = [len(m.searched[0].brackets[0].probes) for m in result.modes.values()]
    assert result.rounds == max(lengths) and [len(r) for r in rounds][:min(lengths)] == [2] * min(lengths)  # one probe per search a round


def test_workers_run_the_searches_side_by_side_and_spare_ones_split_a_bracket_finer(monkeypatch):
    sc, sets = _sets()
    share = _shares(sets, lambda m, s: 0.62)
    one, _, _ = _check(monkeypatch, share, 1, sets=(sc, sets))
    two, rounds, _ = _check(monkeypatch, share, 2, sets=(sc, sets))
    eight, wide, _ = _check(monkeypatch, share, 8, sets=(sc, sets))
    assert len(rounds[0]) == 2 and two.rounds == one.rounds  # two searches: one probe each a round, side by side
    assert len(wide[1]) == 8 and eight.rounds < two.rounds  # four probes each a round: a 5-section of each bracket
    for result in (one, two, eight):
        for m in result.modes.values():
            c = m.searched[0]
            assert c.brackets[0].lo <= 0.62 * c.bound_aps < c.brackets[0].top  # the capacity inside every bracket


def test_the_capacities_rank_the_modes_against_the_bounds(monkeypatch):
    from dualpath_plan.report.check import online_json, online_modes_verdict

    sc, sets = _sets()
    near = _shares(sets, lambda m, s: 0.97)
    result, _, _ = _check(monkeypatch, near, 2, sets=(sc, sets))
    assert result.bound_order == result.runner_order == ("dualpath", "basic") and result.confirms
    assert "confirm the bounds' ranking" in online_modes_verdict(result)
    starved = _shares(sets, lambda m, s: 0.97 if m == "basic" else 0.2)  # dualpath keeps the SLO to a fifth of its bound
    result, _, _ = _check(monkeypatch, starved, 2, sets=(sc, sets))
    assert result.runner_order == ("basic", "dualpath") and not result.confirms
    data = online_json(result)
    assert data["modes"]["confirms"] is False and set(data) >= {"dualpath", "basic", "rounds", "workers"}
    assert data["dualpath"]["candidates"][0]["capacity_over_bound"] < 0.25


def test_a_rival_with_a_higher_capacity_ranks_first_but_one_seed_keeps_the_pick(monkeypatch):
    sc, sets = _sets()
    rival = sets["dualpath"].candidates(2)[1].P
    share = _shares(sets, lambda m, s: 0.97 if s.P == rival else 0.5)
    result, _, _ = _check(monkeypatch, share, 4, count=2, sets=(sc, sets))
    m = result.modes["dualpath"]
    assert m.order[0].split.P == rival and not m.agrees and m.recommended == sets["dualpath"].pick
    from dualpath_plan.report.check import online_verdict

    assert "agents/s within the SLO against" in online_verdict(m, 1) and "on one seed; the pick" in online_verdict(m, 1)


@pytest.mark.slow
def test_the_probes_run_on_worker_processes_give_what_this_process_gives():
    """Real probes of both modes' picks of 3 nodes (llama-3.1-8b): the same brackets whichever process ran them."""
    sc = build_scenario("hopper", model="llama-3.1-8b", workload="agentic-32k")
    points = split_points(sc, 3)
    sets = {mode: optimal_splits(points, mode) for mode in ("dualpath", "basic")}
    here = online_mod.check_online(sets, {("hopper", "hopper"): sc}, 1, OnlineSpec(1.0), width=2, rel_tol=0.2, max_rounds=2)
    there = online_mod.check_online(sets, {("hopper", "hopper"): sc}, 1, OnlineSpec(1.0), where=Where(jobs=2), width=2, rel_tol=0.2,
                                    max_rounds=2)
    assert here.modes == there.modes and here.rounds == there.rounds
    assert all(0 < c.capacity_aps <= c.bound_aps for m in here.modes.values() for c in m.searched)


@pytest.mark.slow
def test_plan_check_online_prints_both_modes_capacities(capsys):
    code = main(["plan", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k", "--nodes", "3", "--alternatives", "0",
                 "--check", "1", "--online", "--ttft-slo-s", "3", "--jobs", "2", "--json"])
    data = json.loads(capsys.readouterr().out)["runner_check"]
    assert code == 0 and data["mode"] == "online" and data["workers"] == 2 and data["ttft_slo_s"] == 3.0
    assert all(len(data[m]["candidates"]) == 1 and data[m]["candidates"][0]["capacity_aps"] > 0 for m in ("dualpath", "basic"))
    assert set(data["modes"]["bound_order"]) == {"dualpath", "basic"}


@pytest.mark.parametrize(("argv", "message"), [
    (["--check", "1", "--ttft-slo-s", "2"], "--ttft-slo-s = 2.0 s is not allowed without --online"),
    (["--online"], "--online is not allowed without --check"),
    (["--jobs", "2"], "--jobs = 2 is not allowed without --check"),
    (["--check", "1", "--online", "--ttft-slo-s", "0"], "--ttft-slo-s = 0"),
    (["--check", "1", "--jobs", "2", "--executor", "ray"], "--jobs = 2 is not allowed with --executor ray"),
])
def test_flags_that_mean_nothing_without_another_are_refused_naming_both(capsys, argv, message):
    code = main(["plan", "--profile", "hopper", "--nodes", "6", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err


def test_a_search_of_one_split_says_it_has_nothing_to_rank():
    from types import SimpleNamespace

    from dualpath_plan.report.check import online_verdict

    split = SimpleNamespace(pe_profile="hopper", de_profile="hopper", P=2, D=4)
    mode = SimpleNamespace(searched=[SimpleNamespace(split=split, capacity_aps=1.153)])
    assert online_verdict(mode, 1) == "the pick 2P4D alone was searched (1.153 agents/s within the SLO): nothing to rank it against."


def test_an_online_check_of_one_mode_neither_ties_nor_fails():
    from types import SimpleNamespace

    from dualpath_plan.planning.online import OnlineCheck

    split = SimpleNamespace(pe_profile="hopper", de_profile="hopper", P=1, D=3)
    one = SimpleNamespace(searched=[SimpleNamespace(split=split, bound_aps=1.0, capacity_aps=0.9)], best=SimpleNamespace(capacity_aps=0.9))
    check = OnlineCheck(slo=None, seeds=(0,), modes={"dualpath": one}, rounds=1, workers=1, rel_tol=0.01)
    assert check.bounds_tie is False and check.confirms  # bottleneck --check --online --json plays DualPath alone
