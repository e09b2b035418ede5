"""A grid's runner check (planning.gridcheck): candidates in the rule's order, means over seeds, the runner's order,
and a verdict that moves the pick only when the seeds' intervals are apart (as planning.check does)."""

from __future__ import annotations

import numpy as np

from dualpath_plan.planning.executor import Outcome
from dualpath_plan.planning.gridcheck import CHECKED_MODE, pending, plan_checks, row_checks, verdicts
from dualpath_plan.planning.gridsweep import build, make_axes


def _grid():
    return build(make_axes(("hopper",), budgets={"nodes": "24"})).grid


def _outcomes(plan, steady_by_rank_and_seed):
    grid_rank = {r: i for i, r in enumerate(plan.rows)}
    out = {}
    for r in plan.rows:
        for s in plan.seeds:
            key = plan.task_of(r, s)
            out[key] = Outcome(key, steady_by_rank_and_seed[(grid_rank[r], s)], 1.0, 10.0, 2.0, "python")
    return out


def test_candidates_are_each_groups_first_k_in_the_rules_order():
    g = _grid()
    plan = plan_checks(g, 3, seeds=2)
    assert [int(g.modes[CHECKED_MODE].rank[r]) for r in plan.rows] == [0, 1, 2] and len(plan.tasks) == 6
    assert plan.agents == {0: 4096}  # 1,024 agents per 6 nodes, the density of simulate's default run


def test_a_lead_within_the_seeds_spread_leaves_the_pick():
    g = _grid()
    plan = plan_checks(g, 2, seeds=2)
    outcomes = _outcomes(plan, {(0, 0): 100.0, (0, 1): 110.0, (1, 0): 98.0, (1, 1): 122.0})  # 5 % ahead, overlapping
    checks = row_checks(g, plan, outcomes)
    v = verdicts(g, checks)[0]
    assert checks[plan.rows[1]].runner_rank == 0 and not v.agrees and v.recommended == plan.rows[0]
    assert np.isclose(checks[plan.rows[0]].steady_turns_per_s, 105.0)


def test_a_lead_with_intervals_apart_moves_the_recommendation():
    g = _grid()
    plan = plan_checks(g, 2, seeds=2)
    outcomes = _outcomes(plan, {(0, 0): 100.0, (0, 1): 100.5, (1, 0): 110.0, (1, 1): 110.5})
    v = verdicts(g, row_checks(g, plan, outcomes))[0]
    assert v.recommended == plan.rows[1] and v.best == plan.rows[1]


def test_one_seed_never_moves_the_pick():
    g = _grid()
    plan = plan_checks(g, 2, seeds=1)
    v = verdicts(g, row_checks(g, plan, _outcomes(plan, {(0, 0): 100.0, (1, 0): 150.0})))[0]
    assert not v.agrees and v.recommended == plan.rows[0]


def test_earlier_checks_stand_in_for_their_runs():
    g = _grid()
    plan = plan_checks(g, 2, seeds=1)
    done = row_checks(g, plan, _outcomes(plan, {(0, 0): 100.0, (1, 0): 90.0}))
    earlier = {c.key: c for c in done.values()}
    assert pending(plan, {}, earlier) == [] and row_checks(g, plan, {}, earlier) == done
    assert len(pending(plan_checks(g, 2, seeds=2), {}, earlier)) == 4  # other seeds: nothing stands in
