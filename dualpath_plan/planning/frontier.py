"""The splits ``plan``'s optimal set is drawn from, for one (PE type, DE type) pair.

* **Budget**: the frontier, every ``(P, D)`` that spends the budget as far as whole nodes go:
  ``D = floor((budget - w_P*P) / w_D)`` for each ``P``. Any split inside it is weakly worse than the
  frontier split with the same ``P`` (more decode nodes never lower a bound), so the frontier holds every
  split within the tolerance of the best that the pick could prefer (``pick`` breaks a tie on cost last).
* **Target**: for each ``P``, the fewest decode nodes that reach the target, up to a cost cap (``pick``'s
  tolerance above the cheapest): the bound grows with ``D`` (links and decode capacity both do), so a
  bisection finds them.
* **Ranked**: the ``k`` best splits within a budget, spent or not (:func:`budget_ranked`), by the budget MILP's
  objective ``X - eps * cost`` (``eps * budget`` a 1e-7 share of the bound: ties go to the cheaper split). The
  bound never grows when a node is taken away, so below a split of ``P`` and ``D`` no split of the same ``P`` beats ``X(P, D) - eps * (w_P * P + w_D)``: a best-first search from the frontier down each ``P``'s
  decode count, with that as each unopened split's priority, meets the splits in the MILP's order and bounds
  only a few beyond the frontier. ``plan`` takes its optimum and runner-ups from it; the MILP (``plan``)
  is the reference a test holds it to.

**Storage** (``plan --storage``): a split buys the storage nodes its bound needs (``storage.planned_nodes``), and
``weights`` then carries a third entry, what one storage node counts against the budget (its price, rent or
power; 0 under a node or GPU budget, which counts compute nodes). A split's cost includes them, so a budget's
frontier is, for each ``P``, the most decode nodes whose split with its storage stays within the budget, found by
walking ``D`` down from the most the compute nodes alone allow. The storage nodes of a split never make a split
inside the frontier better than the frontier's (the bound still grows with ``D``), and ``w_P*P + w_D*D`` stays a
lower bound on a split's cost, so the ranked search holds as before.

Limits are cached per cluster, so the modes of one request share them.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.decode import DecodeRate
from dualpath_plan.bounds.lp import BoundOptions, Limits, decode_side_rate, limits_of
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.planning.pick import Split, robustness
from dualpath_plan.planning.storage import planned_nodes

Cache = dict[tuple, "Limits | DecodeRate"]  # (PE, DE, P, D) -> Limits; ("decode", DE, D) -> the decode side's rate
SAME = 1e-12  # relative: bounds this close are the same (a node that adds less adds nothing)
REACH_TOL = 1e-6  # relative: a bound this close to the target reaches it (as loose as HiGHS' feasibility tolerance)


def split_of(sc: Scenario, P: int, D: int, weights: tuple[float, ...], mode: str, options: BoundOptions, cache: Cache) -> Split:
    """The bound of ``P`` prefill and ``D`` decode nodes of ``sc``'s types, at cost ``w_P*P + w_D*D`` (plus ``w_S`` per
    storage node its bound needs, with a storage profile and a third weight)."""
    key = (sc.pe_hw.name, sc.de_hw.name, P, D)
    if key not in cache:
        sized, side = sc.with_nodes(P, D), ("decode", sc.de_hw.name, D)
        if side not in cache:  # the decode rate depends on D only: the P of a frontier share it
            cache[side] = decode_side_rate(sized, options)
        cache[key] = limits_of(sized, options, rate=cache[side])
    lim = cache[key]
    bound = solve_closed(lim, mode)
    nodes = planned_nodes(lim, bound)
    storage = nodes * weights[2] if nodes is not None and len(weights) > 2 else 0.0
    return Split(sc.pe_hw.name, sc.de_hw.name, P, D, P * weights[0] + D * weights[1] + storage, bound, lim, nodes)


def budget_frontier(sc: Scenario, weights: tuple[float, ...], amount: float, p_min: int, mode: str, options: BoundOptions,
                    cache: Cache) -> list[Split]:
    """Every split on the budget's frontier with at least ``p_min`` prefill nodes and one decode node (with storage
    nodes that count against the budget, the most decode nodes whose split fits with them: module docstring)."""
    wp, wd = weights[:2]
    out = []
    for P in range(max(1, p_min), int(math.floor((amount - wd) / wp + 1e-9)) + 1):
        D = int(math.floor((amount - wp * P) / wd + 1e-9))
        while D >= 1:
            split = split_of(sc, P, D, weights, mode, options, cache)
            if split.cost <= amount * (1 + 1e-9):
                out.append(split)
                break
            D -= 1
    return out


def trimmed(split: Split, sc: Scenario, weights: tuple[float, ...], mode: str, options: BoundOptions, cache: Cache) -> Split:
    """``split`` without the decode, then prefill, nodes that add neither bound nor robustness (``pick.robustness``):
    under a money budget they would be bought for nothing."""
    best, worst = split, robustness(split, mode).turns_per_s
    for side in ("D", "P"):
        while min(best.P, best.D) > 1:
            P, D = (best.P, best.D - 1) if side == "D" else (best.P - 1, best.D)
            fewer = split_of(sc, P, D, weights, mode, options, cache)
            if fewer.turns_per_s < best.turns_per_s * (1 - SAME) or robustness(fewer, mode).turns_per_s < worst * (1 - SAME):
                break
            best = fewer
    return best


def target_frontier(sc: Scenario, weights: tuple[float, float], cost_cap: float, p_min: int, target: float, mode: str,
                    options: BoundOptions, cache: Cache, most: int | None = None, d_min: int = 1) -> list[Split]:
    """For each ``P``, the cheapest split reaching ``target`` turns/s at a cost of at most ``cost_cap`` and with at most
    ``most`` nodes per side; ``d_min``: a decode count below which no split reaches the target.

    The bound never falls when a node is added, so the ``P`` that reach the target at all (with the most decode
    nodes the cap allows) are those from a least one, which a bisection finds; ``P`` stops where even ``d_min``
    decode nodes pass the cap. Between, the fewest decode nodes that reach the target, ``D*(P)``, never grow with
    ``P``: a staircase walks them, up ``P``, down ``D`` from the last step, with a bisection only where the last
    ``P`` reached nothing within the cap. That bounds about ``P_range + D_range`` splits, not ``P_range`` bisections."""
    wp, wd = weights
    reach = lambda P, D: split_of(sc, P, D, weights, mode, options, cache).turns_per_s >= target * (1 - REACH_TOL)  # noqa: E731
    side = lambda amount: int(math.floor(amount + 1e-9)) if most is None else min(int(math.floor(amount + 1e-9)), most)  # noqa: E731
    first, last = max(1, p_min), side((cost_cap - wd * max(1, d_min)) / wp)
    top = side((cost_cap - wp * first) / wd)  # the most decode nodes any P within the cap can have
    if last < first or top < 1 or not reach(last, top):
        return []
    first = _least(lambda P: reach(P, top), first, last)
    out, below = [], None  # below: D*(P - 1) when the last P reached the target within the cap
    for P in range(first, last + 1):
        hi = side((cost_cap - wp * P) / wd)
        if below is not None and below <= hi:
            D = below  # X(P, D*(P - 1)) >= X(P - 1, D*(P - 1)) >= target
            while D > 1 and reach(P, D - 1):
                D -= 1
        elif hi >= 1 and reach(P, hi):
            D = _least(lambda d: reach(P, d), 1, hi)
        else:
            below = None
            continue
        below = D
        out.append(split_of(sc, P, D, weights, mode, options, cache))
    return out


def _least(holds, lo: int, hi: int) -> int:
    """The least ``n`` in ``[lo, hi]`` for which the monotone ``holds`` is true (``holds(hi)`` is)."""
    lo -= 1  # holds(lo) false or lo below the range
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi


def budget_ranked(pairs: Sequence[tuple[Scenario, tuple[float, ...], int]], amount: float, mode: str, options: BoundOptions,
                  cache: Cache, count: int, eps: float, scale: float, frontiers: Sequence[list[Split]] | None = None) -> list[Split]:
    """The ``count`` best splits that serve anything within a budget of ``amount``, over every (scenario, weights, p_min)
    in ``pairs``, best first by ``X - eps * cost`` (module docstring) taken to :data:`SAME` of ``scale`` (turns/s, the
    bound's size: the rounding of equal bounds is no ranking), ties to the cheaper, then fewer prefill nodes.
    ``frontiers``: each pair's :func:`budget_frontier`, when the caller has them already."""
    spent = [budget_frontier(sc, w, amount, p_min, mode, options, cache) for sc, w, p_min in pairs] if frontiers is None else frontiers
    top = max((s.turns_per_s for splits in spent for s in splits), default=0.0)
    grain = SAME * (max(scale, top) if max(scale, top) > 0 else 1.0)  # never finer than the largest bound can round to
    key = lambda value: -round(value / grain)  # noqa: E731  (monotone: an upper bound stays one)
    heap: list[tuple[float, int, float, int, int, int, Split | None]] = []  # (-priority, opened?, cost, P, pair, D, split)
    for k, ((_, weights, _), splits) in enumerate(zip(pairs, spent)):
        wp, wd = weights[:2]
        for split in splits:
            heapq.heappush(heap, (key(split.turns_per_s - eps * (wp * split.P + wd)), 0, split.cost, split.P, k, split.D, split))
    out: list[Split] = []
    while heap and len(out) < count:
        _, opened, _, P, k, D, split = heapq.heappop(heap)
        sc, weights, _ = pairs[k]
        if opened:
            if split.turns_per_s > 0 and split.cost <= amount * (1 + 1e-9):  # below the frontier a split's storage may still cost more
                out.append(split)
            continue
        if split is None:  # the next split down a P's decode count, bounded from above by the one before it
            split = split_of(sc, P, D, weights, mode, options, cache)
        heapq.heappush(heap, (key(split.turns_per_s - eps * split.cost), 1, split.cost, P, k, D, split))
        if D > 1 and split.turns_per_s > 0:  # below a split that serves nothing, none does
            heapq.heappush(heap, (key(split.turns_per_s - eps * (weights[0] * P + weights[1])), 0, split.cost - weights[1], P, k, D - 1, None))
    return out
