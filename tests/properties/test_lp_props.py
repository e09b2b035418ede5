"""Invariants of the throughput LP (lp.py)."""

from __future__ import annotations

import pytest
import math
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.bounds import lp
from dualpath_plan.bounds.bandwidth import ceiling
from dualpath_plan.bounds.decode import DecodeOptions
from dualpath_plan.model.cluster import Cluster
from tests.properties.strategies_lp import limits, scenarios

REL_TOL_LP = 1e-7  # relative; HiGHS feasibility tolerance on rows scaled to 1
FD_STEP = 1e-4  # relative capacity step for finite differences
FD_TOL = 2e-3  # absolute, on elasticities (dimensionless, O(1)): LP error 1e-7 / step 1e-4, twice
MODES = st.sampled_from(lp.MODES)


def _io_only(lim: lp.Limits) -> lp.Limits:
    """The same cluster with prefill compute and decode set, by construction, to twice what the
    I/O-only dualpath ceiling needs, so neither can bind."""
    c = lim.cluster
    x_io = ceiling(c, lim.traffic, "dualpath").kv_Bps / lim.hit_bytes_per_turn
    return replace(
        lim,
        prefill_flops_per_gpu=2 * x_io * lim.flops_per_turn / (c.P * c.pe.g),
        decode_tokens_per_gpu_s=2 * x_io * lim.gen_tokens_per_turn / (c.D * c.de.g),
    )


@pytest.mark.slow
@given(limits(), st.sampled_from(["basic", "dualpath"]))
def test_without_compute_and_decode_limits_the_lp_is_the_closed_form(lim, mode):
    """When compute and decode do not bind, the LP's KV rate equals the closed-form ceiling (both accountings)."""
    lim = _io_only(lim)
    assert math.isclose(lp.solve(lim, mode).kv_Bps, ceiling(lim.cluster, lim.traffic, mode).kv_Bps, rel_tol=REL_TOL_LP)


@pytest.mark.slow
@given(limits())
def test_basic_le_dualpath_le_oracle(lim):
    """Each mode relaxes the one before it: basic <= dualpath <= oracle."""
    b, d, o = (lp.solve(lim, m).turns_per_s for m in ("basic", "dualpath", "oracle"))
    assert b <= d * (1 + REL_TOL_LP) and d <= o * (1 + REL_TOL_LP)


CAPACITY_KNOBS = ("pe.B", "pe.s", "pe.M", "de.B", "de.s", "de.M", "prefill_flops_per_gpu", "decode_tokens_per_gpu_s")


def _scaled(lim: lp.Limits, knob: str, factor: float) -> lp.Limits:
    """``lim`` with one capacity multiplied by ``factor``."""
    side, _, field = knob.partition(".")
    if not field:
        return replace(lim, **{knob: getattr(lim, knob) * factor})
    c = lim.cluster
    node = getattr(c, side)
    new = replace(node, **{field: getattr(node, field) * factor})
    return replace(lim, cluster=Cluster(c.P, c.D, new if side == "pe" else c.pe, new if side == "de" else c.de))


@pytest.mark.slow
@given(limits(), st.sampled_from(CAPACITY_KNOBS), st.floats(1.0, 10.0), MODES)
def test_a_bound_never_drops_when_a_capacity_rises(lim, knob, factor, mode):
    """Raising any one capacity (link bandwidth, DRAM, FLOP/s, decode rate) never lowers a bound."""
    before = lp.solve(lim, mode).turns_per_s
    assert lp.solve(_scaled(lim, knob, factor), mode).turns_per_s >= before * (1 - REL_TOL_LP)


@pytest.mark.slow
@given(limits(homogeneous=True, max_nodes=16), st.integers(2, 4), MODES)
def test_scaling_p_and_d_by_k_scales_turns_by_k(lim, k, mode):
    """Homogeneous cluster, fixed per-GPU rates: k times the nodes give k times the turns/s."""
    c = lim.cluster
    bigger = replace(lim, cluster=Cluster(c.P * k, c.D * k, c.pe, c.de))
    assert math.isclose(lp.solve(bigger, mode).turns_per_s, k * lp.solve(lim, mode).turns_per_s, rel_tol=REL_TOL_LP)


@pytest.mark.slow
@given(scenarios(heterogeneous=False), st.integers(1, 6), st.integers(1, 3), st.integers(2, 3), st.integers(1, 4), MODES)
def test_scaling_a_real_cluster_with_fixed_decode_instances_scales_turns_by_k(sc, P, m, k, inst, mode):
    """Shipped profiles, a decode side of ``m`` whole instances of a fixed size: (kP, kD) nodes give k
    times the turns/s."""
    D, options = m * inst, lp.BoundOptions(decode=DecodeOptions(instance_nodes=inst))
    small = lp.solve(lp.limits_of(sc.with_nodes(P, D), options), mode).turns_per_s
    big = lp.solve(lp.limits_of(sc.with_nodes(k * P, k * D), options), mode).turns_per_s
    assert math.isclose(big, k * small, rel_tol=REL_TOL_LP, abs_tol=1e-9)


@pytest.mark.slow
@given(scenarios(heterogeneous=False), st.integers(1, 6), st.integers(1, 6), st.integers(2, 3), MODES)
def test_with_weights_over_the_whole_decode_side_k_times_the_nodes_give_at_least_k_times(sc, P, D, k, mode):
    """Default decode instance (all D nodes) with an all-to-all whose latency does not grow with the EP size (by
    construction: one-entry tables, every instance over RDMA): a bigger side holds fewer experts per GPU, so >= k times. (DeepEP's measured
    latency grows from EP8 to EP256, which can cost a bigger instance more than its smaller weight share saves.)"""
    first = lambda table: {"8": table[min(table, key=int)]}  # noqa: E731
    flat = replace(sc.de_hw, ep_dispatch_s=first(sc.de_hw.ep_dispatch_s), ep_combine_s=first(sc.de_hw.ep_combine_s), nvl_domain_gpus=1)
    sc = replace(sc, pe_hw=flat, de_hw=flat)
    small = lp.solve(lp.limits_of(sc.with_nodes(P, D)), mode).turns_per_s
    big = lp.solve(lp.limits_of(sc.with_nodes(k * P, k * D)), mode).turns_per_s
    assert big >= k * small * (1 - REL_TOL_LP)


PERTURBATIONS = {
    "pe.s": ("pe_snic",),
    "de.s": ("de_snic", "de_snic_write"),
    "pe.M": ("pe_dram",),
    "de.M": ("de_dram",),
    "prefill_flops_per_gpu": (lp.COMPUTE,),
    "decode_tokens_per_gpu_s": (lp.DECODE,),
}


@pytest.mark.slow
@given(limits(), st.sampled_from(sorted(PERTURBATIONS)), MODES)
def test_shadow_prices_match_finite_differences(lim, knob, mode):
    """A dual is a supergradient of the bound: the forward difference <= price <= the backward one
    (equal where the vertex is not degenerate), in elasticity units (dX/X per dC/C)."""
    base = lp.solve(lim, mode)
    assert base.turns_per_s > 0  # every rate the strategy draws is positive
    price = sum(p.elasticity for name, p in base.shadow_prices.items() if name in PERTURBATIONS[knob])
    up = lp.solve(_scaled(lim, knob, 1 + FD_STEP), mode).turns_per_s
    down = lp.solve(_scaled(lim, knob, 1 - FD_STEP), mode).turns_per_s
    forward = (up - base.turns_per_s) / (base.turns_per_s * FD_STEP)
    backward = (base.turns_per_s - down) / (base.turns_per_s * FD_STEP)
    assert forward <= price + FD_TOL
    assert backward >= price - FD_TOL


@pytest.mark.slow
@given(limits(), MODES)
def test_the_bound_is_feasible_and_tight(lim, mode):
    """At the bound no limit is over capacity and at least one is at capacity."""
    bound = lp.solve(lim, mode)
    assert max(bound.utilization.values()) <= 1 + 10 * REL_TOL_LP
    assert bound.binding
    assert 0.0 <= bound.de_read_fraction <= 1.0
