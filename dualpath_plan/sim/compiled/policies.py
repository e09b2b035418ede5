"""The scheduling policies of the compiled fluid engine: a port of ``sim.python.policies`` (its docstring gives the rules).

One fetch of one engine group computes its decisions exactly as the Python policy does (on copies of
the engine reports), then applies them in the order made, as ``sim.python.engine.Engine.apply``. Ties break
as the Python heaps break them: lowest (value, index) first.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.sim.compiled.engine import start_reads
from dualpath_plan.sim.compiled.queues import agent_rec, fa, fa_agent, ia, ia_agent, jit, q_append, q_popleft, set_stage
from dualpath_plan.sim.stages import DE_ASSIGN
from dualpath_plan.sim.rules import Z_FACTOR  # the shared rule's constant (numba freezes it)
from dualpath_plan.sim.compiled.state import (
    FP_BETA,
    FP_DT,
    FP_PERIOD,
    FP_DE_FRACTION,
    FP_KV,
    IP_D,
    IP_G_DE,
    IP_G_PE,
    IP_P,
    IP_POLICY,
    K_ALPHA,
    AI_DE,
    AF_DE_FRAC,
    AI_HIT,
    AI_LENGTH,
    AF_NEED,
    AI_PE,
    REC_ARRIVE,
    K_DE_FREE,
    K_DE_SEQ,
    K_DE_TOK,
    K_FP,
    K_GROUP_QUEUED,
    K_IP,
    K_MF,
    K_MI,
    K_PE_SEQ,
    K_PE_TOK,
    K_P_ADMITTED,
    K_P_SERVED,
    K_P_WAITING,
    K_Q_HEAD,
    K_Q_LEN,
    AI_Q_NEXT,
    K_READ_Q,
    K_S_CLS,
    K_S_DETOK,
    K_S_DE,
    K_S_FRAC,
    K_S_FREE,
    K_S_GROUP,
    K_S_LOAD,
    K_S_REQ,
    K_S_SEQ,
    K_S_TOK,
    K_S_TOK2,
    MF_NOW,
    MI_RR_PE,
    MI_RR_SIDE,
    POL_RR,
    POL_RR_SIDES,
    POL_TWO_LEVEL_SPLIT,
    Q_DE_WAIT,
    Q_PE_WAIT,
    Q_PRIVATE0,
)



@jit
def _arrived(c, req, seen):
    """policies.arrived for one request: whether its current turn had arrived by ``seen``."""
    return req >= 0 and agent_rec(c, req)[REC_ARRIVE] <= seen


@jit
def has_work(c, side, group, when):
    """sim.python.loop.Clock._has_work for the fetch due at ``when`` (a PE fetch sees one step before it: Clock._fetch)."""
    v_q_len = ia(c, K_Q_LEN)
    if side == 0:
        return _arrived(c, ia(c, K_Q_HEAD)[Q_PE_WAIT], when - fa(c, K_FP)[FP_DT])
    return v_q_len[Q_DE_WAIT] > 0 or v_q_len[Q_PRIVATE0 + group] > 0


@jit
def next_work(c, side, group, when):
    """sim.python.loop.Clock._next_work."""
    v_q_len = ia(c, K_Q_LEN)
    if side == 1:
        return when if (v_q_len[Q_DE_WAIT] > 0 or v_q_len[Q_PRIVATE0 + group] > 0) else np.inf
    head = ia(c, K_Q_HEAD)[Q_PE_WAIT]
    if head < 0:
        return np.inf
    v_fp = fa(c, K_FP)
    arrive = agent_rec(c, head)[REC_ARRIVE]
    if arrive <= when - v_fp[FP_DT]:  # the test has_work makes
        return when
    return when + v_fp[FP_PERIOD] * np.ceil((arrive + v_fp[FP_DT] - when) / v_fp[FP_PERIOD])


@jit
def _backlog(c, node):
    """Pipes.read_backlog of one node in tokens (its read bytes waiting or in flight / kv bytes per token), as the
    Python fetch computes it for every node at the fetch's start; the policies read it only for the nodes they
    decide about, so only those are computed (before any decision of the fetch moves a pipe)."""
    kv = fa(c, K_FP)[FP_KV]
    return (fa(c, K_P_WAITING)[node] + fa(c, K_P_ADMITTED)[node] - fa(c, K_P_SERVED)[node]) / kv


@jit
def fetch(c, side, group, when):
    """One due fetch with work (sim.python.loop.Clock._fetch's body): the policy decides, the engine applies.
    Returns whether any decision was made."""
    v_ip = ia(c, K_IP)
    policy = v_ip[IP_POLICY]
    if policy == POL_RR or policy == POL_RR_SIDES:
        return _framework(c, side, when, policy == POL_RR_SIDES)
    if side == 0:
        return _alg1(c, group, when - fa(c, K_FP)[FP_DT])
    return _two_level_de(c, group, when, policy == POL_TWO_LEVEL_SPLIT)


@jit
def _assign_pe(c, head):
    """Engine._apply of one PE decision."""
    v_a_pe = ia_agent(c, AI_PE)
    v_pe_tok = fa(c, K_PE_TOK)
    v_a_length = ia_agent(c, AI_LENGTH)
    v_pe_seq = ia(c, K_PE_SEQ)
    req = q_popleft(c, np.int64(Q_PE_WAIT))
    v_a_pe[req] = head
    v_pe_tok[head] += v_a_length[req]
    v_pe_seq[head] += 1
    q_append(c, np.int64(Q_DE_WAIT), req)
    set_stage(c, req, DE_ASSIGN)


@jit
def _alg1(c, group, seen):
    """policies._alg1 / assign_pe (Algorithm 1) for the PE group ``group``, applied as made."""
    v_ip = ia(c, K_IP)
    v_fp = fa(c, K_FP)
    v_alpha = fa(c, K_ALPHA)
    v_s_tok = fa(c, K_S_TOK)
    v_s_cls = ia(c, K_S_CLS)
    v_pe_tok = fa(c, K_PE_TOK)
    v_q_head = ia(c, K_Q_HEAD)
    v_a_length = ia_agent(c, AI_LENGTH)
    v_q_next = ia_agent(c, AI_Q_NEXT)
    g_pe, beta = v_ip[IP_G_PE], v_fp[FP_BETA]
    pe0 = group * g_pe
    q, alpha = _backlog(c, group), v_alpha[group]  # PE node ``group``
    tok, cls = v_s_tok, v_s_cls
    for k in range(g_pe):
        t = v_pe_tok[pe0 + k]
        cls[k] = 1 if t > beta else (2 if q <= alpha else 3)
        tok[k] = t
    made = 0
    req = v_q_head[Q_PE_WAIT]
    while _arrived(c, req, seen):
        length = v_a_length[req]
        best = -1
        for want in (2, 3):
            for k in range(g_pe):
                if cls[k] == want and (best < 0 or tok[k] < tok[best]):
                    best = k
            if best >= 0:
                break
        if best < 0:
            break
        t = tok[best]
        if t + length <= beta:
            tok[best] = t + length
        else:
            cls[best] = 0  # leaves its heap
        nxt = v_q_next[req]
        _assign_pe(c, pe0 + best)
        made += 1
        req = nxt
    return made > 0


@jit
def _drain_to_groups(c):
    """policies._drain_to_groups: the group of each request of the global DE queue, in ``s_group`` by position."""
    v_ip = ia(c, K_IP)
    v_s_load = fa(c, K_S_LOAD)
    v_de_tok = fa(c, K_DE_TOK)
    v_group_queued = fa(c, K_GROUP_QUEUED)
    v_q_head = ia(c, K_Q_HEAD)
    v_s_group = ia(c, K_S_GROUP)
    g_de, D = v_ip[IP_G_DE], v_ip[IP_D]
    if v_q_head[Q_DE_WAIT] < 0:  # nothing to drain: the loads would go unread
        return 0
    load = v_s_load
    for g in range(D):
        total = 0.0
        for k in range(g_de):
            total += v_de_tok[g * g_de + k]
        load[g] = total + v_group_queued[g]
    return _place_least(c, load, D, v_s_group)


@jit
def _place_least(c, load, n, out):
    """policies.least_tokens over the global DE queue: each request, in order, to the slot of least ``load[:n]`` (ties:
    the lowest), whose load then grows by its length; the slots in ``out`` by position. Returns how many."""
    v_a_length = ia_agent(c, AI_LENGTH)
    v_q_next = ia_agent(c, AI_Q_NEXT)
    req, j = ia(c, K_Q_HEAD)[Q_DE_WAIT], 0
    while req >= 0:
        best = 0
        for k in range(1, n):
            if load[k] < load[best]:
                best = k
        out[j] = best
        load[best] = load[best] + v_a_length[req]
        req = v_q_next[req]
        j += 1
    return j


@jit
def _pick_de(need, length, free, tok, seq, g_de, z):
    """policies.pick_de over one group's DEs (local copies ``free``, ``tok``, ``seq``); -1 for none."""
    low, high = -1, -1
    for i in range(g_de):
        f, t, q = free[i], tok[i], seq[i]
        if f < need:
            continue
        if t + length <= z:
            if low < 0 or q < seq[low] or (q == seq[low] and t < tok[low]):
                low = i
        elif low < 0 and (high < 0 or t < tok[high]):
            high = i
    return low if low >= 0 else high


@jit
def _phase2(c, group, n_head, split):
    """policies._phase2 on the requests in ``s_req[:n_head]``: DE in ``s_de`` and read fraction in
    ``s_frac`` for each assigned one; returns how many."""
    v_ip = ia(c, K_IP)
    v_s_free = fa(c, K_S_FREE)
    v_s_tok2 = fa(c, K_S_TOK2)
    v_s_seq = ia(c, K_S_SEQ)
    v_de_free = fa(c, K_DE_FREE)
    v_de_tok = fa(c, K_DE_TOK)
    v_de_seq = ia(c, K_DE_SEQ)
    v_s_req = ia(c, K_S_REQ)
    v_a_need = fa_agent(c, AF_NEED)
    v_a_length = ia_agent(c, AI_LENGTH)
    v_a_pe = ia_agent(c, AI_PE)
    v_fp = fa(c, K_FP)
    v_read_q = fa(c, K_READ_Q)
    v_a_hit = ia_agent(c, AI_HIT)
    v_s_de = ia(c, K_S_DE)
    v_s_frac = fa(c, K_S_FRAC)
    g_de, P, g_pe = v_ip[IP_G_DE], v_ip[IP_P], v_ip[IP_G_PE]
    de0 = group * g_de
    free, tok, seq = v_s_free, v_s_tok2, v_s_seq
    room, tok_sum = 0.0, 0.0
    for k in range(g_de):
        free[k], tok[k], seq[k] = v_de_free[de0 + k], v_de_tok[de0 + k], v_de_seq[de0 + k]
        room += free[k]
        tok_sum += tok[k]
    total = 0.0  # policies.de_threshold
    for j in range(n_head):
        req = v_s_req[j]
        if v_a_need[req] > room:
            break
        room -= v_a_need[req]
        total += v_a_length[req]
    z = Z_FACTOR * (total + tok_sum) / g_de
    v_read_q[P + group] = _backlog(c, P + group)  # the group's DE node, then the PE nodes of the candidates
    for j in range(n_head):
        pe_node = v_a_pe[v_s_req[j]] // g_pe
        v_read_q[pe_node] = _backlog(c, pe_node)
    made = 0
    for j in range(n_head):
        req = v_s_req[j]
        need, length = v_a_need[req], v_a_length[req]
        k = _pick_de(need, length, free, tok, seq, g_de, z)
        if k < 0:
            break
        free[k] -= need
        tok[k] += length
        seq[k] += 1
        de = de0 + k
        pe_node, de_node = v_a_pe[req] // g_pe, P + de // g_de
        if split:
            frac = v_fp[FP_DE_FRACTION]
        else:
            frac = 1.0 if v_read_q[de_node] < v_read_q[pe_node] else 0.0  # policies.read_side
        hit = v_a_hit[req]
        v_read_q[pe_node] += (1 - frac) * hit
        v_read_q[de_node] += frac * hit
        v_s_de[j], v_s_frac[j] = de, frac
        made += 1
    return made


@jit
def _apply_de(c, q, group, made, when, private):
    """Engine._apply_de: the first ``made`` requests of queue ``q`` get their DE (``s_de``, ``s_frac``)."""
    v_mf = fa(c, K_MF)
    v_a_length = ia_agent(c, AI_LENGTH)
    v_group_queued = fa(c, K_GROUP_QUEUED)
    v_a_de = ia_agent(c, AI_DE)
    v_a_de_frac = fa_agent(c, AF_DE_FRAC)
    v_s_de = ia(c, K_S_DE)
    v_s_frac = fa(c, K_S_FRAC)
    v_de_tok = fa(c, K_DE_TOK)
    v_de_seq = ia(c, K_DE_SEQ)
    v_mf[MF_NOW] = when
    for j in range(made):
        req = q_popleft(c, q)
        length = v_a_length[req]
        if private:
            v_group_queued[group] -= length
        v_a_de[req], v_a_de_frac[req] = v_s_de[j], v_s_frac[j]
        v_de_tok[v_s_de[j]] += length
        v_de_seq[v_s_de[j]] += 1
        start_reads(c, req)
    v_mf[MF_NOW] = np.nan


@jit
def _fit(need, room):
    """A candidate fits unless its need is above the room left (the comparison the Python policy makes)."""
    return not need > room


@jit
def _two_level_de(c, group, when, split):
    """policies._two_level for a DE fetch: phase 1 drains the global queue to groups, phase 2 places
    the fetching group's private queue plus what was just drained to it."""
    v_q_head = ia(c, K_Q_HEAD)
    v_s_req = ia(c, K_S_REQ)
    v_q_next = ia_agent(c, AI_Q_NEXT)
    v_s_group = ia(c, K_S_GROUP)
    v_ip = ia(c, K_IP)
    v_de_free = fa(c, K_DE_FREE)
    v_a_need = fa_agent(c, AF_NEED)
    v_group_queued = fa(c, K_GROUP_QUEUED)
    v_a_length = ia_agent(c, AI_LENGTH)
    n_drained = _drain_to_groups(c)
    room = 0.0  # R: the head that fits the group's free HBM
    g_de = v_ip[IP_G_DE]
    for k in range(g_de):
        room += v_de_free[group * g_de + k]
    # the candidates: the group's private queue, then what was just drained to it, up to the first that does not
    # fit what is left of R (the Python policy lists them all and then cuts the list there: the same head)
    n_fit, fits = 0, True
    req = v_q_head[Q_PRIVATE0 + group]
    while req >= 0 and fits:
        fits = _fit(v_a_need[req], room)
        if fits:
            room -= v_a_need[req]
            v_s_req[n_fit] = req
            n_fit += 1
        req = v_q_next[req]
    req, j = v_q_head[Q_DE_WAIT], 0
    while req >= 0 and fits:
        if v_s_group[j] == group:
            fits = _fit(v_a_need[req], room)
            if fits:
                room -= v_a_need[req]
                v_s_req[n_fit] = req
                n_fit += 1
        req = v_q_next[req]
        j += 1
    made = _phase2(c, group, n_fit, split)
    for j in range(n_drained):  # Engine.apply: to_group
        req = q_popleft(c, np.int64(Q_DE_WAIT))
        g = v_s_group[j]
        q_append(c, Q_PRIVATE0 + g, req)
        v_group_queued[g] += v_a_length[req]
    if made:
        _apply_de(c, Q_PRIVATE0 + group, group, made, when, np.True_)
    return n_drained > 0 or made > 0


@jit
def _least_tokens(c, n):
    """policies.least_tokens over the global DE queue and the n DEs' tokens: each request's DE in ``s_de`` by position."""
    v_de_tok = fa(c, K_DE_TOK)
    tok = fa(c, K_S_DETOK)
    for k in range(n):
        tok[k] = v_de_tok[k]
    _place_least(c, tok, n, ia(c, K_S_DE))


@jit
def _framework(c, side, when, alternate_side):
    """policies._framework (basic, layerwise; dualpath-rr with ``alternate_side``)."""
    v_ip = ia(c, K_IP)
    v_mi = ia(c, K_MI)
    v_q_len = ia(c, K_Q_LEN)
    v_s_frac = fa(c, K_S_FRAC)
    if side == 0:
        n = v_ip[IP_P] * v_ip[IP_G_PE]
        i, rr = 0, v_mi[MI_RR_PE]
        while _arrived(c, ia(c, K_Q_HEAD)[Q_PE_WAIT], when - fa(c, K_FP)[FP_DT]):
            _assign_pe(c, (rr + i) % n)
            i += 1
        v_mi[MI_RR_PE] = (rr + i) % n
        return i > 0
    made, rr_side = v_q_len[Q_DE_WAIT], v_mi[MI_RR_SIDE]
    _least_tokens(c, v_ip[IP_D] * v_ip[IP_G_DE])
    for i in range(made):
        v_s_frac[i] = float((rr_side + i) % 2) if alternate_side else 0.0
    if alternate_side:
        v_mi[MI_RR_SIDE] = (rr_side + made) % 2
    if made:
        _apply_de(c, np.int64(Q_DE_WAIT), np.int64(0), made, when, np.False_)
    return made > 0
