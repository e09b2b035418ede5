"""The data structures of the compiled fluid engine: request queues, pipes and decode batches.

Ports of ``sim.python.state.Pipes`` and ``sim.python.state.DecodeSet`` (their docstrings describe the model) and
of the deques the Python engine keeps its requests in, onto the arenas of ``sim.compiled.state``. ``jit`` is
the one numba setting every kernel compiles with; ``fa`` and ``ia`` are the arena views.

**No reference counting.** The kernels compile without numba's runtime (``_nrt=False``): every view a kernel
takes of the arenas would otherwise cost two atomic reference-count updates, and the kernels take ten or
more per call, millions of times a run (measured: about half of the engine's time on 48P96D). Without it a
kernel may not allocate (every scratch array is an arena field), may not return a view (``fa`` and ``ia``
build theirs in place, as intrinsics), and copies arrays with loops. The arenas outlive every kernel call, so nothing needs
the counts.
"""

from __future__ import annotations

import types

import numpy as np

from dualpath_plan.bounds import steptime
from dualpath_plan.sim.compiled.cache import versioned_cache_dir

versioned_cache_dir()  # before numba is imported
from numba import njit  # noqa: E402
from numba import types as nb_types  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import intrinsic  # noqa: E402
from numba.np.arrayobj import make_array, populate_array  # noqa: E402

from dualpath_plan.sim.compiled.state import (
    AF_REC,
    REC_W,
    AF_W,
    AI_LENGTH,
    AI_STAGE,
    AI_W,
    K_AGENT_F,
    K_ST_LOAD,
    K_AGENT_I,
    IP_D,
    K_D_BEFORE,
    K_D_COUNT,
    K_D_FIRST_END,
    K_D_GAINED,
    K_D_READ_SUM,
    K_D_ATTN_SUM,
    K_D_STEP,
    K_DEC_DONE,
    K_DEC_P,
    K_DEC_TAB,
    K_TERMS,
    K_D_V,
    K_DH_LINK,
    K_DH_END,
    K_DH_READ,
    K_DH_ATTN,
    K_DH_ROOT,
    K_DH_SCRATCH,
    K_IP,
    K_IT_END,
    K_IT_NEXT,
    K_IT_SIZE,
    K_IT_TAG,
    K_P_ADMITTED,
    K_P_BEFORE,
    K_P_HEAD_END,
    K_P_SERVED,
    K_P_WAITING,
    K_PF_HEAD,
    K_PF_TAIL,
    K_PQ_HEAD,
    K_PQ_TAIL,
    K_Q_HEAD,
    K_Q_LEN,
    AI_Q_NEXT,
    AI_Q_PREV,
    K_Q_TAIL,
    Q_PRIVATE0,
    READ_DE,
    K_W_TIME,
    K_W_AGENT,
    K_MI,
    MI_N_WAIT,
)
from dualpath_plan.sim.stages import N_STAGES

jit = njit(cache=True, error_model="numpy", _nrt=False)  # no reference counting (module docstring)
entry = njit(cache=True, error_model="numpy", _nrt=False)  # the functions called from Python


def _compiled(fn, **helpers):
    """``fn`` compiled as it stands, its calls to the ``helpers`` going to their compiled twins (numba calls only
    compiled functions, so each helper the kernel calls by its global name is rebound for the compiled copy)."""
    return jit(types.FunctionType(fn.__code__, {**fn.__globals__, **helpers}, fn.__name__, fn.__defaults__))


# The bound's own step-time kernels, compiled as they stand.
gemm_share = jit(steptime.gemm_share)
gemm_seconds = _compiled(steptime.gemm_seconds, gemm_share=gemm_share)
expert_hit = jit(steptime.expert_hit)
decode_batch_terms = _compiled(steptime.decode_batch_terms, gemm_seconds=gemm_seconds, expert_hit=expert_hit)
decode_step_terms = jit(steptime.decode_step_terms)
decode_terms = _compiled(steptime.decode_terms, decode_batch_terms=decode_batch_terms, decode_step_terms=decode_step_terms)
BATCH_TERMS, N_TERMS = steptime.BATCH_TERMS, steptime.N_TERMS
prefill_terms = _compiled(steptime.prefill_terms, gemm_seconds=gemm_seconds, expert_hit=expert_hit)


def _view(context, builder, arenas_type, arenas, at, k, skip, step):  # noqa: ANN001, ANN202 (numba's code generator)
    """LLVM code for ``c[at][c[at + 1][k] + skip:c[at + 1][k + 1]:step]`` of the arenas tuple ``c`` (offsets in range,
    ``step`` > 0): the view basic slicing gives, sharing the arena's memory record, without taking a reference."""
    data_type, offsets_type = arenas_type.types[at], arenas_type.types[at + 1]
    data = make_array(data_type)(context, builder, builder.extract_value(arenas, at))
    offsets = make_array(offsets_type)(context, builder, builder.extract_value(arenas, at + 1))
    one, zero, wide = (context.get_constant(nb_types.intp, v) for v in (1, 0, step))
    start = builder.load(cgutils.get_item_pointer(context, builder, offsets_type, offsets, [k]))
    stop = builder.load(cgutils.get_item_pointer(context, builder, offsets_type, offsets, [builder.add(k, one)]))
    start = builder.add(start, skip)
    width = builder.sub(stop, start)
    n = builder.sdiv(builder.add(width, builder.sub(wide, one)), wide)  # ceil(width / step), as a slice's length
    n = builder.select(builder.icmp_signed(">", width, zero), n, zero)
    out = make_array(_view_type(data_type, step))(context, builder)
    stride = builder.mul(cgutils.unpack_tuple(builder, data.strides)[0], wide)
    populate_array(out, data=cgutils.get_item_pointer(context, builder, data_type, data, [start]), shape=[n], strides=[stride],
                   itemsize=data.itemsize, meminfo=data.meminfo, parent=data.parent)
    return out._getvalue()


def _view_type(data_type, step: int):  # noqa: ANN001, ANN202
    """The type basic slicing gives a 1-D contiguous array: contiguous for step 1, else any layout."""
    return nb_types.Array(data_type.dtype, 1, "C" if step == 1 else "A")


# The arena views. Without reference counting numba lets no function return a view, so each view is built in place
# by an intrinsic: it types in one step and emits a few loads, where an inlined slicing function was retyped and
# relowered at each of its 680 call sites (the engine now compiles in about 0.6 times as long: docs/benchmarks.md).
@intrinsic
def fa(typingctx, c, k):  # noqa: ANN001, ANN201
    """Float field ``k`` of the arenas ``c`` (a view; sim.compiled.state): ``c[0][c[1][k]:c[1][k + 1]]``."""
    return _view_type(c.types[0], 1)(c, k), lambda ctx, b, sig, args: _view(ctx, b, sig.args[0], args[0], 0, args[1], ctx.get_constant(nb_types.intp, 0), 1)


@intrinsic
def ia(typingctx, c, k):  # noqa: ANN001, ANN201
    """Int field ``k`` of the arenas ``c`` (a view; sim.compiled.state): ``c[2][c[3][k]:c[3][k + 1]]``."""
    return _view_type(c.types[2], 1)(c, k), lambda ctx, b, sig, args: _view(ctx, b, sig.args[0], args[0], 2, args[1], ctx.get_constant(nb_types.intp, 0), 1)


@intrinsic
def fa_agent(typingctx, c, f):  # noqa: ANN001, ANN201
    """Float field ``f`` (state.AF_*) of every agent: a strided view of the agents' float rows,
    ``c[0][c[1][K_AGENT_F] + f:c[1][K_AGENT_F + 1]:AF_W]``."""
    return _view_type(c.types[0], AF_W)(c, f), lambda ctx, b, sig, args: _view(ctx, b, sig.args[0], args[0], 0, ctx.get_constant(nb_types.intp, K_AGENT_F), args[1], AF_W)


@intrinsic
def ia_agent(typingctx, c, f):  # noqa: ANN001, ANN201
    """Int field ``f`` (state.AI_*) of every agent: a strided view of the agents' int rows,
    ``c[2][c[3][K_AGENT_I] + f:c[3][K_AGENT_I + 1]:AI_W]``."""
    return _view_type(c.types[2], AI_W)(c, f), lambda ctx, b, sig, args: _view(ctx, b, sig.args[0], args[0], 2, ctx.get_constant(nb_types.intp, K_AGENT_I), args[1], AI_W)


@njit(cache=True, error_model="numpy", _nrt=False, inline="always")
def dh_child(c):
    """Every agent's first child in its decode heap (-1: none): a strided view of ``dh_link``, which keeps an
    agent's two links in one 16-byte row, so a heap walk loads one line per node for them, not two."""
    return c[2][c[3][K_DH_LINK]:c[3][K_DH_LINK + 1]:2]


@njit(cache=True, error_model="numpy", _nrt=False, inline="always")
def dh_sib(c):
    """Every agent's next sibling in its decode heap (-1: none), beside its first child in ``dh_link``."""
    return c[2][c[3][K_DH_LINK] + 1:c[3][K_DH_LINK + 1]:2]


@njit(cache=True, error_model="numpy", _nrt=False, inline="always")
def agent_rec(c, a):
    """The record of agent ``a``'s current turn: REC_W floats of its float row, laid out as a row of ``rec``
    (state.AF_REC)."""
    i = c[1][K_AGENT_F] + a * AF_W + AF_REC
    return c[0][i:i + REC_W]


@jit
def set_stage(c, a, s):
    """Engine.stage: turn ``a`` moves to stage ``s`` (sim.stages; -1: none); the per-stage requests and prompt
    tokens follow it."""
    v_stage = ia_agent(c, AI_STAGE)
    old = v_stage[a]
    if old == s:
        return
    load = fa(c, K_ST_LOAD)
    length = ia_agent(c, AI_LENGTH)[a]
    if old >= 0:
        load[old] -= 1.0
        load[N_STAGES + old] -= length
    if s >= 0:
        load[s] += 1.0
        load[N_STAGES + s] += length
    v_stage[a] = s


# --- request queues (doubly linked lists over agents) -----------------------------------------------------


@jit
def q_append(c, q, a):
    v_q_tail = ia(c, K_Q_TAIL)
    v_q_prev = ia_agent(c, AI_Q_PREV)
    v_q_next = ia_agent(c, AI_Q_NEXT)
    v_q_head = ia(c, K_Q_HEAD)
    v_q_len = ia(c, K_Q_LEN)
    t = v_q_tail[q]
    v_q_prev[a], v_q_next[a] = t, -1
    if t < 0:
        v_q_head[q] = a
    else:
        v_q_next[t] = a
    v_q_tail[q] = a
    v_q_len[q] += 1


@jit
def q_appendleft(c, q, a):
    v_q_head = ia(c, K_Q_HEAD)
    v_q_prev = ia_agent(c, AI_Q_PREV)
    v_q_next = ia_agent(c, AI_Q_NEXT)
    v_q_tail = ia(c, K_Q_TAIL)
    v_q_len = ia(c, K_Q_LEN)
    h = v_q_head[q]
    v_q_prev[a], v_q_next[a] = -1, h
    if h < 0:
        v_q_tail[q] = a
    else:
        v_q_prev[h] = a
    v_q_head[q] = a
    v_q_len[q] += 1


@jit
def q_insert_after(c, q, p, a):
    """Insert ``a`` right after ``p`` in queue ``q`` (at the head when ``p`` is -1)."""
    if p < 0:
        q_appendleft(c, q, a)
        return
    v_q_prev = ia_agent(c, AI_Q_PREV)
    v_q_next = ia_agent(c, AI_Q_NEXT)
    n = v_q_next[p]
    if n < 0:
        q_append(c, q, a)
        return
    v_q_prev[a], v_q_next[a] = p, n
    v_q_next[p] = a
    v_q_prev[n] = a
    ia(c, K_Q_LEN)[q] += 1


@jit
def q_remove(c, q, a):
    v_q_prev = ia_agent(c, AI_Q_PREV)
    v_q_next = ia_agent(c, AI_Q_NEXT)
    v_q_head = ia(c, K_Q_HEAD)
    v_q_tail = ia(c, K_Q_TAIL)
    v_q_len = ia(c, K_Q_LEN)
    p, n = v_q_prev[a], v_q_next[a]
    if p < 0:
        v_q_head[q] = n
    else:
        v_q_next[p] = n
    if n < 0:
        v_q_tail[q] = p
    else:
        v_q_prev[n] = p
    v_q_len[q] -= 1


@jit
def q_popleft(c, q):
    v_q_head = ia(c, K_Q_HEAD)
    a = v_q_head[q]
    q_remove(c, q, a)
    return a


@jit
def ready_q(c, pe):
    v_ip = ia(c, K_IP)
    return Q_PRIVATE0 + v_ip[IP_D] + pe  # after the D private queues


# --- pipes (sim.python.state.Pipes) ------------------------------------------------------------------------------


@jit
def item_of(a, tag):
    return 2 * a + (1 if tag == READ_DE else 0)


@jit
def pipe_enqueue(c, pipe, a, size, tag):
    """Pipes.enqueue."""
    v_it_size = fa(c, K_IT_SIZE)
    v_it_tag = ia(c, K_IT_TAG)
    v_it_next = ia(c, K_IT_NEXT)
    v_pq_tail = ia(c, K_PQ_TAIL)
    v_pq_head = ia(c, K_PQ_HEAD)
    v_p_waiting = fa(c, K_P_WAITING)
    it = item_of(a, tag)
    v_it_size[it], v_it_tag[it], v_it_next[it] = size, tag, -1
    if v_pq_tail[pipe] < 0:
        v_pq_head[pipe] = it
    else:
        v_it_next[v_pq_tail[pipe]] = it
    v_pq_tail[pipe] = it
    v_p_waiting[pipe] += size


@jit
def pipe_admit(c, pipe, a, size, tag):
    """Pipes.admit."""
    v_p_admitted = fa(c, K_P_ADMITTED)
    v_it_end = fa(c, K_IT_END)
    v_it_tag = ia(c, K_IT_TAG)
    v_it_next = ia(c, K_IT_NEXT)
    v_pf_tail = ia(c, K_PF_TAIL)
    v_p_head_end = fa(c, K_P_HEAD_END)
    v_pf_head = ia(c, K_PF_HEAD)
    it = item_of(a, tag)
    end = v_p_admitted[pipe] + size
    v_p_admitted[pipe] = end
    v_it_end[it], v_it_tag[it], v_it_next[it] = end, tag, -1
    if v_pf_tail[pipe] < 0:
        v_p_head_end[pipe] = end
        v_pf_head[pipe] = it
    else:
        v_it_next[v_pf_tail[pipe]] = it
    v_pf_tail[pipe] = it


@jit
def pipe_admit_head(c, pipe):
    """Pipes.admit_head."""
    v_pq_head = ia(c, K_PQ_HEAD)
    v_it_size = fa(c, K_IT_SIZE)
    v_it_tag = ia(c, K_IT_TAG)
    v_it_next = ia(c, K_IT_NEXT)
    v_p_waiting = fa(c, K_P_WAITING)
    v_pq_tail = ia(c, K_PQ_TAIL)
    it = v_pq_head[pipe]
    size, tag = v_it_size[it], v_it_tag[it]
    v_pq_head[pipe] = v_it_next[it]
    v_p_waiting[pipe] -= size
    if v_pq_head[pipe] < 0:
        v_pq_tail[pipe] = -1
        v_p_waiting[pipe] = 0.0
    pipe_admit(c, pipe, it // 2, size, tag)


@jit
def pipe_completions(c, active, out_pipe, out_req, out_tag, out_frac):
    """Pipes.completions: items done this step, removed; returns how many (in the ``out_*`` arrays)."""
    v_p_served = fa(c, K_P_SERVED)
    v_p_head_end = fa(c, K_P_HEAD_END)
    v_p_before = fa(c, K_P_BEFORE)
    v_pf_head = ia(c, K_PF_HEAD)
    v_it_end = fa(c, K_IT_END)
    v_it_tag = ia(c, K_IT_TAG)
    v_it_next = ia(c, K_IT_NEXT)
    v_pf_tail = ia(c, K_PF_TAIL)
    n = 0
    for pipe in range(v_p_served.size):
        served = v_p_served[pipe]
        limit = served * (1 + 4e-16) + 1e-6
        if not v_p_head_end[pipe] <= limit:
            continue
        start = v_p_before[pipe]
        span = served - start
        run = active[pipe]
        it = v_pf_head[pipe]
        while it >= 0 and v_it_end[it] <= limit:
            end = v_it_end[it]
            out_pipe[n], out_req[n], out_tag[n] = pipe, it // 2, v_it_tag[it]
            out_frac[n] = run * min(max((end - start) / span, 0.0), 1.0) if span > 0 else 0.0
            n += 1
            it = v_it_next[it]
        v_pf_head[pipe] = it
        if it < 0:
            v_pf_tail[pipe] = -1
            v_p_head_end[pipe] = np.inf
        else:
            v_p_head_end[pipe] = v_it_end[it]
    return n


# --- decode batches (sim.python.state.DecodeSet) with pairing heaps ------------------------------------------------


@jit
def _less(c, a, b):
    v_dh_end = fa(c, K_DH_END)
    return v_dh_end[a] < v_dh_end[b] or (v_dh_end[a] == v_dh_end[b] and a < b)


@jit
def _meld(c, x, y):
    v_dh_sib = dh_sib(c)
    v_dh_child = dh_child(c)
    if x < 0:
        return y
    if y < 0:
        return x
    if _less(c, y, x):
        x, y = y, x
    v_dh_sib[y] = v_dh_child[x]
    v_dh_child[x] = y
    return x


@jit
def _pop_root(c, de):
    """Remove the smallest sequence of ``de``'s heap (two-pass pairing)."""
    v_dh_root = ia(c, K_DH_ROOT)
    v_dh_child = dh_child(c)
    v_dh_sib = dh_sib(c)
    v_dh_scratch = ia(c, K_DH_SCRATCH)
    root = v_dh_root[de]
    child = v_dh_child[root]
    n = 0
    while child >= 0:  # first pass: meld pairs left to right
        a = child
        b = v_dh_sib[a]
        child = v_dh_sib[b] if b >= 0 else -1
        v_dh_sib[a] = -1
        if b >= 0:
            v_dh_sib[b] = -1
        v_dh_scratch[n] = _meld(c, a, b)
        n += 1
    merged = -1
    for k in range(n - 1, -1, -1):  # second pass: right to left
        merged = _meld(c, v_dh_scratch[k], merged)
    v_dh_root[de] = merged
    v_dh_child[root] = -1


@jit
def decode_step(c, b, read, attn):
    """``steptime.decode_terms(b, read, attn)`` (b an int): the terms ``b`` alone sets (``steptime.BATCH_TERMS``: two
    GEMM rooflines, a dozen logarithms) are computed once per ``b`` and kept in its row of ``dec_tab``; the same
    arithmetic, so the same floats."""
    v_terms = fa(c, K_TERMS)
    row = fa(c, K_DEC_TAB)[b * N_TERMS:(b + 1) * N_TERMS]
    v_done = ia(c, K_DEC_DONE)
    if v_done[b]:
        for k in BATCH_TERMS:
            v_terms[k] = row[k]
    else:
        decode_batch_terms(float(b), fa(c, K_DEC_P), v_terms)
        for k in BATCH_TERMS:
            row[k] = v_terms[k]
        v_done[b] = 1
    return decode_step_terms(float(b), read, attn, fa(c, K_DEC_P), v_terms)


@jit
def decode_join(c, a, de, tokens, read, attn, head_start_s):
    """DecodeSet.join: returns the seconds after joining at which it ends if within ``head_start_s``, else -1."""
    v_d_read_sum = fa(c, K_D_READ_SUM)
    v_d_attn_sum = fa(c, K_D_ATTN_SUM)
    v_d_count = ia(c, K_D_COUNT)
    v_d_v = fa(c, K_D_V)
    v_dh_end = fa(c, K_DH_END)
    v_dh_read = fa(c, K_DH_READ)
    v_dh_attn = fa(c, K_DH_ATTN)
    v_dh_child = dh_child(c)
    v_dh_sib = dh_sib(c)
    v_dh_root = ia(c, K_DH_ROOT)
    v_d_first_end = fa(c, K_D_FIRST_END)
    v_d_step = fa(c, K_D_STEP)
    step = decode_step(c, v_d_count[de] + 1, v_d_read_sum[de] + read, v_d_attn_sum[de] + attn)  # this one included
    if tokens * step <= head_start_s:
        return tokens * step
    rate = 1.0 / step
    v_d_read_sum[de] += read
    v_d_attn_sum[de] += attn
    v_d_count[de] += 1
    v_d_step[de] = step
    end = v_d_v[de] + tokens - head_start_s * rate
    v_dh_end[a], v_dh_read[a], v_dh_attn[a] = end, read, attn
    v_dh_child[a], v_dh_sib[a] = -1, -1
    v_dh_root[de] = _meld(c, v_dh_root[de], a)
    if end < v_d_first_end[de]:
        v_d_first_end[de] = end
    return -1.0


@jit
def decode_advance(c, dt):
    """DecodeSet.advance: gained tokens per sequence in ``d_gained``, V before in ``d_before``."""
    v_d_step = fa(c, K_D_STEP)
    v_d_v = fa(c, K_D_V)
    v_d_before = fa(c, K_D_BEFORE)
    v_d_gained = fa(c, K_D_GAINED)
    v_d_count = ia(c, K_D_COUNT)
    for de in range(v_d_v.size):
        v_d_before[de] = v_d_v[de]
        g = dt / v_d_step[de]
        v_d_gained[de] = g if v_d_count[de] > 0 else g * 0.0
        v_d_v[de] = v_d_before[de] + v_d_gained[de]


@jit
def decode_completions(c, out_req, out_frac):
    """DecodeSet.completions: sequences done this step (``out_*``), removed; returns how many."""
    v_d_v = fa(c, K_D_V)
    v_d_first_end = fa(c, K_D_FIRST_END)
    v_d_before = fa(c, K_D_BEFORE)
    v_d_gained = fa(c, K_D_GAINED)
    v_dh_root = ia(c, K_DH_ROOT)
    v_dh_end = fa(c, K_DH_END)
    v_d_read_sum = fa(c, K_D_READ_SUM)
    v_dh_read = fa(c, K_DH_READ)
    v_d_attn_sum = fa(c, K_D_ATTN_SUM)
    v_dh_attn = fa(c, K_DH_ATTN)
    v_d_count = ia(c, K_D_COUNT)
    v_d_step = fa(c, K_D_STEP)
    n = 0
    for de in range(v_d_v.size):
        limit = v_d_v[de] * (1 + 4e-16) + 1e-9
        if not v_d_first_end[de] <= limit:
            continue
        start, span = v_d_before[de], v_d_gained[de]
        while v_dh_root[de] >= 0 and v_dh_end[v_dh_root[de]] <= limit:
            a = v_dh_root[de]
            end = v_dh_end[a]
            _pop_root(c, de)
            out_req[n] = a
            out_frac[n] = min(max((end - start) / span, 0.0), 1.0) if span > 0 else 0.0
            n += 1
            v_d_read_sum[de] -= v_dh_read[a]
            v_d_attn_sum[de] -= v_dh_attn[a]
            v_d_count[de] -= 1
        root = v_dh_root[de]
        v_d_first_end[de] = v_dh_end[root] if root >= 0 else np.inf
        if root < 0:
            v_d_read_sum[de] = 0.0
            v_d_attn_sum[de] = 0.0
        v_d_step[de] = decode_step(c, v_d_count[de], v_d_read_sum[de], v_d_attn_sum[de]) if root >= 0 else np.inf
    return n


# --- agents between turns (sim.waits): a binary heap keyed by (time, agent), Engine.waiting's heapq order -----------


@jit
def _wait_before(v_t, v_a, i, j):
    return v_t[i] < v_t[j] or (v_t[i] == v_t[j] and v_a[i] < v_a[j])


@jit
def wait_push(c, t, a):
    """heapq.heappush(Engine.waiting, (t, a))."""
    v_t, v_a, v_mi = fa(c, K_W_TIME), ia(c, K_W_AGENT), ia(c, K_MI)
    i = v_mi[MI_N_WAIT]
    v_mi[MI_N_WAIT] = i + 1
    v_t[i], v_a[i] = t, a
    while i > 0:
        up = (i - 1) // 2
        if not _wait_before(v_t, v_a, i, up):
            break
        v_t[i], v_t[up] = v_t[up], v_t[i]
        v_a[i], v_a[up] = v_a[up], v_a[i]
        i = up


@jit
def wait_pop(c):
    """heapq.heappop(Engine.waiting): the agent at the top (the caller read its time at ``fa(c, K_W_TIME)[0]``)."""
    v_t, v_a, v_mi = fa(c, K_W_TIME), ia(c, K_W_AGENT), ia(c, K_MI)
    top = v_a[0]
    n = v_mi[MI_N_WAIT] - 1
    v_mi[MI_N_WAIT] = n
    v_t[0], v_a[0] = v_t[n], v_a[n]
    i = 0
    while True:
        left, best = 2 * i + 1, i
        if left < n and _wait_before(v_t, v_a, left, best):
            best = left
        if left + 1 < n and _wait_before(v_t, v_a, left + 1, best):
            best = left + 1
        if best == i:
            return top
        v_t[i], v_t[best] = v_t[best], v_t[i]
        v_a[i], v_a[best] = v_a[best], v_a[i]
        i = best
