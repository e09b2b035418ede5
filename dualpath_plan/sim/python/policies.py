"""Scheduling policies: the paper's DualPath scheduler (section 6, A.4; notes section 4) and its baselines.

A policy is a plain function ``policy(view, fetch) -> Decisions``, chosen by :class:`PolicyName`
through :data:`POLICIES`. The engine calls it whenever an engine group fetches work (pull-based,
paper §6, notes 4.1): ``fetch.side`` is ``"pe"`` or ``"de"``, ``fetch.group`` the group (one node per group).
The policy reads the engines' reports in :class:`SchedView` (``tok_e``, ``seq_e``, free HBM, the node
read queues) and returns its assignments; the engine applies them. ``sim.rules.FEATURES`` says what each
policy changes in the data path (layer-wise prefill, free I/O) and which LP mode bounds it.

The rules are separate functions so each can be tested on a hand-made state:

* :func:`pe_class` / :func:`assign_pe` - Algorithm 1: classes C1 (``tok_e > beta``), C2 (read queue
  ``<= alpha``), C3 (read queue ``> alpha``); each request in FIFO order goes to argmin ``tok_e`` in C2,
  else in C3; the fetch ends when both are empty.
* ``_drain_to_groups`` - DE phase 1: each drained request to the group with the least total tokens.
* :func:`de_threshold` / :func:`pick_de` / :func:`assign_de` - DE phase 2: ``Z = 1.05 * (sum len(R) +
  sum tok_e) / |E|`` with ``R`` the head requests that fit the group's free HBM; prefer DEs with
  enough HBM and ``tok_e + len <= Z``, fewest requests first, else the high-token DE with fewest tokens.
* :func:`read_side` - the read goes to the node with the shorter storage read queue.
* :func:`least_tokens` - the framework's decode dispatch of the policies without the paper's scheduler
  (``basic``, ``layerwise``, ``dualpath-rr``): each request to the DE with the fewest tokens; their PEs go in turn.
* :func:`batch_by_quota` / :func:`largest_chunk` - PE forward batches under the 300 ms attention-time
  quota; the request that does not fit is chunked (binary search for the largest chunk that fits).

Token counts: ``len(r)`` is a request's prompt (hit + miss tokens); read queues count hit tokens.
The paper does not say which count it uses (notes 4.2, "INFERRED").
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from itertools import chain, islice, takewhile
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from dualpath_plan.sim.rules import PE, QUOTA_S, Z_FACTOR, PolicyName


@dataclass(frozen=True)
class Fetch:
    """One engine group asking for work: ``side`` ``"pe"`` or ``"de"``, ``group`` its number. A PE fetch sees the
    requests of the prefill queue that had arrived by ``seen`` (:func:`arrived`): one step before it was due
    (``sim.python.loop.Clock._fetch``, where the reason is given)."""

    side: str
    group: int
    seen: float = float("inf")


@dataclass
class SchedView:
    """What the scheduler knows: engine reports (paper §6, notes 4.1), queues, request sizes, constants.

    Engine reports are lists indexed by engine (``pe_*``, ``de_*``: ``tok_e``, ``seq_e``, free HBM in
    bytes) and ``group_queued`` by DE group (tokens in its private queue); arrays are indexed by node
    (``read_q`` in hit tokens, ``alpha``: prefill nodes 0..P-1, then decode nodes P..P+D-1); sequences
    (lists in the engine: read one request at a time) by request (``length``, ``hit`` in tokens,
    ``need`` in HBM bytes, ``pe_of``). ``de_fraction`` is the LP's DE-read fraction (used by ``split``).
    """

    g_pe: int
    g_de: int
    P: int
    D: int
    pe_tok: list
    pe_seq: list
    de_tok: list
    de_seq: list
    de_free: list
    group_queued: list
    read_q: np.ndarray
    alpha: np.ndarray
    beta: float
    length: Sequence[float]
    hit: Sequence[float]
    need: Sequence[float]
    pe_of: Sequence[int]
    pe_wait: deque = field(default_factory=deque)
    de_wait: deque = field(default_factory=deque)
    de_private: list = field(default_factory=list)
    rr: dict = field(default_factory=lambda: {"pe": 0, "side": 0})
    de_fraction: float = 0.0
    arrive: Sequence[float] = ()  # per request, when its current turn arrived (s)


@dataclass
class Decisions:
    """Assignments of one fetch, in the order made.

    ``pe``: (request, PE) for the head of ``pe_wait``. ``to_group``: (request, DE group) for every
    request drained from ``de_wait``. ``de``: (request, DE, DE-read fraction) for the head of
    ``de_source`` (``"private"``: the fetching group's queue; ``"global"``: ``de_wait``).
    """

    pe: list = field(default_factory=list)
    to_group: list = field(default_factory=list)
    de: list = field(default_factory=list)
    de_source: str = "private"
    rr: dict | None = None


def arrived(view: SchedView, seen: float) -> Iterator[int]:
    """The head of the prefill queue that had arrived by ``seen``, in FIFO order (up to the first that had not)."""
    arrive = view.arrive
    return takewhile(lambda req: arrive[req] <= seen, view.pe_wait)


# --- prefill: Algorithm 1 --------------------------------------------------------------------------------

def pe_class(tok: float, read_q: float, alpha: float, beta: float) -> int:
    """1 (overloaded: ``tok > beta``), 2 (preferred: read queue ``<= alpha``) or 3 (read queue ``> alpha``)."""
    if tok > beta:
        return 1
    return 2 if read_q <= alpha else 3


def assign_pe(lengths: Iterable[float], tok: Sequence[float], read_q: Sequence[float], alpha: Sequence[float], beta: float) -> list[int]:
    """Algorithm 1 over requests in FIFO order: the engine (index into ``tok``) of each assigned head request.

    Each request goes to argmin ``tok_e`` among C2 engines, else among C3 (ties: lowest index); then
    ``tok_e += len(r)``, which moves the engine to C1 once it exceeds beta. The fetch ends when C2 and
    C3 are both empty. ``read_q``/``alpha`` are per engine (its node's) and stay fixed within a fetch
    (the read side of these requests is chosen later, at DE assignment).
    """
    heaps: dict[int, list[tuple[float, int]]] = {2: [], 3: []}
    for i, (t, q, a) in enumerate(zip(tok, read_q, alpha)):
        cls = pe_class(t, q, a, beta)
        if cls != 1:
            heaps[cls].append((float(t), i))
    for heap in heaps.values():
        heapq.heapify(heap)
    out: list[int] = []
    for length in lengths:
        heap = heaps[2] or heaps[3]
        if not heap:
            break
        t, i = heapq.heappop(heap)
        out.append(i)
        if t + length <= beta:
            heapq.heappush(heap, (t + length, i))
    return out


# --- decode: two levels ----------------------------------------------------------------------------------

def de_threshold(free: Sequence[float], tok: Sequence[float], needs: Sequence[float], lengths: Sequence[float], z_factor: float = Z_FACTOR) -> float:
    """``Z = z * (sum of len over R + sum tok_e) / |E|``; R = the head requests whose HBM fits the group's free total."""
    room, total = float(sum(free)), 0.0
    for need, length in zip(needs, lengths):
        if need > room:
            break
        room -= need
        total += length
    return z_factor * (total + float(sum(tok))) / len(tok)


def pick_de(need: float, length: float, free: Sequence[float], tok: Sequence[float], seq: Sequence[int], z: float) -> int | None:
    """Phase 2 for one request: among DEs with ``free >= need``, fewest requests below Z, else fewest tokens."""
    low = high = None  # best DE below Z by (seq, tok, index); best above it by (tok, index)
    for i, (f, t, q) in enumerate(zip(free, tok, seq)):
        if f < need:
            continue
        if t + length <= z:
            if low is None or (q, t) < (seq[low], tok[low]):
                low = i
        elif low is None and (high is None or t < tok[high]):
            high = i
    return low if low is not None else high


def assign_de(needs: Sequence[float], lengths: Sequence[float], free: Sequence[float], tok: Sequence[float], seq: Sequence[int], z_factor: float = Z_FACTOR) -> list[int]:
    """Phase 2 over a group's private queue (head first): the DE (index into ``free``) of each assigned request."""
    free, tok, seq = list(free), list(tok), list(seq)
    z = de_threshold(free, tok, needs, lengths, z_factor)
    out: list[int] = []
    for need, length in zip(needs, lengths):
        choice = pick_de(need, length, free, tok, seq, z)
        if choice is None:
            break
        out.append(choice)
        free[choice] -= need
        tok[choice] += length
        seq[choice] += 1
    return out


def read_side(read_q_pe_node: float, read_q_de_node: float) -> float:
    """The DE-read fraction of a request: 1 (DE side) if the DE node's read queue is shorter, else 0 (ties: PE)."""
    return 1.0 if read_q_de_node < read_q_pe_node else 0.0


# --- intra-engine batching -------------------------------------------------------------------------------

def largest_chunk(cost: Callable[[int], float], tokens: int, budget: float) -> int:
    """Binary search: the most tokens ``b <= tokens`` with ``cost(b) <= budget`` (``cost`` non-decreasing)."""
    lo, hi = 0, int(tokens)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def batch_by_quota(queue: Sequence[tuple[int, float, int]], attn_time: Callable[[float, int], float], quota_s: float = QUOTA_S) -> list[tuple[int, int]]:
    """A forward batch from ``(request, cached tokens, tokens left)`` in FIFO order (paper §6, notes 4.5).

    Requests join while the predicted attention time stays within ``quota_s``; the first that does not
    fit joins with the largest chunk that does (chunked prefill), and the batch closes. A batch never
    starts empty: a lone request too big for the quota still prefills one token.
    """
    out: list[tuple[int, int]] = []
    spent = 0.0
    for req, cached, left in queue:
        cost = attn_time(cached, left)
        if spent + cost <= quota_s:
            out.append((req, left))
            spent += cost
            continue
        chunk = largest_chunk(lambda b: attn_time(cached, b), left, quota_s - spent)
        if chunk > 0 or not out:
            out.append((req, max(chunk, min(1, left))))
        break
    return out


def batch_all(queue: Sequence[tuple[int, float, int]]) -> list[tuple[int, int]]:
    """Every ready request whole (``basic``: the batch is capped by the HBM its loaded KV already holds)."""
    return [(req, left) for req, _cached, left in queue]


# --- policies --------------------------------------------------------------------------------------------

def _alg1(view: SchedView, group: int, seen: float) -> list[tuple[int, int]]:
    engines = range(group * view.g_pe, (group + 1) * view.g_pe)
    read_q = [float(view.read_q[group])] * view.g_pe  # one node per group: its engines share the node's queue
    alpha = [float(view.alpha[group])] * view.g_pe
    length = view.length
    lengths = (length[r] for r in arrived(view, seen))  # walked lazily: stops at the first refusal
    picks = assign_pe(lengths, view.pe_tok[engines.start:engines.stop], read_q, alpha, view.beta)
    return [(req, engines[k]) for req, k in zip(islice(view.pe_wait, len(picks)), picks)]


def _drain_to_groups(view: SchedView) -> list[tuple[int, int]]:
    """Phase 1: every request of the global DE queue, in order, to the group with the least total tokens
    (its DEs' ``tok_e`` plus its private queue; ties: lowest group), counting the requests placed so far."""
    if not view.de_wait:
        return []
    length = view.length
    per_group = map(sum, zip(*[iter(view.de_tok)] * view.g_de))  # each group's DEs are consecutive
    loads = [total + queued for total, queued in zip(per_group, view.group_queued)]
    return list(zip(view.de_wait, least_tokens((length[req] for req in view.de_wait), loads)))


def _phase2(view: SchedView, group: int, extra: list[int], split: bool) -> list[tuple[int, int, float]]:
    """Phase 2 on the group's private queue followed by the requests just drained to it."""
    engines = range(group * view.g_de, (group + 1) * view.g_de)
    free = view.de_free[engines.start:engines.stop]
    room, head, need = sum(free), [], view.need
    for req in chain(view.de_private[group], extra):  # R: the head that fits the group's free HBM
        if need[req] > room:
            break
        room -= need[req]
        head.append(req)
    picks = assign_de([need[r] for r in head], [view.length[r] for r in head], free,
                      view.de_tok[engines.start:engines.stop], view.de_seq[engines.start:engines.stop])
    read_q = np.asarray(view.read_q, dtype=float).tolist()
    out = []
    for req, k in zip(head, picks):
        de = engines[k]
        pe_node, de_node = view.pe_of[req] // view.g_pe, view.P + de // view.g_de
        frac = view.de_fraction if split else read_side(read_q[pe_node], read_q[de_node])
        read_q[pe_node] += (1 - frac) * view.hit[req]
        read_q[de_node] += frac * view.hit[req]
        out.append((req, de, frac))
    return out


def _two_level(view: SchedView, fetch: Fetch, split: bool) -> Decisions:
    if fetch.side == PE:
        return Decisions(pe=_alg1(view, fetch.group, fetch.seen))
    to_group = _drain_to_groups(view)
    extra = [req for req, g in to_group if g == fetch.group]
    return Decisions(to_group=to_group, de=_phase2(view, fetch.group, extra, split))


def dualpath(view: SchedView, fetch: Fetch) -> Decisions:
    """The paper's scheduler: Algorithm 1 for PEs; two-level DE assignment; shorter read queue side."""
    return _two_level(view, fetch, split=False)


def split(view: SchedView, fetch: Fetch) -> Decisions:
    """``dualpath`` with each read split across both sides at the LP's DE-read fraction (beyond the paper)."""
    return _two_level(view, fetch, split=True)


def least_tokens(lengths: Iterable[float], tok: Sequence[float]) -> list[int]:
    """The framework's decode dispatch: each request in order to the DE with the fewest tokens (``tok_e``), counting
    the requests placed before it in the same fetch; ties: lowest index. A decode request holds its DE's HBM for
    its whole generation (seconds), so placing by count (round-robin) let DEs fill with long contexts while others
    idled: docs/assumptions.md gives the measurement."""
    heap = [(float(t), i) for i, t in enumerate(tok)]
    heapq.heapify(heap)
    out: list[int] = []
    for length in lengths:
        t, i = heap[0]
        out.append(i)
        heapq.heapreplace(heap, (t + length, i))
    return out


def _framework(view: SchedView, fetch: Fetch, alternate_side: bool) -> Decisions:
    """Engines without the paper's scheduler: PEs in turn (round-robin over all PEs), DEs by :func:`least_tokens`
    (no groups, no HBM test), the read on the PE side or, with ``alternate_side``, alternating per request."""
    rr = dict(view.rr)
    if fetch.side == PE:
        n = view.P * view.g_pe
        picks = [(req, (rr["pe"] + i) % n) for i, req in enumerate(arrived(view, fetch.seen))]
        rr["pe"] = (rr["pe"] + len(picks)) % n
        return Decisions(pe=picks, rr=rr)
    length = view.length
    des = least_tokens((length[req] for req in view.de_wait), view.de_tok)
    out = []
    for i, (req, de) in enumerate(zip(view.de_wait, des)):
        side = float((rr["side"] + i) % 2) if alternate_side else 0.0
        out.append((req, de, side))
    rr["side"] = (rr["side"] + len(out)) % 2 if alternate_side else rr["side"]
    return Decisions(de=out, de_source="global", rr=rr)


def basic(view: SchedView, fetch: Fetch) -> Decisions:
    """The unmodified framework: FIFO, PEs in turn, DEs by fewest tokens (no groups), every read on the PE side."""
    return _framework(view, fetch, alternate_side=False)


def dualpath_rr(view: SchedView, fetch: Fetch) -> Decisions:
    """Ablation step: dual-path loading under the framework's dispatch, the read side alternating per request."""
    return _framework(view, fetch, alternate_side=True)


POLICIES: dict[PolicyName, Callable[[SchedView, Fetch], Decisions]] = {
    PolicyName.BASIC: basic,
    PolicyName.LAYERWISE: basic,
    PolicyName.DUALPATH_RR: dualpath_rr,
    PolicyName.DUALPATH: dualpath,
    PolicyName.ORACLE: dualpath,
    PolicyName.SPLIT: split,
}
