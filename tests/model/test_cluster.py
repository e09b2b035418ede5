"""The cluster's frozen records (model/cluster.py): traffic per hit byte, node and cluster checks."""

from __future__ import annotations

import pytest

from dualpath_plan.model.cluster import Cluster, NodeSpec, Traffic, check_node
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import catalog

PAPER_NODE = NodeSpec(g=8, B=50e9, s=1.0, M=500e9)
PAPER = Traffic("paper", 0.0, 0.0)


def test_exact_traffic_of_a_workload():
    wl = catalog().get("workload", "agentic-64k")
    t = Traffic.of(wl, "exact")
    assert t.mu == pytest.approx(wl.miss_tokens / wl.hit_tokens)
    assert t.omega == pytest.approx((wl.miss_tokens + wl.gen_tokens) / wl.hit_tokens)
    assert Traffic.of(wl, "paper") == PAPER


def test_unknown_accounting_is_refused():
    with pytest.raises(PlanError, match="--accounting 'fast'"):
        Traffic.of(catalog().get("workload", "agentic-64k"), "fast")


def test_s_above_half_g_is_refused():
    with pytest.raises(PlanError, match="s <= g/2"):
        check_node(NodeSpec(g=8, B=50e9, s=5.0, M=500e9), "test")


@pytest.mark.parametrize("P", [0, -1])
def test_cluster_needs_nodes(P):
    with pytest.raises(PlanError, match="P = "):
        Cluster(P, 1, PAPER_NODE, PAPER_NODE)
