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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_ROUNDS = 64  # safety bound; if ever reached, unfrozen flows take their bottleneck share (feasible)
REL_EPS = 1e-12  # relative tolerance when comparing levels


@dataclass(frozen=True)
class Incidence:
    """Which resources each flow crosses: entries grouped by flow, ``starts`` the first entry of each.

    ``flow`` (local flow number per entry), ``res`` (resource instance), ``coef`` (units of the
    resource per unit of the flow's progress, > 0), ``weight`` (``w_f`` per flow). Every flow has at
    least one entry; a flow may list a resource more than once (the coefficients add). ``aw`` is
    ``coef * w`` of each entry's flow.
    """

    flow: np.ndarray
    res: np.ndarray
    coef: np.ndarray
    starts: np.ndarray
    weight: np.ndarray
    aw: np.ndarray

    @property
    def n_flows(self) -> int:
        return int(self.starts.size)


def make_incidence(lengths: np.ndarray, res: np.ndarray, coef: np.ndarray, weight: np.ndarray) -> Incidence:
    """Build from entries grouped by flow, ``lengths[f]`` (>= 1) entries and weight ``weight[f]`` for flow ``f``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])) if lengths.size else np.zeros(0, np.int64)
    flow = np.repeat(np.arange(lengths.size), lengths)
    coef, weight = np.asarray(coef, dtype=float), np.asarray(weight, dtype=float)
    return Incidence(flow, np.asarray(res, dtype=np.int64), coef, starts, weight, coef * weight[flow])


def allocate(inc: Incidence, budget: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Max-min fair progress of every flow in one step (module docstring).

    ``budget``: units each resource can deliver in the step (``C_r * dt``); ``work``: the most each
    flow can progress (``u_f``). Returns ``(x, used, active)``: progress per flow, units used per
    resource (``used <= budget``, ``x <= work`` up to rounding), and the share of the step each flow
    was running: 1, or for a flow that finished its work, its work over what its bottleneck share
    would have let it do (it finished at that point of the step).
    """
    n_res, n_flows = budget.size, inc.n_flows
    if n_flows == 0:
        return np.zeros(0), np.zeros(n_res), np.ones(0)
    quick = _uncontended(inc, budget, work)
    if quick is not None:
        return quick
    res, flow, starts = inc.res, inc.flow, inc.starts
    x, used, active = np.zeros(n_flows), np.zeros(n_res), np.ones(n_flows)
    cap_level = work / inc.weight
    rising = work > 0
    for _ in range(MAX_ROUNDS):
        share = np.bincount(res, weights=inc.aw * rising[flow], minlength=n_res)
        lam = np.full(n_res, np.inf)
        np.divide(np.maximum(budget - used, 0.0), share, out=lam, where=share > 0)
        lam_e = lam[res]
        bottleneck = np.minimum.reduceat(lam_e, starts)
        ends_first = rising & (cap_level <= bottleneck * (1 + REL_EPS))
        effective = np.where(rising, np.minimum(bottleneck, cap_level), np.inf)
        below = np.bincount(res, weights=effective[flow] < lam_e * (1 - REL_EPS), minlength=n_res)
        final = (below == 0) & (share > 0)  # every unfrozen flow on the link is bottlenecked there
        freeze = ends_first | (rising & np.logical_or.reduceat(final[res], starts))
        if not np.count_nonzero(freeze):  # cannot happen in exact arithmetic; settle at the (feasible) bottleneck shares
            freeze = rising
        dx = np.where(freeze, inc.weight * np.where(ends_first, cap_level, bottleneck), 0.0)
        x += dx
        used += np.bincount(res, weights=inc.coef * dx[flow], minlength=n_res)
        np.divide(cap_level, bottleneck, out=active, where=ends_first & (bottleneck > 0) & np.isfinite(bottleneck))
        rising &= ~freeze
        if not np.count_nonzero(rising):
            break
    return x, used, np.minimum(active, 1.0)


def _uncontended(inc: Incidence, budget: np.ndarray, work: np.ndarray) -> tuple | None:
    """The allocation when no link would be oversubscribed with every flow as fast as it could go alone
    (then that is the max-min allocation); ``None`` otherwise."""
    solo = np.minimum.reduceat(budget[inc.res] / inc.coef, inc.starts)
    alone = np.minimum(solo, work)
    demand = np.bincount(inc.res, weights=inc.coef * alone[inc.flow], minlength=budget.size)
    if np.count_nonzero(demand > budget * (1 + REL_EPS)):
        return None
    return alone, demand, np.minimum(np.divide(work, solo, out=np.ones(work.size), where=solo > 0), 1.0)
