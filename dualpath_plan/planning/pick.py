"""Which split to buy: the optimal set, said out loud, and the one rule every command picks inside it by.

Many splits of a budget reach the same bound: inside the bottleneck-free range (eq. 9) every split
saturates both storage-NIC sides, so 144 Hopper nodes tie from P = 27 to P = 86. A bound is only as good
as the micro-benchmarks and datasheets behind it (a few per cent), so the **optimal set** is every split
within :data:`TOLERANCE_FRAC` of the best: a bound at least ``(1 - 1 %) * X*`` for a budget question, or a
cost at most ``(1 + 1 %)`` times the cheapest for a target question.

Inside the set, ``bottleneck``, ``plan`` and ``sweep`` pick by one rule, :data:`RULE`. A buyer's numbers
come from datasheets, and a real node delivers less than its datasheet on some resource: a slower storage
target, a congested link, a kernel below its benchmark. So the pick is the split whose bound loses least
when any one capacity (every link, DRAM, prefill compute, decode) is :data:`DERATE_FRAC` short: the maximin
of the bound over those single shortfalls. Inside the range it is the split that balances the two storage
sides, away from the edges where CNIC or compute binds next; it keeps the best bound (it is in the set).
Only a limit loaded above ``1 - DERATE_FRAC`` can lower the bound when it shrinks by that share (the
optimum stays feasible otherwise), so only those are re-solved. Where the worst shortfall ties, the next worst
decides, and so on (the leximin order: each split's bounds under the single shortfalls, sorted from the worst up,
compared one by one): a limit every split shares, such as a storage cluster of a given size, cuts every split of the
same nodes to one bound, and the split that loses least to the other shortfalls is still the more robust. Then ties
go to the higher bound, then the cheaper split, then fewer prefill nodes. Bounds and costs are compared rounded to a
grain of :data:`SAME_FRAC` times the set's largest, so values equal on paper (which differ in their last bits) tie and
the next key decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import Bound, Limits
from dualpath_plan.model.finite import RAW

TOLERANCE_FRAC = 0.01  # a split within 1 % of the best is as good: the bounds' inputs are good to a few per cent
DERATE_FRAC = 0.10  # the shortfall of one capacity the pick guards against
TIE_FRAC = 1e-6  # relative: two modes' or options' bounds this close are the same (they differ in rounding, not in any resource)
SAME_FRAC = 1e-12  # the grain, relative to the set's largest, bounds and costs are compared at: rounding is not a ranking
RUNNERS_UP = 10  # splits outside the set kept for the runner check (check.py)
_GUARDED = "every split's bound passed the guard in lp.make_bound"
RULE = ("most robust: the split whose bound falls least when any one capacity is 10 % short, the next worst shortfall "
        "deciding a tie (then the higher bound, the lower cost, fewer prefill nodes)")
RULE_NAME = "most robust"


@dataclass(frozen=True)
class Split:
    """One candidate cluster: node types, P, D, its cost (budget units) and its bound in one mode.

    Attributes:
        pe_profile: The prefill nodes' hardware profile.
        de_profile: The decode nodes' hardware profile.
        P: Prefill nodes.
        D: Decode nodes.
        cost: What the split spends, in the question's unit (nodes, GPUs, USD, USD/h or kW), its storage nodes included.
        bound: Its throughput bound in the set's mode (:class:`~dualpath_plan.bounds.lp.Bound`).
        limits: Its LP data (``bounds.lp.Limits``), for the robustness of the pick rule.
        storage_nodes: The storage nodes planned for it (``plan --storage``: the fewest that do not bind its bound), or
            ``None`` without a storage profile.
    """

    pe_profile: str
    de_profile: str
    P: int
    D: int
    cost: float
    bound: Bound
    limits: Limits = field(repr=False, compare=False, metadata={RAW: "guarded where it was made (lp.limits_of)"})
    storage_nodes: int | None = None

    @property
    def turns_per_s(self) -> float:
        return self.bound.turns_per_s


@dataclass(frozen=True)
class Robustness:
    """The bound with the one capacity whose 10 % shortfall costs most, and, where that ties within the set, the
    shortfall that decided the pick.

    Attributes:
        turns_per_s: The bound under that shortfall, turns/s (the bound itself when no single shortfall lowers it).
        resource: The limit whose shortfall costs most, or ``None`` when no limit is loaded above 90 %.
        decided_by: With the worst shortfall tied with the runner-up's (the leximin order's next keys decide): the first
            shortfall, from the worst up, where the pick keeps more, as ``(limit, turns/s)``; ``None`` otherwise.
    """

    turns_per_s: float
    resource: str | None
    decided_by: tuple[str, float] | None = None


@dataclass(frozen=True)
class OptimalSet:
    """The splits within the tolerance of the best, and the one :data:`RULE` picked.

    Attributes:
        mode: The mode the splits are bounded in (``basic``, ``dualpath`` or ``oracle``).
        objective: ``max_turns_per_s`` (a budget question: bounds within 1 % of the best) or ``min_cost`` (a target
            question: costs within 1 % of the cheapest).
        tolerance_frac: The tolerance, a fraction (0.01).
        members: Every split of the set (:class:`Split`), by node types, P and D.
        pick: The split the rule picked.
        robustness: The pick's bound under its worst single 10 % shortfall (:class:`Robustness`).
        rule: The rule in words.
        ranked: The members in the rule's order, the pick first.
        runners_up: The best splits outside the set, at most 10, for the runner check.
        listed: The splits a report lists, in its order, the pick first (``plan``'s table: the pick, then the next best of
            any spend within the budget); empty where a report lists the set itself. The runner check plays these first,
            so that the splits it checks are the ones the user reads.
    """

    mode: str
    objective: str
    tolerance_frac: float
    members: tuple[Split, ...] = field(metadata={RAW: _GUARDED})
    pick: Split
    robustness: Robustness
    rule: str = RULE
    ranked: tuple[Split, ...] = field(default=(), metadata={RAW: _GUARDED})  # the members in the rule's order, the pick first
    runners_up: tuple[Split, ...] = field(default=(), metadata={RAW: _GUARDED})  # the next best outside the set (at most RUNNERS_UP)
    listed: tuple[Split, ...] = field(default=(), metadata={RAW: _GUARDED})  # what a report lists, the pick first

    def candidates(self, count: int) -> tuple[Split, ...]:
        """The ``count`` best splits: those listed (when a report lists its own), then the set in the rule's order, then the
        runners-up, each once."""
        seen, out = set(), []
        for s in (*self.listed, *self.ranked, *self.runners_up):
            if (key := (s.pe_profile, s.de_profile, s.P, s.D)) not in seen:
                seen.add(key)
                out.append(s)
        return tuple(out[:count])

    @property
    def p_range(self) -> tuple[int, int]:
        return min(s.P for s in self.members), max(s.P for s in self.members)

    @property
    def pd_range(self) -> tuple[float, float]:
        ratios = [s.P / s.D for s in self.members]
        return min(ratios), max(ratios)

    def contains(self, P: int, D: int, pe_profile: str | None = None) -> bool:
        return any(s.P == P and s.D == D and pe_profile in (None, s.pe_profile) for s in self.members)


def bounds_tie(a: float, b: float) -> bool:
    """Whether two bounds are the same (within :data:`TIE_FRAC`), so that no order of the two contradicts them."""
    return math.isclose(a, b, rel_tol=TIE_FRAC)


def shortfalls(split: Split, mode: str) -> tuple[tuple[float, str], ...]:
    """The bound of ``split`` under each single :data:`DERATE_FRAC` shortfall that lowers it, ``(turns/s, limit)``,
    from the worst up (only limits loaded above ``1 - DERATE_FRAC`` can lower it; the others leave the bound)."""
    out = []
    for name, load in split.bound.utilization.items():
        if load > 1 - DERATE_FRAC:
            value = solve_closed(split.limits.derated(name, 1 - DERATE_FRAC), mode).turns_per_s
            if value < split.turns_per_s:
                out.append((value, name))
    return tuple(sorted(out, key=lambda vn: vn[0]))  # stable: of equal bounds, the limit listed first names the worst


def robustness(split: Split, mode: str) -> Robustness:
    """The bound of ``split`` under its worst single :data:`DERATE_FRAC` shortfall."""
    worst = shortfalls(split, mode)
    return Robustness(worst[0][0], worst[0][1]) if worst else Robustness(split.turns_per_s, None)


def grains(splits: Sequence[Split]) -> tuple[float, float]:
    """The steps (turns/s, cost) below which two splits' bounds or costs count as equal: :data:`SAME_FRAC` of the largest."""
    top = max((s.turns_per_s for s in splits), default=0.0)
    dear = max((abs(s.cost) for s in splits), default=0.0)
    return (SAME_FRAC * top if top > 0 else 1.0, SAME_FRAC * dear if dear > 0 else 1.0)


def _pick(mode: str, objective: str, members: list[Split], others: list[Split]) -> OptimalSet:
    x_step, cost_step = grains(members)
    falls = [shortfalls(s, mode) for s in members]
    width = max((len(f) for f in falls), default=0)

    def leximin(f: tuple[tuple[float, str], ...], s: Split) -> tuple[int, ...]:
        """The shortfalls from the worst up, padded with the bound (what a shortfall that does not lower it leaves), in
        grains: equal to within rounding is equal, and the next key decides."""
        return tuple(-round(v / x_step) for v in [*(v for v, _ in f), *[s.turns_per_s] * (width - len(f))])

    scored = sorted(((leximin(f, s), f, s) for f, s in zip(falls, members)),
                    key=lambda k: (k[0], -round(k[2].turns_per_s / x_step), round(k[2].cost / cost_step), k[2].P))
    key, fall, pick = scored[0]
    rob = Robustness(fall[0][0], fall[0][1]) if fall else Robustness(pick.turns_per_s, None)
    if len(scored) > 1 and fall and key[0] == scored[1][0][0]:  # the worst ties: the first shortfall that differs decided
        rob = replace(rob, decided_by=next(((name, v) for (v, name), a, b in zip(fall, key, scored[1][0]) if a != b), None))
    ordered = tuple(sorted(members, key=lambda s: (s.pe_profile, s.de_profile, s.P, s.D)))
    return OptimalSet(mode, objective, TOLERANCE_FRAC, ordered, pick, rob, RULE, tuple(s for _, _, s in scored), tuple(others[:RUNNERS_UP]))


def by_throughput(splits: Sequence[Split], mode: str) -> OptimalSet:
    """A budget question: the splits whose bound is within the tolerance of the best, and the pick."""
    top = max(s.turns_per_s for s in splits)
    inside = [s.turns_per_s >= top * (1 - TOLERANCE_FRAC) for s in splits]
    x_step, cost_step = grains([s for s, keep in zip(splits, inside) if keep])
    others = sorted((s for s, keep in zip(splits, inside) if not keep), key=lambda s: (-round(s.turns_per_s / x_step), round(s.cost / cost_step), s.P))
    return _pick(mode, "max_turns_per_s", [s for s, keep in zip(splits, inside) if keep], others)


def by_cost(splits: Sequence[Split], mode: str) -> OptimalSet:
    """A target question (every split reaches it): those within the tolerance of the cheapest, and the pick."""
    low = min(s.cost for s in splits)
    inside = [s.cost <= low * (1 + TOLERANCE_FRAC) for s in splits]
    x_step, cost_step = grains([s for s, keep in zip(splits, inside) if keep])
    others = sorted((s for s, keep in zip(splits, inside) if not keep), key=lambda s: (round(s.cost / cost_step), -round(s.turns_per_s / x_step), s.P))
    return _pick(mode, "min_cost", [s for s, keep in zip(splits, inside) if keep], others)
