"""A grid's runner check (planning.gridcheck): each mode's candidates in the rule's order, means over seeds, the
runner's order, a verdict that moves the pick only when the seeds' intervals are apart (as planning.check does), and
the runner's order of the modes against the bounds'."""

from __future__ import annotations

import numpy as np

from dualpath_plan.planning.executor import Outcome
from dualpath_plan.planning.gridcheck import CHECKED_MODES, modes_verdicts, pending, plan_checks, row_checks, verdicts
from dualpath_plan.planning.gridsweep import build, make_axes


def _grid():
    return build(make_axes(("hopper",), budgets={"nodes": "24"})).grid


def _outcomes(plan, steady_by_rank_and_seed, other=None):
    """Outcomes of every task: the dualpath cells' steady turns/s by (rank, seed), the basic cells' by ``other``
    (default: half the dualpath numbers)."""
    out = {}
    for mode in plan.modes:
        cells = [c for c in plan.rows if c[1] == mode]
        for rank, cell in enumerate(cells):
            for s in plan.seeds:
                key = plan.task_of(cell, s)
                value = steady_by_rank_and_seed[(rank, s)] if mode == "dualpath" else (other or {}).get((rank, s), steady_by_rank_and_seed[(rank, s)] / 2)
                out[key] = Outcome(key, value, 1.0, 10.0, 2.0, "python")
    return out


def _dualpath(plan):
    return [c for c in plan.rows if c[1] == "dualpath"]


def test_candidates_are_each_groups_first_k_of_each_mode_in_the_rules_order():
    g = _grid()
    plan = plan_checks(g, 3, seeds=2)
    assert plan.modes == CHECKED_MODES == ("dualpath", "basic") and len(plan.tasks) == 12
    for mode in plan.modes:
        assert [int(g.modes[mode].rank[r]) for r, m in plan.rows if m == mode] == [0, 1, 2]
    assert plan.agents == {0: 8192}  # 2,048 agents per 6 nodes, the paper's 2P4D runs
    assert len({plan.row_keys[c] for c in plan.rows}) == 6  # a configuration in each mode is its own cell: its policy in the key


def test_the_modes_verdict_ranks_each_modes_recommended_split_against_the_bounds():
    g = _grid()
    plan = plan_checks(g, 1, seeds=1)
    bound_first = max(CHECKED_MODES, key=lambda m: float(g.modes[m].turns_per_s[g.modes[m].rank == 0][0]))
    same = modes_verdicts(g, row_checks(g, plan, _outcomes(plan, {(0, 0): 100.0}, {(0, 0): 50.0})))[0]
    flipped = modes_verdicts(g, row_checks(g, plan, _outcomes(plan, {(0, 0): 100.0}, {(0, 0): 150.0})))[0]
    assert same.bound_order[0] == bound_first == "dualpath" and same.confirms
    assert flipped.runner_order == ("basic", "dualpath") and not flipped.confirms


def test_a_lead_within_the_seeds_spread_leaves_the_pick():
    g = _grid()
    plan = plan_checks(g, 2, seeds=2)
    outcomes = _outcomes(plan, {(0, 0): 100.0, (0, 1): 110.0, (1, 0): 98.0, (1, 1): 122.0})  # 5 % ahead, overlapping
    checks = row_checks(g, plan, outcomes)
    v = verdicts(g, checks)[(0, "dualpath")]
    rows = _dualpath(plan)
    assert checks[rows[1]].runner_rank == 0 and not v.agrees and v.recommended == rows[0][0]
    assert np.isclose(checks[rows[0]].steady_turns_per_s, 105.0)


def test_a_lead_with_intervals_apart_moves_the_recommendation():
    g = _grid()
    plan = plan_checks(g, 2, seeds=2)
    outcomes = _outcomes(plan, {(0, 0): 100.0, (0, 1): 100.5, (1, 0): 110.0, (1, 1): 110.5})
    v = verdicts(g, row_checks(g, plan, outcomes))[(0, "dualpath")]
    assert v.recommended == _dualpath(plan)[1][0] and v.best == _dualpath(plan)[1][0]


def test_one_seed_never_moves_the_pick():
    g = _grid()
    plan = plan_checks(g, 2, seeds=1)
    v = verdicts(g, row_checks(g, plan, _outcomes(plan, {(0, 0): 100.0, (1, 0): 150.0})))[(0, "dualpath")]
    assert not v.agrees and v.recommended == _dualpath(plan)[0][0]


def test_earlier_checks_stand_in_for_their_runs():
    g = _grid()
    plan = plan_checks(g, 2, seeds=1)
    done = row_checks(g, plan, _outcomes(plan, {(0, 0): 100.0, (1, 0): 90.0}))
    earlier = {c.key: c for c in done.values()}
    assert pending(plan, {}, earlier) == [] and row_checks(g, plan, {}, earlier) == done
    assert len(pending(plan_checks(g, 2, seeds=2), {}, earlier)) == 8  # other seeds: nothing stands in


def test_a_cells_window_ratio_is_the_mean_over_its_seeds():
    g = _grid()
    plan = plan_checks(g, 1, seeds=2)
    outcomes = {}
    for cell in plan.rows:
        for s, (steady, window) in zip(plan.seeds, ((90.0, 100.0), (80.0, 80.0))):  # ratios 0.9 and 1.0; of the means 170/180
            key = plan.task_of(cell, s)
            outcomes[key] = Outcome(key, steady, 1.0, 10.0, 200.0, "python", steady_bound_turns_per_s=window)
    checks = row_checks(g, plan, outcomes)
    assert all(np.isclose(c.over_window_bound, 0.95) and np.isclose(c.over_bound, 85.0 / float(g.modes[m].turns_per_s[r]))
               for (r, m), c in checks.items())


def test_a_cell_counts_the_agents_its_first_seed_served_beside_the_root_sessions_drawn():
    from dataclasses import replace

    from dualpath_plan.report.gridview import _agents_cell

    g = _grid()
    plan = plan_checks(g, 1, seeds=2)
    outcomes = {}
    for cell in plan.rows:
        for s, served in zip(plan.seeds, (3030, 2900)):  # each seed's draw brings its own sub-agents
            key = plan.task_of(cell, s)
            outcomes[key] = Outcome(key, 100.0, 1.0, 10.0, 200.0, "python", agents=served)
    checks = row_checks(g, plan, outcomes)
    assert {c.agents_served for c in checks.values()} == {3030}
    one = next(iter(checks.values()))
    assert _agents_cell(one) == f"{one.agents:,} root sessions (3,030 with their sub-agents in the first seed's draw)"
    assert _agents_cell(replace(one, agents_served=one.agents)) == f"{one.agents:,}"
    earlier = {c.key: c for c in checks.values()}
    assert row_checks(g, plan, {}, earlier) == checks  # a resumed check keeps it
