"""The sharing rule of ``sim.python.share`` as one compiled loop kernel (numba): the same arithmetic, in the same order.

``sim.python.share`` states the rule (weighted max-min fairness by progressive filling in rounds) and holds
its numpy implementation; this module is that implementation rewritten as plain loops for numba, so
that a step's allocation costs microseconds instead of a hundred-odd numpy calls. Every sum adds its
terms in entry order, as ``np.bincount`` does, every minimum runs over a flow's entries in order, as
``np.minimum.reduceat`` does, and every comparison uses the same tolerances, so the kernel returns
bit for bit what the numpy code returns (a property test checks it on random instances).

Flows without work are skipped where the numpy code adds their zeros; adding ``+0.0`` to a sum of
non-negative terms does not change it, so skipping them is exact. Each filling round visits only the flows
still rising and the resources they cross, as no other resource's sums or levels are read; the uncontended
test stops at the first link over its budget once no later term can lower that link's sum. An idle
flow marked *sure* (:func:`idle_sure`: every coefficient positive and finite, every budget positive) has
a positive solo rate under its budget and under any budget not below it, so the uncontended test gives
it alone rate 0 and active share 0 without computing that rate. The engine calls :func:`allocate_into`,
which allocates nothing (its scratch is the engine's: ``sim.compiled.queues`` on reference counting);
:func:`allocate_loops` wraps it with fresh arrays for callers from Python.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.sim.compiled.cache import versioned_cache_dir

versioned_cache_dir()  # before numba is imported
from numba import njit  # noqa: E402

MAX_ROUNDS = 64  # as sim.python.share.MAX_ROUNDS
REL_EPS = 1e-12  # as sim.python.share.REL_EPS
UP, DOWN = 1.0 + REL_EPS, 1.0 - REL_EPS


_jit = njit(cache=True, error_model="numpy", nogil=True, _nrt=False)  # numpy's float rules; no reference counting (below)
_nrt_jit = njit(cache=True, error_model="numpy", nogil=True)
_inline_jit = njit(cache=True, error_model="numpy", nogil=True, _nrt=False, inline="always")  # typed into its callers


def idle_sure(res: np.ndarray, coef: np.ndarray, starts: np.ndarray, lengths: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """Per flow, 1 if every coefficient of its entries is positive and finite and every budget it crosses is
    positive, else 0 (int64). Then its solo rate (the least budget over coefficient) is positive under
    ``budget`` and under any budget not below it, and idle it gets alone rate 0 and active share 0: what
    :func:`uncontended` computes for it, known without the divisions. The engine marks its pipes once, from
    the budget of a step; a late-work bonus only adds to that budget."""
    good = (coef > 0.0) & np.isfinite(coef) & (budget[res] > 0.0)
    sure = np.ones(starts.size, np.int64)
    for f in range(starts.size):
        sure[f] = int(good[starts[f]:starts[f] + lengths[f]].all())
    return sure


@_nrt_jit
def allocate_loops(flow: np.ndarray, res: np.ndarray, coef: np.ndarray, aw: np.ndarray, starts: np.ndarray,
                   lengths: np.ndarray, weight: np.ndarray, budget: np.ndarray, work: np.ndarray, sure: np.ndarray) -> tuple:
    """``sim.python.share.allocate`` on an incidence given by its arrays: ``(x, used, active)`` (new arrays; the
    engine calls :func:`allocate_into` with its own). ``sure``: :func:`idle_sure` of the incidence for ``budget``
    or a budget not above it, or zeros."""
    n_flows, n_res = starts.size, budget.size
    x, used, active = np.empty(n_flows), np.empty(n_res), np.empty(n_flows)
    flow_f, res_f = np.empty((4, n_flows)), np.empty((3, n_res))
    flow_i, res_i = np.empty((4, n_flows), dtype=np.int64), np.empty((2, n_res), dtype=np.int64)
    allocate_into(flow, res, coef, aw, starts, lengths, weight, budget, work, sure, x, used, active, flow_f, res_f, flow_i, res_i)
    return x, used, active


@_jit
def allocate_into(flow, res, coef, aw, starts, lengths, weight, budget, work, sure, x, used, active,
                  flow_f, res_f, flow_i, res_i):  # noqa: ANN001, ANN201 (numba-typed)
    """:func:`allocate_loops` into ``x``, ``used``, ``active``, with scratch rows ``flow_f`` (4 x flows), ``res_f``
    (3 x resources), ``flow_i`` (4 x flows) and ``res_i`` (2 x resources): nothing is allocated, so the engine's
    kernels run without numba's reference counting."""
    if not uncontended(res, coef, starts, lengths, budget, work, sure, x, used, active):
        fill(flow, res, coef, aw, starts, lengths, weight, budget, work, x, used, active, flow_f, res_f, flow_i, res_i)


@_jit
def uncontended(res, coef, starts, lengths, budget, work, sure, alone, demand, active):  # noqa: ANN001, ANN201 (numba-typed)
    """Every flow at its solo rate (into ``alone``, its use into ``demand``), and whether no link is oversubscribed
    then (``sim.python.share._uncontended``). A flow without work gets ``active`` 0 when it could run alone
    (solo rate > 0), else 1; an idle flow marked in ``sure`` (:func:`idle_sure`) gets alone 0 and active 0 at once.

    It answers False as soon as a link's use so far is over its budget and every term still to come is >= 0
    (:func:`_rest_only_adds`): adding a term >= 0 to a float sum never lowers it (rounding is monotone), so the
    whole sum is over too and the test of every link at the end would answer False. ``alone``, ``demand`` and
    ``active`` are then part-written; :func:`fill` writes all three anew."""
    n_flows, n_res = starts.size, budget.size
    demand[:] = 0.0
    watch = True  # False once a link was over while a later term could be negative or NaN: the end decides
    for f in range(n_flows):
        w = work[f]
        if w == 0.0 and sure[f]:  # solo > 0, so alone = w and active = w / solo = w (a zero, its sign kept)
            alone[f], active[f] = w, w
            continue
        s = starts[f]
        solo = _solo(res, coef, budget, s, lengths[f])
        a = solo if solo < w or solo != solo else w
        alone[f] = a
        if w > 0.0:
            over = False
            for e in range(s, s + lengths[f]):
                r = res[e]
                d = demand[r] + coef[e] * a
                demand[r] = d
                over |= d > budget[r] * UP
            if over and watch:
                if _rest_only_adds(res, coef, starts, lengths, budget, work, sure, f + 1):
                    return False
                watch = False
        act = w / solo if solo > 0.0 else 1.0
        active[f] = act if act < 1.0 else 1.0
    for r in range(n_res):
        if demand[r] > budget[r] * UP:
            return False
    return True


@_inline_jit
def _solo(res, coef, budget, s, n):  # noqa: ANN001, ANN201 (numba-typed)
    """A flow's solo rate: the least budget over coefficient of its ``n`` entries from ``s`` (np.minimum: NaN wins).
    Inlined where it is called: as a call, it cost 1 % of a large run."""
    solo = budget[res[s]] / coef[s]
    for e in range(s + 1, s + n):
        q = budget[res[e]] / coef[e]
        if q < solo or q != q:
            solo = q
    return solo


@_jit
def _rest_only_adds(res, coef, starts, lengths, budget, work, sure, first):  # noqa: ANN001, ANN201 (numba-typed)
    """Whether every term that flows ``first`` on add to the links' use is >= 0 (so not NaN). A flow without work
    adds none; one marked in ``sure`` adds coefficient x the least of its solo rate and its work, all positive
    (:func:`idle_sure`); any other busy flow's terms are worked out."""
    for f in range(first, starts.size):
        w = work[f]
        if sure[f] or not w > 0.0:
            continue
        s = starts[f]
        solo = _solo(res, coef, budget, s, lengths[f])
        a = solo if solo < w or solo != solo else w
        for e in range(s, s + lengths[f]):
            if not coef[e] * a >= 0.0:
                return False
    return True


@_jit
def fill(flow, res, coef, aw, starts, lengths, weight, budget, work, x, used, active,
         flow_f, res_f, flow_i, res_i):  # noqa: ANN001, ANN201 (numba-typed)
    """Progressive filling in rounds (``sim.python.share._fill`` and ``_freezes``), into ``x``, ``used``, ``active``.

    A round visits only the flows still rising (``rise``, kept in flow order, so every sum still adds its terms in
    entry order) and the resources they cross (``touched``, listed anew each round), as it reads no other
    resource's ``lam``. A flow without work never rises, and its entries add ``+0.0`` to the sums, so leaving it
    out is exact (module docstring); it ends at ``x`` = weight x 0 and active share 1 (its level 0 never ends), as
    the numpy code gives it. A resource's room is its budget less the frozen flows' use, summed over the busy flows
    in entry order, where a rising flow, still at level 0, adds ``+0.0`` and is skipped."""
    n_flows, n_res = starts.size, budget.size
    cap, level, ended, bottleneck = flow_f[0, :n_flows], flow_f[1, :n_flows], flow_f[2, :n_flows], flow_f[3, :n_flows]
    room, on_sum, lam = res_f[0, :n_res], res_f[1, :n_res], res_f[2, :n_res]
    rising, rise, ends_first, busy = flow_i[0, :n_flows], flow_i[1, :n_flows], flow_i[2, :n_flows], flow_i[3, :n_flows]
    mark, touched = res_i[0, :n_res], res_i[1, :n_res]  # mark: listed in touched; in a round, its flows stopping below
    n_busy = 0
    for f in range(n_flows):
        rising[f] = work[f] > 0.0
        if rising[f]:
            cap[f] = work[f] / weight[f]
            level[f], ended[f], ends_first[f] = 0.0, np.nan, False
            busy[n_busy], rise[n_busy] = f, f
            n_busy += 1
        else:
            x[f], active[f] = weight[f] * 0.0, 1.0
    n_rising = n_busy
    mark[:] = 0
    n_touched = _list_resources(res, aw, starts, lengths, rise, n_rising, mark, touched, on_sum)
    for j in range(n_touched):
        r = touched[j]
        b = budget[r]
        room[r] = b if b >= 0.0 or b != b else 0.0  # np.maximum(budget, 0.0)
    for _ in range(MAX_ROUNDS):
        # lam_r = room_r / sum of a_fr * w_f over unfrozen flows (on_sum); each unfrozen flow's bottleneck level
        for j in range(n_touched):
            r = touched[j]
            lam[r] = room[r] / on_sum[r] if on_sum[r] != 0.0 else (np.inf if room[r] > 0.0 else np.nan)
            mark[r] = 0
        for i in range(n_rising):
            f = rise[i]
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
                    mark[res[e]] += 1
        n_freeze = 0
        for i in range(n_rising):
            f = rise[i]
            hit = ends_first[f] != 0
            if not hit:
                s = starts[f]
                for e in range(s, s + lengths[f]):
                    if mark[res[e]] == 0:  # a link that bottlenecks every unfrozen flow on it: full
                        hit = True
                        break
            rising[f] = not hit
            if hit:
                n_freeze += 1
        if n_freeze == 0:  # cannot happen in exact arithmetic; settle at the (feasible) bottleneck shares
            for i in range(n_rising):
                f = rise[i]
                rising[f], ends_first[f] = False, False
        n_left = 0
        for i in range(n_rising):  # the frozen take their level; the others stay listed, in order
            f = rise[i]
            if rising[f]:
                rise[n_left] = f
                n_left += 1
            elif ends_first[f]:
                level[f], ended[f] = cap[f], bottleneck[f]
            else:
                level[f] = bottleneck[f]
            ends_first[f] = False
        n_rising = n_left
        if n_rising == 0:
            break
        for j in range(n_touched):
            mark[touched[j]] = 0
        n_touched = _list_resources(res, aw, starts, lengths, rise, n_rising, mark, touched, on_sum)
        for j in range(n_touched):
            room[touched[j]] = 0.0
        for i in range(n_busy):
            f = busy[i]
            if rising[f]:
                continue
            for e in range(starts[f], starts[f] + lengths[f]):
                if mark[res[e]]:
                    room[res[e]] += aw[e] * level[f]
        for j in range(n_touched):
            r = touched[j]
            left = budget[r] - room[r]
            room[r] = left if left > 0.0 else 0.0
    used[:] = 0.0
    for i in range(n_busy):
        f = busy[i]
        x[f] = weight[f] * level[f]
        for e in range(starts[f], starts[f] + lengths[f]):
            used[res[e]] += coef[e] * x[f]
        act = cap[f] / ended[f] if ended[f] < np.inf else 1.0
        active[f] = act if act < 1.0 else 1.0


@_jit
def _list_resources(res, aw, starts, lengths, flows, n, mark, touched, on_sum):  # noqa: ANN001, ANN201 (numba-typed)
    """List in ``touched`` every resource that the flows ``flows[:n]`` cross, once each, setting its ``mark`` to 1
    (0 on entry), with its sum of ``aw`` over their entries in entry order in ``on_sum``; returns how many. A sum
    starts at its first term, where the numpy code adds it to 0.0: the same float (for -0.0 the same but for its
    sign, which no comparison sees)."""
    n_touched = 0
    for i in range(n):
        f = flows[i]
        for e in range(starts[f], starts[f] + lengths[f]):
            r = res[e]
            if mark[r] == 0:
                mark[r] = 1
                touched[n_touched] = r
                n_touched += 1
                on_sum[r] = aw[e]
            else:
                on_sum[r] += aw[e]
    return n_touched
