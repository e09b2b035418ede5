"""sweep --check K --online (planning.gridonline): each checked cell's capacity search, all of them in rounds on the
executor's workers, a journal that stands in for every probe it holds, and the capacities' ranking of the modes."""

from __future__ import annotations

import json

import pytest

from dualpath_plan.cli import main
from dualpath_plan.planning import gridonline
from dualpath_plan.planning.executor import Outcome
from dualpath_plan.planning.gridcheck import modes_verdicts, verdicts
from dualpath_plan.planning.gridsweep import build, make_axes
from dualpath_plan.report import grid as rows
from dualpath_plan.sim.search import Bracket


def _sweep():
    return build(make_axes(("hopper",), budgets={"nodes": "24"}))


def _fake(monkeypatch, share: dict[str, float]):
    """Probes replaced: a probe keeps the SLO when its rate is at most ``share`` (by policy) of its search's bound, which
    ``bound_aps`` reports per search key. Returns the probes run, round by round."""
    bounds, played = {}, []
    real = gridonline.bound_aps

    def bound_aps(scenario, source, mode, spec, sim):
        value = real(scenario, source, mode, spec, sim)
        bounds[(mode, scenario.P, scenario.D)] = value
        return value

    def run_tasks(tasks, executor, jobs, address, on_done=None, on_start=None):
        played.append([t.key for t in tasks])
        out = {}
        for t in tasks:
            ok = t.online.aps <= share[t.policy] * bounds[(t.policy, t.scenario.P, t.scenario.D)]
            out[t.key] = Outcome(t.key, 1.0, 1.0, None, 0.0, "python", ok, 100)
            if on_done is not None:
                on_done(out[t.key])
        return out

    monkeypatch.setattr(gridonline, "bound_aps", bound_aps)
    monkeypatch.setattr(gridonline, "run_tasks", run_tasks)
    return played


def test_each_cell_and_seed_is_one_search_that_probes_as_find_capacity_does(monkeypatch):
    share = {"dualpath": 0.97, "basic": 0.6}
    _fake(monkeypatch, share)
    checked = gridonline.checked_online(_sweep(), 2, seeds=2, engine="python", width=1)
    assert len(checked.checks) == 4 and checked.plan.slo is not None and checked.plan.tasks == ()
    for (r, mode), c in checked.checks.items():
        alone = Bracket(c.bound_aps)
        while rates := alone.rates(1):
            alone = alone.after([(x, x <= share[mode] * c.bound_aps) for x in rates])
        assert c.online and c.seeds == 2 and c.capacity_aps == pytest.approx(alone.lo)  # both seeds' probes agree here
        assert c.over_bound == pytest.approx(alone.lo / c.bound_aps) and c.probes == 2 * len(alone.probes)
        assert c.every_probe_met is (share[mode] >= 0.95)


def test_the_capacities_rank_the_modes_against_their_bounds_at_the_slo(monkeypatch):
    _fake(monkeypatch, {"dualpath": 0.97, "basic": 0.97})
    sweep = gridonline.checked_online(_sweep(), 1, engine="python", width=2)
    v = modes_verdicts(sweep.grid, sweep.checks)[0]
    assert v.bound_order == v.runner_order == ("dualpath", "basic") and v.confirms
    _fake(monkeypatch, {"dualpath": 0.2, "basic": 0.97})  # dualpath keeps the SLO to a fifth of its bound only
    sweep = gridonline.checked_online(_sweep(), 1, engine="python", width=2)
    v = modes_verdicts(sweep.grid, sweep.checks)[0]
    assert v.runner_order == ("basic", "dualpath") and not v.confirms
    assert verdicts(sweep.grid, sweep.checks)[(0, "dualpath")].alone


def test_a_journal_stands_in_for_every_probe_it_holds(monkeypatch):
    share = {"dualpath": 0.7, "basic": 0.6}
    played = _fake(monkeypatch, share)
    kept = {}
    whole = gridonline.checked_online(_sweep(), 1, engine="python", width=2, on_done=lambda o: kept.setdefault(o.key, o))
    first_rounds = {k: kept[k] for r in played[:2] for k in r}  # interrupted after two rounds
    played.clear()
    resumed = gridonline.checked_online(_sweep(), 1, engine="python", width=2, done=first_rounds)
    assert resumed.checks == whole.checks
    ran = [k for r in played for k in r]
    assert first_rounds and not set(ran) & set(first_rounds) and len(ran) == len(kept) - len(first_rounds)


def test_a_journal_of_another_sweep_is_refused(monkeypatch):
    _fake(monkeypatch, {"dualpath": 0.7, "basic": 0.6})
    other = {"elsewhere|seed=0|aps=1.0": Outcome("elsewhere|seed=0|aps=1.0", 1.0, 1.0, None, 0.0, "python", True, 1)}
    with pytest.raises(Exception, match="all of another sweep"):
        gridonline.checked_online(_sweep(), 1, engine="python", done=other)


def test_the_row_files_carry_the_online_columns_and_resume_from_them(monkeypatch, tmp_path):
    played = _fake(monkeypatch, {"dualpath": 0.97, "basic": 0.6})
    sweep = gridonline.checked_online(_sweep(), 1, seeds=2, engine="python", width=2)
    for name, flag in (("rows.csv", "--csv"), ("rows.json", "--json-file")):
        path = tmp_path / name
        rows.finish(sweep, [(flag, path)])
        back = rows.earlier_checks(path, flag)
        assert {c.key: c for c in sweep.checks.values()} == back
        data = rows.read_rows(path, flag)
        checked = [row for row in data if row["check_key"] not in (None, "")]
        assert len(checked) == 2 and all(row["check_steady_turns_per_s"] in (None, "") for row in checked)
        assert all(float(row["check_ttft_slo_s"]) == 4.0 and float(row["check_capacity_agents_per_s"]) > 0 for row in checked)
        played.clear()
        again = gridonline.checked_online(_sweep(), 1, seeds=2, engine="python", width=2, earlier=back)
        assert again.checks == sweep.checks and played == []  # every cell kept: nothing probed


@pytest.mark.slow
def test_sweep_check_online_prints_both_modes_capacities(capsys):
    """Real probes of both modes' picks of 3 nodes (llama-3.1-8b), as plan's online check test plays them."""
    code = main(["sweep", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k", "--nodes", "3", "--check", "1",
                 "--online", "--ttft-slo-s", "3", "--jobs", "2", "--json"])
    data = json.loads(capsys.readouterr().out)["runner_check"]
    assert code == 0 and data["online"] == {"ttft_slo_s": 3.0, "tpot_slo_s": 0.05}
    group = data["groups"][0]
    for mode in ("dualpath", "basic"):
        c = group["modes"][mode]["candidates"][0]
        assert 0 < c["capacity_agents_per_s"] <= c["bound_at_slo_agents_per_s"] and c["probes"] >= 1
    assert set(group["bound_order"]) == {"dualpath", "basic"} and isinstance(group["confirms"], bool)


@pytest.mark.parametrize(("argv", "message"), [
    (["--online"], "--online is not allowed without --check"),
    (["--check", "1", "--ttft-slo-s", "2"], "--ttft-slo-s = 2.0 s is not allowed without --online"),
    (["--check", "1", "--online", "--ttft-slo-s", "0"], "--ttft-slo-s = 0"),
])
def test_online_flags_that_mean_nothing_without_another_are_refused_naming_both(capsys, argv, message):
    code = main(["sweep", "--profile", "hopper", "--nodes", "6", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err


@pytest.mark.slow
def test_families_that_differ_by_their_workloads_data_set_search_their_own_bounds():
    """A --set on the workload keeps its name: the first family's data set stood for both before (its bound and horizon)."""
    from dualpath_plan.model.workload import source_of
    from dualpath_plan.planning.online import slo_of
    from dualpath_plan.sim.runner import probe_spec

    sweep = build(make_axes(("hopper",), models=("llama-3.1-8b",), workloads=("agentic-32k",), budgets={"nodes": "3"},
                            sets=("trajectories=100,500",)))
    plan = gridonline.plan_online(sweep, 1, 1, slo_of(sweep.grid.options))
    searches = gridonline._searches(sweep, plan, set(), "python", None, gridonline.REL_TOL, gridonline.MAX_ROUNDS)
    horizons = {}
    for s in searches:
        fam = sweep.grid.families[sweep.grid.groups[int(sweep.grid.group[s.index])].family]
        horizons.setdefault(s.spec.horizon_s, set()).add(fam.sets)
        assert s.spec.horizon_s == probe_spec(source_of(fam.scenario.workload, None), plan.slo).horizon_s
    assert len(horizons) == 2
