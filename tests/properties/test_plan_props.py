"""Invariants of the procurement answers (plan.py) on random node types, models and small budgets: the search
from the frontier (frontier.budget_ranked) against brute force and against the MILP it stands for."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dualpath_plan.bounds import lp
from dualpath_plan.model.errors import PlanError
from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.compute import min_prefill_nodes
from dualpath_plan.planning import plan as planning
from dualpath_plan.planning.frontier import budget_frontier, budget_ranked
from dualpath_plan.planning.plan import plan
from dualpath_plan.planning.request import Budget, PlanRequest
from tests.properties.strategies_lp import scenarios

REL_TOL = 1e-6  # relative; MILP gap 1e-9 plus the 1e-7 tie-break toward cheaper clusters
ABS_TOL = 1e-9  # turns/s, for clusters that make nothing
EXAMPLES = 15  # each example solves ~30 LPs and a few MILPs


def _brute_force(sc, budget: int, mode: str) -> float:
    limits = [lp.limits_of(sc.with_nodes(P, D)) for P in range(1, budget) for D in range(1, budget - P + 1)]
    return max(b.turns_per_s for b in lp.solve_many(limits, mode))


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(scenarios(), st.integers(2, 8))
def test_milp_is_optimal_against_brute_force(sc, budget):
    """The MILP's best (P, D) within a node budget makes as many turns/s as the best of all (P, D);
    when it refuses (nothing in budget serves the model) every (P, D) makes zero."""
    request = PlanRequest((sc,), Budget("nodes", budget), alternatives=0)
    try:
        answers = plan(request)
    except PlanError:
        assert all(_brute_force(sc, budget, mode) <= ABS_TOL for mode in request.modes)
        return
    for mode, answer in answers.items():
        best = _brute_force(sc, budget, mode)
        assert abs(answer.best.turns_per_s - best) <= REL_TOL * best + ABS_TOL


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(scenarios(), st.integers(3, 40))
def test_milp_never_exceeds_its_lp_relaxation(sc, budget):
    """Dropping integrality can only help: the whole-number optimum <= the LP relaxation."""
    try:
        answers = plan(PlanRequest((sc,), Budget("nodes", budget), alternatives=0))
    except PlanError as exc:  # the one refusal a budget of >= 2 nodes can meet: decode cannot run
        assert "decode" in str(exc)
        return
    for answer in answers.values():
        assert answer.best.turns_per_s <= answer.relaxation * (1 + REL_TOL) + ABS_TOL


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(scenarios(), st.integers(2, 9), st.integers(1, 6))
def test_the_ranked_splits_are_the_best_of_all_splits_within_the_budget(sc, budget, count):
    """The search's k best bounds are the k best of every (P, D) in budget (to the 1e-7 tie-break), best first."""
    p_min = min_prefill_nodes(sc.model, sc.pe_hw)
    for mode in ("basic", "dualpath"):
        every = sorted((solve_closed(lp.limits_of(sc.with_nodes(P, D)), mode).turns_per_s for P in range(max(1, p_min), budget)
                        for D in range(1, budget - P + 1)), reverse=True)
        every = [x for x in every if x > 0][:count]
        scale = max(every, default=1.0)
        ranked = budget_ranked([(sc, (1.0, 1.0), p_min)], float(budget), mode, lp.BoundOptions(), {}, count, 1e-7 * scale / budget, scale)
        values = [s.turns_per_s for s in ranked]
        assert len(values) == len(every) and all(s.P + s.D <= budget for s in ranked)
        assert all(abs(a - b) <= REL_TOL * scale + ABS_TOL for a, b in zip(values, every)), (values, every)
        assert all(a >= b - REL_TOL * scale for a, b in zip(values, values[1:]))


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(scenarios(), st.integers(2, 9))
def test_the_search_s_optimum_is_the_budget_milp_s(sc, budget):
    """The budget MILP (HiGHS, the reference the search stands for) finds the bound the search puts first."""
    request = PlanRequest((sc,), Budget("nodes", budget), alternatives=2)
    pair = planning._pair(sc, request.options, (None, None))
    p_min = min_prefill_nodes(sc.model, sc.pe_hw)
    p_max, d_max = planning._max_nodes(pair, request.budget)
    if p_max < p_min:
        return
    caps = planning._decode_caps(pair, request.options, d_max)
    for mode in ("basic", "dualpath"):
        relax = float(planning._budget_milp(pair, mode, request.budget, caps).solve(relax=True).x[planning._X])
        spent = {0: budget_frontier(sc, (1.0, 1.0), float(budget), p_min, mode, request.options, {})}
        found = planning._budget_best(request, [pair], [0], {0: p_min}, mode, {}, relax, spent)
        res = planning._budget_milp(pair, mode, request.budget, caps, planning.SPEND_TIEBREAK * relax / budget).solve()
        milp_x = float(res.x[planning._X])
        assert (found[0][1] if found else 0.0) == pytest.approx(milp_x, rel=REL_TOL, abs=ABS_TOL)


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(scenarios(), st.integers(2, 40), st.sampled_from(["nodes", "gpus"]))
def test_the_closed_form_relaxation_is_highs_relaxation_of_the_budget_milp(sc, amount, kind):
    """planning.relax gives the optimum HiGHS finds for the budget MILP with integrality dropped."""
    budget = Budget(kind, amount * (sc.pe_hw.g if kind == "gpus" else 1))
    request = PlanRequest((sc,), budget)
    pair = planning._pair(sc, request.options, (None, None))
    p_min = min_prefill_nodes(sc.model, sc.pe_hw)
    p_max, d_max = planning._max_nodes(pair, budget)
    if p_max < p_min or d_max < 1:
        return
    caps = planning._decode_caps(pair, request.options, d_max)
    for mode in ("basic", "dualpath"):
        highs = float(planning._budget_milp(pair, mode, budget, caps).solve(relax=True).x[planning._X])
        ours = planning._relaxation(pair, mode, budget, caps, p_min)
        assert ours == pytest.approx(highs, rel=1e-7, abs=ABS_TOL), (mode, ours, highs)
