"""The clock of the compiled fluid engine: a port of ``sim.python.loop.Clock``, ``sim.python.late.LateWork`` and the
per-step part of ``sim.metrics.Meter`` (their docstrings describe the mechanism).

:func:`run_chunk` steps until every agent is done, or until the next progress report is due (the
caller reports, checks an online run's stop rule, and calls again), or until the run stalls.
"""

from __future__ import annotations

import math

import numpy as np

from dualpath_plan.sim.compiled.engine import (
    admit_all,
    batch_done,
    decode_done,
    form_batches,
    h2d_done,
    late_list,
    load_done,
    read_done,
    start_turn,
    start_turns,
    writeback_done,
)
from dualpath_plan.sim.compiled.policies import fetch, has_work, next_work
from dualpath_plan.sim.compiled.queues import (
    agent_rec,
    ia_agent,
    decode_advance,
    decode_completions,
    entry,
    fa,
    fa_agent,
    ia,
    jit,
    pipe_completions,
    ready_q,
    wait_pop,
)
from dualpath_plan.sim import clocksteps
from dualpath_plan.sim.compiled.share import allocate_into
from dualpath_plan.sim.compiled.state import (
    K_LATE_DENSE,
    K_LATE_RES,
    K_LATE_UNITS,
    K_SPAN_UNITS,
    K_SURE,
    K_W_TIME,
    K_S_START_A,
    K_S_START_T,
    MI_N_LATE,
    MI_N_LATE_RES,
    MI_N_SPAN,
    MI_N_WAIT,
    FP_DT,
    FP_PERIOD,
    FP_STALL_S,
    FP_WINDOW_S,
    H2D,
    IP_LAYERWISE,
    IP_N_AGENTS,
    IP_N_PIPES,
    IP_N_PIPE_ENTRIES,
    K_ACTIVE,
    K_ALLOC_ACTIVE,
    K_ALLOC_BUSY,
    K_ALLOC_USED,
    K_ALLOC_X,
    K_ARRIVAL,
    AF_NEED,
    AF_REC,
    AI_LAST_ROUND,
    AI_PE,
    AI_STAGE,
    AI_ROUND,
    AI_READS_LEFT,
    K_BM_COUNT,
    K_BP_COEF,
    K_BP_RES,
    K_BUDGET,
    K_B_ACTIVE,
    K_B_LEN,
    K_B_OFF,
    K_B_PROG,
    K_B_WEIGHT,
    K_CAPACITY,
    K_D_COUNT,
    K_D_FIRST_END,
    K_D_GAINED,
    K_D_V,
    K_FP,
    K_IDS,
    K_INC_AW,
    K_INC_COEF,
    K_INC_FLOW,
    K_INC_LENGTHS,
    K_INC_RES,
    K_INC_STARTS,
    K_INC_WEIGHT,
    K_INSTANT,
    K_IP,
    K_MF,
    K_MI,
    K_M_READ,
    K_M_USED,
    K_M_SNAP,
    K_M_SNAP_T,
    K_M_STAGE,
    K_ST_LOAD,
    K_M_WINDOW,
    K_ORDER,
    K_PEND_PE,
    K_PEND_PIPE,
    K_PE_STARTS,
    K_PREV_BUDGET,
    K_PREV_USED,
    K_P_ADMITTED,
    K_READ_WINDOW,
    K_PQ_HEAD,
    IP_LOAD0,
    K_P_BEFORE,
    K_P_HEAD_END,
    K_P_LENGTHS,
    K_P_RES,
    K_P_SERVED,
    K_Q_LEN,
    K_READY_AT,
    K_REC,
    K_R_TOK,
    K_SHARE,
    K_SH_FLOW_F,
    K_SH_FLOW_I,
    K_SH_RES_F,
    K_SH_RES_I,
    K_SPAN_PE,
    K_SPAN_PIPE,
    K_STEP_BUDGET,
    K_S_PROG,
    K_S_RATE,
    K_TICK_GROUP,
    K_TICK_SIDE,
    K_TICK_WHEN,
    K_USED,
    K_WORK,
    K_X,
    LOAD,
    MF_DECODE_TOKENS,
    MF_LAST_PROGRESS,
    MF_NEXT_REPORT,
    MF_NOW,
    MF_RATIO_SUM,
    MF_SINK,
    MF_STEP_DECODING,
    MF_T,
    MF_SNAP_NEXT,
    MF_SNAP_SPACING,
    MF_WINDOW_END,
    MI_ANY_SPAN,
    MI_BATCHES_CHANGED,
    MI_FINISHED,
    MI_HAVE_ALLOC,
    MI_HAVE_PREV,
    MI_HAVE_STEP,
    MI_NEXT_ARRIVAL,
    MI_N_ENTRIES,
    MI_N_FLOWS,
    MI_N_IDS,
    MI_N_INSTANT,
    MI_N_SNAPS,
    MI_N_WINDOWS,
    MI_STEPS,
    MI_STEP_BONUS,
    READ_DE,
    READ_PE,
    REC_ARRIVE,
    REC_W,
    RT_W,
    RUN_DONE,
    RUN_REPORT,
    RUN_STALLED,
    WB,
)

BATCH_DONE_REL = 1e-12  # as sim.python.loop.BATCH_DONE_REL
PROGRESS_S = 10.0  # as sim.python.loop.PROGRESS_S


# --- late work (sim.python.late.LateWork) --------------------------------------------------------------------------


@jit
def late_pe(c, pe, tau):
    """LateWork.pe; a unit's first late start of a step lists it in ``late_units`` (after the pipes)."""
    v_pend_pe = fa(c, K_PEND_PE)
    if tau < v_pend_pe[pe]:
        if v_pend_pe[pe] == np.inf:
            late_list(c, ia(c, K_IP)[IP_N_PIPES] + pe)
        v_pend_pe[pe] = tau


@jit
def _late_share(c, r, b):
    """Resource ``r`` takes late share ``b`` if larger than its share so far; listed in ``late_res`` when first
    raised above 0."""
    v_share = fa(c, K_SHARE)
    if b > v_share[r]:
        if v_share[r] == 0.0:
            v_mi = ia(c, K_MI)
            ia(c, K_LATE_RES)[v_mi[MI_N_LATE_RES]] = r
            v_mi[MI_N_LATE_RES] += 1
        v_share[r] = b


@jit
def _late_spans(c, t):
    """LateWork.bonus, its first half: this step's span of every unit with a late start pending (``late_units``),
    listed in ``span_units``; the spans of the step before are set back to 0 first, so every unit not listed
    has span 0. Returns whether any span is above 0."""
    v_fp = fa(c, K_FP)
    v_mi = ia(c, K_MI)
    v_pend_pipe = fa(c, K_PEND_PIPE)
    v_span_pipe = fa(c, K_SPAN_PIPE)
    v_pend_pe = fa(c, K_PEND_PE)
    v_span_pe = fa(c, K_SPAN_PE)
    v_late_units = ia(c, K_LATE_UNITS)
    v_span_units = ia(c, K_SPAN_UNITS)
    n_pipes, dt = ia(c, K_IP)[IP_N_PIPES], v_fp[FP_DT]
    for i in range(v_mi[MI_N_SPAN]):
        u = v_span_units[i]
        if u < n_pipes:
            v_span_pipe[u] = 0.0
        else:
            v_span_pe[u - n_pipes] = 0.0
    n_span = 0
    for i in range(v_mi[MI_N_LATE]):
        u = v_late_units[i]
        pend, span, k = (v_pend_pipe, v_span_pipe, u) if u < n_pipes else (v_pend_pe, v_span_pe, u - n_pipes)
        tau = pend[k]
        pend[k] = np.inf
        if tau < t:
            span[k] = min((t - tau) / dt, 1.0)
            v_span_units[n_span] = u
            n_span += 1
    v_mi[MI_N_LATE], v_mi[MI_N_SPAN] = 0, n_span
    return n_span > 0


@jit
def late_bonus(c, t):
    """LateWork.bonus: True if this step's budget has a bonus (then in ``step_budget``).

    Only the listed units and resources are visited (``_late_spans``, ``late_res``); every other resource's
    late share is 0, so its bonus is ``max(min(budget - used, C dt 0), 0) = 0`` for a finite capacity ``C`` and its
    step budget stays ``budget + 0.0`` (``run.build`` starts it so; ``late_dense`` lists the resources of other
    capacities, whose bonus is computed every time)."""
    v_fp = fa(c, K_FP)
    v_mi = ia(c, K_MI)
    v_share = fa(c, K_SHARE)
    v_span_pipe = fa(c, K_SPAN_PIPE)
    v_span_pe = fa(c, K_SPAN_PE)
    v_span_units = ia(c, K_SPAN_UNITS)
    v_p_res = ia(c, K_P_RES)
    v_inc_starts = ia(c, K_INC_STARTS)
    v_p_lengths = ia(c, K_P_LENGTHS)
    v_pe_starts = ia(c, K_PE_STARTS)
    v_late_res = ia(c, K_LATE_RES)
    v_step_budget = fa(c, K_STEP_BUDGET)
    v_budget = fa(c, K_BUDGET)
    dt, n_pipes = v_fp[FP_DT], ia(c, K_IP)[IP_N_PIPES]
    any_span = _late_spans(c, t)
    v_mi[MI_ANY_SPAN] = any_span
    if not any_span or not v_mi[MI_HAVE_PREV]:
        return False
    for i in range(v_mi[MI_N_LATE_RES]):  # the last bonus's resources back to no bonus
        r = v_late_res[i]
        v_share[r] = 0.0
        v_step_budget[r] = v_budget[r] + 0.0
    v_mi[MI_N_LATE_RES] = 0
    for i in range(v_mi[MI_N_SPAN]):  # per resource the largest late share of a flow on it
        u = v_span_units[i]
        if u < n_pipes:
            b, s = v_span_pipe[u], v_inc_starts[u]  # a pipe's entries lead the incidence (run.build)
            for e in range(s, s + v_p_lengths[u]):
                _late_share(c, v_p_res[e], b)
        else:
            for s in v_pe_starts:
                _late_share(c, s + u - n_pipes, v_span_pe[u - n_pipes])
    for i in range(v_mi[MI_N_LATE_RES]):
        _late_budget(c, v_late_res[i], dt)
    for r in ia(c, K_LATE_DENSE):
        _late_budget(c, r, dt)
    return True


@jit
def _late_budget(c, r, dt):
    """Resource ``r``'s step budget: its budget plus the capacity it left idle in the last step, up to its late share
    of a step (LateWork.bonus)."""
    v = min(fa(c, K_PREV_BUDGET)[r] - fa(c, K_PREV_USED)[r], fa(c, K_CAPACITY)[r] * dt * fa(c, K_SHARE)[r])
    fa(c, K_STEP_BUDGET)[r] = fa(c, K_BUDGET)[r] + (v if v > 0.0 else 0.0)


@jit
def late_time(c, span, unit, t, frac):
    """LateWork.time."""
    v_fp = fa(c, K_FP)
    v_mi = ia(c, K_MI)
    dt = v_fp[FP_DT]
    if not v_mi[MI_ANY_SPAN]:
        return t + frac * dt
    b = span[unit]
    return t + (frac * (1.0 + b) - b) * dt


# --- rates ---------------------------------------------------------------------------------------------------


@jit
def build_flows(c):
    """Clock._flows: pipes, then every running batch in PE order; rebuilt only when the batches changed."""
    v_ip = ia(c, K_IP)
    v_mi = ia(c, K_MI)
    v_b_active = ia(c, K_B_ACTIVE)
    v_ids = ia(c, K_IDS)
    v_inc_starts = ia(c, K_INC_STARTS)
    v_inc_lengths = ia(c, K_INC_LENGTHS)
    v_inc_weight = fa(c, K_INC_WEIGHT)
    v_b_len = ia(c, K_B_LEN)
    v_b_weight = fa(c, K_B_WEIGHT)
    v_b_off = ia(c, K_B_OFF)
    v_bp_coef = fa(c, K_BP_COEF)
    v_inc_flow = ia(c, K_INC_FLOW)
    v_inc_res = ia(c, K_INC_RES)
    v_inc_coef = fa(c, K_INC_COEF)
    v_inc_aw = fa(c, K_INC_AW)
    v_bp_res = ia(c, K_BP_RES)
    v_p_admitted = fa(c, K_P_ADMITTED)
    v_p_served = fa(c, K_P_SERVED)
    v_work = fa(c, K_WORK)
    v_b_prog = fa(c, K_B_PROG)
    n_pipes = v_ip[IP_N_PIPES]
    if v_mi[MI_BATCHES_CHANGED]:
        e, f = v_ip[IP_N_PIPE_ENTRIES], n_pipes
        n_ids = 0
        for pe in range(v_b_active.size):
            if not v_b_active[pe]:
                continue
            v_ids[n_ids] = pe
            n_ids += 1
            v_inc_starts[f], v_inc_lengths[f], v_inc_weight[f] = e, v_b_len[pe], v_b_weight[pe]
            off = v_b_off[pe]
            for k in range(v_b_len[pe]):
                coef = v_bp_coef[off + k]
                v_inc_flow[e], v_inc_res[e], v_inc_coef[e], v_inc_aw[e] = f, v_bp_res[off + k], coef, coef * v_b_weight[pe]
                e += 1
            f += 1
        v_mi[MI_N_IDS], v_mi[MI_N_FLOWS], v_mi[MI_N_ENTRIES] = n_ids, f, e
        v_mi[MI_BATCHES_CHANGED] = 0
        v_mi[MI_HAVE_ALLOC] = 0
    for p in range(n_pipes):
        w = v_p_admitted[p] - v_p_served[p]
        v_work[p] = w if w > 0.0 else 0.0
    for k in range(v_mi[MI_N_IDS]):
        v_work[n_pipes + k] = 1.0 - v_b_prog[v_ids[k]]


@jit
def _copy(src, dst):
    """``dst[:] = src`` as a loop (numba's slice assignment may copy through a temporary)."""
    for i in range(src.size):
        dst[i] = src[i]


@jit
def rates(c, t):
    """Clock._rates: this step's progress per flow (``x``), use per resource (``used``) and active share."""
    v_mi = ia(c, K_MI)
    v_work = fa(c, K_WORK)
    v_alloc_busy = ia(c, K_ALLOC_BUSY)
    v_alloc_x = fa(c, K_ALLOC_X)
    v_step_budget = fa(c, K_STEP_BUDGET)
    v_budget = fa(c, K_BUDGET)
    v_alloc_used = fa(c, K_ALLOC_USED)
    v_alloc_active = fa(c, K_ALLOC_ACTIVE)
    v_inc_flow = ia(c, K_INC_FLOW)
    v_inc_res = ia(c, K_INC_RES)
    v_inc_coef = fa(c, K_INC_COEF)
    v_inc_aw = fa(c, K_INC_AW)
    v_inc_starts = ia(c, K_INC_STARTS)
    v_inc_lengths = ia(c, K_INC_LENGTHS)
    v_inc_weight = fa(c, K_INC_WEIGHT)
    v_prev_budget = fa(c, K_PREV_BUDGET)
    v_prev_used = fa(c, K_PREV_USED)
    v_x = fa(c, K_X)
    v_used = fa(c, K_USED)
    v_active = fa(c, K_ACTIVE)
    build_flows(c)
    nf, ne = v_mi[MI_N_FLOWS], v_mi[MI_N_ENTRIES]
    work = v_work[:nf]
    bonus = late_bonus(c, t)
    reuse = not bonus and v_mi[MI_HAVE_ALLOC]
    if reuse:
        for f in range(nf):
            if (work[f] > 0.0) != v_alloc_busy[f] or work[f] < v_alloc_x[f]:
                reuse = False
                break
    budget = v_step_budget if bonus else v_budget
    x, used, active = v_x[:nf], v_used, v_active[:nf]
    if reuse:
        _copy(v_alloc_x[:nf], x)
        _copy(v_alloc_used, used)
        _copy(v_alloc_active[:nf], active)
    else:
        n_fl, n_r = v_x.size, v_used.size
        allocate_into(v_inc_flow[:ne], v_inc_res[:ne], v_inc_coef[:ne], v_inc_aw[:ne], v_inc_starts[:nf], v_inc_lengths[:nf],
                      v_inc_weight[:nf], budget, work, ia(c, K_SURE)[:nf], x, used, active, fa(c, K_SH_FLOW_F).reshape((4, n_fl)),
                      fa(c, K_SH_RES_F).reshape((3, n_r)), ia(c, K_SH_FLOW_I).reshape((4, n_fl)), ia(c, K_SH_RES_I).reshape((2, n_r)))
        keep = not bonus
        for f in range(nf):
            if active[f] < 1.0:
                keep = False
        v_mi[MI_HAVE_ALLOC] = keep
        if keep:
            _copy(x, v_alloc_x[:nf])
            _copy(used, v_alloc_used)
            _copy(active, v_alloc_active[:nf])
            for f in range(nf):
                v_alloc_busy[f] = work[f] > 0.0
    _copy(budget, v_prev_budget)  # LateWork.remember
    _copy(used, v_prev_used)
    v_mi[MI_HAVE_PREV] = 1
    v_mi[MI_STEP_BONUS] = bonus


# --- advancing ------------------------------------------------------------------------------------------------


@jit
def advance(c, t, scratch_i, scratch_j, scratch_k, scratch_f):
    """Clock._advance: one step of every flow and decode batch; returns (a completion happened, anything moved)."""
    v_fp = fa(c, K_FP)
    v_ip = ia(c, K_IP)
    v_mi = ia(c, K_MI)
    v_p_before = fa(c, K_P_BEFORE)
    v_p_served = fa(c, K_P_SERVED)
    v_x = fa(c, K_X)
    v_ids = ia(c, K_IDS)
    v_b_prog = fa(c, K_B_PROG)
    v_d_count = ia(c, K_D_COUNT)
    v_d_gained = fa(c, K_D_GAINED)
    v_mf = fa(c, K_MF)
    dt, n_pipes = v_fp[FP_DT], v_ip[IP_N_PIPES]
    rates(c, t)
    n_ids = v_mi[MI_N_IDS]
    moved = False
    for p in range(n_pipes):
        v_p_before[p] = v_p_served[p]
        v_p_served[p] = v_p_before[p] + v_x[p]
        moved |= v_x[p] != 0.0
    prog_before = fa(c, K_S_PROG)[:n_ids]
    for k in range(n_ids):
        pe = v_ids[k]
        prog_before[k] = v_b_prog[pe]
        v_b_prog[pe] = prog_before[k] + v_x[n_pipes + k]
        moved |= v_x[n_pipes + k] != 0.0
    decode_advance(c, dt)
    decoding = 0.0
    for de in range(v_d_count.size):
        decoding += v_d_count[de] * v_d_gained[de]
    events = pipe_done(c, t, scratch_i, scratch_j, scratch_k, scratch_f)
    events = batch_done_all(c, t, prog_before) or events
    n = decode_completions(c, scratch_i, scratch_f)
    touch_agents(c, scratch_i, n)
    for k in range(n):
        v_mf[MF_NOW] = t + scratch_f[k] * dt
        decode_done(c, scratch_i[k], v_mf[MF_NOW])
        events = True
    v_mf[MF_NOW] = np.nan
    meter_step(c, t + dt, decoding)
    v_mi[MI_HAVE_STEP] = not v_mi[MI_STEP_BONUS]
    v_mf[MF_STEP_DECODING] = decoding
    return events, decoding > 0 or moved


@jit
def pipe_done(c, t, out_pipe, out_req, out_tag, out_frac):
    """Clock._pipe_done."""
    v_fp = fa(c, K_FP)
    v_active = fa(c, K_ACTIVE)
    v_ip = ia(c, K_IP)
    v_span_pipe = fa(c, K_SPAN_PIPE)
    v_mf = fa(c, K_MF)
    v_a_reads_left = ia_agent(c, AI_READS_LEFT)
    v_a_pe = ia_agent(c, AI_PE)
    v_q_len = ia(c, K_Q_LEN)
    v_ready_at = fa(c, K_READY_AT)
    v_start_t, v_start_a = fa(c, K_S_START_T), ia(c, K_S_START_A)
    n_start = 0
    dt = v_fp[FP_DT]
    n = pipe_completions(c, v_active, out_pipe, out_req, out_tag, out_frac)
    touch_next_rounds(c, n, out_req, out_tag)
    layerwise = v_ip[IP_LAYERWISE]
    for k in range(n):
        pipe, a, tag = out_pipe[k], out_req[k], out_tag[k]
        when = late_time(c, v_span_pipe, pipe, t, out_frac[k])
        v_mf[MF_NOW] = when
        if tag == READ_PE or tag == READ_DE or tag == LOAD:
            if tag != LOAD:
                v_a_reads_left[a] -= 1
                if v_a_reads_left[a]:
                    continue
            pe = v_a_pe[a]
            if v_q_len[ready_q(c, pe)] == 0 and (tag == LOAD or layerwise) and v_ready_at[pe] != v_ready_at[pe]:
                v_ready_at[pe] = (when - t) / dt
            if tag == LOAD:
                load_done(c, a)
            else:
                read_done(c, a)
        elif tag == H2D:
            h2d_done(c, a, when, max(t + dt - when, 0.0))
        elif writeback_done(c, a, when):  # its next turn starts after the loop, as in the Python engine
            v_start_t[n_start], v_start_a[n_start] = when, a
            n_start += 1
    v_mf[MF_NOW] = np.nan
    start_turns(c, n_start)
    return n > 0


@jit
def touch_next_rounds(c, n, out_req, out_tag):
    """Load the rows the step's ``n`` pipe completions will read and write (each agent's two rows; for a
    write-back also its round's record row and its next round's token row) before any completion is handled.
    The rows are cold (an agent's last event was seconds ago; the rounds' rows are hundreds of MB for a large
    run), and the handlers would wait for each in turn; loaded together, their cache misses overlap. Only the
    loads matter: the values go to ``MF_SINK``, which nothing reads, so the run computes the same numbers."""
    v_a_round = ia_agent(c, AI_ROUND)
    v_a_last_round = ia_agent(c, AI_LAST_ROUND)
    v_r_tok = ia(c, K_R_TOK)
    v_rec = fa(c, K_REC)
    sink = _agent_lines(c, out_req, n)
    for k in range(n):
        a = out_req[k]
        if out_tag[k] == WB:
            r = v_a_round[a]
            sink += v_rec[r * REC_W]
            if r < v_a_last_round[a]:
                sink += v_r_tok[(r + 1) * RT_W]
    fa(c, K_MF)[MF_SINK] = sink


@jit
def _agent_lines(c, agents, n):
    """A value read from each of the four cache lines of every agent's rows in ``agents[:n]`` (for the touches)."""
    v_a_round = ia_agent(c, AI_ROUND)
    v_a_stage = ia_agent(c, AI_STAGE)
    v_a_need = fa_agent(c, AF_NEED)
    v_a_arrive = fa_agent(c, AF_REC + REC_ARRIVE)
    sink = 0.0
    for k in range(n):
        a = agents[k]
        sink += v_a_round[a] + v_a_stage[a] + v_a_need[a] + v_a_arrive[a]
    return sink


@jit
def touch_agents(c, agents, n):
    """Load the rows of every agent in ``agents[:n]`` before their events are handled (``touch_next_rounds``)."""
    fa(c, K_MF)[MF_SINK] = _agent_lines(c, agents, n)


@jit
def flush_records(c):
    """Copy the record of every running turn from its agent's row to its round's row of ``rec`` (state.AF_REC), so
    that what the caller reads between chunks (an online run's stop rule, a run stopped early) is every turn's
    record so far; a finished turn's was copied when it ended."""
    v_stage = ia_agent(c, AI_STAGE)
    v_a_round = ia_agent(c, AI_ROUND)
    v_rec = fa(c, K_REC)
    for a in range(v_stage.size):
        if v_stage[a] >= 0:
            rec, r = agent_rec(c, a), v_a_round[a]
            for k in range(REC_W):
                v_rec[r * REC_W + k] = rec[k]


@jit
def _finish_batch(c, pe, t, frac, ran):
    v_fp = fa(c, K_FP)
    v_span_pe = fa(c, K_SPAN_PE)
    v_mf = fa(c, K_MF)
    v_q_len = ia(c, K_Q_LEN)
    v_ready_at = fa(c, K_READY_AT)
    dt = v_fp[FP_DT]
    when = late_time(c, v_span_pe, pe, t, frac)
    v_mf[MF_NOW] = when
    batch_done(c, pe, when)
    if ran and v_q_len[ready_q(c, pe)] > 0:
        waited = v_ready_at[pe]
        v_ready_at[pe] = np.nan
        late_pe(c, pe, t + max((when - t) / dt, waited if waited == waited else 0.0) * dt)


@jit
def batch_done_all(c, t, prog_before):
    """Clock._batch_done."""
    v_fp = fa(c, K_FP)
    v_ip = ia(c, K_IP)
    v_mi = ia(c, K_MI)
    v_instant = ia(c, K_INSTANT)
    v_ids = ia(c, K_IDS)
    v_b_prog = fa(c, K_B_PROG)
    v_x = fa(c, K_X)
    v_active = fa(c, K_ACTIVE)
    v_mf = fa(c, K_MF)
    v_ready_at = fa(c, K_READY_AT)
    v_bm_count = ia(c, K_BM_COUNT)
    dt, n_pipes = v_fp[FP_DT], v_ip[IP_N_PIPES]
    finished = v_mi[MI_N_INSTANT] > 0
    for k in range(v_mi[MI_N_INSTANT]):
        _finish_batch(c, v_instant[k], t, 0.0, np.False_)
    v_mi[MI_N_INSTANT] = 0
    for k in range(v_mi[MI_N_IDS]):
        pe = v_ids[k]
        if v_b_prog[pe] >= 1.0 - BATCH_DONE_REL:
            xb = v_x[n_pipes + k]
            frac = min(max((1.0 - prog_before[k]) / (xb if xb > 0 else 1.0), 0.0), 1.0) * v_active[n_pipes + k]
            _finish_batch(c, pe, t, frac, np.True_)
            finished = True
    v_mf[MF_NOW] = np.nan
    for pe in range(v_ready_at.size):
        waited = v_ready_at[pe]
        if waited == waited:
            if v_bm_count[pe] == 0:
                late_pe(c, pe, t + waited * dt)
            v_ready_at[pe] = np.nan
    return finished


# --- meter (sim.metrics.Meter) --------------------------------------------------------------------------------


@jit
def _close(c, t_end):
    v_m_window = fa(c, K_M_WINDOW)
    v_mf = fa(c, K_MF)
    v_mi = ia(c, K_MI)
    v_fp = fa(c, K_FP)
    window, total = v_m_window, 0.0
    peak = window[0]
    for v in window:
        total += v
        peak = max(peak, v)
    if total > 0:
        v_mf[MF_RATIO_SUM] += peak / (total / window.size)
        v_mi[MI_N_WINDOWS] += 1
    window[:] = 0.0
    w = v_fp[FP_WINDOW_S]
    v_mf[MF_WINDOW_END] += w * max(1.0, np.ceil((t_end - v_mf[MF_WINDOW_END]) / w + 1e-12))


@jit
def _snapshot(c, t_end):
    """metrics.snapshot, once ``t_end`` has reached the next time to record (the callers check): the same arithmetic
    on the arena."""
    v_mf = fa(c, K_MF)
    v_mi = ia(c, K_MI)
    times = fa(c, K_M_SNAP_T)
    rows = fa(c, K_M_SNAP)
    used = fa(c, K_M_USED)
    stage_time = fa(c, K_M_STAGE)
    width = used.size + 1 + stage_time.size
    n, spacing = v_mi[MI_N_SNAPS], v_mf[MF_SNAP_SPACING]
    if n == times.size:
        half = n // 2
        for r in range(half):
            times[r] = times[2 * r + 1]
            for k in range(width):
                rows[r * width + k] = rows[(2 * r + 1) * width + k]
        n, spacing = half, 2.0 * spacing
    times[n] = t_end
    for k in range(used.size):
        rows[n * width + k] = used[k]
    rows[n * width + used.size] = v_mf[MF_DECODE_TOKENS]
    for k in range(stage_time.size):
        rows[n * width + used.size + 1 + k] = stage_time[k]
    v_mi[MI_N_SNAPS] = n + 1
    v_mf[MF_SNAP_SPACING] = spacing
    v_mf[MF_SNAP_NEXT] = (np.floor(t_end / spacing) + 1.0) * spacing


@jit
def _stage_time(c, seconds):
    """Meter.step / span: each stage's requests and tokens, times ``seconds``, added to its times."""
    load, total = fa(c, K_ST_LOAD), fa(c, K_M_STAGE)
    for k in range(load.size):
        total[k] += load[k] * seconds


@jit
def meter_step(c, t_end, decoding):
    v_m_used = fa(c, K_M_USED)
    v_used = fa(c, K_USED)
    v_m_read = fa(c, K_M_READ)
    v_x = fa(c, K_X)
    v_mf = fa(c, K_MF)
    v_m_window = fa(c, K_M_WINDOW)
    for r in range(v_m_used.size):
        v_m_used[r] += v_used[r]
    n = v_m_read.size
    for i in range(n):
        v_m_read[i] += v_x[i]
    v_mf[MF_DECODE_TOKENS] += decoding
    _stage_time(c, fa(c, K_FP)[FP_DT])
    for i in range(n):
        v_m_window[i] += v_x[i]
    if t_end >= v_mf[MF_WINDOW_END]:
        _close(c, t_end)
    if t_end >= v_mf[MF_SNAP_NEXT]:
        _snapshot(c, t_end)


@jit
def meter_span(c, t_start, duration, steps):
    v_m_read = fa(c, K_M_READ)
    v_m_used = fa(c, K_M_USED)
    v_used = fa(c, K_USED)
    v_x = fa(c, K_X)
    v_mf = fa(c, K_MF)
    v_m_window = fa(c, K_M_WINDOW)
    n = v_m_read.size
    for r in range(v_m_used.size):
        v_m_used[r] += steps * v_used[r]
    for i in range(n):
        v_m_read[i] += steps * v_x[i]
    v_mf[MF_DECODE_TOKENS] += steps * v_mf[MF_STEP_DECODING]
    _stage_time(c, duration)
    rate = fa(c, K_S_RATE)
    idle = True
    for i in range(n):
        rate[i] = v_x[i] * steps / duration
        idle = idle and rate[i] == 0.0
    t, t_end = t_start, t_start + duration
    while t_end >= v_mf[MF_WINDOW_END]:
        span = max(v_mf[MF_WINDOW_END] - t, 0.0)
        for i in range(n):
            v_m_window[i] += rate[i] * span
        t = v_mf[MF_WINDOW_END]
        _close(c, t_end if idle else v_mf[MF_WINDOW_END])
    for i in range(n):
        v_m_window[i] += rate[i] * (t_end - t)
    if t_end >= v_mf[MF_SNAP_NEXT]:
        _snapshot(c, t_end)


steps_until = jit(clocksteps.steps_until)  # the clock's step arithmetic, compiled as it stands (Clock._steps_to_event)


# --- quiet steps ------------------------------------------------------------------------------------------------


@jit
def jump(c, t):
    """Clock._jump: advance the whole quiet steps before the next event at the last step's rates."""
    v_mi = ia(c, K_MI)
    v_fp = fa(c, K_FP)
    v_ip = ia(c, K_IP)
    v_p_served = fa(c, K_P_SERVED)
    v_x = fa(c, K_X)
    v_b_prog = fa(c, K_B_PROG)
    v_ids = ia(c, K_IDS)
    v_d_v = fa(c, K_D_V)
    v_d_gained = fa(c, K_D_GAINED)
    if not v_mi[MI_HAVE_STEP]:
        return 0.0
    dt, n_pipes, n_ids = v_fp[FP_DT], v_ip[IP_N_PIPES], v_mi[MI_N_IDS]
    steps = min(steps_to_event(c, t), 1e9)
    k = int(steps)
    if k < 1:
        return 0.0
    for p in range(n_pipes):
        v_p_served[p] = v_p_served[p] + k * v_x[p]
    for j in range(n_ids):
        v_b_prog[v_ids[j]] += k * v_x[n_pipes + j]
    for de in range(v_d_v.size):
        v_d_v[de] = v_d_v[de] + k * v_d_gained[de]
    meter_span(c, t, k * dt, k)
    v_mi[MI_STEPS] += k
    return k * dt


@jit
def steps_to_event(c, t):
    """Clock._steps_to_event."""
    v_fp = fa(c, K_FP)
    v_ip = ia(c, K_IP)
    v_x = fa(c, K_X)
    v_p_head_end = fa(c, K_P_HEAD_END)
    v_p_served = fa(c, K_P_SERVED)
    v_mi = ia(c, K_MI)
    v_b_prog = fa(c, K_B_PROG)
    v_ids = ia(c, K_IDS)
    v_d_v = fa(c, K_D_V)
    v_d_gained = fa(c, K_D_GAINED)
    v_d_first_end = fa(c, K_D_FIRST_END)
    v_tick_when = fa(c, K_TICK_WHEN)
    v_tick_side = ia(c, K_TICK_SIDE)
    v_tick_group = ia(c, K_TICK_GROUP)
    v_arrival = fa(c, K_ARRIVAL)
    dt, n_pipes = v_fp[FP_DT], v_ip[IP_N_PIPES]
    nearest = np.inf
    for p in range(n_pipes):
        if v_x[p] > 0:
            nearest = min(nearest, (v_p_head_end[p] - v_p_served[p]) / v_x[p])
    for j in range(v_mi[MI_N_IDS]):
        xb = v_x[n_pipes + j]
        if xb > 0:
            nearest = min(nearest, (1.0 - v_b_prog[v_ids[j]]) / xb)
    for de in range(v_d_v.size):
        g = v_d_gained[de]
        if g > 0:
            nearest = min(nearest, (v_d_first_end[de] - v_d_v[de]) / g)
    limit = np.ceil(nearest) - 1.0 if math.isfinite(nearest) else np.inf
    limit = min(limit, _window_opens(c))
    due = np.inf
    for k in range(v_tick_when.size):
        due = min(due, next_work(c, v_tick_side[k], v_tick_group[k], v_tick_when[k]))
    if v_mi[MI_NEXT_ARRIVAL] < v_arrival.size:
        due = min(due, v_arrival[v_mi[MI_NEXT_ARRIVAL]])
    if v_mi[MI_N_WAIT] > 0:
        due = min(due, fa(c, K_W_TIME)[0])
    if due < np.inf:
        limit = min(limit, steps_until(due, float(v_mi[MI_STEPS]), dt))
    return limit if math.isfinite(limit) else 0.0


# --- arrivals, fetches and the loop ------------------------------------------------------------------------------


@jit
def arrivals(c, t):
    """Clock._arrivals."""
    v_mi = ia(c, K_MI)
    v_arrival = fa(c, K_ARRIVAL)
    v_order = ia(c, K_ORDER)
    i = v_mi[MI_NEXT_ARRIVAL]
    if i >= v_arrival.size or v_arrival[i] > t:
        return False
    while i < v_arrival.size and v_arrival[i] <= t:
        start_turn(c, v_order[i], v_arrival[i])
        i += 1
    v_mi[MI_NEXT_ARRIVAL] = i
    return True


@jit
def waits(c, t):
    """Clock._waits: every agent whose tool time or fork delay is over by ``t`` starts, in (time, agent) order.

    They are taken off the heap first (``start_turn`` does not touch it) and their rows loaded together
    (``touch_rounds``), then started in that order."""
    v_mi = ia(c, K_MI)
    v_w_time = fa(c, K_W_TIME)
    if v_mi[MI_N_WAIT] == 0 or v_w_time[0] > t:
        return False
    times, agents = fa(c, K_S_START_T), ia(c, K_S_START_A)
    n = 0
    while v_mi[MI_N_WAIT] > 0 and v_w_time[0] <= t:
        times[n] = v_w_time[0]
        agents[n] = wait_pop(c)
        n += 1
    touch_rounds(c, agents, n)
    for i in range(n):
        start_turn(c, agents[i], times[i])
    return True


@jit
def touch_rounds(c, agents, n):
    """Load the rows ``start_turn`` reads and writes for each of ``agents[:n]`` (its round's tokens, its two
    rows) before the first starts, so their cache misses overlap (as ``touch_next_rounds``)."""
    v_a_round = ia_agent(c, AI_ROUND)
    v_r_tok = ia(c, K_R_TOK)
    sink = _agent_lines(c, agents, n)
    for k in range(n):
        sink += v_r_tok[v_a_round[agents[k]] * RT_W]
    fa(c, K_MF)[MF_SINK] = sink


@jit
def _window_opens(c):
    """Clock._window_opens."""
    v_ip = ia(c, K_IP)
    v_x = fa(c, K_X)
    v_pq_head = ia(c, K_PQ_HEAD)
    adm, srv, window = fa(c, K_P_ADMITTED), fa(c, K_P_SERVED), fa(c, K_READ_WINDOW)
    limit = np.inf
    for p in range(v_ip[IP_LOAD0]):
        if v_pq_head[p] >= 0 and v_x[p] > 0:
            over = (adm[p] - srv[p] - window[p]) / v_x[p]
            if over >= 0:
                limit = min(limit, np.floor(over))
    return limit


@jit
def _tick_before(when, side, group, i, j):
    """Whether tick ``i`` is due before tick ``j``: by time, then side, then group (a total order)."""
    if when[i] != when[j]:
        return when[i] < when[j]
    if side[i] != side[j]:
        return side[i] < side[j]
    return group[i] < group[j]


@jit
def _tick_sift(when, side, group):
    """Restore the heap order of the ticks after the top's time grew (the fetch ticks are a binary min-heap in
    (time, side, group) order, as ``Clock.ticks`` is a heapq; ``run.build`` lays them out sorted)."""
    n, i = when.size, 0
    while True:
        left, best = 2 * i + 1, i
        if left < n and _tick_before(when, side, group, left, best):
            best = left
        if left + 1 < n and _tick_before(when, side, group, left + 1, best):
            best = left + 1
        if best == i:
            return
        when[i], when[best] = when[best], when[i]
        side[i], side[best] = side[best], side[i]
        group[i], group[best] = group[best], group[i]
        i = best


@jit
def fetches(c, t):
    """Clock._fetch: every due fetch in (time, side, group) order; each is rescheduled a whole period later."""
    v_fp = fa(c, K_FP)
    v_tick_when = fa(c, K_TICK_WHEN)
    v_tick_side = ia(c, K_TICK_SIDE)
    v_tick_group = ia(c, K_TICK_GROUP)
    period, moved = v_fp[FP_PERIOD], False
    while True:
        when = v_tick_when[0]
        if not when <= t:
            return moved
        side, group = v_tick_side[0], v_tick_group[0]
        when += period * np.floor((t - when) / period)  # after a quiet jump: its latest occurrence
        if has_work(c, side, group, when):
            moved = fetch(c, side, group, when) or moved
        v_tick_when[0] = when + period * max(1.0, np.ceil((t - when) / period + 1e-12))
        _tick_sift(v_tick_when, v_tick_side, v_tick_group)


@entry
def run_chunk(c, scratch_i, scratch_j, scratch_k, scratch_f):
    """Step until done (RUN_DONE), a progress report is due (RUN_REPORT) or no progress for the stall time (RUN_STALLED)."""
    v_fp = fa(c, K_FP)
    v_ip = ia(c, K_IP)
    v_mf = fa(c, K_MF)
    v_mi = ia(c, K_MI)
    dt, n = v_fp[FP_DT], v_ip[IP_N_AGENTS]
    t = v_mf[MF_T]
    while v_mi[MI_FINISHED] < n:
        events = arrivals(c, t)
        events = waits(c, t) or events
        events = fetches(c, t) or events
        events = admit_all(c) > 0 or events
        events = form_batches(c) > 0 or events
        events_step, moved = advance(c, t, scratch_i, scratch_j, scratch_k, scratch_f)
        v_mi[MI_STEPS] += 1
        t = v_mi[MI_STEPS] * dt  # Loop.run: the clock is the step count
        if not (events or events_step):
            jump(c, t)
            t = v_mi[MI_STEPS] * dt
        if moved or events or events_step:
            v_mf[MF_LAST_PROGRESS] = t
        elif t - v_mf[MF_LAST_PROGRESS] > v_fp[FP_STALL_S] and v_mi[MI_NEXT_ARRIVAL] >= fa(c, K_ARRIVAL).size and v_mi[MI_N_WAIT] == 0:
            v_mf[MF_T] = t
            flush_records(c)
            return RUN_STALLED
        if t >= v_mf[MF_NEXT_REPORT]:
            v_mf[MF_NEXT_REPORT] = t + PROGRESS_S
            v_mf[MF_T] = t
            flush_records(c)
            return RUN_REPORT
    v_mf[MF_T] = t
    flush_records(c)
    return RUN_DONE
