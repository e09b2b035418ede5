"""The ``bottleneck`` analysis: one scenario through the bandwidth model, as one frozen record.

It gathers the node symbols, the bottleneck-free P/D range (eq. (9), homogeneous clusters only)
and, for each mode, the I/O-only KV ceiling with its split, binding resources and utilisations.
Beside them sit the throughput bounds of the ``lp`` model (prefill compute and decode added, plus
the ``oracle`` mode) with their binding limits and shadow prices, solved in closed form by
``closed_bound`` (equal to the HiGHS solve, a tested invariant) so that no solver is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dualpath_plan.bounds.bandwidth import MODES, Ceiling, PdRange, ceiling, pd_range
from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import MODES as BOUND_MODES
from dualpath_plan.bounds.lp import Bound, BoundOptions, Limits, limits_of
from dualpath_plan.model.cluster import NodeSpec
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.finite import guard
from dualpath_plan.model.power import Energy, cluster_power_W, energy
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.planning.steps import StepTimes, step_times
from dualpath_plan.planning.pick import OptimalSet
from dualpath_plan.planning.storage import StorageNeed, storage_need
from dualpath_plan.planning.tier import TierReport, tier_report
from dualpath_plan.planning.sweep import SweepPoint, optimal_splits, point_of, split_points


@dataclass(frozen=True)
class Analysis:
    """What ``bottleneck`` reports for one scenario.

    What :func:`dualpath_plan.bottleneck` returns.

    Attributes:
        scenario: The scenario analysed (:class:`~dualpath_plan.model.scenario.Scenario`).
        pe_node: The prefill node's symbols (:class:`~dualpath_plan.model.cluster.NodeSpec`: ``g``, ``B``, ``s``,
            ``M``).
        de_node: The decode node's symbols.
        pd_range: The bottleneck-free P/D range, eq. (9) (:class:`~dualpath_plan.bounds.bandwidth.PdRange`); ``None``
            for mixed node types.
        ceilings: The I/O-only KV ceiling of ``basic`` and ``dualpath``
            (:class:`~dualpath_plan.bounds.bandwidth.Ceiling`, bytes/s), by mode.
        limits: The LP's data in SI (``bounds.lp.Limits``: per-turn bytes, FLOP and tokens, per-GPU prefill FLOP/s and
            decode tokens/s).
        bounds: The throughput bound of ``basic``, ``dualpath`` and ``oracle``
            (:class:`~dualpath_plan.bounds.lp.Bound`), by mode.
        best_splits: Per mode, the pick among the splits of the same ``P + D`` nodes
            (:class:`~dualpath_plan.planning.sweep.SweepPoint`).
        steps: The decode step and a prefill pass term by term, seconds
            (:class:`~dualpath_plan.planning.steps.StepTimes`).
        optimal: Per mode, the splits of ``P + D`` nodes within 1 % of the best and the pick
            (:class:`~dualpath_plan.planning.pick.OptimalSet`).
        storage: The storage cluster behind the storage NICs, planned or as given
            (:class:`~dualpath_plan.planning.storage.StorageNeed`); ``None`` without ``--storage`` (unlimited storage).
        energy: The cluster's power at full load (its storage nodes included) and its joules per turn and per output
            token at the DualPath bound (:class:`~dualpath_plan.model.power.Energy`; ``None`` values where a profile
            gives no ``node_power_W``).
        tier: A DRAM tier's share of the hit KV and the same cluster's bounds without it
            (:class:`~dualpath_plan.planning.tier.TierReport`); ``None`` without ``--dram-tier``. With one, ``bounds`` are the
            bounds with it.
    """

    scenario: Scenario
    pe_node: NodeSpec
    de_node: NodeSpec
    pd_range: PdRange | None
    ceilings: dict[str, Ceiling]
    limits: Limits | None = None
    bounds: dict[str, Bound] = field(default_factory=dict)
    best_splits: dict[str, SweepPoint] = field(default_factory=dict)
    steps: StepTimes | None = None
    optimal: dict[str, OptimalSet] = field(default_factory=dict)  # per mode: the splits of P + D within the tolerance
    storage: StorageNeed | None = None
    energy: Energy | None = None
    tier: TierReport | None = None

    @property
    def ratio(self) -> float:
        return self.scenario.P / self.scenario.D

    @property
    def inside(self) -> bool | None:
        return None if self.pd_range is None else self.pd_range.contains(self.ratio)


def analyze(scenario: Scenario, options: BoundOptions = BoundOptions()) -> Analysis:
    """Evaluate ``scenario``: range (if homogeneous), the KV ceiling and the LP bound of every mode,
    and the best split of the same P + D nodes for each mode (which P/D to order)."""
    instance = options.decode.instance_nodes
    if instance is not None and instance > scenario.D:
        raise PlanError(f"--decode-instance-nodes = {instance} nodes is not allowed; an instance spans at most D = {scenario.D} decode nodes", 2)
    if options.prefill_floor(scenario.model, scenario.pe_hw) > scenario.P and options.prefill_instance_nodes is not None:
        raise PlanError(f"--prefill-instance-nodes = {options.prefill_instance_nodes} nodes is not allowed; an instance spans at most "
                        f"P = {scenario.P} prefill nodes", 2)
    cluster, traffic = scenario.cluster, scenario.traffic
    lim = limits_of(scenario, options)
    per_decode = (cluster.storage.nodes / scenario.D, cluster.storage) if cluster.storage_limits else None  # range (9)'s storage end
    rng = pd_range(cluster.pe, traffic, per_decode) if scenario.homogeneous else None
    bounds = {mode: solve_closed(lim, mode) for mode in BOUND_MODES}
    splits = split_points(scenario, scenario.P + scenario.D, options)
    optimal = {mode: optimal_splits(splits, mode, scenario.pe_hw.name, scenario.de_hw.name) for mode in BOUND_MODES}
    return guard(Analysis(
        scenario=scenario,
        pe_node=cluster.pe,
        de_node=cluster.de,
        pd_range=rng,
        ceilings={mode: ceiling(cluster, traffic, mode) for mode in MODES},
        limits=lim,
        bounds=bounds,
        best_splits={mode: point_of(splits, mode, s.pick) for mode, s in optimal.items()},
        steps=step_times(scenario, lim.decode, options),
        optimal=optimal,
        storage=(need := storage_need(scenario, options, lim, bounds["dualpath"])),
        energy=energy(*cluster_power_W(scenario.pe_hw, scenario.de_hw, scenario.P, scenario.D, scenario.storage, need.nodes if need else 0),
                      bounds["dualpath"].turns_per_s, lim.gen_tokens_per_turn),
        tier=tier_report(scenario, lim, bounds),
    ), "the analysis", scenario.inputs)
