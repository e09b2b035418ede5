"""The request lifecycle of the compiled fluid engine: arrival, reads and loads, forward batches,
H2D, decode and write-back.

A line-for-line port of ``sim.python.engine.Engine`` (its docstring describes the model) onto the arenas of
``sim.compiled.state``, with the data structures of ``sim.compiled.queues``; every function names the Python method it
ports. Arithmetic keeps the Python engine's order, so the two engines compute the same numbers.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.sim.compiled.queues import (
    agent_rec,
    fa_agent,
    ia_agent,
    decode_join,
    prefill_terms,
    fa,
    ia,
    jit,
    pipe_admit,
    pipe_admit_head,
    pipe_enqueue,
    q_append,
    q_appendleft,
    q_insert_after,
    q_remove,
    ready_q,
    set_stage,
    wait_push,
)
from dualpath_plan.sim.compiled.tier import lru_ask, lru_written
from dualpath_plan.sim.compiled.state import (
    K_R_TOOL,
    K_S_START_A,
    K_S_START_T,
    K_A_DELAY,
    K_C_PTR,
    K_C_AGENT,
    FP_ATTN_PER_CTX,
    FP_ATTN_RATE,
    FP_BUFFER,
    FP_DE_HBM,
    FP_HBM_PER_TOKEN,
    FP_KV_HIT,
    FP_KV_MISS,
    FP_PEAK,
    FP_PE_HBM,
    FP_QUOTA,
    FP_READ_INDEXER,
    FP_READ_LAYOUT,
    FP_READ_SPARSE,
    FP_DEC_ATTN_CTX,
    FP_DEC_ATTN_KEY,
    FP_SPARSE_PER_KEY,
    FP_TOPK,
    H2D,
    IP_COMPUTE0,
    IP_G_DE,
    IP_G_PE,
    IP_H2D0,
    IP_LAYERWISE,
    IP_LOAD0,
    IP_N_ROUTES,
    IP_P,
    IP_TIER,
    IP_TIER0,
    IP_WB0,
    AI_DE,
    AF_DEBUF_B,
    AF_REC,
    AF_DE_FRAC,
    AF_TIER,
    AI_DE_RESERVED,
    AI_DONE_TOK,
    AI_GEN,
    AI_HIT,
    AF_HIT_B,
    AI_LAST_ROUND,
    AI_LENGTH,
    AI_MISS,
    AF_NEED,
    AI_PAIR_WAIT,
    AI_PE,
    AI_READS_LEFT,
    AF_READ_B,
    AF_ATTN_S,
    AI_ROUND,
    AI_TICKET,
    AF_WB_B,
    K_BM_CHUNK,
    K_BM_COUNT,
    K_BM_HEAD,
    K_BM_NEXT,
    K_BM_TAIL,
    K_BP_COEF,
    K_BP_RES,
    K_BUF_USED,
    K_B_ACTIVE,
    K_B_LEN,
    K_B_OFF,
    K_B_PROG,
    K_B_WEIGHT,
    K_DE_FREE,
    K_DE_HBM,
    K_DE_SEQ,
    K_DE_TOK,
    K_DQ_ISSUED,
    AI_Q_PREV,
    K_Q_TAIL,
    K_P_ADMITTED,
    K_P_COEF,
    K_P_LENGTHS,
    K_P_RES,
    K_P_SERVED,
    K_P_STARTS,
    K_READ_WINDOW,
    K_DQ_SERVED,
    K_S_PIPES,
    K_FP,
    K_INSTANT,
    K_IP,
    K_IT_SIZE,
    K_IT_TAG,
    K_MF,
    K_LATE_UNITS,
    K_MI,
    K_PEND_PIPE,
    K_PE_HBM,
    K_PE_SEQ,
    K_PE_TOK,
    K_PF_HEAD,
    K_PQ_HEAD,
    K_PRE_P,
    K_Q_HEAD,
    K_Q_LEN,
    AI_Q_NEXT,
    K_REC,
    K_RT_COUNT,
    K_RT_LEN,
    K_RT_START,
    K_RT_UNIT,
    K_R_TOK,
    K_S_AMOUNTS,
    K_S_BCOEF,
    K_S_BRES,
    K_S_MEMBERS,
    K_S_POS,
    K_S_RUN,
    K_S_UNITS,
    K_TERMS,
    K_WANTING,
    LOAD,
    MF_NOW,
    MI_BATCHES_CHANGED,
    MI_FINISHED,
    MI_N_INSTANT,
    MI_N_LATE,
    MI_N_SCRATCH,
    MI_POOL_TOP,
    MI_ROUNDS_DONE,
    Q_PE_WAIT,
    READ_DE,
    READ_PE,
    REC_ARRIVE,
    REC_DEC_END,
    REC_DEC_START,
    REC_DONE,
    REC_FIRST,
    REC_FLOPS,
    REC_FRAC,
    REC_START,
    REC_TIER,
    REC_W,
    RT_GEN,
    RT_HIT,
    RT_MISS,
    RT_W,
    WB,
)
from dualpath_plan.sim.stages import BATCH_WAIT, BUFFER_ROOM, DECODE, PE_ASSIGN, PREFILL, READ_QUEUE, READING, SERVING_BY_TAG, WAITING_BY_TAG
from dualpath_plan.sim.pipes import NOT_NOW, NOT_THIS_ROUND, TAKEN

# --- 1. arrival (Engine.start_turns) -----------------------------------------------------------------------


@jit
def start_turn(c, a, t):
    """Engine.start_turns for one agent: its current round arrives at ``t``; the per-agent quantities of the round
    are derived with the Python engine's arithmetic (and ``layout.decode_read_bytes``'s)."""
    v_a_round = ia_agent(c, AI_ROUND)
    v_a_done_tok = ia_agent(c, AI_DONE_TOK)
    v_fp = fa(c, K_FP)
    r = v_a_round[a]
    v_r_tok = ia(c, K_R_TOK)
    h, m, g = v_r_tok[r * RT_W + RT_HIT], v_r_tok[r * RT_W + RT_MISS], v_r_tok[r * RT_W + RT_GEN]
    ia_agent(c, AI_HIT)[a], ia_agent(c, AI_MISS)[a], ia_agent(c, AI_GEN)[a] = h, m, g
    hb = h * v_fp[FP_KV_HIT]
    fa_agent(c, AF_NEED)[a] = (h + m + g) * v_fp[FP_HBM_PER_TOKEN]
    fa_agent(c, AF_HIT_B)[a] = hb
    fa_agent(c, AF_DEBUF_B)[a] = hb + m * v_fp[FP_KV_MISS]
    fa_agent(c, AF_WB_B)[a] = (m + g) * v_fp[FP_KV_MISS]  # write-back bytes per token: the miss KV's (run.kv_per_token)
    ctx = (h + m) + g / 2.0
    top = ctx if not v_fp[FP_READ_SPARSE] else min(ctx, v_fp[FP_TOPK])
    fa_agent(c, AF_READ_B)[a] = v_fp[FP_READ_LAYOUT] * top + v_fp[FP_READ_INDEXER] * ctx
    fa_agent(c, AF_ATTN_S)[a] = v_fp[FP_DEC_ATTN_CTX] * ctx + v_fp[FP_DEC_ATTN_KEY] * min(ctx, v_fp[FP_TOPK])  # layout.decode_attn_seconds
    ia_agent(c, AI_LENGTH)[a] = h + m
    rec = agent_rec(c, a)  # the turn's record, as a row of rec (state.AF_REC): times unknown, nothing charged
    for k in range(len(REC_START)):
        rec[k] = REC_START[k]
    rec[REC_ARRIVE] = t
    v_a_done_tok[a] = 0
    set_stage(c, a, PE_ASSIGN)
    _join_prefill_queue(c, a, t)


@jit
def start_turns(c, n):
    """Engine.start_turns for the ``n`` turns in ``s_start_a``/``s_start_t`` (a step's write-backs, in the order they
    were handled), started in time order (a stable insertion sort: ties keep that order).

    The prefill queue ends as it would if they started in the order handled: each turn joins behind every turn that
    arrived at or before it, so the queue stays sorted by arrival time with ties in joining order, and sorting a
    step's turns first gives the same sorted queue. What differs is the cost: handled by pipe, a step's turns come
    in no time order, and each join walked back past about half of the step's turns before it (quadratic in the
    turns of a step, about 130 on 48P96D); in time order each stops at once. The rest of a turn's start writes only
    the agent's own fields and the per-stage counts and tokens, whole numbers whose float sums any order leaves
    exact."""
    times, agents = fa(c, K_S_START_T), ia(c, K_S_START_A)
    for i in range(1, n):
        t, a = times[i], agents[i]
        j = i - 1
        while j >= 0 and times[j] > t:
            times[j + 1], agents[j + 1] = times[j], agents[j]
            j -= 1
        times[j + 1], agents[j + 1] = t, a
    for i in range(n):
        start_turn(c, agents[i], times[i])


@jit
def _join_prefill_queue(c, a, t):
    """Engine._join_prefill_queue: behind every request that arrived at or before ``t``."""
    v_arrive = fa_agent(c, AF_REC + REC_ARRIVE)
    v_q_prev = ia_agent(c, AI_Q_PREV)
    q = np.int64(Q_PE_WAIT)
    p = ia(c, K_Q_TAIL)[q]
    while p >= 0 and v_arrive[p] > t:
        p = v_q_prev[p]
    q_insert_after(c, q, p, a)


# --- 2-3. reads and loads ------------------------------------------------------------------------------------


@jit
def late_pipe(c, pipe, tau):
    """sim.python.late.LateWork.pipe (the Python engine queues these in ``late_pipes`` until the next step's
    allocation; recording them at once is the same, as nothing reads them before it)."""
    v_pend_pipe = fa(c, K_PEND_PIPE)
    if tau < v_pend_pipe[pipe]:
        if v_pend_pipe[pipe] == np.inf:
            late_list(c, pipe)
        v_pend_pipe[pipe] = tau


@jit
def late_list(c, u):
    """List unit ``u`` (a pipe, or a prefill engine numbered after the pipes) as having a late start pending
    (``loop.late_bonus`` visits only these)."""
    v_mi = ia(c, K_MI)
    ia(c, K_LATE_UNITS)[v_mi[MI_N_LATE]] = u
    v_mi[MI_N_LATE] += 1


@jit
def admit_now(c, pipe, a, size, tag):
    """Engine._admit."""
    v_mf = fa(c, K_MF)
    v_pf_head = ia(c, K_PF_HEAD)
    now = v_mf[MF_NOW]
    if now == now and v_pf_head[pipe] < 0 and size > 0:  # Engine._admit: an empty item starts no flow
        late_pipe(c, pipe, now)
    pipe_admit(c, pipe, a, size, tag)
    set_stage(c, a, SERVING_BY_TAG[tag])


@jit
def take_room(c, pipe, a, size, tag):
    """Engine._take_room: TAKEN, NOT_NOW or NOT_THIS_ROUND (``sim.pipes``; nothing reserved unless TAKEN)."""
    v_ip = ia(c, K_IP)
    v_a_de = ia_agent(c, AI_DE)
    v_a_debuf_b = fa_agent(c, AF_DEBUF_B)
    v_fp = fa(c, K_FP)
    v_buf_used = fa(c, K_BUF_USED)
    v_pe_hbm = fa(c, K_PE_HBM)
    v_a_need = fa_agent(c, AF_NEED)
    v_de_hbm = fa(c, K_DE_HBM)
    v_de_free = fa(c, K_DE_FREE)
    if tag == READ_PE or tag == READ_DE:
        if window_full(c, pipe):
            set_stage(c, a, READ_QUEUE)
            return NOT_THIS_ROUND
        node, de_node = pipe, v_ip[IP_P] + v_a_de[a] // v_ip[IP_G_DE]
        own = size if tag == READ_PE else 0.0
        cap = v_fp[FP_BUFFER]
        de_need = _de_turn(c, a)
        if de_need < 0:
            set_stage(c, a, BUFFER_ROOM)
            return NOT_NOW
        if v_buf_used[node] + own > cap or v_buf_used[de_node] + de_need > cap:
            set_stage(c, a, BUFFER_ROOM)
            return NOT_THIS_ROUND
        v_buf_used[node] += own
        _take_de(c, a, de_need)
    elif tag == LOAD:
        pe = ia_agent(c, AI_PE)[a]
        if fa_agent(c, AF_TIER)[a] != 0:  # a tier hit reserves its DE-buffer room here first (sim.tier)
            de_need = _de_turn(c, a)
            if de_need < 0:
                return NOT_NOW
            if v_buf_used[v_ip[IP_P] + v_a_de[a] // v_ip[IP_G_DE]] + de_need > v_fp[FP_BUFFER]:
                return NOT_THIS_ROUND
            _take_de(c, a, de_need)
        if v_pe_hbm[pe] + v_a_debuf_b[a] > v_fp[FP_PE_HBM]:
            return NOT_THIS_ROUND
        v_pe_hbm[pe] += v_a_debuf_b[a]
    elif tag == H2D:
        de, need = pipe - v_ip[IP_H2D0], v_a_need[a]
        if v_de_hbm[de] + need > v_fp[FP_DE_HBM]:
            return NOT_THIS_ROUND
        v_de_hbm[de] += need
        v_de_free[de] -= need
    return TAKEN


@jit
def _de_turn(c, a):
    """Engine._de_turn: the DE-buffer room ``a`` still needs once it is the oldest in its DE node's line; -1 while an
    older one waits (the Python engine's None)."""
    need = 0.0 if ia_agent(c, AI_DE_RESERVED)[a] else fa_agent(c, AF_DEBUF_B)[a]
    if need > 0:
        v_ip = ia(c, K_IP)
        j = ia_agent(c, AI_DE)[a] // v_ip[IP_G_DE]
        v_a_ticket = ia_agent(c, AI_TICKET)
        if v_a_ticket[a] < 0:  # the head asks this DE buffer for room: its place in line
            v_dq_issued = ia(c, K_DQ_ISSUED)
            v_a_ticket[a] = v_dq_issued[j]
            v_dq_issued[j] += 1
        if v_a_ticket[a] != ia(c, K_DQ_SERVED)[j]:  # an older head waits for this DE buffer
            return -1.0
    return need


@jit
def _take_de(c, a, need):
    """Engine._take_de."""
    v_ip = ia(c, K_IP)
    j = ia_agent(c, AI_DE)[a] // v_ip[IP_G_DE]
    fa(c, K_BUF_USED)[v_ip[IP_P] + j] += need
    if need > 0:
        ia(c, K_DQ_SERVED)[j] += 1
    ia_agent(c, AI_DE_RESERVED)[a] = True


@jit
def window_full(c, pipe):
    """Engine._window_full."""
    return fa(c, K_P_ADMITTED)[pipe] - fa(c, K_P_SERVED)[pipe] >= fa(c, K_READ_WINDOW)[pipe]


@jit
def offer(c, pipe, a, size, tag):
    """Engine.offer."""
    v_pq_head = ia(c, K_PQ_HEAD)
    set_stage(c, a, WAITING_BY_TAG[tag])
    if v_pq_head[pipe] < 0 and take_room(c, pipe, a, size, tag) == TAKEN:
        admit_now(c, pipe, a, size, tag)
    else:
        pipe_enqueue(c, pipe, a, size, tag)


@jit
def admit_all(c):
    """Engine.admit: passes of _admit_pass until one admits nothing.

    A pass asks only the pipes the pass before left waiting (``s_pipes``, in pipe order): while this runs nothing is
    queued, so an empty queue stays empty, and a pipe whose head got ``take_room``'s NOT_THIS_ROUND would get it
    again, changing nothing (its stage is set already; a DE-buffer ticket is taken at most once), so both drop out."""
    v_pq_head = ia(c, K_PQ_HEAD)
    v_list = ia(c, K_S_PIPES)
    n = 0
    for pipe in range(v_pq_head.size):
        if v_pq_head[pipe] >= 0:
            v_list[n] = pipe
            n += 1
    total = 0
    while n > 0:
        count, n = _admit_pass(c, v_list, n)
        if count == 0:
            break
        total += count
    return total


@jit
def _admit_pass(c, pipes, n):
    """Engine._admit_pass over ``pipes[:n]``: admit head items of each, in order, while there is room. Returns what it
    admitted and how many pipes are left to ask (kept in order at the front of ``pipes``)."""
    v_pq_head = ia(c, K_PQ_HEAD)
    v_it_size = fa(c, K_IT_SIZE)
    v_it_tag = ia(c, K_IT_TAG)
    v_a_pair_wait = ia_agent(c, AI_PAIR_WAIT)
    count, left = 0, 0
    for i in range(n):
        pipe = pipes[i]
        got = TAKEN
        while v_pq_head[pipe] >= 0:
            it = v_pq_head[pipe]
            if v_a_pair_wait[it // 2]:
                got = _admit_pair_head(c, pipe, it // 2)
                if got != TAKEN:
                    break
                count += 2
                continue
            got = take_room(c, pipe, it // 2, v_it_size[it], v_it_tag[it])
            if got != TAKEN:
                break
            pipe_admit_head(c, pipe)
            set_stage(c, it // 2, SERVING_BY_TAG[v_it_tag[it]])
            count += 1
        if v_pq_head[pipe] >= 0 and got != NOT_THIS_ROUND:
            pipes[left] = pipe
            left += 1
    return count, left


@jit
def start_reads(c, a):
    """Engine.start_reads."""
    v_a_hit_b = fa_agent(c, AF_HIT_B)
    v_a_de_frac = fa_agent(c, AF_DE_FRAC)
    v_a_reads_left = ia_agent(c, AI_READS_LEFT)
    v_a_pe = ia_agent(c, AI_PE)
    v_ip = ia(c, K_IP)
    v_a_de = ia_agent(c, AI_DE)
    total = v_a_hit_b[a]
    hit = v_ip[IP_TIER] != 0 and total > 0 and lru_ask(c, a, total)
    fa_agent(c, AF_TIER)[a] = 1.0 if hit else 0.0
    if hit:  # read from the pool, in its forward batch or its load
        v_a_de_frac[a], total = 0.0, 0.0
        agent_rec(c, a)[REC_TIER] = 1.0
    f = v_a_de_frac[a]
    agent_rec(c, a)[REC_FRAC] = f
    pe_size, de_size = total * (1 - f), total * f
    n = (1 if pe_size > 0 else 0) + (1 if de_size > 0 else 0)
    empty = n == 0 and not v_ip[IP_LAYERWISE] and fa_agent(c, AF_DEBUF_B)[a] > 0 and not hit  # Engine.start_reads: an empty read reserves the DE buffer
    if empty:
        n = 1
    v_a_reads_left[a] = n
    ia_agent(c, AI_TICKET)[a] = -1
    pe_pipe, de_pipe = v_a_pe[a] // v_ip[IP_G_PE], v_ip[IP_P] + v_a_de[a] // v_ip[IP_G_DE]
    if n == 2:
        _offer_pair(c, a, pe_size, pe_pipe, de_size, de_pipe)
    elif pe_size > 0 or empty:
        offer(c, pe_pipe, a, pe_size, np.int64(READ_PE))
    elif de_size > 0:
        offer(c, de_pipe, a, de_size, np.int64(READ_DE))
    if n == 0:
        read_done(c, a)


@jit
def _offer_pair(c, a, pe_size, pe_pipe, de_size, de_pipe):
    """Engine._offer_pair: both reads of a split request are admitted at once, or both wait."""
    v_pq_head = ia(c, K_PQ_HEAD)
    set_stage(c, a, READ_QUEUE)
    if (v_pq_head[pe_pipe] < 0 and v_pq_head[de_pipe] < 0 and not window_full(c, de_pipe)
            and take_room(c, pe_pipe, a, pe_size, np.int64(READ_PE)) == TAKEN):
        admit_now(c, pe_pipe, a, pe_size, np.int64(READ_PE))
        admit_now(c, de_pipe, a, de_size, np.int64(READ_DE))
        return
    pipe_enqueue(c, pe_pipe, a, pe_size, np.int64(READ_PE))
    pipe_enqueue(c, de_pipe, a, de_size, np.int64(READ_DE))
    ia_agent(c, AI_PAIR_WAIT)[a] = 1


@jit
def _admit_pair_head(c, pipe, a):
    """Engine._admit_pair_head, answering as ``take_room``: NOT_NOW while the other read is not at its queue's head (an
    admission may bring it there), NOT_THIS_ROUND for a full DE-side read window or ``take_room``'s own."""
    v_ip = ia(c, K_IP)
    v_pq_head = ia(c, K_PQ_HEAD)
    pe_pipe, de_pipe = ia_agent(c, AI_PE)[a] // v_ip[IP_G_PE], v_ip[IP_P] + ia_agent(c, AI_DE)[a] // v_ip[IP_G_DE]
    other, other_item = (de_pipe, 2 * a + 1) if pipe == pe_pipe else (pe_pipe, 2 * a)
    if v_pq_head[other] != other_item:
        return NOT_NOW
    if window_full(c, de_pipe):
        return NOT_THIS_ROUND
    got = take_room(c, pe_pipe, a, fa(c, K_IT_SIZE)[2 * a], np.int64(READ_PE))
    if got != TAKEN:
        return got
    pipe_admit_head(c, pe_pipe)
    pipe_admit_head(c, de_pipe)
    ia_agent(c, AI_PAIR_WAIT)[a] = 0
    set_stage(c, a, READING)
    return TAKEN


@jit
def read_done(c, a):
    v_a_pe = ia_agent(c, AI_PE)
    v_ip = ia(c, K_IP)
    v_wanting = ia(c, K_WANTING)
    v_a_hit_b = fa_agent(c, AF_HIT_B)
    pe = v_a_pe[a]
    if v_ip[IP_LAYERWISE]:
        q_append(c, ready_q(c, pe), a)
        v_wanting[pe] = True
        set_stage(c, a, BATCH_WAIT)
    else:  # the whole KV into PE HBM: from the PE buffer, or a tier hit's from the pool
        first = v_ip[IP_TIER0] if fa_agent(c, AF_TIER)[a] != 0 else v_ip[IP_LOAD0]
        offer(c, first + pe, a, v_a_hit_b[a], np.int64(LOAD))


@jit
def load_done(c, a):
    v_a_pe = ia_agent(c, AI_PE)
    v_buf_used = fa(c, K_BUF_USED)
    v_ip = ia(c, K_IP)
    v_a_hit_b = fa_agent(c, AF_HIT_B)
    v_wanting = ia(c, K_WANTING)
    pe = v_a_pe[a]
    if fa_agent(c, AF_TIER)[a] == 0:
        v_buf_used[pe // v_ip[IP_G_PE]] -= v_a_hit_b[a]
    q_append(c, ready_q(c, pe), a)
    v_wanting[pe] = True
    set_stage(c, a, BATCH_WAIT)


# --- 4. forward batches --------------------------------------------------------------------------------------


@jit
def attention_flops(c, context, tokens):
    """sim.layout.attention_flops."""
    v_fp = fa(c, K_FP)
    capped = min(context, v_fp[FP_TOPK])
    return tokens * (v_fp[FP_ATTN_PER_CTX] * context + v_fp[FP_SPARSE_PER_KEY] * capped)


@jit
def attn_time(c, cached, tokens):
    """Engine.attn_time."""
    v_fp = fa(c, K_FP)
    return attention_flops(c, cached + tokens / 2.0, tokens) / v_fp[FP_ATTN_RATE]


@jit
def _reserve_for_batch(c, a):
    """Engine._candidates for one request: False if its DE-buffer space cannot be reserved now."""
    v_a_de_reserved = ia_agent(c, AI_DE_RESERVED)
    v_a_debuf_b = fa_agent(c, AF_DEBUF_B)
    v_ip = ia(c, K_IP)
    v_a_de = ia_agent(c, AI_DE)
    v_buf_used = fa(c, K_BUF_USED)
    v_fp = fa(c, K_FP)
    if not v_a_de_reserved[a] and v_a_debuf_b[a] > 0:
        node = v_ip[IP_P] + v_a_de[a] // v_ip[IP_G_DE]
        if v_buf_used[node] + v_a_debuf_b[a] > v_fp[FP_BUFFER]:
            return False
        j = node - v_ip[IP_P]
        if fa_agent(c, AF_TIER)[a] != 0 and ia(c, K_DQ_ISSUED)[j] != ia(c, K_DQ_SERVED)[j]:  # a read waits in line
            return False
        v_buf_used[node] += v_a_debuf_b[a]
        v_a_de_reserved[a] = True
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
    v_bm_next = ia(c, K_BM_NEXT)
    v_bm_chunk = ia(c, K_BM_CHUNK)
    v_bm_tail = ia(c, K_BM_TAIL)
    v_bm_head = ia(c, K_BM_HEAD)
    v_bm_count = ia(c, K_BM_COUNT)
    v_bm_next[a], v_bm_chunk[a] = -1, chunk
    if v_bm_tail[pe] < 0:
        v_bm_head[pe] = a
    else:
        v_bm_next[v_bm_tail[pe]] = a
    v_bm_tail[pe] = a
    v_bm_count[pe] += 1
    set_stage(c, a, PREFILL)


@jit
def _choose_members(c, pe):
    """Engine._candidates feeding policies.batch_by_quota (layer-wise) or batch_all: members go to
    ``bm_*`` in order and leave the ready queue."""
    v_fp = fa(c, K_FP)
    v_q_head = ia(c, K_Q_HEAD)
    v_q_next = ia_agent(c, AI_Q_NEXT)
    v_a_hit = ia_agent(c, AI_HIT)
    v_a_done_tok = ia_agent(c, AI_DONE_TOK)
    v_a_miss = ia_agent(c, AI_MISS)
    v_ip = ia(c, K_IP)
    v_bm_count = ia(c, K_BM_COUNT)
    q = ready_q(c, pe)
    quota, spent = v_fp[FP_QUOTA], 0.0
    a = v_q_head[q]
    while a >= 0:
        nxt = v_q_next[a]
        if _reserve_for_batch(c, a):
            cached, left = v_a_hit[a] + v_a_done_tok[a], v_a_miss[a] - v_a_done_tok[a]
            if not v_ip[IP_LAYERWISE]:
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
                    if chunk > 0 or v_bm_count[pe] == 0:
                        q_remove(c, q, a)
                        _member(c, pe, a, max(chunk, min(1, left)))
                    break
        a = nxt


@jit
def form_batches(c):
    """Engine.form_batches."""
    v_wanting = ia(c, K_WANTING)
    v_bm_count = ia(c, K_BM_COUNT)
    v_q_len = ia(c, K_Q_LEN)
    started = 0
    for pe in range(v_wanting.size):
        if not v_wanting[pe]:
            continue
        v_wanting[pe] = False
        if v_bm_count[pe] > 0 or v_q_len[ready_q(c, pe)] == 0:
            continue
        _choose_members(c, pe)
        if v_bm_count[pe] > 0:
            _take(c, pe)
            started += 1
        else:
            v_wanting[pe] = True
    return started


@jit
def _add_demand(c, pos, r, amount):
    v_mi = ia(c, K_MI)
    v_s_bres = ia(c, K_S_BRES)
    v_s_bcoef = fa(c, K_S_BCOEF)
    k = pos[r]
    if k < 0:
        k = v_mi[MI_N_SCRATCH]
        pos[r] = k
        v_s_bres[k], v_s_bcoef[k] = r, 0.0
        v_mi[MI_N_SCRATCH] = k + 1
    v_s_bcoef[k] = v_s_bcoef[k] + amount


@jit
def _pool_alloc(c, pe, n):
    """Room for ``n`` entries of ``pe``'s batch in the entry pool; compacts the running batches to its
    front, in pool order, when the pool is full (running batches hold at most half of it: see
    sim.compiled.run.pool_size)."""
    v_mi = ia(c, K_MI)
    v_bp_res = ia(c, K_BP_RES)
    v_b_active = ia(c, K_B_ACTIVE)
    v_b_off = ia(c, K_B_OFF)
    v_b_len = ia(c, K_B_LEN)
    v_bp_coef = fa(c, K_BP_COEF)
    if v_mi[MI_POOL_TOP] + n > v_bp_res.size:
        # Move the running batches down in the order they sit in the pool, so that no batch is overwritten
        # before it has moved (in PE order, a batch placed earlier in the pool could be).
        running, n_run = ia(c, K_S_RUN), 0
        for other in range(v_b_active.size):  # the running batches, kept sorted by offset (insertion sort)
            if v_b_active[other]:
                j = n_run
                while j > 0 and v_b_off[running[j - 1]] > v_b_off[other]:
                    running[j] = running[j - 1]
                    j -= 1
                running[j] = other
                n_run += 1
        top = 0
        for i in range(n_run):
            other = running[i]
            off, m = v_b_off[other], v_b_len[other]
            for k in range(m):
                v_bp_res[top + k], v_bp_coef[top + k] = v_bp_res[off + k], v_bp_coef[off + k]
            v_b_off[other] = top
            top += m
        v_mi[MI_POOL_TOP] = top
    v_b_off[pe] = v_mi[MI_POOL_TOP]
    v_mi[MI_POOL_TOP] += n


@jit
def _take(c, pe):
    """Engine._take with Engine._batch_entries: the batch's resources and demands, in first-use order."""
    v_ip = ia(c, K_IP)
    v_fp = fa(c, K_FP)
    v_s_pos = ia(c, K_S_POS)
    v_mi = ia(c, K_MI)
    v_s_units = ia(c, K_S_UNITS)
    v_s_amounts = fa(c, K_S_AMOUNTS)
    v_bm_head = ia(c, K_BM_HEAD)
    v_bm_chunk = ia(c, K_BM_CHUNK)
    v_a_miss = ia_agent(c, AI_MISS)
    v_a_hit = ia_agent(c, AI_HIT)
    v_a_de = ia_agent(c, AI_DE)
    v_a_hit_b = fa_agent(c, AF_HIT_B)
    v_a_de_frac = fa_agent(c, AF_DE_FRAC)
    v_a_tier = fa_agent(c, AF_TIER)
    v_p_starts, v_p_lengths, v_p_res, v_p_coef = ia(c, K_P_STARTS), ia(c, K_P_LENGTHS), ia(c, K_P_RES), fa(c, K_P_COEF)
    v_rt_len = ia(c, K_RT_LEN)
    v_rt_start = ia(c, K_RT_START)
    v_rt_unit = ia(c, K_RT_UNIT)
    v_rt_count = fa(c, K_RT_COUNT)
    v_a_done_tok = ia_agent(c, AI_DONE_TOK)
    v_bm_next = ia(c, K_BM_NEXT)
    v_s_bres = ia(c, K_S_BRES)
    v_s_bcoef = fa(c, K_S_BCOEF)
    v_instant = ia(c, K_INSTANT)
    v_b_off = ia(c, K_B_OFF)
    v_bp_res = ia(c, K_BP_RES)
    v_bp_coef = fa(c, K_BP_COEF)
    v_b_len = ia(c, K_B_LEN)
    v_b_weight = fa(c, K_B_WEIGHT)
    v_b_prog = fa(c, K_B_PROG)
    v_b_active = ia(c, K_B_ACTIVE)
    g_pe, g_de, layerwise, kv_miss = v_ip[IP_G_PE], v_ip[IP_G_DE], v_ip[IP_LAYERWISE], v_fp[FP_KV_MISS]
    pos = v_s_pos  # scratch: resource -> entry (-1: none yet)
    v_mi[MI_N_SCRATCH] = 0
    tokens, attn, requests = 0.0, 0.0, 0.0
    units, amounts = v_s_units, v_s_amounts
    a = v_bm_head[pe]
    while a >= 0:
        chunk = v_bm_chunk[a]
        miss, hit, de = v_a_miss[a], v_a_hit[a], v_a_de[a]
        hit_c = v_a_hit_b[a] * (chunk / miss if miss > 0 else 1.0)
        f = v_a_de_frac[a]
        units[0], units[1], units[2], units[3] = pe // g_pe, pe, de // g_de, de
        tier = v_a_tier[a] != 0
        pe_part = hit_c * (1 - f) if layerwise and not tier else hit_c
        amounts[0], amounts[1], amounts[2] = pe_part + chunk * kv_miss, 0.0 if tier else hit_c * (1 - f), hit_c * f
        for k in range(v_ip[IP_N_ROUTES]):
            amount = amounts[k]
            if amount > 0:
                for h in range(v_rt_len[k]):
                    _add_demand(c, pos, v_rt_start[k * 3 + h] + units[v_rt_unit[k * 3 + h]], v_rt_count[k * 3 + h] * amount)
        if tier and layerwise and hit_c > 0:  # the hit streams from the pool: the PE's tier pipe's route (layout.TIER_ROUTES)
            pipe = v_ip[IP_TIER0] + pe
            first = v_p_starts[pipe]
            for e in range(first, first + v_p_lengths[pipe]):
                _add_demand(c, pos, v_p_res[e], v_p_coef[e] * hit_c)
        tokens += chunk
        attn += attention_flops(c, hit + v_a_done_tok[a], chunk)
        requests += 1.0
        a = v_bm_next[a]
    n = v_mi[MI_N_SCRATCH]
    byte_max = 0.0
    for k in range(n):
        pos[v_s_bres[k]] = -1
        if k == 0 or v_s_bcoef[k] > byte_max:
            byte_max = v_s_bcoef[k]
    work = prefill_terms(tokens, attn, requests, fa(c, K_PRE_P), fa(c, K_TERMS)) * v_fp[FP_PEAK]  # the pass time at peak FLOP/s
    if work > 0:
        v_s_bres[n], v_s_bcoef[n] = v_ip[IP_COMPUTE0] + pe, work
        n += 1
        a = v_bm_head[pe]
        while a >= 0:  # each turn is charged its tokens' share of the pass
            agent_rec(c, a)[REC_FLOPS] += work * (v_bm_chunk[a] / tokens)
            a = v_bm_next[a]
    if n == 0:
        v_instant[v_mi[MI_N_INSTANT]] = pe
        v_mi[MI_N_INSTANT] += 1
        return
    _pool_alloc(c, pe, n)
    off = v_b_off[pe]
    cmax = v_s_bcoef[0]
    for k in range(n):
        v_bp_res[off + k], v_bp_coef[off + k] = v_s_bres[k], v_s_bcoef[k]
        cmax = max(cmax, v_s_bcoef[k])
    v_b_len[pe] = n
    v_b_weight[pe] = 1.0 / byte_max if byte_max > 0 else 1.0 / cmax
    v_b_prog[pe] = 0.0
    v_b_active[pe] = True
    v_mi[MI_BATCHES_CHANGED] = 1


@jit
def batch_done(c, pe, t):
    """Engine.batch_done: members in reverse order; a chunked one back to the head of the ready queue."""
    v_bm_count = ia(c, K_BM_COUNT)
    v_bm_head = ia(c, K_BM_HEAD)
    v_bm_next = ia(c, K_BM_NEXT)
    v_ip = ia(c, K_IP)
    v_a_done_tok = ia_agent(c, AI_DONE_TOK)
    v_bm_chunk = ia(c, K_BM_CHUNK)
    v_a_miss = ia_agent(c, AI_MISS)
    v_pe_tok = fa(c, K_PE_TOK)
    v_a_length = ia_agent(c, AI_LENGTH)
    v_pe_seq = ia(c, K_PE_SEQ)
    v_buf_used = fa(c, K_BUF_USED)
    v_a_hit_b = fa_agent(c, AF_HIT_B)
    v_a_de_frac = fa_agent(c, AF_DE_FRAC)
    v_pe_hbm = fa(c, K_PE_HBM)
    v_a_debuf_b = fa_agent(c, AF_DEBUF_B)
    v_a_de = ia_agent(c, AI_DE)
    v_bm_tail = ia(c, K_BM_TAIL)
    v_wanting = ia(c, K_WANTING)
    v_b_active = ia(c, K_B_ACTIVE)
    v_mi = ia(c, K_MI)
    n = v_bm_count[pe]
    members = ia(c, K_S_MEMBERS)[:n]
    a, k = v_bm_head[pe], 0
    while a >= 0:
        members[k] = a
        k += 1
        a = v_bm_next[a]
    h2d0, g_pe = v_ip[IP_H2D0], v_ip[IP_G_PE]
    for k in range(n - 1, -1, -1):
        a = members[k]
        v_a_done_tok[a] += v_bm_chunk[a]
        if v_a_done_tok[a] < v_a_miss[a]:
            q_appendleft(c, ready_q(c, pe), a)
            set_stage(c, a, BATCH_WAIT)
            continue
        agent_rec(c, a)[REC_FIRST] = t
        v_pe_tok[pe] -= v_a_length[a]
        v_pe_seq[pe] -= 1
        if v_ip[IP_LAYERWISE]:
            if fa_agent(c, AF_TIER)[a] == 0:
                v_buf_used[pe // g_pe] -= v_a_hit_b[a] * (1 - v_a_de_frac[a])
        else:
            v_pe_hbm[pe] -= v_a_debuf_b[a]
        offer(c, h2d0 + v_a_de[a], a, v_a_debuf_b[a], np.int64(H2D))
    v_bm_head[pe], v_bm_tail[pe], v_bm_count[pe] = -1, -1, 0
    v_wanting[pe] = True
    if v_b_active[pe]:
        v_b_active[pe] = False
        v_mi[MI_BATCHES_CHANGED] = 1


# --- 5-7. H2D, decode, write-back -----------------------------------------------------------------------------


@jit
def h2d_done(c, a, t, rest_s):
    """Engine.h2d_done."""
    v_a_de = ia_agent(c, AI_DE)
    v_a_de_reserved = ia_agent(c, AI_DE_RESERVED)
    v_buf_used = fa(c, K_BUF_USED)
    v_ip = ia(c, K_IP)
    v_a_debuf_b = fa_agent(c, AF_DEBUF_B)
    v_a_gen = ia_agent(c, AI_GEN)
    v_a_read_b = fa_agent(c, AF_READ_B)
    de = v_a_de[a]
    if v_a_de_reserved[a]:
        v_buf_used[v_ip[IP_P] + de // v_ip[IP_G_DE]] -= v_a_debuf_b[a]
        v_a_de_reserved[a] = False
    agent_rec(c, a)[REC_DEC_START] = t
    set_stage(c, a, DECODE)
    ends_in = decode_join(c, a, de, v_a_gen[a], v_a_read_b[a], fa_agent(c, AF_ATTN_S)[a], rest_s)
    if ends_in >= 0.0:  # done inside this step: its write-back becomes ready then, not at the H2D's end
        v_mf = fa(c, K_MF)
        now = v_mf[MF_NOW]
        if now == now:
            v_mf[MF_NOW] = t + ends_in
        decode_done(c, a, t + ends_in)
        v_mf[MF_NOW] = now


@jit
def decode_done(c, a, t):
    """Engine.decode_done."""
    v_ip = ia(c, K_IP)
    v_a_de = ia_agent(c, AI_DE)
    v_a_wb_b = fa_agent(c, AF_WB_B)
    agent_rec(c, a)[REC_DEC_END] = t
    admit_now(c, v_ip[IP_WB0] + v_a_de[a], a, v_a_wb_b[a], np.int64(WB))


@jit
def writeback_done(c, a, t):
    """Engine.writeback_done: True if the agent's next turn arrives now (after tool time it waits in the heap)."""
    v_a_de = ia_agent(c, AI_DE)
    v_a_round = ia_agent(c, AI_ROUND)
    v_a_need = fa_agent(c, AF_NEED)
    v_de_hbm = fa(c, K_DE_HBM)
    v_de_free = fa(c, K_DE_FREE)
    v_de_tok = fa(c, K_DE_TOK)
    v_a_length = ia_agent(c, AI_LENGTH)
    v_de_seq = ia(c, K_DE_SEQ)
    v_rec = fa(c, K_REC)
    v_mi = ia(c, K_MI)
    v_a_last_round = ia_agent(c, AI_LAST_ROUND)
    de, r = v_a_de[a], v_a_round[a]
    need = v_a_need[a]
    if ia(c, K_IP)[IP_TIER]:  # its new KV is in the pool too (sim.tier)
        kv_hit, gen = fa(c, K_FP)[FP_KV_HIT], ia_agent(c, AI_GEN)[a]
        lru_written(c, a, (v_a_length[a] + gen) * kv_hit, (ia_agent(c, AI_MISS)[a] + gen) * kv_hit)
    v_de_hbm[de] -= need
    v_de_free[de] += need
    v_de_tok[de] -= v_a_length[a]
    v_de_seq[de] -= 1
    set_stage(c, a, -1)
    rec = agent_rec(c, a)
    rec[REC_DONE] = t
    for k in range(REC_W):  # the turn's record to its round's row (state.AF_REC)
        v_rec[r * REC_W + k] = rec[k]
    v_mi[MI_ROUNDS_DONE] += 1
    v_c_ptr = ia(c, K_C_PTR)
    v_c_agent = ia(c, K_C_AGENT)
    v_a_delay = fa(c, K_A_DELAY)
    if v_c_ptr.size > 0:  # empty without forks (run.build)
        for k in range(v_c_ptr[r], v_c_ptr[r + 1]):  # sub-agents forked at this round (sim.waits)
            child = v_c_agent[k]
            wait_push(c, t + v_a_delay[child], child)
    if r < v_a_last_round[a]:
        v_a_round[a] = r + 1
        v_r_tool = fa(c, K_R_TOOL)
        tool = v_r_tool[r] if v_r_tool.size > 0 else 0.0  # empty without tool time (run.build)
        if tool > 0:  # the agent's tools run first (sim.waits)
            wait_push(c, t + tool, a)
            return False
        return True
    v_mi[MI_FINISHED] += 1
    return False


