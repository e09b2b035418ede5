"""The sharing rule of the fluid engine: weighted max-min fairness (progressive filling), exact.

In one step of length ``dt`` every resource ``r`` can deliver ``C_r * dt`` units (bytes, or FLOP for
prefill compute). A flow ``f`` advances by ``x_f`` units of its own progress (bytes served for a
transfer pipe, the fraction of a forward batch for a batch); that takes ``a_fr * x_f`` units of each
resource it crosses, and it can advance at most ``u_f`` in the step (the work it has left).

**Rule: max-min fair in levels.** Each flow has a *level* ``x_f / w_f``. A pipe has ``w_f = 1``, so
its level is its byte rate; a batch has ``w_f = 1 / max_r a_fr`` over its byte resources, so its
level is its byte rate on its most loaded link. The allocation is the max-min fair one: levels rise
together from zero; a flow stops when its work is done or one of its links is full ("progressive
filling"). No flow can then get more without taking from a flow at an equal or lower level, and no
link is left with spare capacity that a flow crossing it could still use (work conservation).

**Computation (exact).** Rounds freeze flows at their final level. With the frozen flows' usage
removed, a link ``r`` would fill at level ``lam_r = residual_r / sum(a_fr * w_f over unfrozen f)``; a
flow's bottleneck level is ``m_f = min(lam_r over its links)``. In a round, (1) a flow whose work
ends below its bottleneck (``u_f / w_f <= m_f``) is frozen at its work, and (2) a link that is the
bottleneck of *every* unfrozen flow crossing it, with none of them ending earlier, is full at
``lam_r``: its flows are frozen there. Freezing a flow at a level no higher than a link's ``lam`` never
lowers that link's ``lam``, so both freezes are final, and each round freezes at least the globally
smallest level: this is progressive filling, with independent bottlenecks settled in the same round
instead of one per round. A step usually needs 2-5 rounds.

**Implementation.** Instances are small (tens to thousands of flows), so the time goes mostly into the
number of numpy calls, not their size: a round is a fixed ~25 of them. A step where no link would be
oversubscribed with every flow at its solo rate is settled without rounds (``_uncontended``); on a
large incidence the flows without work are dropped first (they take no share and add only zeros).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_ROUNDS = 64  # safety bound; if ever reached, flows still unfrozen get no progress this step
REL_EPS = 1e-12  # relative tolerance when comparing levels
MIN_ENTRIES_TO_SPLIT = 1024  # below this many entries, dropping the idle flows costs more numpy calls than it saves
# Constants as 0-d arrays: a ufunc takes them faster than Python floats. (The hot code also calls ufuncs
# directly and passes bincount's arguments by position: its time is mostly per-call overhead.)
_UP, _DOWN, _0, _1, _NAN = (np.array(v) for v in (1 + REL_EPS, 1 - REL_EPS, 0.0, 1.0, np.nan))


@dataclass(frozen=True)
class Incidence:
    """Which resources each flow crosses: entries grouped by flow, ``starts`` the first entry of each.

    ``flow`` (local flow number per entry), ``res`` (resource instance), ``coef`` (units of the
    resource per unit of the flow's progress, > 0), ``weight`` (``w_f`` per flow). Every flow has at
    least one entry; a flow may list a resource more than once (the coefficients add). ``aw`` is
    ``coef * w`` of each entry's flow, ``lengths`` the number of entries of each flow and ``coef_max``
    the largest coefficient (0 without entries).
    """

    flow: np.ndarray
    res: np.ndarray
    coef: np.ndarray
    starts: np.ndarray
    weight: np.ndarray
    aw: np.ndarray
    lengths: np.ndarray
    coef_max: float

    @property
    def n_flows(self) -> int:
        return int(self.starts.size)


def make_incidence(lengths: np.ndarray, res: np.ndarray, coef: np.ndarray, weight: np.ndarray) -> Incidence:
    """Build from entries grouped by flow, ``lengths[f]`` (>= 1) entries and weight ``weight[f]`` for flow ``f``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    flow = np.arange(lengths.size).repeat(lengths)
    coef, weight = np.asarray(coef, dtype=float), np.asarray(weight, dtype=float)
    coef_max = float(np.maximum.reduce(coef)) if coef.size else 0.0
    return Incidence(flow, np.asarray(res, dtype=np.int64), coef, np.add.accumulate(lengths) - lengths, weight,
                     coef * weight[flow], lengths, coef_max)


def allocate(inc: Incidence, budget: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Max-min fair progress of every flow in one step (module docstring).

    ``budget``: units each resource can deliver in the step (``C_r * dt``); ``work``: the most each
    flow can progress (``u_f``). Returns ``(x, used, active)``: progress per flow, units used per
    resource (``used <= budget``, ``x <= work`` up to rounding), and the share of the step each flow
    was running: 1, or for a flow that finished its work, its work over what its bottleneck share
    would have let it do (it finished at that point of the step). A flow without work gets 0; its
    ``active`` is 1, or 0 when the step is uncontended (``_uncontended``) and it could run alone.

    On a large incidence the flows without work are dropped first and the result is scattered back:
    they take no share and add only zeros to every sum, so the result is the same (not just up to rounding).
    """
    n_res, n_flows = budget.size, inc.starts.size
    if n_flows == 0:
        return np.zeros(0), np.zeros(n_res), np.ones(0)
    if inc.res.size < MIN_ENTRIES_TO_SPLIT:
        quick = _uncontended(inc, budget, work)
        return quick if quick is not None else _fill(inc, budget, work)
    index = np.not_equal(work, _0).nonzero()[0]
    part, part_work = _part(inc, index), work[index]
    if np.minimum.reduce(budget) / inc.coef_max > 0.0:  # then every idle flow could run alone: active 0 if uncontended
        quick = _uncontended(part, budget, part_work)
        if quick is not None:
            return _scatter(quick, index, n_flows, 0.0)
    elif (quick := _uncontended(inc, budget, work)) is not None:
        return quick
    return _scatter(_fill(part, budget, part_work), index, n_flows, 1.0)


def _part(inc: Incidence, index: np.ndarray) -> Incidence:
    """The flows ``index`` (increasing) of ``inc``, renumbered in order."""
    lengths = inc.lengths[index]
    ends = np.add.accumulate(lengths)
    starts = ends - lengths
    flow = np.arange(index.size).repeat(lengths)
    entries = np.arange(ends[-1] if ends.size else 0) + (inc.starts[index] - starts)[flow]
    return Incidence(flow, inc.res[entries], inc.coef[entries], starts, inc.weight[index], inc.aw[entries], lengths, inc.coef_max)


def _scatter(result: tuple, index: np.ndarray, n_flows: int, idle_active: float) -> tuple:
    """A part's ``(x, used, active)`` back to all flows: the others get no progress and ``idle_active``."""
    x_part, used, active_part = result
    x, active = np.zeros(n_flows), np.empty(n_flows)
    active.fill(idle_active)
    x[index], active[index] = x_part, active_part
    return x, used, active


def _fill(inc: Incidence, budget: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Progressive filling in rounds (module docstring).

    ``rising`` is 1.0 for an unfrozen flow; ``live`` holds the level at which an unfrozen flow's work
    ends and NaN for a frozen one, which is then never ``ends_first`` nor below a link. ``level`` is a
    frozen flow's final level, ``ended`` the bottleneck of a flow frozen at its work (NaN for the
    others): its ``active`` is its work level over that, unless the bottleneck is 0 or infinite.
    """
    res, flow, aw, n_res = inc.res, inc.flow, inc.aw, budget.size
    cap = np.divide(work, inc.weight)
    busy = np.greater(work, _0)
    n_rising = np.count_nonzero(busy)
    rising, live = np.multiply(busy, _1), np.where(busy, cap, _NAN)
    level, ended = np.zeros(cap.size), np.multiply(cap, _NAN)
    room = np.maximum(budget, _0)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(MAX_ROUNDS):
            freeze, ends_first, bottleneck = _freezes(inc, room, rising[flow], live)
            n_freeze = np.count_nonzero(freeze)
            if not n_freeze:  # cannot happen in exact arithmetic; settle at the (feasible) bottleneck shares
                freeze, n_freeze = np.greater(rising, _0), n_rising
            np.putmask(level, freeze, bottleneck)
            np.putmask(level, ends_first, live)
            np.putmask(ended, ends_first, bottleneck)
            n_rising -= n_freeze
            if not n_rising:
                break
            np.putmask(rising, freeze, _0)
            np.putmask(live, freeze, _NAN)
            room = np.maximum(np.subtract(budget, np.bincount(res, np.multiply(aw, level[flow]), n_res)), _0)
        active = np.divide(cap, ended, out=_ones(cap.size), where=np.less(ended, np.inf))  # ended 0: inf, then 1
    x = np.multiply(inc.weight, level)
    return x, np.bincount(res, np.multiply(inc.coef, x[flow]), n_res), np.minimum(active, _1, out=active)


def _freezes(inc: Incidence, room: np.ndarray, on: np.ndarray, live: np.ndarray) -> tuple:
    """One round: which flows freeze, which of them at their work (``ends_first``), and each flow's
    bottleneck level, from what is left of each resource (``room``). ``on`` is 1.0 on the entries of
    unfrozen flows, 0.0 on the others. A link no unfrozen flow crosses gets an infinite or NaN ``lam``
    (no share): only frozen flows see it, since ``a_fr * w_f > 0``."""
    res, flow, starts, n_res = inc.res, inc.flow, inc.starts, room.size
    lam_e = np.divide(room, np.bincount(res, np.multiply(inc.aw, on), n_res))[res]
    bottleneck = np.minimum.reduceat(lam_e, starts)
    ends_first = np.less_equal(live, np.multiply(bottleneck, _UP))
    low = np.less(np.minimum(bottleneck, live)[flow], np.multiply(lam_e, _DOWN))  # an unfrozen flow stops below
    final = np.less(np.bincount(res, low, n_res)[res], on)  # an unfrozen flow's entry on a link where none does
    return np.logical_or(ends_first, np.logical_or.reduceat(final, starts)), ends_first, bottleneck


def _uncontended(inc: Incidence, budget: np.ndarray, work: np.ndarray) -> tuple | None:
    """The allocation when no link would be oversubscribed with every flow as fast as it could go alone
    (then that is the max-min allocation); ``None`` otherwise."""
    solo = np.minimum.reduceat(np.divide(budget[inc.res], inc.coef), inc.starts)
    alone = np.minimum(solo, work)
    demand = np.bincount(inc.res, np.multiply(inc.coef, alone[inc.flow]), budget.size)
    if np.count_nonzero(np.greater(demand, np.multiply(budget, _UP))):
        return None
    active = np.divide(work, solo, out=_ones(work.size), where=np.greater(solo, _0))
    return alone, demand, np.minimum(active, _1, out=active)


def _ones(n: int) -> np.ndarray:
    """``np.ones(n)``, without its Python-level overhead."""
    out = np.empty(n)
    out.fill(1.0)
    return out
