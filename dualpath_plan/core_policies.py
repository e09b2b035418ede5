"""The scheduling policies of the compiled fluid engine: a port of ``policies`` (its docstring gives the rules).

One fetch of one engine group computes its decisions exactly as the Python policy does (on copies of
the engine reports), then applies them in the order made, as ``fluid_engine.Engine.apply``. Ties break
as the Python heaps break them: lowest (value, index) first.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.core_engine import jit, q_append, q_popleft, start_reads
from dualpath_plan.core_state import (
    FP_BETA, FP_DE_FRACTION, FP_KV, IP_D, IP_G_DE, IP_G_PE, IP_P, IP_POLICY, K_ALPHA, K_A_DE, K_A_DE_FRAC, K_A_PE,
    K_A_ROUND, K_DE_FREE, K_DE_SEQ, K_DE_TOK, K_FP, K_GROUP_QUEUED, K_IP, K_MF, K_MI, K_PE_SEQ, K_PE_TOK,
    K_P_ADMITTED, K_P_SERVED, K_P_WAITING, K_Q_HEAD, K_Q_LEN, K_Q_NEXT, K_READ_Q, K_R_HIT, K_R_LENGTH, K_R_NEED,
    K_S_CLS, K_S_DE, K_S_FRAC, K_S_FREE, K_S_GROUP, K_S_LOAD, K_S_REQ, K_S_SEQ, K_S_TOK, K_S_TOK2, MF_NOW,
    MI_RR_DE, MI_RR_PE, MI_RR_SIDE, POL_RR, POL_RR_SIDES, POL_TWO_LEVEL_SPLIT, Q_DE_WAIT, Q_PE_WAIT, Q_PRIVATE0,
    fa, ia,
)

Z_FACTOR = 1.05  # as policies.Z_FACTOR


@jit
def has_work(c, side, group):
    """fluid_loop.Clock._has_work."""
    if side == 0:
        return ia(c, K_Q_LEN)[Q_PE_WAIT] > 0
    return ia(c, K_Q_LEN)[Q_DE_WAIT] > 0 or ia(c, K_Q_LEN)[Q_PRIVATE0 + group] > 0


@jit
def fetch(c, side, group, when):
    """One due fetch with work (fluid_loop.Clock._fetch's body): the policy decides, the engine applies.
    Returns whether any decision was made."""
    kv = fa(c, K_FP)[FP_KV]
    for node in range(fa(c, K_READ_Q).size):  # Pipes.read_backlog / kv bytes per token
        fa(c, K_READ_Q)[node] = (fa(c, K_P_WAITING)[node] + fa(c, K_P_ADMITTED)[node] - fa(c, K_P_SERVED)[node]) / kv
    policy = ia(c, K_IP)[IP_POLICY]
    if policy == POL_RR or policy == POL_RR_SIDES:
        return _round_robin(c, side, when, policy == POL_RR_SIDES)
    if side == 0:
        return _alg1(c, group)
    return _two_level_de(c, group, when, policy == POL_TWO_LEVEL_SPLIT)


@jit
def _assign_pe(c, head):
    """Engine._apply of one PE decision."""
    req = q_popleft(c, Q_PE_WAIT)
    ia(c, K_A_PE)[req] = head
    fa(c, K_PE_TOK)[head] += ia(c, K_R_LENGTH)[ia(c, K_A_ROUND)[req]]
    ia(c, K_PE_SEQ)[head] += 1
    q_append(c, Q_DE_WAIT, req)


@jit
def _alg1(c, group):
    """policies._alg1 / assign_pe (Algorithm 1) for the PE group ``group``, applied as made."""
    g_pe, beta = ia(c, K_IP)[IP_G_PE], fa(c, K_FP)[FP_BETA]
    pe0 = group * g_pe
    q, alpha = fa(c, K_READ_Q)[group], fa(c, K_ALPHA)[group]
    tok, cls = fa(c, K_S_TOK), ia(c, K_S_CLS)
    for k in range(g_pe):
        t = fa(c, K_PE_TOK)[pe0 + k]
        cls[k] = 1 if t > beta else (2 if q <= alpha else 3)
        tok[k] = t
    made = 0
    req = ia(c, K_Q_HEAD)[Q_PE_WAIT]
    while req >= 0:
        length = ia(c, K_R_LENGTH)[ia(c, K_A_ROUND)[req]]
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
        nxt = ia(c, K_Q_NEXT)[req]
        _assign_pe(c, pe0 + best)
        made += 1
        req = nxt
    return made > 0


@jit
def _drain_to_groups(c):
    """policies._drain_to_groups: the group of each request of the global DE queue, in ``s_group`` by position."""
    g_de, D = ia(c, K_IP)[IP_G_DE], ia(c, K_IP)[IP_D]
    load = fa(c, K_S_LOAD)
    for g in range(D):
        total = 0.0
        for k in range(g_de):
            total += fa(c, K_DE_TOK)[g * g_de + k]
        load[g] = total + fa(c, K_GROUP_QUEUED)[g]
    n = 0
    req = ia(c, K_Q_HEAD)[Q_DE_WAIT]
    while req >= 0:
        best = 0
        for g in range(1, D):
            if load[g] < load[best]:
                best = g
        ia(c, K_S_GROUP)[n] = best
        load[best] = load[best] + ia(c, K_R_LENGTH)[ia(c, K_A_ROUND)[req]]
        n += 1
        req = ia(c, K_Q_NEXT)[req]
    return n


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
    g_de, P, g_pe = ia(c, K_IP)[IP_G_DE], ia(c, K_IP)[IP_P], ia(c, K_IP)[IP_G_PE]
    de0 = group * g_de
    free, tok, seq = fa(c, K_S_FREE), fa(c, K_S_TOK2), ia(c, K_S_SEQ)
    room, tok_sum = 0.0, 0.0
    for k in range(g_de):
        free[k], tok[k], seq[k] = fa(c, K_DE_FREE)[de0 + k], fa(c, K_DE_TOK)[de0 + k], ia(c, K_DE_SEQ)[de0 + k]
        room += free[k]
        tok_sum += tok[k]
    total = 0.0  # policies.de_threshold
    for j in range(n_head):
        r = ia(c, K_A_ROUND)[ia(c, K_S_REQ)[j]]
        if fa(c, K_R_NEED)[r] > room:
            break
        room -= fa(c, K_R_NEED)[r]
        total += ia(c, K_R_LENGTH)[r]
    z = Z_FACTOR * (total + tok_sum) / g_de
    made = 0
    for j in range(n_head):
        req = ia(c, K_S_REQ)[j]
        r = ia(c, K_A_ROUND)[req]
        need, length = fa(c, K_R_NEED)[r], ia(c, K_R_LENGTH)[r]
        k = _pick_de(need, length, free, tok, seq, g_de, z)
        if k < 0:
            break
        free[k] -= need
        tok[k] += length
        seq[k] += 1
        de = de0 + k
        pe_node, de_node = ia(c, K_A_PE)[req] // g_pe, P + de // g_de
        if split:
            frac = fa(c, K_FP)[FP_DE_FRACTION]
        else:
            frac = 1.0 if fa(c, K_READ_Q)[de_node] < fa(c, K_READ_Q)[pe_node] else 0.0  # policies.read_side
        hit = ia(c, K_R_HIT)[r]
        fa(c, K_READ_Q)[pe_node] += (1 - frac) * hit
        fa(c, K_READ_Q)[de_node] += frac * hit
        ia(c, K_S_DE)[j], fa(c, K_S_FRAC)[j] = de, frac
        made += 1
    return made


@jit
def _apply_de(c, q, group, made, when, private):
    """Engine._apply_de: the first ``made`` requests of queue ``q`` get their DE (``s_de``, ``s_frac``)."""
    fa(c, K_MF)[MF_NOW] = when
    for j in range(made):
        req = q_popleft(c, q)
        length = ia(c, K_R_LENGTH)[ia(c, K_A_ROUND)[req]]
        if private:
            fa(c, K_GROUP_QUEUED)[group] -= length
        ia(c, K_A_DE)[req], fa(c, K_A_DE_FRAC)[req] = ia(c, K_S_DE)[j], fa(c, K_S_FRAC)[j]
        fa(c, K_DE_TOK)[ia(c, K_S_DE)[j]] += length
        ia(c, K_DE_SEQ)[ia(c, K_S_DE)[j]] += 1
        start_reads(c, req)
    fa(c, K_MF)[MF_NOW] = np.nan


@jit
def _two_level_de(c, group, when, split):
    """policies._two_level for a DE fetch: phase 1 drains the global queue to groups, phase 2 places
    the fetching group's private queue plus what was just drained to it."""
    n_drained = _drain_to_groups(c)
    n_head = 0
    req = ia(c, K_Q_HEAD)[Q_PRIVATE0 + group]
    while req >= 0:
        ia(c, K_S_REQ)[n_head] = req
        n_head += 1
        req = ia(c, K_Q_NEXT)[req]
    req, j = ia(c, K_Q_HEAD)[Q_DE_WAIT], 0
    while req >= 0:
        if ia(c, K_S_GROUP)[j] == group:
            ia(c, K_S_REQ)[n_head] = req
            n_head += 1
        req = ia(c, K_Q_NEXT)[req]
        j += 1
    room = 0.0  # R: the head that fits the group's free HBM
    g_de = ia(c, K_IP)[IP_G_DE]
    for k in range(g_de):
        room += fa(c, K_DE_FREE)[group * g_de + k]
    n_fit = 0
    while n_fit < n_head:
        need = fa(c, K_R_NEED)[ia(c, K_A_ROUND)[ia(c, K_S_REQ)[n_fit]]]
        if need > room:
            break
        room -= need
        n_fit += 1
    made = _phase2(c, group, n_fit, split)
    for j in range(n_drained):  # Engine.apply: to_group
        req = q_popleft(c, Q_DE_WAIT)
        g = ia(c, K_S_GROUP)[j]
        q_append(c, Q_PRIVATE0 + g, req)
        fa(c, K_GROUP_QUEUED)[g] += ia(c, K_R_LENGTH)[ia(c, K_A_ROUND)[req]]
    if made:
        _apply_de(c, Q_PRIVATE0 + group, group, made, when, True)
    return n_drained > 0 or made > 0


@jit
def _round_robin(c, side, when, alternate_side):
    """policies._round_robin (basic, layerwise; dualpath-rr with ``alternate_side``)."""
    if side == 0:
        n = ia(c, K_IP)[IP_P] * ia(c, K_IP)[IP_G_PE]
        i, rr = 0, ia(c, K_MI)[MI_RR_PE]
        while ia(c, K_Q_LEN)[Q_PE_WAIT] > 0:
            _assign_pe(c, (rr + i) % n)
            i += 1
        ia(c, K_MI)[MI_RR_PE] = (rr + i) % n
        return i > 0
    n = ia(c, K_IP)[IP_D] * ia(c, K_IP)[IP_G_DE]
    made, rr_de, rr_side = ia(c, K_Q_LEN)[Q_DE_WAIT], ia(c, K_MI)[MI_RR_DE], ia(c, K_MI)[MI_RR_SIDE]
    for i in range(made):
        ia(c, K_S_DE)[i] = (rr_de + i) % n
        fa(c, K_S_FRAC)[i] = float((rr_side + i) % 2) if alternate_side else 0.0
    ia(c, K_MI)[MI_RR_DE] = (rr_de + made) % n
    if alternate_side:
        ia(c, K_MI)[MI_RR_SIDE] = (rr_side + made) % 2
    if made:
        _apply_de(c, Q_DE_WAIT, 0, made, when, False)
    return made > 0
