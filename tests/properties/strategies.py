"""Domain-named hypothesis strategies, built by construction (no filtering)."""

from __future__ import annotations

from hypothesis import strategies as st

from dualpath_plan.model.cluster import NodeSpec, Traffic
from dualpath_plan.model.profiles import catalog

SHIPPED_NODES = tuple(NodeSpec.of(catalog().get("hardware", name)) for name in catalog().names("hardware"))


@st.composite
def synthetic_nodes(draw) -> NodeSpec:
    """Any node the model admits: g in 1..16 GPUs, B 1-200 GB/s, 0 < s <= g/2, M from 0.5 to 40 s*B."""
    g = draw(st.integers(1, 16))
    B = draw(st.floats(1e9, 2e11))
    s = draw(st.floats(0.05, 1.0)) * g / 2
    M = draw(st.floats(0.5, 40.0)) * s * B
    return NodeSpec(g=g, B=B, s=s, M=M)


def nodes() -> st.SearchStrategy[NodeSpec]:
    """Shipped hardware nodes mixed with synthetic ones, so shrunk failures stay readable."""
    return st.one_of(st.sampled_from(SHIPPED_NODES), synthetic_nodes())


def traffics() -> st.SearchStrategy[Traffic]:
    """Paper accounting, or exact with miss and write-back shares up to 50 % of the hit bytes."""
    exact = st.builds(lambda mu, om: Traffic("exact", mu, om), st.floats(0, 0.5), st.floats(0, 0.5))
    return st.one_of(st.just(Traffic("paper", 0.0, 0.0)), exact)


node_counts = st.integers(1, 64)
