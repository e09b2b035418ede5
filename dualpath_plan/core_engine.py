"""The request lifecycle of the compiled fluid engine: queues, pipes, decode batches, forward batches.

A line-for-line port of ``fluid_engine.Engine`` and ``fluid_state`` (their docstrings describe the
model) onto the arrays of ``core_state.Core``; every function names the Python method it ports.
Arithmetic keeps the Python engine's order, so the two engines compute the same numbers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dualpath_plan.core_state import (
    FP_ACTIVE_PARAMS, FP_ATTN_PER_CTX, FP_BUFFER, FP_BW, FP_DE_HBM, FP_FLOPS_PER_S, FP_KV_MISS, FP_PE_HBM,
    FP_QUOTA, FP_SPARSE_PER_KEY, FP_TOPK, FP_W, H2D, IP_COMPUTE0, IP_D, IP_G_DE, IP_G_PE, IP_H2D0, IP_LAYERWISE,
    IP_LOAD0, IP_N_ROUTES, IP_P, IP_WB0, K_A_DE, K_A_DE_FRAC, K_A_DE_RESERVED, K_A_DONE_TOK, K_A_LAST_ROUND,
    K_A_PE, K_A_READS_LEFT, K_A_ROUND, K_BM_CHUNK, K_BM_COUNT, K_BM_HEAD, K_BM_NEXT, K_BM_TAIL, K_BP_COEF,
    K_BP_RES, K_BUF_USED, K_B_ACTIVE, K_B_LEN, K_B_OFF, K_B_PROG, K_B_WEIGHT, K_DE_FREE, K_DE_HBM, K_DE_SEQ,
    K_DE_TOK, K_DH_CHILD, K_DH_END, K_DH_READ, K_DH_ROOT, K_DH_SCRATCH, K_DH_SIB, K_D_BEFORE, K_D_COUNT,
    K_D_FIRST_END, K_D_GAINED, K_D_READ_SUM, K_D_V, K_FP, K_INSTANT, K_IP, K_IT_END, K_IT_NEXT, K_IT_SIZE,
    K_IT_TAG, K_MF, K_MI, K_PEND_PIPE, K_PE_HBM, K_PE_SEQ, K_PE_TOK, K_PF_HEAD, K_PF_TAIL, K_PQ_HEAD, K_PQ_TAIL,
    K_P_ADMITTED, K_P_BEFORE, K_P_HEAD_END, K_P_SERVED, K_P_WAITING, K_Q_HEAD, K_Q_LEN, K_Q_NEXT, K_Q_PREV,
    K_Q_TAIL, K_REC_ARRIVE, K_REC_DEC_END, K_REC_DEC_START, K_REC_DONE, K_REC_FIRST, K_REC_FLOPS, K_REC_FRAC,
    K_RT_COUNT, K_RT_LEN, K_RT_START, K_RT_UNIT, K_R_DEBUF_B, K_R_GEN, K_R_HIT, K_R_HIT_B, K_R_LENGTH, K_R_MISS,
    K_R_NEED, K_R_READ_B, K_R_WB_B, K_S_AMOUNTS, K_S_BCOEF, K_S_BRES, K_S_POS, K_S_UNITS, K_WANTING, LOAD, MF_NOW,
    MI_BATCHES_CHANGED, MI_FINISHED, MI_N_INSTANT, MI_N_SCRATCH, MI_POOL_TOP, MI_ROUNDS_DONE, Q_PE_WAIT,
    Q_PRIVATE0, READ_DE, READ_PE, WB, fa, ia,
)

jit = njit(cache=True, error_model="numpy")
entry = njit(cache=True, error_model="numpy")  # the functions called from Python

# --- request queues (doubly linked lists over agents) -----------------------------------------------------


@jit
def q_append(c, q, a):
    t = ia(c, K_Q_TAIL)[q]
    ia(c, K_Q_PREV)[a], ia(c, K_Q_NEXT)[a] = t, -1
    if t < 0:
        ia(c, K_Q_HEAD)[q] = a
    else:
        ia(c, K_Q_NEXT)[t] = a
    ia(c, K_Q_TAIL)[q] = a
    ia(c, K_Q_LEN)[q] += 1


@jit
def q_appendleft(c, q, a):
    h = ia(c, K_Q_HEAD)[q]
    ia(c, K_Q_PREV)[a], ia(c, K_Q_NEXT)[a] = -1, h
    if h < 0:
        ia(c, K_Q_TAIL)[q] = a
    else:
        ia(c, K_Q_PREV)[h] = a
    ia(c, K_Q_HEAD)[q] = a
    ia(c, K_Q_LEN)[q] += 1


@jit
def q_remove(c, q, a):
    p, n = ia(c, K_Q_PREV)[a], ia(c, K_Q_NEXT)[a]
    if p < 0:
        ia(c, K_Q_HEAD)[q] = n
    else:
        ia(c, K_Q_NEXT)[p] = n
    if n < 0:
        ia(c, K_Q_TAIL)[q] = p
    else:
        ia(c, K_Q_PREV)[n] = p
    ia(c, K_Q_LEN)[q] -= 1


@jit
def q_popleft(c, q):
    a = ia(c, K_Q_HEAD)[q]
    q_remove(c, q, a)
    return a


@jit
def ready_q(c, pe):
    return Q_PRIVATE0 + ia(c, K_IP)[IP_D] + pe  # after the D private queues


# --- pipes (fluid_state.Pipes) ------------------------------------------------------------------------------


@jit
def item_of(a, tag):
    return 2 * a + (1 if tag == READ_DE else 0)


@jit
def pipe_enqueue(c, pipe, a, size, tag):
    """Pipes.enqueue."""
    it = item_of(a, tag)
    fa(c, K_IT_SIZE)[it], ia(c, K_IT_TAG)[it], ia(c, K_IT_NEXT)[it] = size, tag, -1
    if ia(c, K_PQ_TAIL)[pipe] < 0:
        ia(c, K_PQ_HEAD)[pipe] = it
    else:
        ia(c, K_IT_NEXT)[ia(c, K_PQ_TAIL)[pipe]] = it
    ia(c, K_PQ_TAIL)[pipe] = it
    fa(c, K_P_WAITING)[pipe] += size


@jit
def pipe_admit(c, pipe, a, size, tag):
    """Pipes.admit."""
    it = item_of(a, tag)
    end = fa(c, K_P_ADMITTED)[pipe] + size
    fa(c, K_P_ADMITTED)[pipe] = end
    fa(c, K_IT_END)[it], ia(c, K_IT_TAG)[it], ia(c, K_IT_NEXT)[it] = end, tag, -1
    if ia(c, K_PF_TAIL)[pipe] < 0:
        fa(c, K_P_HEAD_END)[pipe] = end
        ia(c, K_PF_HEAD)[pipe] = it
    else:
        ia(c, K_IT_NEXT)[ia(c, K_PF_TAIL)[pipe]] = it
    ia(c, K_PF_TAIL)[pipe] = it


@jit
def pipe_admit_head(c, pipe):
    """Pipes.admit_head."""
    it = ia(c, K_PQ_HEAD)[pipe]
    size, tag = fa(c, K_IT_SIZE)[it], ia(c, K_IT_TAG)[it]
    ia(c, K_PQ_HEAD)[pipe] = ia(c, K_IT_NEXT)[it]
    fa(c, K_P_WAITING)[pipe] -= size
    if ia(c, K_PQ_HEAD)[pipe] < 0:
        ia(c, K_PQ_TAIL)[pipe] = -1
        fa(c, K_P_WAITING)[pipe] = 0.0
    pipe_admit(c, pipe, it // 2, size, tag)


@jit
def pipe_completions(c, active, out_pipe, out_req, out_tag, out_frac):
    """Pipes.completions: items done this step, removed; returns how many (in the ``out_*`` arrays)."""
    n = 0
    for pipe in range(fa(c, K_P_SERVED).size):
        served = fa(c, K_P_SERVED)[pipe]
        limit = served * (1 + 4e-16) + 1e-6
        if not fa(c, K_P_HEAD_END)[pipe] <= limit:
            continue
        start = fa(c, K_P_BEFORE)[pipe]
        span = served - start
        run = active[pipe]
        it = ia(c, K_PF_HEAD)[pipe]
        while it >= 0 and fa(c, K_IT_END)[it] <= limit:
            end = fa(c, K_IT_END)[it]
            out_pipe[n], out_req[n], out_tag[n] = pipe, it // 2, ia(c, K_IT_TAG)[it]
            out_frac[n] = run * min(max((end - start) / span, 0.0), 1.0) if span > 0 else 0.0
            n += 1
            it = ia(c, K_IT_NEXT)[it]
        ia(c, K_PF_HEAD)[pipe] = it
        if it < 0:
            ia(c, K_PF_TAIL)[pipe] = -1
            fa(c, K_P_HEAD_END)[pipe] = np.inf
        else:
            fa(c, K_P_HEAD_END)[pipe] = fa(c, K_IT_END)[it]
    return n


# --- decode batches (fluid_state.DecodeSet) with pairing heaps ------------------------------------------------


@jit
def _less(c, a, b):
    return fa(c, K_DH_END)[a] < fa(c, K_DH_END)[b] or (fa(c, K_DH_END)[a] == fa(c, K_DH_END)[b] and a < b)


@jit
def _meld(c, x, y):
    if x < 0:
        return y
    if y < 0:
        return x
    if _less(c, y, x):
        x, y = y, x
    ia(c, K_DH_SIB)[y] = ia(c, K_DH_CHILD)[x]
    ia(c, K_DH_CHILD)[x] = y
    return x


@jit
def _pop_root(c, de):
    """Remove the smallest sequence of ``de``'s heap (two-pass pairing)."""
    root = ia(c, K_DH_ROOT)[de]
    child = ia(c, K_DH_CHILD)[root]
    n = 0
    while child >= 0:  # first pass: meld pairs left to right
        a = child
        b = ia(c, K_DH_SIB)[a]
        child = ia(c, K_DH_SIB)[b] if b >= 0 else -1
        ia(c, K_DH_SIB)[a] = -1
        if b >= 0:
            ia(c, K_DH_SIB)[b] = -1
        ia(c, K_DH_SCRATCH)[n] = _meld(c, a, b)
        n += 1
    merged = -1
    for k in range(n - 1, -1, -1):  # second pass: right to left
        merged = _meld(c, ia(c, K_DH_SCRATCH)[k], merged)
    ia(c, K_DH_ROOT)[de] = merged
    ia(c, K_DH_CHILD)[root] = -1


@jit
def decode_join(c, a, de, tokens, read, head_start_s):
    """DecodeSet.join: returns the seconds after joining at which it ends if within ``head_start_s``, else -1."""
    rate = fa(c, K_FP)[FP_BW] / (fa(c, K_FP)[FP_W] + fa(c, K_D_READ_SUM)[de] + read)
    if tokens <= head_start_s * rate:
        return tokens / rate
    fa(c, K_D_READ_SUM)[de] += read
    ia(c, K_D_COUNT)[de] += 1
    end = fa(c, K_D_V)[de] + tokens - head_start_s * rate
    fa(c, K_DH_END)[a], fa(c, K_DH_READ)[a] = end, read
    ia(c, K_DH_CHILD)[a], ia(c, K_DH_SIB)[a] = -1, -1
    ia(c, K_DH_ROOT)[de] = _meld(c, ia(c, K_DH_ROOT)[de], a)
    if end < fa(c, K_D_FIRST_END)[de]:
        fa(c, K_D_FIRST_END)[de] = end
    return -1.0


@jit
def decode_advance(c, dt):
    """DecodeSet.advance: gained tokens per sequence in ``d_gained``, V before in ``d_before``."""
    k = dt * fa(c, K_FP)[FP_BW]
    for de in range(fa(c, K_D_V).size):
        fa(c, K_D_BEFORE)[de] = fa(c, K_D_V)[de]
        g = k / (fa(c, K_FP)[FP_W] + fa(c, K_D_READ_SUM)[de])
        fa(c, K_D_GAINED)[de] = g if ia(c, K_D_COUNT)[de] > 0 else g * 0.0
        fa(c, K_D_V)[de] = fa(c, K_D_BEFORE)[de] + fa(c, K_D_GAINED)[de]


@jit
def decode_completions(c, out_req, out_frac):
    """DecodeSet.completions: sequences done this step (``out_*``), removed; returns how many."""
    n = 0
    for de in range(fa(c, K_D_V).size):
        limit = fa(c, K_D_V)[de] * (1 + 4e-16) + 1e-9
        if not fa(c, K_D_FIRST_END)[de] <= limit:
            continue
        start, span = fa(c, K_D_BEFORE)[de], fa(c, K_D_GAINED)[de]
        while ia(c, K_DH_ROOT)[de] >= 0 and fa(c, K_DH_END)[ia(c, K_DH_ROOT)[de]] <= limit:
            a = ia(c, K_DH_ROOT)[de]
            end = fa(c, K_DH_END)[a]
            _pop_root(c, de)
            out_req[n] = a
            out_frac[n] = min(max((end - start) / span, 0.0), 1.0) if span > 0 else 0.0
            n += 1
            fa(c, K_D_READ_SUM)[de] -= fa(c, K_DH_READ)[a]
            ia(c, K_D_COUNT)[de] -= 1
        root = ia(c, K_DH_ROOT)[de]
        fa(c, K_D_FIRST_END)[de] = fa(c, K_DH_END)[root] if root >= 0 else np.inf
        if root < 0:
            fa(c, K_D_READ_SUM)[de] = 0.0
    return n


# --- 1. arrival (Engine.start_turns) -----------------------------------------------------------------------


@jit
def start_turn(c, a, t):
    fa(c, K_REC_ARRIVE)[ia(c, K_A_ROUND)[a]] = t
    ia(c, K_A_DONE_TOK)[a] = 0
    q_append(c, Q_PE_WAIT, a)


# --- 2-3. reads and loads ------------------------------------------------------------------------------------


@jit
def late_pipe(c, pipe, tau):
    """fluid_late.LateWork.pipe (the Python engine queues these in ``late_pipes`` until the next step's
    allocation; recording them at once is the same, as nothing reads them before it)."""
    if tau < fa(c, K_PEND_PIPE)[pipe]:
        fa(c, K_PEND_PIPE)[pipe] = tau


@jit
def admit_now(c, pipe, a, size, tag):
    """Engine._admit."""
    now = fa(c, K_MF)[MF_NOW]
    if now == now and ia(c, K_PF_HEAD)[pipe] < 0:
        late_pipe(c, pipe, now)
    pipe_admit(c, pipe, a, size, tag)


@jit
def take_room(c, pipe, a, size, tag):
    """Engine._take_room."""
    r = ia(c, K_A_ROUND)[a]
    if tag == READ_PE or tag == READ_DE:
        node, de_node = pipe, ia(c, K_IP)[IP_P] + ia(c, K_A_DE)[a] // ia(c, K_IP)[IP_G_DE]
        de_need = 0.0 if ia(c, K_A_DE_RESERVED)[a] else fa(c, K_R_DEBUF_B)[r]
        own = size if tag == READ_PE else 0.0
        cap = fa(c, K_FP)[FP_BUFFER]
        if fa(c, K_BUF_USED)[node] + own > cap or fa(c, K_BUF_USED)[de_node] + de_need > cap:
            return False
        fa(c, K_BUF_USED)[node] += own
        fa(c, K_BUF_USED)[de_node] += de_need
        ia(c, K_A_DE_RESERVED)[a] = True
    elif tag == LOAD:
        pe = pipe - ia(c, K_IP)[IP_LOAD0]
        if fa(c, K_PE_HBM)[pe] + fa(c, K_R_DEBUF_B)[r] > fa(c, K_FP)[FP_PE_HBM]:
            return False
        fa(c, K_PE_HBM)[pe] += fa(c, K_R_DEBUF_B)[r]
    elif tag == H2D:
        de, need = pipe - ia(c, K_IP)[IP_H2D0], fa(c, K_R_NEED)[r]
        if fa(c, K_DE_HBM)[de] + need > fa(c, K_FP)[FP_DE_HBM]:
            return False
        fa(c, K_DE_HBM)[de] += need
        fa(c, K_DE_FREE)[de] -= need
    return True


@jit
def offer(c, pipe, a, size, tag):
    """Engine.offer."""
    if ia(c, K_PQ_HEAD)[pipe] < 0 and take_room(c, pipe, a, size, tag):
        admit_now(c, pipe, a, size, tag)
    else:
        pipe_enqueue(c, pipe, a, size, tag)


@jit
def admit_all(c):
    """Engine.admit: admit head items of every waiting pipe, in pipe order, while there is room."""
    count = 0
    for pipe in range(ia(c, K_PQ_HEAD).size):
        while ia(c, K_PQ_HEAD)[pipe] >= 0:
            it = ia(c, K_PQ_HEAD)[pipe]
            if not take_room(c, pipe, it // 2, fa(c, K_IT_SIZE)[it], ia(c, K_IT_TAG)[it]):
                break
            pipe_admit_head(c, pipe)
            count += 1
    return count


@jit
def start_reads(c, a):
    """Engine.start_reads."""
    r = ia(c, K_A_ROUND)[a]
    total, f = fa(c, K_R_HIT_B)[r], fa(c, K_A_DE_FRAC)[a]
    fa(c, K_REC_FRAC)[r] = f
    pe_size, de_size = total * (1 - f), total * f
    n = (1 if pe_size > 0 else 0) + (1 if de_size > 0 else 0)
    ia(c, K_A_READS_LEFT)[a] = n
    if pe_size > 0:
        offer(c, ia(c, K_A_PE)[a] // ia(c, K_IP)[IP_G_PE], a, pe_size, READ_PE)
    if de_size > 0:
        offer(c, ia(c, K_IP)[IP_P] + ia(c, K_A_DE)[a] // ia(c, K_IP)[IP_G_DE], a, de_size, READ_DE)
    if n == 0:
        read_done(c, a)


@jit
def read_done(c, a):
    pe = ia(c, K_A_PE)[a]
    if ia(c, K_IP)[IP_LAYERWISE]:
        q_append(c, ready_q(c, pe), a)
        ia(c, K_WANTING)[pe] = True
    else:
        offer(c, ia(c, K_IP)[IP_LOAD0] + pe, a, fa(c, K_R_HIT_B)[ia(c, K_A_ROUND)[a]], LOAD)


@jit
def load_done(c, a):
    pe = ia(c, K_A_PE)[a]
    fa(c, K_BUF_USED)[pe // ia(c, K_IP)[IP_G_PE]] -= fa(c, K_R_HIT_B)[ia(c, K_A_ROUND)[a]]
    q_append(c, ready_q(c, pe), a)
    ia(c, K_WANTING)[pe] = True


# --- 4. forward batches --------------------------------------------------------------------------------------


@jit
def attention_flops(c, context, tokens):
    """fluid_layout.attention_flops."""
    capped = min(context, fa(c, K_FP)[FP_TOPK])
    return tokens * (fa(c, K_FP)[FP_ATTN_PER_CTX] * context + fa(c, K_FP)[FP_SPARSE_PER_KEY] * capped)


@jit
def attn_time(c, cached, tokens):
    """Engine.attn_time."""
    return attention_flops(c, cached + tokens / 2.0, tokens) / fa(c, K_FP)[FP_FLOPS_PER_S]


@jit
def flops_per_new_token(c, context):
    """compute.flops_per_new_token."""
    capped = min(context, fa(c, K_FP)[FP_TOPK])
    return 2.0 * fa(c, K_FP)[FP_ACTIVE_PARAMS] + fa(c, K_FP)[FP_ATTN_PER_CTX] * context + fa(c, K_FP)[FP_SPARSE_PER_KEY] * capped


@jit
def _reserve_for_batch(c, a):
    """Engine._candidates for one request: False if its DE-buffer space cannot be reserved now."""
    r = ia(c, K_A_ROUND)[a]
    if not ia(c, K_A_DE_RESERVED)[a] and fa(c, K_R_DEBUF_B)[r] > 0:
        node = ia(c, K_IP)[IP_P] + ia(c, K_A_DE)[a] // ia(c, K_IP)[IP_G_DE]
        if fa(c, K_BUF_USED)[node] + fa(c, K_R_DEBUF_B)[r] > fa(c, K_FP)[FP_BUFFER]:
            return False
        fa(c, K_BUF_USED)[node] += fa(c, K_R_DEBUF_B)[r]
        ia(c, K_A_DE_RESERVED)[a] = True
    return True


@jit
def _largest_chunk(c, cached, tokens, budget):
    """policies.largest_chunk on the attention time."""
    lo, hi = 0, tokens
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if attn_time(c, cached, mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


@jit
def _member(c, pe, a, chunk):
    ia(c, K_BM_NEXT)[a], ia(c, K_BM_CHUNK)[a] = -1, chunk
    if ia(c, K_BM_TAIL)[pe] < 0:
        ia(c, K_BM_HEAD)[pe] = a
    else:
        ia(c, K_BM_NEXT)[ia(c, K_BM_TAIL)[pe]] = a
    ia(c, K_BM_TAIL)[pe] = a
    ia(c, K_BM_COUNT)[pe] += 1


@jit
def _choose_members(c, pe):
    """Engine._candidates feeding policies.batch_by_quota (layer-wise) or batch_all: members go to
    ``bm_*`` in order and leave the ready queue."""
    q = ready_q(c, pe)
    quota, spent = fa(c, K_FP)[FP_QUOTA], 0.0
    a = ia(c, K_Q_HEAD)[q]
    while a >= 0:
        nxt = ia(c, K_Q_NEXT)[a]
        if _reserve_for_batch(c, a):
            r = ia(c, K_A_ROUND)[a]
            cached, left = ia(c, K_R_HIT)[r] + ia(c, K_A_DONE_TOK)[a], ia(c, K_R_MISS)[r] - ia(c, K_A_DONE_TOK)[a]
            if not ia(c, K_IP)[IP_LAYERWISE]:
                q_remove(c, q, a)
                _member(c, pe, a, left)
            else:
                cost = attn_time(c, cached, left)
                if spent + cost <= quota:
                    q_remove(c, q, a)
                    _member(c, pe, a, left)
                    spent += cost
                else:
                    chunk = _largest_chunk(c, cached, left, quota - spent)
                    if chunk > 0 or ia(c, K_BM_COUNT)[pe] == 0:
                        q_remove(c, q, a)
                        _member(c, pe, a, max(chunk, min(1, left)))
                    break
        a = nxt


@jit
def form_batches(c):
    """Engine.form_batches."""
    started = 0
    for pe in range(ia(c, K_WANTING).size):
        if not ia(c, K_WANTING)[pe]:
            continue
        ia(c, K_WANTING)[pe] = False
        if ia(c, K_BM_COUNT)[pe] > 0 or ia(c, K_Q_LEN)[ready_q(c, pe)] == 0:
            continue
        _choose_members(c, pe)
        if ia(c, K_BM_COUNT)[pe] > 0:
            _take(c, pe)
            started += 1
        else:
            ia(c, K_WANTING)[pe] = True
    return started


@jit
def _add_demand(c, pos, r, amount):
    k = pos[r]
    if k < 0:
        k = ia(c, K_MI)[MI_N_SCRATCH]
        pos[r] = k
        ia(c, K_S_BRES)[k], fa(c, K_S_BCOEF)[k] = r, 0.0
        ia(c, K_MI)[MI_N_SCRATCH] = k + 1
    fa(c, K_S_BCOEF)[k] = fa(c, K_S_BCOEF)[k] + amount


@jit
def _pool_alloc(c, pe, n):
    """Room for ``n`` entries of ``pe``'s batch in the entry pool; compacts the running batches to its
    front when the pool is full (running batches hold at most half of it: see core_run.pool_size)."""
    if ia(c, K_MI)[MI_POOL_TOP] + n > ia(c, K_BP_RES).size:
        top = 0
        for other in range(ia(c, K_B_ACTIVE).size):
            if ia(c, K_B_ACTIVE)[other]:
                off, m = ia(c, K_B_OFF)[other], ia(c, K_B_LEN)[other]
                for k in range(m):
                    ia(c, K_BP_RES)[top + k], fa(c, K_BP_COEF)[top + k] = ia(c, K_BP_RES)[off + k], fa(c, K_BP_COEF)[off + k]
                ia(c, K_B_OFF)[other] = top
                top += m
        ia(c, K_MI)[MI_POOL_TOP] = top
    ia(c, K_B_OFF)[pe] = ia(c, K_MI)[MI_POOL_TOP]
    ia(c, K_MI)[MI_POOL_TOP] += n


@jit
def _take(c, pe):
    """Engine._take with Engine._batch_entries: the batch's resources and demands, in first-use order."""
    g_pe, g_de, layerwise, kv_miss = ia(c, K_IP)[IP_G_PE], ia(c, K_IP)[IP_G_DE], ia(c, K_IP)[IP_LAYERWISE], fa(c, K_FP)[FP_KV_MISS]
    pos = ia(c, K_S_POS)  # scratch: resource -> entry (-1: none yet)
    ia(c, K_MI)[MI_N_SCRATCH] = 0
    flops_total = 0.0
    units, amounts = ia(c, K_S_UNITS), fa(c, K_S_AMOUNTS)
    a = ia(c, K_BM_HEAD)[pe]
    while a >= 0:
        chunk, r = ia(c, K_BM_CHUNK)[a], ia(c, K_A_ROUND)[a]
        miss, hit, de = ia(c, K_R_MISS)[r], ia(c, K_R_HIT)[r], ia(c, K_A_DE)[a]
        hit_c = fa(c, K_R_HIT_B)[r] * (chunk / miss if miss > 0 else 1.0)
        f = fa(c, K_A_DE_FRAC)[a]
        units[0], units[1], units[2], units[3] = pe // g_pe, pe, de // g_de, de
        pe_part = hit_c * (1 - f) if layerwise else hit_c
        amounts[0], amounts[1], amounts[2] = pe_part + chunk * kv_miss, hit_c * (1 - f), hit_c * f
        for k in range(ia(c, K_IP)[IP_N_ROUTES]):
            amount = amounts[k]
            if amount > 0:
                for h in range(ia(c, K_RT_LEN)[k]):
                    _add_demand(c, pos, ia(c, K_RT_START)[k * 3 + h] + units[ia(c, K_RT_UNIT)[k * 3 + h]], fa(c, K_RT_COUNT)[k * 3 + h] * amount)
        flops = chunk * flops_per_new_token(c, hit + ia(c, K_A_DONE_TOK)[a])
        fa(c, K_REC_FLOPS)[r] += flops
        flops_total += flops
        a = ia(c, K_BM_NEXT)[a]
    n = ia(c, K_MI)[MI_N_SCRATCH]
    byte_max = 0.0
    for k in range(n):
        pos[ia(c, K_S_BRES)[k]] = -1
        if k == 0 or fa(c, K_S_BCOEF)[k] > byte_max:
            byte_max = fa(c, K_S_BCOEF)[k]
    if flops_total > 0:
        ia(c, K_S_BRES)[n], fa(c, K_S_BCOEF)[n] = ia(c, K_IP)[IP_COMPUTE0] + pe, flops_total
        n += 1
    if n == 0:
        ia(c, K_INSTANT)[ia(c, K_MI)[MI_N_INSTANT]] = pe
        ia(c, K_MI)[MI_N_INSTANT] += 1
        return
    _pool_alloc(c, pe, n)
    off = ia(c, K_B_OFF)[pe]
    cmax = fa(c, K_S_BCOEF)[0]
    for k in range(n):
        ia(c, K_BP_RES)[off + k], fa(c, K_BP_COEF)[off + k] = ia(c, K_S_BRES)[k], fa(c, K_S_BCOEF)[k]
        cmax = max(cmax, fa(c, K_S_BCOEF)[k])
    ia(c, K_B_LEN)[pe] = n
    fa(c, K_B_WEIGHT)[pe] = 1.0 / byte_max if byte_max > 0 else 1.0 / cmax
    fa(c, K_B_PROG)[pe] = 0.0
    ia(c, K_B_ACTIVE)[pe] = True
    ia(c, K_MI)[MI_BATCHES_CHANGED] = 1


@jit
def batch_done(c, pe, t):
    """Engine.batch_done: members in reverse order; a chunked one back to the head of the ready queue."""
    n = ia(c, K_BM_COUNT)[pe]
    members = np.empty(n, dtype=np.int64)
    a, k = ia(c, K_BM_HEAD)[pe], 0
    while a >= 0:
        members[k] = a
        k += 1
        a = ia(c, K_BM_NEXT)[a]
    h2d0, g_pe = ia(c, K_IP)[IP_H2D0], ia(c, K_IP)[IP_G_PE]
    for k in range(n - 1, -1, -1):
        a = members[k]
        r = ia(c, K_A_ROUND)[a]
        ia(c, K_A_DONE_TOK)[a] += ia(c, K_BM_CHUNK)[a]
        if ia(c, K_A_DONE_TOK)[a] < ia(c, K_R_MISS)[r]:
            q_appendleft(c, ready_q(c, pe), a)
            continue
        fa(c, K_REC_FIRST)[r] = t
        fa(c, K_PE_TOK)[pe] -= ia(c, K_R_LENGTH)[r]
        ia(c, K_PE_SEQ)[pe] -= 1
        if ia(c, K_IP)[IP_LAYERWISE]:
            fa(c, K_BUF_USED)[pe // g_pe] -= fa(c, K_R_HIT_B)[r] * (1 - fa(c, K_A_DE_FRAC)[a])
        else:
            fa(c, K_PE_HBM)[pe] -= fa(c, K_R_DEBUF_B)[r]
        offer(c, h2d0 + ia(c, K_A_DE)[a], a, fa(c, K_R_DEBUF_B)[r], H2D)
    ia(c, K_BM_HEAD)[pe], ia(c, K_BM_TAIL)[pe], ia(c, K_BM_COUNT)[pe] = -1, -1, 0
    ia(c, K_WANTING)[pe] = True
    if ia(c, K_B_ACTIVE)[pe]:
        ia(c, K_B_ACTIVE)[pe] = False
        ia(c, K_MI)[MI_BATCHES_CHANGED] = 1


# --- 5-7. H2D, decode, write-back -----------------------------------------------------------------------------


@jit
def h2d_done(c, a, t, rest_s):
    """Engine.h2d_done."""
    de, r = ia(c, K_A_DE)[a], ia(c, K_A_ROUND)[a]
    if ia(c, K_A_DE_RESERVED)[a]:
        fa(c, K_BUF_USED)[ia(c, K_IP)[IP_P] + de // ia(c, K_IP)[IP_G_DE]] -= fa(c, K_R_DEBUF_B)[r]
        ia(c, K_A_DE_RESERVED)[a] = False
    fa(c, K_REC_DEC_START)[r] = t
    ends_in = decode_join(c, a, de, ia(c, K_R_GEN)[r], fa(c, K_R_READ_B)[r], rest_s)
    if ends_in >= 0.0:
        decode_done(c, a, t + ends_in)


@jit
def decode_done(c, a, t):
    """Engine.decode_done."""
    r = ia(c, K_A_ROUND)[a]
    fa(c, K_REC_DEC_END)[r] = t
    admit_now(c, ia(c, K_IP)[IP_WB0] + ia(c, K_A_DE)[a], a, fa(c, K_R_WB_B)[r], WB)


@jit
def writeback_done(c, a, t):
    """Engine.writeback_done: True if the agent has a next turn."""
    de, r = ia(c, K_A_DE)[a], ia(c, K_A_ROUND)[a]
    need = fa(c, K_R_NEED)[r]
    fa(c, K_DE_HBM)[de] -= need
    fa(c, K_DE_FREE)[de] += need
    fa(c, K_DE_TOK)[de] -= ia(c, K_R_LENGTH)[r]
    ia(c, K_DE_SEQ)[de] -= 1
    fa(c, K_REC_DONE)[r] = t
    ia(c, K_MI)[MI_ROUNDS_DONE] += 1
    if r < ia(c, K_A_LAST_ROUND)[a]:
        ia(c, K_A_ROUND)[a] = r + 1
        return True
    ia(c, K_MI)[MI_FINISHED] += 1
    return False


