"""What a DRAM tier buys: DualPath alone, the tier alone, and both, on one cluster (``bottleneck --dram-tier``) or
within one budget (``plan --dram-tier``).

The bounds with the tier (``bounds.lp``, ``bounds.closed_bound``) are the analysis' own; beside them, the same cluster
without the tier, so that one command compares DualPath's second read path, a Mooncake-style DRAM cache (``basic``
with the tier: hits over the CNICs, misses from storage on the PE path), and both (``dualpath`` with the tier).

``plan`` compares them at equal cost: the question is answered twice, with the tier on every node and without it (the
same nodes at their own prices), within the same budget, so each of the four options gets the best cluster the budget
buys it. Under a money budget each node with the tier costs its price plus the tier's GB at ``--dram-price`` or
``--dram-rent`` (``request._tier_price``); under a budget in nodes, GPUs or kW the tier counts nothing: a node's
``node_power_W`` is its maximum with the DRAM it ships with (``dram_GB``, which bounds the tier).

``bottleneck`` also finds, on its nodes, the least tier at which the tier alone and both beat DualPath alone
(:func:`beats_from_GB`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import Bound, Limits
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.units import GB

if TYPE_CHECKING:  # bottleneck imports this module and plans nothing
    from dualpath_plan.planning.plan import Choice, ModePlan
    from dualpath_plan.planning.request import PlanRequest

TIER_MODES = ("basic", "dualpath")


@dataclass(frozen=True)
class TierReport:
    """A DRAM tier on one cluster.

    Attributes:
        gb_per_node: The tier's host DRAM on every compute node, GB (``--dram-tier``).
        tier_bytes: Its bytes over the ``P + D`` nodes.
        served_cap_Bps: The most hit KV it serves, bytes/s (``bounds.lru.served_cap_Bps``: about its bytes once a cycle).
        working_bytes_s_per_turn: ``k_w``, the live agents' KV per turn/s: the working set is ``X * k_w``.
        served_Bps: Per mode, the hit KV it serves at the bound with it, bytes/s.
        served_share: Per mode, that over the turns' hit KV, a fraction.
        without: Per mode, the bound of the same cluster without the tier (:class:`~dualpath_plan.bounds.lp.Bound`).
        beats_dualpath_from_GB: The least tier, GB on every node (to :data:`BREAK_EVEN_RESOLUTION_GB`), at which the tier
            alone (``tier_alone``: basic with it) and DualPath with it (``both``) reach more than DualPath alone on these
            nodes; ``None`` where no tier below a node's host DRAM does (:func:`beats_from_GB`).
    """

    gb_per_node: float
    tier_bytes: float
    served_cap_Bps: float
    working_bytes_s_per_turn: float
    served_Bps: dict[str, float]
    served_share: dict[str, float]
    without: dict[str, Bound]
    beats_dualpath_from_GB: dict[str, float | None]


def tier_report(scenario: Scenario, lim: Limits, bounds: dict[str, Bound]) -> TierReport | None:
    """The tier of ``scenario`` (``None`` without ``--dram-tier``); ``lim`` and ``bounds``: its LP data and bounds with it."""
    if not lim.tier:
        return None
    plain = replace(lim, tier_bytes=0.0, tier_sigma=0.0, working_bytes_s_per_turn=0.0)
    share = {m: served_share(bounds[m]) for m in TIER_MODES}
    without = {m: solve_closed(plain, m) for m in TIER_MODES}
    most = min(hw.dram_bytes for hw in (scenario.pe_hw, scenario.de_hw)) / GB  # the tier stays below a node's DRAM (scenario)
    dualpath = without["dualpath"].turns_per_s
    beats = {name: beats_from_GB(lim, mode, dualpath, scenario.P + scenario.D, most) for name, mode in (("tier_alone", "basic"), ("both", "dualpath"))}
    return TierReport(scenario.dram_tier_GB, lim.tier_bytes, lim.tier_cap_Bps, lim.working_bytes_s_per_turn,
                      {m: bounds[m].R_m_Bps for m in TIER_MODES}, share, without, beats)


BREAK_EVEN_RESOLUTION_GB = 1.0  # tiers are bought in GB; --dram-tier takes 1 GB and up
_BEATS = 1e-9  # relative: a bound this much above DualPath alone beats it (not a rounding tie)


def beats_from_GB(lim: Limits, mode: str, target: float, nodes: int, most_GB: float) -> float | None:
    """The least tier on every node, GB (to :data:`BREAK_EVEN_RESOLUTION_GB`, from 1 GB), whose bound in ``mode`` exceeds
    ``target`` turns/s, below ``most_GB``; ``None`` if none does. ``lim``: the cluster's limits with some tier (its size is
    the only thing changed). More DRAM never lowers a bound (a property test), so a bisection finds it."""

    def beats(gb: float) -> bool:
        return solve_closed(replace(lim, tier_bytes=gb * GB * nodes), mode).turns_per_s > target * (1 + _BEATS)

    lo, hi = 1.0, most_GB * (1 - 1e-9)
    if hi < lo or not beats(hi):
        return None
    if beats(lo):
        return lo
    while hi - lo > BREAK_EVEN_RESOLUTION_GB:  # beats(hi), not beats(lo)
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if beats(mid) else (mid, hi)
    whole = float(math.ceil(hi))  # a whole GB, no smaller: it beats too (a bigger tier never lowers the bound)
    return whole if whole < most_GB else hi


def served_share(bound: Bound) -> float:
    """The share of the turns' hit KV a DRAM tier serves at ``bound`` (0 without a tier or without turns)."""
    return bound.R_m_Bps / bound.kv_Bps if bound.kv_Bps > 0 else 0.0


OPTIONS = {"neither": ("basic", False), "dualpath_alone": ("dualpath", False), "tier_alone": ("basic", True), "both": ("dualpath", True)}


@dataclass(frozen=True)
class TierPlan:
    """``plan --dram-tier``: the same budget question with and without the tier (module docstring).

    Attributes:
        gb_per_node: The tier's DRAM on every node, GB.
        dram_price_per_GB: What a GB of it adds to a node's cost, in the plan's money unit per GB, or ``None`` where it is
            not priced (a budget in nodes, GPUs or kW without ``--dram-price`` or ``--dram-rent``).
        with_tier: Per mode, the plan with the tier (the answer's own modes).
        without: Per mode, the plan of the same question without it.
    """

    gb_per_node: float
    dram_price_per_GB: float | None
    with_tier: dict[str, ModePlan]
    without: dict[str, ModePlan]

    def options(self) -> dict[str, Choice]:
        """The pick of each of :data:`OPTIONS` that the plan's modes cover: neither (basic), DualPath alone, the tier alone
        (basic with it) and both, in that order."""
        return {name: (self.with_tier if tier else self.without)[mode].best for name, (mode, tier) in OPTIONS.items() if mode in self.without}


def plan_tiers(request: PlanRequest, answers: dict[str, ModePlan]) -> TierPlan | None:
    """The tier of a ``plan`` question (``None`` without ``--dram-tier``): ``answers`` with it, and the question without."""
    from dualpath_plan.planning.plan import plan

    if not request.dram_tier_GB:
        return None
    return TierPlan(request.dram_tier_GB, request.dram_price_per_GB, answers, plan(request.without_tier()))
