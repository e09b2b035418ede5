"""Invariants of the procurement MILP (plan.py) on random node types, models and small budgets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dualpath_plan.bounds import lp
from dualpath_plan.model.errors import PlanError
from dualpath_plan.planning.plan import plan
from dualpath_plan.planning.request import Budget, PlanRequest
from tests.properties.strategies_lp import scenarios

REL_TOL = 1e-6  # relative; MILP gap 1e-9 plus the 1e-7 tie-break toward cheaper clusters
ABS_TOL = 1e-9  # turns/s, for clusters that make nothing
EXAMPLES = 15  # each example solves ~30 LPs and a few MILPs


def _brute_force(sc, budget: int, mode: str) -> float:
    limits = [lp.limits_of(sc.with_nodes(P, D)) for P in range(1, budget) for D in range(1, budget - P + 1)]
    return max(b.turns_per_s for b in lp.solve_many(limits, mode))


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
