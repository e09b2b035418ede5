"""Invariants of the DRAM tier in the bound (bounds/lru.py, closed_bound.py, lp.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.bounds import lp
from dualpath_plan.bounds.closed_bound import solve_closed
from tests.properties.strategies_lp import limits

MODES = st.sampled_from(("basic", "dualpath"))


@pytest.mark.slow
@given(limits(storage=None, tier=True), MODES)
def test_the_closed_form_with_a_tier_is_the_lp_optimum(lim, mode):
    """Same turns/s and the same rate served by the tier as HiGHS on the four-rate LP (to 1e-5: HiGHS's feasibility
    tolerance of 1e-7 on rows scaled to 1, where the tier leaves a line a sliver of capacity)."""
    mine, ref = solve_closed(lim, mode), lp.solve(lim, mode)
    assert math.isclose(mine.turns_per_s, ref.turns_per_s, rel_tol=1e-5, abs_tol=1e-9)
    assert math.isclose(mine.R_m_Bps, ref.R_m_Bps, rel_tol=1e-4, abs_tol=1e-5 * lim.hit_bytes_per_turn * max(ref.turns_per_s, 1e-9))


@given(limits(storage=None, tier=True), MODES, st.floats(1.0, 100.0))
def test_more_dram_never_lowers_the_bound(lim, mode, more):
    bigger = replace(lim, tier_bytes=lim.tier_bytes * more)
    assert solve_closed(bigger, mode).turns_per_s >= solve_closed(lim, mode).turns_per_s * (1 - 1e-9)


@given(limits(storage=None, tier=True), MODES)
def test_the_tier_serves_at_most_its_cap_and_the_turns_ask(lim, mode):
    """``R_m <= min(X*h, C*h/k_w)`` and the three rates add up to the turns' hit KV."""
    b = solve_closed(lim, mode)
    h = lim.hit_bytes_per_turn
    assert b.R_m_Bps <= min(b.turns_per_s * h, lim.tier_cap_Bps) * (1 + 1e-9)
    assert math.isclose(b.R_p_Bps + b.R_d_Bps + b.R_m_Bps, b.turns_per_s * h, rel_tol=1e-9, abs_tol=1e-6)


@given(st.sampled_from(("hopper", "h200", "blackwell")), st.integers(1, 12), st.integers(1, 12), st.floats(1.0, 900.0), MODES,
       st.sampled_from(("P", "D")))
def test_a_node_more_never_lowers_a_bound_with_a_tier(profile, P, D, gb, mode, side):
    """What ``plan``'s search down each P's decode count rests on (``planning.frontier``), with the tier: a node more adds
    links and tier DRAM, and spreads the pool's load over one node more, so no bound falls."""
    from dualpath_plan.bounds.lp import limits_of
    from dualpath_plan.model.scenario import build_scenario

    bound = lambda p, d: solve_closed(limits_of(build_scenario(profile, P=p, D=d, dram_tier_GB=gb)), mode).turns_per_s  # noqa: E731
    more = bound(P + 1, D) if side == "P" else bound(P, D + 1)
    assert more >= bound(P, D) * (1 - 1e-9)
