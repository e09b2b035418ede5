"""Sweep hardware generations and P/D splits: the throughput bound of every split of a GPU budget.

For each hardware profile the budget of GPUs becomes ``n = floor(gpus / g)`` nodes, and every split
``P + D = n`` (``P, D >= 1``) is bounded in every mode by the closed-form solution of the ``lp``
model (``closed_bound``). The result names, per profile and mode, the optimal set (every split within
``pick.TOLERANCE_FRAC`` of the best) and the split ``pick.RULE`` picks in it, so generations compare at an
equal GPU count (the paper's 2P4D Hopper cluster is 48 GPUs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import MODES, Bound, BoundOptions, Limits, limits_of
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.finite import RAW
from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.flags import MAX_NODES, check_flag
from dualpath_plan.model.money import BASES, PURCHASE, Basis
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.planning.pick import OptimalSet, Split, by_throughput

DEFAULT_GPUS = 48


@dataclass(frozen=True)
class SweepPoint:
    """One (profile, P, D, mode) bound."""

    profile: str
    P: int
    D: int
    gpus: int
    mode: str
    bound: Bound
    serves_nothing_because: tuple[str, ...] = ()  # Limits.serves_nothing_because: a zero bound's cause
    limits: Limits | None = field(default=None, repr=False, compare=False, metadata={RAW: "guarded in lp.limits_of"})  # for the pick

    @property
    def turns_per_s_per_gpu(self) -> float:
        return self.bound.turns_per_s / self.gpus


@dataclass(frozen=True)
class SweepResult:
    """Every point, and per profile and mode the optimal set and its pick (``best``: the pick's point)."""

    gpus_budget: int | None  # None: a money budget (budget_usd)
    points: tuple[SweepPoint, ...]
    best: dict[str, dict[str, SweepPoint]]
    optimal: dict[str, dict[str, OptimalSet]] = field(default_factory=dict)
    budget_usd: float | None = None  # in the basis' unit: USD, or USD/h rented
    prices_usd: dict[str, float] = field(default_factory=dict)  # per node by profile (a money budget's), in the basis' unit
    basis: str = PURCHASE.name  # money.BASES: purchase or rent

    @property
    def money(self) -> Basis:
        return BASES[self.basis]

    def cost_usd(self, point: SweepPoint) -> float | None:
        """The point's price (P + D nodes at its profile's price, USD or USD/h), when a money budget priced it."""
        price = self.prices_usd.get(point.profile)
        return None if price is None else (point.P + point.D) * price

    def in_optimal_set(self, point: SweepPoint) -> bool:
        return self.optimal[point.profile][point.mode].contains(point.P, point.D)


def nodes_for(scenario: Scenario, gpus: int) -> int:
    """Whole nodes of the scenario's hardware within ``gpus`` GPUs; at least 2 (one per side)."""
    nodes = gpus // scenario.pe_hw.g
    if nodes < 2:
        raise PlanError(f"--gpus = {gpus} GPUs is not allowed for profile {scenario.pe_hw.name!r}: needs >= {2 * scenario.pe_hw.g} (two nodes of {scenario.pe_hw.g} GPUs)", 1)
    return nodes


def split_points(scenario: Scenario, nodes: int, options: BoundOptions = BoundOptions()) -> list[SweepPoint]:
    """Every split ``P + D = nodes`` (P, D >= 1) of the scenario's hardware, bounded in every mode."""
    out = []
    for P in range(1, nodes):
        sc = scenario.with_nodes(P, nodes - P)
        gpus = P * sc.pe_hw.g + (nodes - P) * sc.de_hw.g
        lim = limits_of(sc, options)
        out += [SweepPoint(sc.profile_label, P, nodes - P, gpus, mode, solve_closed(lim, mode), lim.serves_nothing_because, lim) for mode in MODES]
    return out


def optimal_splits(points: list[SweepPoint], mode: str, pe_profile: str = "", de_profile: str = "") -> OptimalSet:
    """The optimal set of ``mode``'s points (every split within ``pick.TOLERANCE_FRAC`` of the best bound) and
    the split ``pick.RULE`` picks in it: the rule ``plan`` and ``bottleneck`` pick by too."""
    own = [p for p in points if p.mode == mode]
    return by_throughput([Split(pe_profile or p.profile, de_profile or p.profile, p.P, p.D, float(p.gpus), p.bound, p.limits) for p in own], mode)


def sweep(scenarios: list[Scenario], gpus: int | None = DEFAULT_GPUS, options: BoundOptions = BoundOptions(), budget_usd: float | None = None,
          prices_usd: dict[str, float] | None = None, basis: Basis = PURCHASE) -> SweepResult:
    """Bound every split of ``gpus`` GPUs, or of the nodes ``budget_usd`` buys (USD, or USD/h on the ``rent`` basis) at each
    profile's price (``prices_usd`` by name, else the profile's ``price_per_node_usd`` or ``rent_per_node_hour_usd``), for
    each scenario's (homogeneous) hardware."""
    if budget_usd is None:
        check_flag("--gpus", gpus)
        sizes = {sc.profile_label: nodes_for(sc, gpus) for sc in scenarios}  # keyed as the points are (pe./de. --set: "a+b")
        # A GPU budget is priced where prices are known, for the cost per turn:
        prices = {sc.profile_label: p for sc in scenarios if (p := (prices_usd or {}).get(sc.pe_hw.name, basis.price(sc.pe_hw))) is not None}
    else:
        check_flag(basis.budget_flag, budget_usd)
        prices = {sc.profile_label: _price(sc, prices_usd or {}, basis) for sc in scenarios}
        sizes = {sc.profile_label: _nodes_bought(sc, budget_usd, prices[sc.profile_label], basis) for sc in scenarios}
    for sc in scenarios:
        if (nodes := sizes[sc.profile_label]) > MAX_NODES:  # every profile at the cap: ~33 s and 0.3 GB here
            what = f"--gpus = {gpus} GPUs" if budget_usd is None else f"{basis.budget_flag} = {budget_usd:g} {basis.unit}"
            raise PlanError(f"{what} is not allowed; it gives {sc.pe_hw.name} {nodes} nodes and a sweep takes at most {MAX_NODES}", 2)
    per_profile = {sc.profile_label: split_points(sc, sizes[sc.profile_label], options) for sc in scenarios}
    sides = {sc.profile_label: (sc.pe_hw.name, sc.de_hw.name) for sc in scenarios}
    optimal = {name: {mode: optimal_splits(pts, mode, *sides[name]) for mode in MODES} for name, pts in per_profile.items()}
    best = {name: {mode: point_of(per_profile[name], mode, s.pick) for mode, s in sets.items()} for name, sets in optimal.items()}
    points = tuple(p for pts in per_profile.values() for p in pts)  # every bound guarded (lp.make_bound)
    return SweepResult(gpus if budget_usd is None else None, points, best, optimal, budget_usd, prices, basis.name)


def _price(sc: Scenario, prices_usd: dict[str, float], basis: Basis) -> float:
    price = prices_usd.get(sc.pe_hw.name, basis.price(sc.pe_hw))
    if price is None:
        raise PlanError(f"{basis.budget_flag} needs a {basis.name} price per node for every profile; {sc.pe_hw.name} has none: give "
                        f"{basis.price_flag} {sc.pe_hw.name}={basis.unit}", 2)
    return price


def _nodes_bought(sc: Scenario, budget: float, price: float, basis: Basis) -> int:
    nodes = math.floor(budget / price * (1 + 1e-12))  # 0.3 USD/h buys 3 nodes at 0.1 USD/h: not 2 by rounding
    if nodes < 2:
        raise PlanError(f"{basis.budget_flag} = {fmt(budget, basis.unit)} buys {nodes} {sc.pe_hw.name} node(s) at {fmt(price, basis.unit)} each; "
                        "a split needs two (one per side)", 1)
    return nodes


def point_of(points: list[SweepPoint], mode: str, pick: Split) -> SweepPoint:
    """The point of ``mode`` at ``pick``'s split."""
    return next(p for p in points if p.mode == mode and (p.P, p.D) == (pick.P, pick.D))
