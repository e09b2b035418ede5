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

from dualpath_plan.bounds.bandwidth import PdRange, pd_range
from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import MODES, Bound, BoundOptions, Limits, limits_of
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.finite import RAW
from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.flags import MAX_NODES, check_flag
from dualpath_plan.model.money import BASES, PURCHASE, Basis, money_basis
from dualpath_plan.model.power import Energy, energy
from dualpath_plan.model.profiles import Hardware
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.planning.pick import OptimalSet, Split, by_throughput
from dualpath_plan.planning.request import one_of

DEFAULT_GPUS = 48


@dataclass(frozen=True)
class SweepPoint:
    """One (profile, P, D, mode) bound.

    Attributes:
        profile: The hardware profile's name (``PE+DE`` for mixed node types).
        P: Prefill nodes.
        D: Decode nodes.
        gpus: GPUs of the split, ``P*g_PE + D*g_DE``.
        mode: ``basic``, ``dualpath`` or ``oracle``.
        bound: The split's throughput bound (:class:`~dualpath_plan.bounds.lp.Bound`).
        serves_nothing_because: Why a zero bound is zero: ``prefill_weights_do_not_fit``,
            ``prefill_instance_exceeds_prefill_side``, ``decode_weights_do_not_fit``, ``decode_weights_exceed_slo`` or
            ``decode_instance_exceeds_decode_side``; empty otherwise.
        limits: The split's LP data (``bounds.lp.Limits``), kept for the pick rule.
    """

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
    """Every point, and per profile and mode the optimal set and its pick (``best``: the pick's point).

    What :func:`dualpath_plan.sweep` returns.

    Attributes:
        gpus_budget: The GPU budget every profile's splits spend (``--gpus``), or ``None`` under a money budget.
        points: Every split's bound, one :class:`SweepPoint` per profile, split and mode.
        best: Per profile, per mode: the pick's point.
        optimal: Per profile, per mode: the splits within 1 % of the best and the pick
            (:class:`~dualpath_plan.planning.pick.OptimalSet`).
        pd_ranges: Per profile: eq. (9)'s bottleneck-free P/D range (``None`` where it has none).
        money_budget: The money budget, in the basis' unit (USD bought or USD/h rented), or ``None`` under a GPU budget.
        prices: One node's price per profile, in the basis' unit (USD or USD/h): the known ones, or a money budget's.
        basis: ``purchase`` or ``rent`` (``model.money.BASES``).
        node_power_W: One node's power at full load per profile, W (``None`` where the profile gives none).
    """

    gpus_budget: int | None  # None: a money budget (money_budget)
    points: tuple[SweepPoint, ...]
    best: dict[str, dict[str, SweepPoint]]
    optimal: dict[str, dict[str, OptimalSet]] = field(default_factory=dict)
    pd_ranges: dict[str, PdRange | None] = field(default_factory=dict)  # per profile: eq. (9)'s bottleneck-free P/D range
    money_budget: float | None = None  # in money.unit: USD bought, or USD/h rented
    prices: dict[str, float] = field(default_factory=dict)  # per node by profile, in money.unit (the known ones, or a money budget's)
    basis: str = PURCHASE.name  # money.BASES: purchase or rent
    node_power_W: dict[str, float | None] = field(default_factory=dict)  # per profile: one node's power at full load (None: unknown)
    de_prices: dict[str, float] = field(default_factory=dict)  # per profile whose decode node costs apart (a GPU budget's --set de.*)

    @property
    def money(self) -> Basis:
        return BASES[self.basis]

    def energy(self, point: SweepPoint) -> Energy:
        """The point's power at full load (P + D nodes of its profile) and its joules per turn and output token."""
        watts = self.node_power_W.get(point.profile)
        power = None if watts is None else (point.P + point.D) * watts
        gen = point.limits.gen_tokens_per_turn if point.limits is not None else 0.0
        return energy(power, () if watts is not None else (point.profile,), point.bound.turns_per_s, gen)

    def cost(self, point: SweepPoint) -> float | None:
        """The point's cost in ``money.unit``: P prefill nodes and D decode nodes at its profile's prices, when it has them."""
        price = self.prices.get(point.profile)
        return None if price is None else point.P * price + point.D * self.de_prices.get(point.profile, price)

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


def priced_sweep(scenarios: list[Scenario], gpus: int | None = None, options: BoundOptions = BoundOptions(), *,
                 budget_usd: float | None = None, budget_usd_per_hour: float | None = None, prices_usd: dict[str, float] | None = None,
                 rents_usd_per_hour: dict[str, float] | None = None) -> SweepResult:
    """:func:`sweep` of a GPU budget (``gpus``, default 48), a purchase budget (``budget_usd``, at ``prices_usd`` by profile
    name, else the profiles' prices) or a rent budget (``budget_usd_per_hour``, at ``rents_usd_per_hour``, else the
    profiles' rents): at most one budget, and prices of one basis (``money.money_basis``). A GPU budget is priced
    where prices are known."""
    one_of({"--gpus": gpus, "--budget-usd": budget_usd, "--budget-usd-per-hour": budget_usd_per_hour}, "budget")
    kind = "usd" if budget_usd is not None else "usd_per_hour" if budget_usd_per_hour is not None else None
    basis = money_basis(kind, list(prices_usd or ()), list(rents_usd_per_hour or ()), [sc.pe_hw for sc in scenarios], every=False)
    amount, prices = (budget_usd, prices_usd) if basis is PURCHASE else (budget_usd_per_hour, rents_usd_per_hour)
    return sweep(scenarios, DEFAULT_GPUS if gpus is None else gpus, options, amount, prices, basis)


def sweep(scenarios: list[Scenario], gpus: int | None = DEFAULT_GPUS, options: BoundOptions = BoundOptions(), budget: float | None = None,
          prices: dict[str, float] | None = None, basis: Basis = PURCHASE) -> SweepResult:
    """Bound every split of ``gpus`` GPUs, or of the nodes a money ``budget`` (in ``basis.unit``: USD bought, USD/h rented)
    pays for at each profile's price (``prices`` by name, else the profile's ``price_per_node_usd`` or
    ``rent_per_node_hour_usd``), for each scenario's (homogeneous) hardware."""
    given = prices or {}
    apart = {}  # a GPU budget prices each side for its costs; a money budget buys its nodes at one price, so sides apart are refused
    for sc in scenarios:
        if (de := _de_price_apart(sc, given, basis)) is not None:
            if budget is not None:
                _refuse_apart(sc, basis)
            apart[sc.profile_label] = de
    if budget is None:
        check_flag("--gpus", gpus)
        sizes = {sc.profile_label: nodes_for(sc, gpus) for sc in scenarios}  # keyed as the points are (pe./de. --set: "a+b")
        # A GPU budget is priced where prices are known, for the cost per turn:
        known = {sc.profile_label: p for sc in scenarios if (p := given.get(sc.pe_hw.name, basis.price(sc.pe_hw))) is not None}
    else:
        check_flag(basis.budget_flag, budget)
        known = {sc.profile_label: _price(sc, given, basis) for sc in scenarios}
        sizes = {sc.profile_label: _nodes_bought(sc, budget, known[sc.profile_label], basis) for sc in scenarios}
    for sc in scenarios:
        if (nodes := sizes[sc.profile_label]) > MAX_NODES:  # every profile at the cap: ~33 s and 0.3 GB here
            what = f"--gpus = {gpus} GPUs" if budget is None else f"{basis.budget_flag} = {budget:g} {basis.unit}"
            raise PlanError(f"{what} is not allowed; it gives {sc.pe_hw.name} {nodes} nodes and a sweep takes at most {MAX_NODES}", 2)
    per_profile = {sc.profile_label: split_points(sc, sizes[sc.profile_label], options) for sc in scenarios}
    sides = {sc.profile_label: (sc.pe_hw.name, sc.de_hw.name) for sc in scenarios}
    optimal = {name: {mode: optimal_splits(pts, mode, *sides[name]) for mode in MODES} for name, pts in per_profile.items()}
    best = {name: {mode: point_of(per_profile[name], mode, s.pick) for mode, s in sets.items()} for name, sets in optimal.items()}
    points = tuple(p for pts in per_profile.values() for p in pts)  # every bound guarded (lp.make_bound)
    ranges = {sc.profile_label: pd_range(sc.cluster.pe, sc.traffic) if sc.homogeneous else None for sc in scenarios}
    power = {sc.profile_label: sc.pe_hw.node_power_W for sc in scenarios}  # a sweep's scenarios are one node type each
    return SweepResult(gpus if budget is None else None, points, best, optimal, ranges, budget, known, basis.name, power, apart)


def _de_price_apart(sc: Scenario, prices: dict[str, float], basis: Basis) -> float | None:
    """The decode node's price when it differs from the prefill node's (``--set de.rent_per_node_hour_usd=...``), else None."""
    if sc.pe_hw.name in prices:
        return None
    pe, de = basis.price(sc.pe_hw), basis.price(sc.de_hw)
    return de if pe is not None and de is not None and pe != de else None


def _refuse_apart(sc: Scenario, basis: Basis) -> None:
    """A money budget buys a profile's nodes at one price; sides priced apart would be bought at the wrong one."""
    pe, de = basis.price(sc.pe_hw), basis.price(sc.de_hw)
    raise PlanError(f"{sc.profile_label}: a prefill node costs {fmt(pe, basis.unit)} and a decode node {fmt(de, basis.unit)} "
                    f"({basis.field} set apart per side); this sweep buys every node of a profile at one price, so use plan, or a "
                    f"sweep grid (a list of budgets), which price each side, or {basis.price_flag} {sc.pe_hw.name}={basis.unit} for both", 2)


def _price(sc: Scenario, prices: dict[str, float], basis: Basis) -> float:
    return node_price(sc.pe_hw, prices, basis)


def node_price(hw: Hardware, prices: dict[str, float], basis: Basis) -> float:
    """One ``hw`` node's price on ``basis``: ``prices`` by name, else the profile's own; a money budget needs one."""
    price = prices.get(hw.name, basis.price(hw))
    if price is None:
        raise PlanError(f"{basis.budget_flag} needs a {basis.noun} per node for every profile; {hw.name} has none: give "
                        f"{basis.price_flag} {hw.name}={basis.unit}", 2)
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
