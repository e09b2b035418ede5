"""Hypothesis strategies for the throughput LP and the planner, built by construction."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from dualpath_plan.bounds.lp import Limits
from dualpath_plan.model.cluster import Cluster, StorageSide
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.scenario import Scenario
from tests.properties.strategies import nodes, traffics

CATALOG = catalog()
SHIPPED_HARDWARE = tuple(CATALOG.get("hardware", n) for n in CATALOG.names("hardware"))
SHIPPED_MODELS = tuple(CATALOG.get("model", n) for n in CATALOG.names("model"))
SHIPPED_WORKLOADS = tuple(CATALOG.get("workload", n) for n in CATALOG.names("workload"))


@st.composite
def storage_sides(draw, sized: bool = True) -> StorageSide:
    """A storage cluster behind the SNICs: 1-400 nodes (``None`` unless ``sized``) of 1-200 GB/s read, 0.1-100 GB/s
    write and 1-1000 TB usable each."""
    nodes = draw(st.integers(1, 400)) if sized else None
    return StorageSide("drawn", nodes, draw(st.floats(1e9, 2e11)), draw(st.floats(1e8, 1e11)), draw(st.floats(1e12, 1e15)))


@st.composite
def limits(draw, homogeneous: bool | None = None, max_nodes: int = 32, storage: bool | None = False, tier: bool = False) -> Limits:
    """LP data of a random cluster: node specs (shipped or synthetic), accounting, per-turn demands
    (0.1-10 GB of hit KV, 1-1000 TFLOP, 10-2000 generated tokens) and per-GPU rates
    (10 TFLOP/s - 5 PFLOP/s of prefill, 10-100k decode tokens/s). ``storage``: with a sized storage cluster
    (:func:`storage_sides`, and 0-1e13 byte-seconds of KV kept per turn), without one (``False``) or either (``None``);
    ``tier``: with a DRAM tier of 0.1-1000 TB over the nodes and a working set of 1e9-1e13 byte-seconds per turn."""
    pe = draw(nodes())
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    de = pe if same else draw(nodes())
    P, D = draw(st.integers(1, max_nodes)), draw(st.integers(1, max_nodes))
    sized = draw(st.booleans()) if storage is None else storage
    return Limits(
        cluster=Cluster(P, D, pe, de, draw(storage_sides()) if sized else None),
        traffic=draw(traffics()),
        hit_bytes_per_turn=draw(st.floats(1e8, 1e10)),
        flops_per_turn=draw(st.floats(1e12, 1e15)),
        gen_tokens_per_turn=draw(st.floats(10.0, 2000.0)),
        turns_per_trajectory=draw(st.floats(1.0, 500.0)),
        prefill_flops_per_gpu=draw(st.floats(1e13, 5e15)),
        decode_tokens_per_gpu_s=draw(st.floats(10.0, 1e5)),
        kept_bytes_s_per_turn=draw(st.floats(0.0, 1e13)) if sized else 0.0,
        tier_bytes=draw(st.floats(1e11, 1e15)) if tier else 0.0,
        tier_sigma=P / (P + D) if tier else 0.0,
        working_bytes_s_per_turn=draw(st.floats(1e9, 1e13)) if tier else 0.0,
    )


@st.composite
def hardware(draw):
    """A shipped hardware profile with its link, memory and compute figures scaled by 0.25-4x;
    the SNIC stays within eq. (1)'s s <= g/2 (capped at g/2 CNICs' worth)."""
    hw = draw(st.sampled_from(SHIPPED_HARDWARE))
    k = lambda: draw(st.floats(0.25, 4.0))  # noqa: E731
    cnic = hw.cnic_Bps * k()
    snic = min(hw.snic_Bps * k(), cnic * hw.cnic_efficiency * hw.g / 2 / hw.snic_efficiency)
    return replace(hw, cnic_Bps=cnic, snic_Bps=snic, dram_Bps=hw.dram_Bps * k(), hbm_bytes=hw.hbm_bytes * k(), fp8_flops=hw.fp8_flops * k(), bf16_flops=hw.bf16_flops * k())


@st.composite
def scenarios(draw, heterogeneous: bool = True) -> Scenario:
    """A shipped model and workload on (possibly two kinds of) scaled shipped hardware, P = D = 1."""
    pe = draw(hardware())
    de = draw(hardware()) if heterogeneous and draw(st.booleans()) else pe
    return Scenario(pe, de, draw(st.sampled_from(SHIPPED_MODELS)), draw(st.sampled_from(SHIPPED_WORKLOADS)), 1, 1, draw(st.sampled_from(["exact", "paper"])))
