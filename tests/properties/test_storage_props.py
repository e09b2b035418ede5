"""Invariants of the storage cluster in the bound (bounds/storage.py, lp.py, closed_bound.py)."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.bounds import lp
from dualpath_plan.bounds.closed_bound import solve_closed
from tests.properties.strategies_lp import limits, storage_sides

MODES = st.sampled_from(lp.MODES)


@given(limits(storage=False), storage_sides(sized=False), MODES)
def test_a_planned_storage_cluster_leaves_the_bound_as_today(lim, side, mode):
    """With the storage nodes planned (no count given), the bound is the paper's unlimited-storage bound."""
    planned = replace(lim, cluster=replace(lim.cluster, storage=side))
    assert solve_closed(planned, mode) == solve_closed(lim, mode)


@given(limits(storage=True), st.integers(1, 400), MODES)
def test_more_storage_nodes_never_lower_a_bound(lim, more, mode):
    """Adding storage nodes (of the same profile) never lowers the turns/s of any mode."""
    side = lim.cluster.storage
    bigger = replace(lim, cluster=replace(lim.cluster, storage=side.with_nodes(side.nodes + more)))
    assert solve_closed(bigger, mode).turns_per_s >= solve_closed(lim, mode).turns_per_s * (1 - 1e-12)


@given(limits(storage=True), st.one_of(st.floats(0.2, 0.99), st.floats(1.01, 5.0)))
def test_the_capacity_binds_exactly_when_the_kept_kv_exceeds_the_usable_bytes(lim, ratio):
    """With ``k`` set so that the KV kept at the bound without the capacity row is ``ratio`` times the usable bytes,
    the capacity binds iff ``ratio > 1``, and then the bound is the usable bytes over ``k``."""
    free = solve_closed(replace(lim, kept_bytes_s_per_turn=0.0), "dualpath")
    usable = lim.capacities()[lp.STORAGE_CAPACITY]
    if not free.turns_per_s > 0:
        return
    k = ratio * usable / free.turns_per_s
    bound = solve_closed(replace(lim, kept_bytes_s_per_turn=k), "dualpath")
    assert (lp.STORAGE_CAPACITY in bound.binding) == (ratio > 1)
    assert math.isclose(bound.turns_per_s, min(free.turns_per_s, usable / k), rel_tol=1e-9)
