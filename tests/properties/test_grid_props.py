"""The vectorised grid (planning.grid) holds the batched HiGHS LP's answers on a sample of any grid, and its order
holds the pick rule: each property one invariant, the grids built by construction from the shipped profiles, a
budget range, a storage-NIC what-if and a storage cluster behind the SNICs (an axis of its node counts, or planned)."""

from __future__ import annotations

import pytest

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dualpath_plan.bounds.lp import MODES, limits_of, solve_many
from dualpath_plan.model.profiles import catalog
from dualpath_plan.planning.grid import sample_rows
from dualpath_plan.planning.gridsweep import build, make_axes
from dualpath_plan.planning.pick import TOLERANCE_FRAC

PROFILES = tuple(catalog(()).names("hardware"))
MODELS = ("ds-v3.2", "llama-3.1-70b", "qwen3-32b")
WORKLOADS = ("agentic-32k", "agentic-48k", "agentic-64k")


@st.composite
def grids(draw):
    """A grid of 1-2 profiles (or one mixed pair), one model, 1-2 workloads, a node range within 2..40, an optional
    storage-NIC axis and an optional storage cluster with 1-5 copies (1-3 node counts of at least that many up to 40, or
    planned)."""
    profiles = draw(st.lists(st.sampled_from(PROFILES), min_size=1, max_size=2, unique=True))
    pair = draw(st.one_of(st.none(), st.tuples(st.sampled_from(PROFILES), st.sampled_from(PROFILES))))
    low = draw(st.integers(2, 30))
    high = low + draw(st.integers(0, 10))
    snic = draw(st.one_of(st.none(), st.sets(st.sampled_from((100, 200, 400, 800)), min_size=1, max_size=2)))
    sets = () if snic is None else (f"snic_Gbps={','.join(str(v) for v in sorted(snic))}",)
    storage = draw(st.sampled_from((None, "3fs", "nvme-r7725xd")))
    copies = draw(st.integers(1, 5)) if storage else 3  # the profile's replicas, set: the planned count's floor follows it
    sets += (f"replicas={copies}",) if storage else ()
    counts = draw(st.one_of(st.none(), st.sets(st.integers(copies, 40), min_size=1, max_size=3))) if storage else None
    axes = make_axes(profiles, () if pair is None else (pair,), (draw(st.sampled_from(MODELS)),),
                     draw(st.lists(st.sampled_from(WORKLOADS), min_size=1, max_size=2, unique=True)), {"nodes": f"{low}..{high}"}, sets,
                     storage=storage, storage_nodes=None if counts is None else sorted(counts))
    return build(axes).grid


def _highs(g, rows, mode):
    limits = [limits_of(g.scenario_of(int(r)), g.options) for r in rows]
    return solve_many(limits, mode)


@pytest.mark.slow
@settings(max_examples=15)
@given(grids(), st.sampled_from(MODES))
def test_a_sample_of_the_grid_has_the_lp_optimum(g, mode):
    rows = sample_rows(g, 0.1, seed=1)
    for r, bound in zip(rows, _highs(g, rows, mode)):
        assert np.isclose(g.modes[mode].turns_per_s[r], bound.turns_per_s, rtol=1e-6, atol=1e-12)


@pytest.mark.slow
@settings(max_examples=15)
@given(grids(), st.sampled_from(MODES))
def test_a_sample_of_the_grid_has_the_lp_binding_limits(g, mode):
    rows = sample_rows(g, 0.1, seed=2)
    for r, bound in zip(rows, _highs(g, rows, mode)):
        assert set(g.binding_names(mode, int(r))) == set(bound.binding)


@given(grids(), st.sampled_from(MODES))
@pytest.mark.slow
def test_each_groups_pick_is_in_its_optimal_set_within_the_tolerance_of_its_best(g, mode):
    cols = g.modes[mode]
    for k in np.unique(g.group):
        own = g.group == k
        pick = np.flatnonzero(own & (cols.rank == 0))
        assert len(pick) == 1 and cols.in_optimal_set[pick[0]]
        assert cols.turns_per_s[pick[0]] >= cols.turns_per_s[own].max() * (1 - TOLERANCE_FRAC)


@given(grids(), st.sampled_from(MODES))
@pytest.mark.slow
def test_ranks_number_each_group_from_zero_without_a_gap(g, mode):
    for k in np.unique(g.group):
        assert sorted(g.modes[mode].rank[g.group == k].tolist()) == list(range(int((g.group == k).sum())))


@st.composite
def one_budget_sweeps(draw):
    """1-3 homogeneous profiles, one model, one GPU budget of 16 to 400 GPUs (at least two nodes of every shipped
    profile, of at most 8 GPUs each; odd node counts too)."""
    profiles = draw(st.lists(st.sampled_from(PROFILES), min_size=1, max_size=3, unique=True))
    return profiles, draw(st.sampled_from(MODELS)), draw(st.integers(16, 400))


@settings(max_examples=20)
@given(one_budget_sweeps(), st.sampled_from(MODES))
@pytest.mark.slow
def test_the_grid_orders_each_optimal_set_as_the_pick_rule_does(case, mode):
    """``rank`` lists the optimal set in ``pick.by_throughput``'s order (its pick first), for the splits ``planning.sweep``
    bounds one at a time."""
    from dualpath_plan.model.scenario import build_scenario
    from dualpath_plan.planning.sweep import sweep

    profiles, model, gpus = case
    g = build(make_axes(profiles, models=(model,), budgets={"gpus": str(gpus)})).grid
    old = sweep([build_scenario(p, model=model) for p in profiles], gpus)
    for k, grp in enumerate(g.groups):
        name = g.families[grp.family].pe_profile
        own = np.flatnonzero((g.group == k) & g.modes[mode].in_optimal_set)
        mine = [(int(g.P[r]), int(g.D[r])) for r in own[np.argsort(g.modes[mode].rank[own])]]
        assert mine == [(s.P, s.D) for s in old.optimal[name][mode].ranked]


@pytest.mark.slow
@settings(max_examples=10)
@given(grids(), st.sampled_from(MODES))
def test_a_grid_plans_the_storage_nodes_its_bounds_need(g, mode):
    """Without a storage axis, each configuration's storage nodes are the fewest that do not bind its bound, as
    ``plan`` and ``bottleneck`` plan them (``planning.storage.planned_nodes`` on the closed form)."""
    from dualpath_plan.bounds.closed_bound import solve_closed
    from dualpath_plan.planning.storage import planned_nodes

    for r in sample_rows(g, 0.1, seed=3):
        lim = limits_of(g.scenario_of(int(r)), g.options)
        expected = planned_nodes(lim, solve_closed(lim, mode)) if g.groups[int(g.group[r])].storage_nodes is None else lim.cluster.storage.nodes \
            if lim.cluster.storage is not None else None
        assert g.modes[mode].storage_nodes[r] == (-1 if expected is None else expected)
