"""Invariants of the closed-form KV ceilings and the P/D range (bandwidth.py)."""

from __future__ import annotations

import pytest
import math
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.bounds import bandwidth as bw
from tests.properties.strategies import node_counts, nodes, traffics

REL_TOL = 1e-9  # relative; the ceilings are a handful of float operations


def _cluster(P, D, node, de_node=None):
    return bw.Cluster(P, D, node, de_node or node)


@pytest.mark.slow
@given(nodes(), node_counts, node_counts, traffics(), st.floats(0.01, 100.0), st.sampled_from(bw.MODES))
def test_scaling_every_bandwidth_by_k_scales_the_ceiling_by_k(node, P, D, traffic, k, mode):
    """Scaling B, s*B and M together by k scales every KV ceiling by k."""
    scaled = replace(node, B=node.B * k, M=node.M * k)
    base = bw.ceiling(_cluster(P, D, node), traffic, mode).kv_Bps
    assert math.isclose(bw.ceiling(_cluster(P, D, scaled), traffic, mode).kv_Bps, k * base, rel_tol=REL_TOL)


@given(nodes(), node_counts, node_counts, traffics(), st.sampled_from(["B", "s", "M"]), st.floats(1.0, 10.0), st.sampled_from(bw.MODES))
def test_a_ceiling_never_drops_when_a_capacity_rises(node, P, D, traffic, field, k, mode):
    """Raising B, s or M of the decode side alone never lowers a ceiling."""
    bigger = replace(node, **{field: getattr(node, field) * k})
    before = bw.ceiling(_cluster(P, D, node), traffic, mode).kv_Bps
    after = bw.ceiling(_cluster(P, D, node, bigger), traffic, mode).kv_Bps
    assert after >= before * (1 - REL_TOL)


@given(nodes(), node_counts, node_counts, traffics(), st.integers(1, 8), st.sampled_from(bw.MODES))
def test_more_nodes_never_lower_the_ceiling(node, P, D, traffic, extra, mode):
    """Adding decode nodes never lowers a ceiling."""
    before = bw.ceiling(_cluster(P, D, node), traffic, mode).kv_Bps
    assert bw.ceiling(_cluster(P, D + extra, node), traffic, mode).kv_Bps >= before * (1 - REL_TOL)


@given(nodes(), node_counts, node_counts, traffics())
def test_dualpath_is_never_below_basic(node, P, D, traffic):
    """The free split can always choose f = 0, so dualpath >= basic."""
    cluster = _cluster(P, D, node)
    assert bw.ceiling(cluster, traffic, "dualpath").kv_Bps >= bw.ceiling(cluster, traffic, "basic").kv_Bps * (1 - REL_TOL)


@given(nodes(), node_counts, node_counts, st.sampled_from(bw.MODES))
def test_exact_with_zero_miss_and_writeback_is_paper(node, P, D, mode):
    """Exact accounting with mu = omega = 0 gives the paper's ceiling, split and utilisations."""
    cluster = _cluster(P, D, node)
    exact = bw.ceiling(cluster, bw.Traffic("exact", 0.0, 0.0), mode)
    paper = bw.ceiling(cluster, bw.Traffic("paper", 0.0, 0.0), mode)
    assert replace(exact, mode=paper.mode) == paper


@st.composite
def clusters_inside_range(draw):
    """(node, traffic, P, D) with P/D inside that node's bottleneck-free range, by construction."""
    node, traffic = draw(nodes()), draw(traffics())
    rng = bw.pd_range(node, traffic)
    if rng.violated:  # no P/D is bottleneck-free on this node: take the paper's node instead
        node, traffic = bw.NodeSpec(8, 50e9, 1.0, 500e9), bw.Traffic("paper", 0.0, 0.0)
        rng = bw.pd_range(node, traffic)
    upper = min(rng.upper, 64.0)
    D = draw(st.integers(1, 16)) + math.ceil(2.0 / (upper - rng.lower))  # the window holds >= 2 integers
    P = draw(st.integers(math.ceil(rng.lower * D), math.floor(upper * D)))
    return node, traffic, P, D


@given(clusters_inside_range())
def test_inside_the_range_dualpath_reaches_both_snics(case):
    """Inside the derived range every SNIC saturates: the dualpath ceiling is (P + D) * s * B."""
    node, traffic, P, D = case
    got = bw.ceiling(_cluster(P, D, node), traffic, "dualpath").kv_Bps
    assert math.isclose(got, (P + D) * node.s * node.B, rel_tol=REL_TOL)


@given(nodes(), node_counts, node_counts, traffics(), st.sampled_from(bw.MODES))
def test_at_the_ceiling_nothing_is_over_capacity_and_something_binds(node, P, D, traffic, mode):
    """The ceiling is feasible (every utilisation <= 1) and tight (some resource at 1)."""
    c = bw.ceiling(_cluster(P, D, node), traffic, mode)
    assert max(c.utilization.values()) <= 1 + REL_TOL
    assert c.binding
    assert 0.0 <= c.de_read_fraction <= 1.0
    assert math.isclose(c.R_p_Bps + c.R_d_Bps, c.kv_Bps, rel_tol=REL_TOL)
