"""The capacity search's bracket (sim.search): where it probes and what a round of probes teaches it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.sim.search import FLOOR_AFTER, FLOOR_FRACTION, Bracket


def search(capacity: float, width: int, bound: float = 10.0, rel_tol: float = 0.05, max_rounds: int = 12) -> tuple[Bracket, int]:
    """Run the search against a cluster that meets the SLO at every rate up to ``capacity``; the bracket and its rounds."""
    bracket, rounds = Bracket(bound, rel_tol, max_rounds), 0
    while rates := bracket.rates(width):
        bracket, rounds = bracket.after([(r, r <= capacity) for r in rates]), rounds + 1
    return bracket, rounds


def test_the_first_probe_is_at_one_tolerance_below_the_bound_and_ends_the_search_when_met():
    bracket = Bracket(2.0, rel_tol=0.05)
    assert bracket.rates(1) == (pytest.approx(1.9),)
    done = bracket.after([(1.9, True)])
    assert done.done and done.lo == pytest.approx(1.9) and done.rates(4) == ()


def test_a_first_miss_bisects_below_it():
    bracket = Bracket(2.0).after([(1.9, False)])
    assert bracket.rates(1) == (pytest.approx(0.95),)
    assert bracket.rates(3) == pytest.approx((1.425, 0.95, 0.475))  # the bracket in four equal parts


@given(st.floats(0.02, 0.94), st.integers(1, 16))
def test_the_bracket_holds_the_capacity_within_the_tolerance(share, width):
    """Within the default 12 rounds, whatever the width: wide rounds never use up the search before the tolerance."""
    bracket, _ = search(10.0 * share, width)
    assert bracket.lo <= 10.0 * share < bracket.top and bracket.top - bracket.lo <= 0.05 * bracket.top * (1 + 1e-9)


def test_more_workers_take_fewer_rounds():
    one = search(6.1, 1)[1]
    four = search(6.1, 4)[1]
    assert four < one  # a 5-section narrows the bracket 5x a round, bisection 2x


def test_an_slo_no_rate_meets_ends_at_the_floor_probe_after_three_rounds():
    bracket, _ = search(0.0, 1)
    assert [ok for _, ok in bracket.probes] == [False] * (FLOOR_AFTER + 1) and not bracket.met
    assert bracket.probes[-1][0] == pytest.approx(10.0 * FLOOR_FRACTION)


def test_a_met_floor_probe_lets_the_search_go_on_above_it():
    bracket, _ = search(0.05, 1)
    assert bracket.met and bracket.lo <= 0.05 < bracket.top and len(bracket.probes) > FLOOR_AFTER + 1


def test_a_met_rate_above_a_missed_one_is_noise():
    bracket = Bracket(10.0).after([(9.5, False)]).after([(6.0, False), (3.0, True), (7.0, True)])
    assert (bracket.lo, bracket.top) == (3.0, 6.0)


def test_the_round_budget_ends_the_search_not_a_rounds_width():
    bracket = Bracket(10.0, max_rounds=2).after([(9.5, False)])
    rates = bracket.rates(8)
    assert len(rates) == 8 and bracket.after([(r, False) for r in rates]).done
    assert Bracket(0.0).rates(1) == ()  # a bound of nothing: nothing to probe


def test_wide_rounds_of_misses_still_reach_the_floor():
    bracket, _ = search(0.0, 12)
    assert bracket.rounds == 4 and bracket.probes[-1][0] == pytest.approx(10.0 * FLOOR_FRACTION) and not bracket.met
