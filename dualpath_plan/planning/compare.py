"""``compare``: hardware generations side by side, the trend the paper describes (section 3: compute grew far faster
than I/O from Ampere to Blackwell, so loading KV-Cache from storage binds more with each generation).

Per hardware profile: the usable storage-NIC bandwidth of a node per dense FLOP/s of the node (the model's compute
dtype), the host-link (PCIe) bandwidth of a GPU per dense FLOP/s of the GPU, both in bytes per FLOP, beside the
workload's cache-compute ratio (Table 1's measure, over the data set: the hit KV its turns load per FLOP they prefill,
``bottleneck``'s per-turn bytes over its per-turn FLOP; a ratio of the two means, as throughput divides the one by
the other): when a generation's storage bytes per FLOP fall below what
the workload needs, prefill waits for storage. Then the basic and DualPath bounds of the same GPU budget (each
mode's pick by the shared rule, ``sweep``), DualPath's speed-up, and the bottleneck-free P/D range (eq. (9)). With a
DRAM tier (``--dram-tier``), the same budget again with the tier on every node: DualPath alone, the tier alone and both
per generation, at equal cost (the tier pools DRAM the nodes have; a GPU budget buys the same nodes).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from dualpath_plan.bounds.bandwidth import PdRange
from dualpath_plan.bounds.compute import flops_per_turn, resolve_dtype
from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.scenario import Scenario, dram_tier_refusal
from dualpath_plan.model.workload import served_turns
from dualpath_plan.planning.sweep import SweepPoint, SweepResult, priced_sweep


@dataclass(frozen=True)
class Generation:
    """One profile's ratios and its bounds at the shared GPU budget.

    Attributes:
        profile: The hardware profile.
        gpu: Its GPU's name.
        dtype: The GEMM dtype its compute is counted at.
        node_flops: Dense FLOP/s of one node at ``dtype``.
        snic_bytes_per_flop: Usable storage-NIC bytes/s of a node per dense FLOP/s of the node, B/FLOP.
        pcie_bytes_per_flop: Host-link bytes/s of a GPU (each direction) per dense FLOP/s of the GPU, B/FLOP.
        basic: ``basic``'s pick at the budget (:class:`~dualpath_plan.planning.sweep.SweepPoint`).
        dualpath: ``dualpath``'s pick at the budget.
        pd_range: Eq. (9)'s bottleneck-free P/D range (``None`` where it has none).
        scenario: The profile's scenario (its P and D unused).
        tier: With ``--dram-tier``, ``basic``'s and ``dualpath``'s picks at the same budget with the tier on every node
            (the tier alone, and both; ``planning.tier``), or ``None``.
        tier_refused: With ``--dram-tier``, why the profile's nodes cannot hold the tier (no ``dram_GB``, or too little),
            or ``None``.
    """

    profile: str
    gpu: str
    dtype: str
    node_flops: float  # dense FLOP/s of one node at ``dtype``
    snic_bytes_per_flop: float  # usable storage-NIC B/s of a node per dense FLOP/s of the node
    pcie_bytes_per_flop: float  # host-link B/s of a GPU (each direction) per dense FLOP/s of the GPU
    basic: SweepPoint
    dualpath: SweepPoint
    pd_range: PdRange | None
    scenario: Scenario | None = field(default=None, repr=False, compare=False)  # the profile's cluster (its P and D unused)
    tier: dict[str, SweepPoint] | None = None  # with --dram-tier: each mode's pick with the tier on every node
    tier_refused: str | None = None  # with --dram-tier: why this profile's nodes cannot hold it (then ``tier`` is None)

    @property
    def speedup(self) -> float | None:
        """DualPath's bound over basic's (None when basic serves nothing)."""
        b = self.basic.bound.turns_per_s
        return self.dualpath.bound.turns_per_s / b if b > 0 else None


@dataclass(frozen=True)
class Comparison:
    """Every generation at one GPU budget, and the workload's cache-compute ratio they are measured against.

    What :func:`dualpath_plan.compare` returns.

    Attributes:
        gpus: The GPU budget every generation's splits spend.
        model: The model profile's name.
        workload: The workload's name.
        cache_compute_bytes_per_flop: Hit KV the data set's turns load per FLOP they prefill (Table 1's measure over the
            turns: mean bytes over mean FLOP), B/FLOP.
        generations: One :class:`Generation` per profile, in the order compared.
        sweep: The sweep behind the picks (:class:`~dualpath_plan.planning.sweep.SweepResult`).
        dram_tier_GB: The DRAM tier on every node (``--dram-tier``) the generations are also bounded with, or ``None``.
        tier_sweep: The sweep with the tier, of the profiles whose nodes hold it (``None`` without a tier).
    """

    gpus: int
    model: str
    workload: str
    cache_compute_bytes_per_flop: float
    generations: tuple[Generation, ...]
    sweep: SweepResult
    dram_tier_GB: float | None = None
    tier_sweep: SweepResult | None = None


def compare(scenarios: list[Scenario], gpus: int | None = None, options: BoundOptions = BoundOptions(), in_order: bool = True,
            dram_tier_GB: float | None = None) -> Comparison:
    """Compare the scenarios' hardware (one homogeneous profile each) at an equal budget of ``gpus`` GPUs (default 48), in
    the order given, or with ``in_order`` False by dense compute per node (the generations' order: the trend reads
    from the first to the last). With ``dram_tier_GB``, each profile whose nodes hold that tier is bounded with it too, on
    the same GPU budget (the tier uses DRAM the nodes have: at equal cost); the others say why not."""
    result = priced_sweep(scenarios, gpus, options)
    first = scenarios[0]
    ratio = first.turn.hit_tokens * first.model.kv_bytes_per_token / flops_per_turn(first.model, served_turns(first.workload))
    refused, tier_result = {}, None
    if dram_tier_GB is not None:
        check_flag("--dram-tier", dram_tier_GB)
        refused = {sc.profile_label: why for sc in scenarios if (why := dram_tier_refusal(dram_tier_GB, sc)) is not None}
        tiered = [replace(sc, dram_tier_GB=float(dram_tier_GB)) for sc in scenarios if sc.profile_label not in refused]
        tier_result = priced_sweep(tiered, gpus, options) if tiered else None
    generations = [_generation(sc, result, options, tier_result, refused.get(sc.profile_label)) for sc in scenarios]
    if not in_order:
        generations.sort(key=lambda g: (g.node_flops, g.profile))
    return Comparison(result.gpus_budget, first.model.name, first.workload.name, ratio, tuple(generations), result, dram_tier_GB, tier_result)


def _generation(sc: Scenario, result: SweepResult, options: BoundOptions, tier_result: SweepResult | None, refused: str | None) -> Generation:
    hw = sc.pe_hw
    dtype = resolve_dtype(sc.model, options.dtype)
    gpu_flops = hw.peak_flops(dtype)
    best = result.best[sc.profile_label]
    tier = None if tier_result is None or refused is not None else {m: tier_result.best[sc.profile_label][m] for m in ("basic", "dualpath")}
    return Generation(sc.profile_label, hw.gpu, dtype, hw.g * gpu_flops, hw.snic_Bps * hw.snic_efficiency / (hw.g * gpu_flops),
                      hw.pcie_Bps / gpu_flops, best["basic"], best["dualpath"], result.pd_ranges.get(sc.profile_label), sc, tier, refused)
