"""The closed-form bound (closed_bound.py) is the HiGHS LP optimum (lp.py), prices included, with and without a sized
storage cluster behind the storage NICs."""

from __future__ import annotations

import pytest
import math

from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.bounds import lp
from dualpath_plan.bounds.closed_bound import solve_closed
from tests.properties.strategies_lp import limits

REL_TOL_X = 1e-6  # relative; HiGHS' primal feasibility tolerance is 1e-7 on O(1)-scaled rows
ABS_TOL_F = 1e-6  # DE-read fraction, absolute


@pytest.mark.slow
@given(limits(storage=None), st.sampled_from(lp.MODES))
def test_closed_form_throughput_equals_the_lp(lim, mode):
    """Same turns/s as HiGHS for every random cluster and mode."""
    assert math.isclose(solve_closed(lim, mode).turns_per_s, lp.solve(lim, mode).turns_per_s, rel_tol=REL_TOL_X)


@pytest.mark.slow
@given(limits(storage=None), st.sampled_from(lp.MODES))
def test_closed_form_split_equals_the_lp(lim, mode):
    """Same least-DE-traffic split as the LP."""
    assert abs(solve_closed(lim, mode).de_read_fraction - lp.solve(lim, mode).de_read_fraction) <= ABS_TOL_F


@pytest.mark.slow
@given(limits(storage=None), st.sampled_from(lp.MODES))
def test_closed_form_prices_are_a_valid_dual(lim, mode):
    """Strong duality: with y_i = dX/dC_i of the binding limits, X* = sum_i y_i * C_i."""
    bound = solve_closed(lim, mode)
    caps = lim.capacities()
    gain = sum(p.turns_per_s_per_unit / lim.units()[n][0] * caps[n] for n, p in bound.shadow_prices.items())
    assert math.isclose(gain, bound.turns_per_s, rel_tol=1e-6, abs_tol=1e-9)
