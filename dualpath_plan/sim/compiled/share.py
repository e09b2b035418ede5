"""The sharing rule of ``sim.python.share`` as one compiled loop kernel (numba): the same arithmetic, in the same order.

``sim.python.share`` states the rule (weighted max-min fairness by progressive filling in rounds) and holds
its numpy implementation; this module is that implementation rewritten as plain loops for numba, so
that a step's allocation costs microseconds instead of a hundred-odd numpy calls. Every sum adds its
terms in entry order, as ``np.bincount`` does, every minimum runs over a flow's entries in order, as
``np.minimum.reduceat`` does, and every comparison uses the same tolerances, so the kernel returns
bit for bit what the numpy code returns (a property test checks it on random instances).

Flows without work are skipped where the numpy code adds their zeros; adding ``+0.0`` to a sum of
non-negative terms does not change it, so skipping them is exact.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.sim.compiled.cache import versioned_cache_dir

versioned_cache_dir()  # before numba is imported
from numba import njit  # noqa: E402

MAX_ROUNDS = 64  # as sim.python.share.MAX_ROUNDS
REL_EPS = 1e-12  # as sim.python.share.REL_EPS
UP, DOWN = 1.0 + REL_EPS, 1.0 - REL_EPS


_jit = njit(cache=True, error_model="numpy", nogil=True)  # numpy's float rules: x / 0 is inf or NaN, not an exception


@_jit
def allocate_loops(flow: np.ndarray, res: np.ndarray, coef: np.ndarray, aw: np.ndarray, starts: np.ndarray,
                   lengths: np.ndarray, weight: np.ndarray, budget: np.ndarray, work: np.ndarray) -> tuple:
    """``sim.python.share.allocate`` on an incidence given by its arrays: ``(x, used, active)``."""
    quick = uncontended(res, coef, starts, lengths, budget, work)
    if quick[3]:
        return quick[0], quick[1], quick[2]
    return fill(flow, res, coef, aw, starts, lengths, weight, budget, work)


@_jit
def uncontended(res, coef, starts, lengths, budget, work):  # noqa: ANN001, ANN201 (numba-typed)
    """Every flow at its solo rate, and whether no link is oversubscribed then (``sim.python.share._uncontended``).

    A flow without work gets ``active`` 0 when it could run alone (solo rate > 0), else 1."""
    n_flows, n_res = starts.size, budget.size
    alone, active, demand = np.empty(n_flows), np.empty(n_flows), np.zeros(n_res)
    for f in range(n_flows):
        s = starts[f]
        solo = budget[res[s]] / coef[s]
        for e in range(s + 1, s + lengths[f]):
            q = budget[res[e]] / coef[e]
            if q < solo or q != q:  # np.minimum: NaN wins
                solo = q
        w = work[f]
        a = solo if solo < w or solo != solo else w
        alone[f] = a
        if w > 0.0:
            for e in range(s, s + lengths[f]):
                demand[res[e]] += coef[e] * a
        act = w / solo if solo > 0.0 else 1.0
        active[f] = act if act < 1.0 else 1.0
    ok = True
    for r in range(n_res):
        if demand[r] > budget[r] * UP:
            ok = False
            break
    return alone, demand, active, ok


@_jit
def fill(flow, res, coef, aw, starts, lengths, weight, budget, work):  # noqa: ANN001, ANN201 (numba-typed)
    """Progressive filling in rounds (``sim.python.share._fill`` and ``_freezes``)."""
    n_flows, n_res = starts.size, budget.size
    cap = work / weight
    rising = work > 0.0
    n_rising = int(rising.sum())
    level, ended = np.zeros(n_flows), np.full(n_flows, np.nan)
    room = np.maximum(budget, 0.0)
    on_sum, lam, n_low = np.zeros(n_res), np.empty(n_res), np.zeros(n_res, dtype=np.int64)
    bottleneck = np.empty(n_flows)
    freeze, ends_first = np.zeros(n_flows, dtype=np.bool_), np.zeros(n_flows, dtype=np.bool_)
    for _ in range(MAX_ROUNDS):
        # lam_r = room_r / sum of a_fr * w_f over unfrozen flows; each unfrozen flow's bottleneck level
        on_sum[:] = 0.0
        for e in range(res.size):
            if rising[flow[e]]:
                on_sum[res[e]] += aw[e]
        for r in range(n_res):
            lam[r] = room[r] / on_sum[r] if on_sum[r] != 0.0 else (np.inf if room[r] > 0.0 else np.nan)
        n_low[:] = 0
        for f in range(n_flows):
            if not rising[f]:
                continue
            s = starts[f]
            b = lam[res[s]]
            for e in range(s + 1, s + lengths[f]):
                q = lam[res[e]]
                if q < b or q != q:
                    b = q
            bottleneck[f] = b
            ends_first[f] = cap[f] <= b * UP
            stop = cap[f] if cap[f] < b or cap[f] != cap[f] else b
            for e in range(s, s + lengths[f]):
                if stop < lam[res[e]] * DOWN:  # this flow stops below the link's lam
                    n_low[res[e]] += 1
        n_freeze = 0
        for f in range(n_flows):
            hit = False
            if rising[f]:
                hit = ends_first[f]
                if not hit:
                    s = starts[f]
                    for e in range(s, s + lengths[f]):
                        if n_low[res[e]] == 0:  # a link that bottlenecks every unfrozen flow on it: full
                            hit = True
                            break
            freeze[f] = hit
            if hit:
                n_freeze += 1
        if n_freeze == 0:  # cannot happen in exact arithmetic; settle at the (feasible) bottleneck shares
            for f in range(n_flows):
                freeze[f] = rising[f]
                ends_first[f] = False
            n_freeze = n_rising
        for f in range(n_flows):
            if freeze[f]:
                if ends_first[f]:
                    level[f], ended[f] = cap[f], bottleneck[f]
                else:
                    level[f] = bottleneck[f]
                rising[f] = False
            ends_first[f] = False
        n_rising -= n_freeze
        if n_rising == 0:
            break
        room[:] = 0.0
        for e in range(res.size):
            room[res[e]] += aw[e] * level[flow[e]]
        for r in range(n_res):
            left = budget[r] - room[r]
            room[r] = left if left > 0.0 else 0.0
    x, used, active = weight * level, np.zeros(n_res), np.empty(n_flows)
    for e in range(res.size):
        used[res[e]] += coef[e] * x[flow[e]]
    for f in range(n_flows):
        act = cap[f] / ended[f] if ended[f] < np.inf else 1.0
        active[f] = act if act < 1.0 else 1.0
    return x, used, active
