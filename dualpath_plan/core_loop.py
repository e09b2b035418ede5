"""The clock of the compiled fluid engine: a port of ``fluid_loop.Clock``, ``fluid_late.LateWork`` and the
per-step part of ``fluid_metrics.Meter`` (their docstrings describe the mechanism).

:func:`run_chunk` steps until every agent is done, or until the next progress report is due (the
caller reports, checks an online run's stop rule, and calls again), or until the run stalls.
"""

from __future__ import annotations

import math

import numpy as np

from dualpath_plan.core_engine import (
    admit_all, batch_done, decode_advance, entry, decode_completions, decode_done, form_batches, h2d_done, jit, load_done,
    pipe_completions, read_done, ready_q, start_turn, writeback_done,
)
from dualpath_plan.core_policies import fetch, has_work
from dualpath_plan.core_state import (
    FP_DT, FP_PERIOD, FP_STALL_S, FP_WINDOW_S, H2D, IP_LAYERWISE, IP_N_AGENTS, IP_N_PIPES, IP_N_PIPE_ENTRIES,
    K_ACTIVE, K_ALLOC_ACTIVE, K_ALLOC_BUSY, K_ALLOC_USED, K_ALLOC_X, K_ARRIVAL, K_A_PE, K_A_READS_LEFT,
    K_BM_COUNT, K_BP_COEF, K_BP_RES, K_BUDGET, K_B_ACTIVE, K_B_LEN, K_B_OFF, K_B_PROG, K_B_WEIGHT, K_CAPACITY,
    K_D_COUNT, K_D_FIRST_END, K_D_GAINED, K_D_V, K_FP, K_IDS, K_INC_AW, K_INC_COEF, K_INC_FLOW, K_INC_LENGTHS,
    K_INC_RES, K_INC_STARTS, K_INC_WEIGHT, K_INSTANT, K_IP, K_MF, K_MI, K_M_READ, K_M_USED, K_M_WINDOW, K_ORDER,
    K_PEND_PE, K_PEND_PIPE, K_PE_STARTS, K_PREV_BUDGET, K_PREV_USED, K_P_ADMITTED, K_P_BEFORE, K_P_ENTRY_PIPE,
    K_P_HEAD_END, K_P_RES, K_P_SERVED, K_Q_LEN, K_READY_AT, K_SHARE, K_SPAN_PE, K_SPAN_PIPE, K_STEP_BUDGET,
    K_TICK_GROUP, K_TICK_SIDE, K_TICK_WHEN, K_USED, K_WORK, K_X, LOAD, MF_DECODE_TOKENS, MF_LAST_PROGRESS,
    MF_NEXT_REPORT, MF_NOW, MF_RATIO_SUM, MF_STEP_DECODING, MF_T, MF_WINDOW_END, MI_ANY_SPAN, MI_BATCHES_CHANGED,
    MI_FINISHED, MI_HAVE_ALLOC, MI_HAVE_PREV, MI_HAVE_STEP, MI_NEXT_ARRIVAL, MI_N_ENTRIES, MI_N_FLOWS, MI_N_IDS,
    MI_N_INSTANT, MI_N_WINDOWS, MI_STEPS, MI_STEP_BONUS, READ_DE, READ_PE, RUN_DONE, RUN_REPORT, RUN_STALLED, fa,
    ia,
)
from dualpath_plan.fluid_share_kernel import allocate_loops

BATCH_DONE_REL = 1e-12  # as fluid_loop.BATCH_DONE_REL
PROGRESS_S = 10.0  # as fluid_loop.PROGRESS_S


# --- late work (fluid_late.LateWork) --------------------------------------------------------------------------


@jit
def late_pe(c, pe, tau):
    if tau < fa(c, K_PEND_PE)[pe]:
        fa(c, K_PEND_PE)[pe] = tau


@jit
def late_bonus(c, t):
    """LateWork.bonus: True if this step's budget has a bonus (then in ``step_budget``)."""
    dt = fa(c, K_FP)[FP_DT]
    any_span = False
    for u in range(fa(c, K_PEND_PIPE).size):
        tau = fa(c, K_PEND_PIPE)[u]
        fa(c, K_SPAN_PIPE)[u] = min((t - tau) / dt, 1.0) if tau < t else 0.0
        any_span |= tau < t
        fa(c, K_PEND_PIPE)[u] = np.inf
    for u in range(fa(c, K_PEND_PE).size):
        tau = fa(c, K_PEND_PE)[u]
        fa(c, K_SPAN_PE)[u] = min((t - tau) / dt, 1.0) if tau < t else 0.0
        any_span |= tau < t
        fa(c, K_PEND_PE)[u] = np.inf
    ia(c, K_MI)[MI_ANY_SPAN] = any_span
    if not any_span or not ia(c, K_MI)[MI_HAVE_PREV]:
        return False
    share = fa(c, K_SHARE)
    share[:] = 0.0
    for e in range(ia(c, K_P_ENTRY_PIPE).size):
        b, r = fa(c, K_SPAN_PIPE)[ia(c, K_P_ENTRY_PIPE)[e]], ia(c, K_P_RES)[e]
        if b > share[r]:
            share[r] = b
    for s in ia(c, K_PE_STARTS):
        for u in range(fa(c, K_SPAN_PE).size):
            b = fa(c, K_SPAN_PE)[u]
            if b > share[s + u]:
                share[s + u] = b
    for r in range(share.size):
        v = min(fa(c, K_PREV_BUDGET)[r] - fa(c, K_PREV_USED)[r], fa(c, K_CAPACITY)[r] * dt * share[r])
        fa(c, K_STEP_BUDGET)[r] = fa(c, K_BUDGET)[r] + (v if v > 0.0 else 0.0)
    return True


@jit
def late_time(c, span, unit, t, frac):
    """LateWork.time."""
    dt = fa(c, K_FP)[FP_DT]
    if not ia(c, K_MI)[MI_ANY_SPAN]:
        return t + frac * dt
    b = span[unit]
    return t + (frac * (1.0 + b) - b) * dt


# --- rates ---------------------------------------------------------------------------------------------------


@jit
def build_flows(c):
    """Clock._flows: pipes, then every running batch in PE order; rebuilt only when the batches changed."""
    n_pipes = ia(c, K_IP)[IP_N_PIPES]
    if ia(c, K_MI)[MI_BATCHES_CHANGED]:
        e, f = ia(c, K_IP)[IP_N_PIPE_ENTRIES], n_pipes
        n_ids = 0
        for pe in range(ia(c, K_B_ACTIVE).size):
            if not ia(c, K_B_ACTIVE)[pe]:
                continue
            ia(c, K_IDS)[n_ids] = pe
            n_ids += 1
            ia(c, K_INC_STARTS)[f], ia(c, K_INC_LENGTHS)[f], fa(c, K_INC_WEIGHT)[f] = e, ia(c, K_B_LEN)[pe], fa(c, K_B_WEIGHT)[pe]
            off = ia(c, K_B_OFF)[pe]
            for k in range(ia(c, K_B_LEN)[pe]):
                coef = fa(c, K_BP_COEF)[off + k]
                ia(c, K_INC_FLOW)[e], ia(c, K_INC_RES)[e], fa(c, K_INC_COEF)[e], fa(c, K_INC_AW)[e] = f, ia(c, K_BP_RES)[off + k], coef, coef * fa(c, K_B_WEIGHT)[pe]
                e += 1
            f += 1
        ia(c, K_MI)[MI_N_IDS], ia(c, K_MI)[MI_N_FLOWS], ia(c, K_MI)[MI_N_ENTRIES] = n_ids, f, e
        ia(c, K_MI)[MI_BATCHES_CHANGED] = 0
        ia(c, K_MI)[MI_HAVE_ALLOC] = 0
    for p in range(n_pipes):
        w = fa(c, K_P_ADMITTED)[p] - fa(c, K_P_SERVED)[p]
        fa(c, K_WORK)[p] = w if w > 0.0 else 0.0
    for k in range(ia(c, K_MI)[MI_N_IDS]):
        fa(c, K_WORK)[n_pipes + k] = 1.0 - fa(c, K_B_PROG)[ia(c, K_IDS)[k]]


@jit
def rates(c, t):
    """Clock._rates: this step's progress per flow (``x``), use per resource (``used``) and active share."""
    build_flows(c)
    nf, ne = ia(c, K_MI)[MI_N_FLOWS], ia(c, K_MI)[MI_N_ENTRIES]
    work = fa(c, K_WORK)[:nf]
    bonus = late_bonus(c, t)
    reuse = not bonus and ia(c, K_MI)[MI_HAVE_ALLOC]
    if reuse:
        for f in range(nf):
            if (work[f] > 0.0) != ia(c, K_ALLOC_BUSY)[f] or work[f] < fa(c, K_ALLOC_X)[f]:
                reuse = False
                break
    budget = fa(c, K_STEP_BUDGET) if bonus else fa(c, K_BUDGET)
    if reuse:
        x, used, active = fa(c, K_ALLOC_X)[:nf], fa(c, K_ALLOC_USED), fa(c, K_ALLOC_ACTIVE)[:nf]
    else:
        x, used, active = allocate_loops(ia(c, K_INC_FLOW)[:ne], ia(c, K_INC_RES)[:ne], fa(c, K_INC_COEF)[:ne], fa(c, K_INC_AW)[:ne], ia(c, K_INC_STARTS)[:nf],
                                         ia(c, K_INC_LENGTHS)[:nf], fa(c, K_INC_WEIGHT)[:nf], budget, work)
        keep = not bonus
        for f in range(nf):
            if active[f] < 1.0:
                keep = False
        ia(c, K_MI)[MI_HAVE_ALLOC] = keep
        if keep:
            fa(c, K_ALLOC_X)[:nf] = x
            fa(c, K_ALLOC_USED)[:] = used
            fa(c, K_ALLOC_ACTIVE)[:nf] = active
            for f in range(nf):
                ia(c, K_ALLOC_BUSY)[f] = work[f] > 0.0
    fa(c, K_PREV_BUDGET)[:] = budget  # LateWork.remember
    fa(c, K_PREV_USED)[:] = used
    ia(c, K_MI)[MI_HAVE_PREV] = 1
    fa(c, K_X)[:nf] = x
    fa(c, K_USED)[:] = used
    fa(c, K_ACTIVE)[:nf] = active
    ia(c, K_MI)[MI_STEP_BONUS] = bonus


# --- advancing ------------------------------------------------------------------------------------------------


@jit
def advance(c, t, scratch_i, scratch_j, scratch_k, scratch_f):
    """Clock._advance: one step of every flow and decode batch; returns (a completion happened, anything moved)."""
    dt, n_pipes = fa(c, K_FP)[FP_DT], ia(c, K_IP)[IP_N_PIPES]
    rates(c, t)
    n_ids = ia(c, K_MI)[MI_N_IDS]
    moved = False
    for p in range(n_pipes):
        fa(c, K_P_BEFORE)[p] = fa(c, K_P_SERVED)[p]
        fa(c, K_P_SERVED)[p] = fa(c, K_P_BEFORE)[p] + fa(c, K_X)[p]
        moved |= fa(c, K_X)[p] != 0.0
    prog_before = np.empty(n_ids)
    for k in range(n_ids):
        pe = ia(c, K_IDS)[k]
        prog_before[k] = fa(c, K_B_PROG)[pe]
        fa(c, K_B_PROG)[pe] = prog_before[k] + fa(c, K_X)[n_pipes + k]
        moved |= fa(c, K_X)[n_pipes + k] != 0.0
    decode_advance(c, dt)
    decoding = 0.0
    for de in range(ia(c, K_D_COUNT).size):
        decoding += ia(c, K_D_COUNT)[de] * fa(c, K_D_GAINED)[de]
    events = pipe_done(c, t, scratch_i, scratch_j, scratch_k, scratch_f)
    events = batch_done_all(c, t, prog_before) or events
    n = decode_completions(c, scratch_i, scratch_f)
    for k in range(n):
        fa(c, K_MF)[MF_NOW] = t + scratch_f[k] * dt
        decode_done(c, scratch_i[k], fa(c, K_MF)[MF_NOW])
        events = True
    fa(c, K_MF)[MF_NOW] = np.nan
    meter_step(c, t + dt, decoding)
    ia(c, K_MI)[MI_HAVE_STEP] = not ia(c, K_MI)[MI_STEP_BONUS]
    fa(c, K_MF)[MF_STEP_DECODING] = decoding
    return events, decoding > 0 or moved


@jit
def pipe_done(c, t, out_pipe, out_req, out_tag, out_frac):
    """Clock._pipe_done."""
    dt = fa(c, K_FP)[FP_DT]
    n = pipe_completions(c, fa(c, K_ACTIVE), out_pipe, out_req, out_tag, out_frac)
    layerwise = ia(c, K_IP)[IP_LAYERWISE]
    for k in range(n):
        pipe, a, tag = out_pipe[k], out_req[k], out_tag[k]
        when = late_time(c, fa(c, K_SPAN_PIPE), pipe, t, out_frac[k])
        fa(c, K_MF)[MF_NOW] = when
        if tag == READ_PE or tag == READ_DE or tag == LOAD:
            if tag != LOAD:
                ia(c, K_A_READS_LEFT)[a] -= 1
                if ia(c, K_A_READS_LEFT)[a]:
                    continue
            pe = ia(c, K_A_PE)[a]
            if ia(c, K_Q_LEN)[ready_q(c, pe)] == 0 and (tag == LOAD or layerwise) and fa(c, K_READY_AT)[pe] != fa(c, K_READY_AT)[pe]:
                fa(c, K_READY_AT)[pe] = (when - t) / dt
            if tag == LOAD:
                load_done(c, a)
            else:
                read_done(c, a)
        elif tag == H2D:
            h2d_done(c, a, when, max(t + dt - when, 0.0))
        elif writeback_done(c, a, when):
            start_turn(c, a, when)
    fa(c, K_MF)[MF_NOW] = np.nan
    return n > 0


@jit
def _finish_batch(c, pe, t, frac, ran):
    dt = fa(c, K_FP)[FP_DT]
    when = late_time(c, fa(c, K_SPAN_PE), pe, t, frac)
    fa(c, K_MF)[MF_NOW] = when
    batch_done(c, pe, when)
    if ran and ia(c, K_Q_LEN)[ready_q(c, pe)] > 0:
        waited = fa(c, K_READY_AT)[pe]
        fa(c, K_READY_AT)[pe] = np.nan
        late_pe(c, pe, t + max((when - t) / dt, waited if waited == waited else 0.0) * dt)


@jit
def batch_done_all(c, t, prog_before):
    """Clock._batch_done."""
    dt, n_pipes = fa(c, K_FP)[FP_DT], ia(c, K_IP)[IP_N_PIPES]
    finished = ia(c, K_MI)[MI_N_INSTANT] > 0
    for k in range(ia(c, K_MI)[MI_N_INSTANT]):
        _finish_batch(c, ia(c, K_INSTANT)[k], t, 0.0, False)
    ia(c, K_MI)[MI_N_INSTANT] = 0
    for k in range(ia(c, K_MI)[MI_N_IDS]):
        pe = ia(c, K_IDS)[k]
        if fa(c, K_B_PROG)[pe] >= 1.0 - BATCH_DONE_REL:
            xb = fa(c, K_X)[n_pipes + k]
            frac = min(max((1.0 - prog_before[k]) / (xb if xb > 0 else 1.0), 0.0), 1.0) * fa(c, K_ACTIVE)[n_pipes + k]
            _finish_batch(c, pe, t, frac, True)
            finished = True
    fa(c, K_MF)[MF_NOW] = np.nan
    for pe in range(fa(c, K_READY_AT).size):
        waited = fa(c, K_READY_AT)[pe]
        if waited == waited:
            if ia(c, K_BM_COUNT)[pe] == 0:
                late_pe(c, pe, t + waited * dt)
            fa(c, K_READY_AT)[pe] = np.nan
    return finished


# --- meter (fluid_metrics.Meter) --------------------------------------------------------------------------------


@jit
def _close(c, t_end):
    window, total = fa(c, K_M_WINDOW), 0.0
    peak = window[0]
    for v in window:
        total += v
        peak = max(peak, v)
    if total > 0:
        fa(c, K_MF)[MF_RATIO_SUM] += peak / (total / window.size)
        ia(c, K_MI)[MI_N_WINDOWS] += 1
    window[:] = 0.0
    w = fa(c, K_FP)[FP_WINDOW_S]
    fa(c, K_MF)[MF_WINDOW_END] += w * max(1.0, np.ceil((t_end - fa(c, K_MF)[MF_WINDOW_END]) / w + 1e-12))


@jit
def meter_step(c, t_end, decoding):
    fa(c, K_M_USED)[:] += fa(c, K_USED)
    n = fa(c, K_M_READ).size
    fa(c, K_M_READ)[:] += fa(c, K_X)[:n]
    fa(c, K_MF)[MF_DECODE_TOKENS] += decoding
    fa(c, K_M_WINDOW)[:] += fa(c, K_X)[:n]
    if t_end >= fa(c, K_MF)[MF_WINDOW_END]:
        _close(c, t_end)


@jit
def meter_span(c, t_start, duration, steps):
    n = fa(c, K_M_READ).size
    fa(c, K_M_USED)[:] += steps * fa(c, K_USED)
    fa(c, K_M_READ)[:] += steps * fa(c, K_X)[:n]
    fa(c, K_MF)[MF_DECODE_TOKENS] += steps * fa(c, K_MF)[MF_STEP_DECODING]
    rate = fa(c, K_X)[:n] * steps / duration
    t, t_end = t_start, t_start + duration
    idle = not np.any(rate != 0.0)
    while t_end >= fa(c, K_MF)[MF_WINDOW_END]:
        fa(c, K_M_WINDOW)[:] += rate * max(fa(c, K_MF)[MF_WINDOW_END] - t, 0.0)
        t = fa(c, K_MF)[MF_WINDOW_END]
        _close(c, t_end if idle else fa(c, K_MF)[MF_WINDOW_END])
    fa(c, K_M_WINDOW)[:] += rate * (t_end - t)


# --- quiet steps ------------------------------------------------------------------------------------------------


@jit
def jump(c, t):
    """Clock._jump: advance the whole quiet steps before the next event at the last step's rates."""
    if not ia(c, K_MI)[MI_HAVE_STEP]:
        return 0.0
    dt, n_pipes, n_ids = fa(c, K_FP)[FP_DT], ia(c, K_IP)[IP_N_PIPES], ia(c, K_MI)[MI_N_IDS]
    steps = min(steps_to_event(c, t), 1e9)
    k = int(steps)
    if k < 1:
        return 0.0
    for p in range(n_pipes):
        fa(c, K_P_SERVED)[p] = fa(c, K_P_SERVED)[p] + k * fa(c, K_X)[p]
    for j in range(n_ids):
        fa(c, K_B_PROG)[ia(c, K_IDS)[j]] += k * fa(c, K_X)[n_pipes + j]
    for de in range(fa(c, K_D_V).size):
        fa(c, K_D_V)[de] = fa(c, K_D_V)[de] + k * fa(c, K_D_GAINED)[de]
    meter_span(c, t, k * dt, k)
    ia(c, K_MI)[MI_STEPS] += k
    return k * dt


@jit
def steps_to_event(c, t):
    """Clock._steps_to_event."""
    dt, n_pipes = fa(c, K_FP)[FP_DT], ia(c, K_IP)[IP_N_PIPES]
    nearest = np.inf
    for p in range(n_pipes):
        if fa(c, K_X)[p] > 0:
            nearest = min(nearest, (fa(c, K_P_HEAD_END)[p] - fa(c, K_P_SERVED)[p]) / fa(c, K_X)[p])
    for j in range(ia(c, K_MI)[MI_N_IDS]):
        xb = fa(c, K_X)[n_pipes + j]
        if xb > 0:
            nearest = min(nearest, (1.0 - fa(c, K_B_PROG)[ia(c, K_IDS)[j]]) / xb)
    for de in range(fa(c, K_D_V).size):
        g = fa(c, K_D_GAINED)[de]
        if g > 0:
            nearest = min(nearest, (fa(c, K_D_FIRST_END)[de] - fa(c, K_D_V)[de]) / g)
    limit = np.ceil(nearest) - 1.0 if math.isfinite(nearest) else np.inf
    due = np.inf
    for k in range(fa(c, K_TICK_WHEN).size):
        if has_work(c, ia(c, K_TICK_SIDE)[k], ia(c, K_TICK_GROUP)[k]):
            due = min(due, fa(c, K_TICK_WHEN)[k])
    if ia(c, K_MI)[MI_NEXT_ARRIVAL] < fa(c, K_ARRIVAL).size:
        due = min(due, fa(c, K_ARRIVAL)[ia(c, K_MI)[MI_NEXT_ARRIVAL]])
    if due < np.inf:
        limit = min(limit, max(0.0, np.ceil((due - t) / dt)))
    return limit if math.isfinite(limit) else 0.0


# --- arrivals, fetches and the loop ------------------------------------------------------------------------------


@jit
def arrivals(c, t):
    """Clock._arrivals."""
    i = ia(c, K_MI)[MI_NEXT_ARRIVAL]
    if i >= fa(c, K_ARRIVAL).size or fa(c, K_ARRIVAL)[i] > t:
        return False
    while i < fa(c, K_ARRIVAL).size and fa(c, K_ARRIVAL)[i] <= t:
        start_turn(c, ia(c, K_ORDER)[i], fa(c, K_ARRIVAL)[i])
        i += 1
    ia(c, K_MI)[MI_NEXT_ARRIVAL] = i
    return True


@jit
def fetches(c, t):
    """Clock._fetch: every due fetch in (time, side, group) order; each is rescheduled a whole period later."""
    period, moved = fa(c, K_FP)[FP_PERIOD], False
    while True:
        k = 0
        for j in range(1, fa(c, K_TICK_WHEN).size):
            if (fa(c, K_TICK_WHEN)[j] < fa(c, K_TICK_WHEN)[k] or (fa(c, K_TICK_WHEN)[j] == fa(c, K_TICK_WHEN)[k] and
                    (ia(c, K_TICK_SIDE)[j] < ia(c, K_TICK_SIDE)[k] or (ia(c, K_TICK_SIDE)[j] == ia(c, K_TICK_SIDE)[k] and ia(c, K_TICK_GROUP)[j] < ia(c, K_TICK_GROUP)[k])))):
                k = j
        when = fa(c, K_TICK_WHEN)[k]
        if not when <= t:
            return moved
        side, group = ia(c, K_TICK_SIDE)[k], ia(c, K_TICK_GROUP)[k]
        if has_work(c, side, group):
            moved = fetch(c, side, group, when) or moved
        fa(c, K_TICK_WHEN)[k] = when + period * max(1.0, np.ceil((t - when) / period + 1e-12))


@entry
def run_chunk(c, scratch_i, scratch_j, scratch_k, scratch_f):
    """Step until done (RUN_DONE), a progress report is due (RUN_REPORT) or no progress for the stall time (RUN_STALLED)."""
    dt, n = fa(c, K_FP)[FP_DT], ia(c, K_IP)[IP_N_AGENTS]
    t = fa(c, K_MF)[MF_T]
    while ia(c, K_MI)[MI_FINISHED] < n:
        events = arrivals(c, t)
        events = fetches(c, t) or events
        events = admit_all(c) > 0 or events
        events = form_batches(c) > 0 or events
        events_step, moved = advance(c, t, scratch_i, scratch_j, scratch_k, scratch_f)
        t += dt
        ia(c, K_MI)[MI_STEPS] += 1
        if not (events or events_step):
            t += jump(c, t)
        if moved or events or events_step:
            fa(c, K_MF)[MF_LAST_PROGRESS] = t
        elif t - fa(c, K_MF)[MF_LAST_PROGRESS] > fa(c, K_FP)[FP_STALL_S] and ia(c, K_MI)[MI_NEXT_ARRIVAL] >= n:
            fa(c, K_MF)[MF_T] = t
            return RUN_STALLED
        if t >= fa(c, K_MF)[MF_NEXT_REPORT]:
            fa(c, K_MF)[MF_NEXT_REPORT] = t + PROGRESS_S
            fa(c, K_MF)[MF_T] = t
            return RUN_REPORT
    fa(c, K_MF)[MF_T] = t
    return RUN_DONE



@entry
def run_steps(c, steps, scratch_i, scratch_j, scratch_k, scratch_f):
    """``steps`` iterations of :func:`run_chunk`'s loop (or fewer if the run ends): for step-by-step checks."""
    saved = fa(c, K_MF)[MF_NEXT_REPORT]
    for _ in range(steps):
        if ia(c, K_MI)[MI_FINISHED] >= ia(c, K_IP)[IP_N_AGENTS]:
            break
        fa(c, K_MF)[MF_NEXT_REPORT] = -1.0  # report after one step
        run_chunk(c, scratch_i, scratch_j, scratch_k, scratch_f)
    fa(c, K_MF)[MF_NEXT_REPORT] = saved
