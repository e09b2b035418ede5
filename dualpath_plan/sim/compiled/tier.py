"""The DRAM tier's LRU for the compiled engine: ``sim.tier.Lru`` over the arenas.

The use order is a doubly linked list over the agents (``lru_link``: next, then previous, per agent), least recent at
``MI_LRU_HEAD`` and most recent at ``MI_LRU_TAIL``; ``lru_size`` holds each agent's object bytes (-1: none) and
``MF_LRU_USED`` their sum. Each function ports the method it names, in the same order of arithmetic, so both engines
evict the same objects at the same moments.
"""

from __future__ import annotations

from dualpath_plan.sim.compiled.queues import fa, ia, jit
from dualpath_plan.sim.compiled.state import (
    FP_TIER_BYTES,
    K_FP,
    K_LRU_LINK,
    K_LRU_SIZE,
    K_MF,
    K_MI,
    MF_LRU_USED,
    MI_LRU_HEAD,
    MI_LRU_TAIL,
)
from dualpath_plan.sim.tier import FIT


@jit
def _unlink(c, a):
    link, mi = ia(c, K_LRU_LINK), ia(c, K_MI)
    nxt, prv = link[2 * a], link[2 * a + 1]
    if prv >= 0:
        link[2 * prv] = nxt
    else:
        mi[MI_LRU_HEAD] = nxt
    if nxt >= 0:
        link[2 * nxt + 1] = prv
    else:
        mi[MI_LRU_TAIL] = prv


@jit
def _append(c, a):
    link, mi = ia(c, K_LRU_LINK), ia(c, K_MI)
    tail = mi[MI_LRU_TAIL]
    link[2 * a], link[2 * a + 1] = -1, tail
    if tail >= 0:
        link[2 * tail] = a
    else:
        mi[MI_LRU_HEAD] = a
    mi[MI_LRU_TAIL] = a


@jit
def lru_put(c, a, size):
    """Lru.put: ``a``'s object holds ``size`` bytes and is the most recent; the least recent go while over capacity."""
    sizes, mf, mi = fa(c, K_LRU_SIZE), fa(c, K_MF), ia(c, K_MI)
    if sizes[a] >= 0:
        _unlink(c, a)
        mf[MF_LRU_USED] -= sizes[a]
    sizes[a] = size
    _append(c, a)
    mf[MF_LRU_USED] += size
    cap = fa(c, K_FP)[FP_TIER_BYTES]
    while mf[MF_LRU_USED] > cap and mi[MI_LRU_HEAD] >= 0:
        gone = mi[MI_LRU_HEAD]
        _unlink(c, gone)
        mf[MF_LRU_USED] -= sizes[gone]
        sizes[gone] = -1.0
    if mi[MI_LRU_HEAD] < 0:
        mf[MF_LRU_USED] = 0.0


@jit
def lru_ask(c, a, hit_bytes):
    """Lru.ask: whether the tier serves ``hit_bytes`` of ``a``'s KV; on a miss the object is remade of them."""
    size = fa(c, K_LRU_SIZE)[a]
    if size >= 0 and size * FIT >= hit_bytes:
        _unlink(c, a)
        _append(c, a)
        return True
    lru_put(c, a, hit_bytes)
    return False


@jit
def lru_written(c, a, context_bytes, new_bytes):
    """Lru.written: the object holds the whole context if it was still there, else the new KV alone."""
    lru_put(c, a, context_bytes if fa(c, K_LRU_SIZE)[a] >= 0 else new_bytes)
