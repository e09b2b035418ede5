"""Mutable state of the fluid engine: FIFO transfer pipes and the decode batches.

**Pipes.** Transfers that a node or engine serves in order are one flow each, a *pipe*: the storage
reads of a node (PE path 1-2 or DE path 1-2), the whole-KV loads of a prefill engine without
layer-wise prefill (PE path 3-4), the decode-start H2D of a decode engine (PE 8-9 / DE 6-7) and its
write-back (D2H, then out through the SNIC). A pipe serves its admitted items first-in first-out at
the rate the sharing rule grants it, so within one step the bytes left by a finished item go to the
next one. Items wait in a FIFO before admission (a DRAM buffer or HBM must have room: the engine
decides). ``served`` and ``admitted`` are cumulative byte counters; an item is done when ``served``
reaches its end offset.

**Decode.** Every decode engine runs one batch of all its decoding sequences (paper §6, notes 4.5: DEs put every
request in the forward batch). A step of the batch takes ``steptime.decode_terms(b, sum of KV read per
sequence)`` (the bound's step time, with each sequence's read at its mean decoding context) and gives
every sequence one token; an engine's step time is recomputed whenever its batch changes. ``V[e]`` counts the tokens each sequence of engine ``e`` has received; a
sequence joining at ``V`` with ``n`` tokens to make is done at ``V + n``.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from dualpath_plan.bounds.steptime import BATCH_TERMS, N_TERMS, decode_batch_terms, decode_step_terms
from dualpath_plan.sim.layout import Layout
from dualpath_plan.sim.pipes import H2D, LOAD, READ_DE, READ_PE, WB, PipeLayout  # noqa: F401 (tags re-exported)

BATCH_ROWS = list(BATCH_TERMS)  # the slots of the terms a batch size alone sets, as an index


class Pipes:
    """All FIFO pipes of a cluster: read (P+D nodes), load (PEs), H2D and write-back (DEs), tier load (PEs, a DRAM tier).

    Per-item work is plain Python (a step admits and finishes only a few items per pipe); per-pipe
    totals are numpy arrays for the step's vector arithmetic.
    """

    def __init__(self, layout: Layout) -> None:
        topo = PipeLayout.of(layout)
        self.read0, self.load0, self.h2d0, self.wb0, self.n = topo.read0, topo.load0, topo.h2d0, topo.wb0, topo.n
        self.tier0 = topo.tier0  # one tier load per PE (a DRAM tier only; else n)
        self.served = np.zeros(self.n)
        self.admitted = np.zeros(self.n)
        self.waiting = np.zeros(self.n)  # bytes in each admission FIFO
        self.queue: list[deque] = [deque() for _ in range(self.n)]  # items waiting for admission
        self.inflight: list[deque] = [deque() for _ in range(self.n)]  # admitted items: (end offset, req, tag)
        self.blocked: set[int] = set()
        self.head_end = np.full(self.n, np.inf)  # end offset of each pipe's first admitted item
        self.lengths, self.res, self.coef = topo.lengths, topo.res, topo.coef

    def routes(self, first: int, count: int) -> list[list[tuple[int, float]]]:
        """The routes of pipes ``first .. first + count - 1``: (resource, bytes per byte) per hop."""
        starts = np.cumsum(self.lengths) - self.lengths
        return [list(zip(self.res[starts[p]:starts[p] + self.lengths[p]].tolist(), self.coef[starts[p]:starts[p] + self.lengths[p]].tolist()))
                for p in range(first, first + count)]

    def backlog(self, pipes: slice = slice(None)) -> np.ndarray:
        """Bytes enqueued and not yet served, per pipe (of ``pipes``)."""
        return self.waiting[pipes] + self.admitted[pipes] - self.served[pipes]

    def read_backlog(self) -> np.ndarray:
        """:meth:`backlog` of each node's read pipe (nodes 0..P+D-1)."""
        return self.backlog(slice(self.load0))

    def work(self) -> np.ndarray:
        """Bytes admitted and not yet served, per pipe (the most it can serve now)."""
        return np.maximum(self.admitted - self.served, 0.0)

    def enqueue(self, pipe: int, req: int, size: float, tag: int) -> None:
        """Put an item in ``pipe``'s admission FIFO."""
        self.queue[pipe].append((req, size, tag))
        self.waiting[pipe] += size
        self.blocked.add(pipe)

    def head(self, pipe: int) -> tuple | None:
        q = self.queue[pipe]
        return q[0] if q else None

    def admit_head(self, pipe: int) -> None:
        """Admit the head item: it is served after everything admitted before it."""
        req, size, tag = self.queue[pipe].popleft()
        self.waiting[pipe] -= size
        if not self.queue[pipe]:
            self.blocked.discard(pipe)
            self.waiting[pipe] = 0.0
        self.admit(pipe, req, size, tag)

    def admit(self, pipe: int, req: int, size: float, tag: int) -> None:
        """Admit an item (its pipe's FIFO must be empty, or this is its head)."""
        end = float(self.admitted[pipe]) + size
        self.admitted[pipe] = end
        if not self.inflight[pipe]:
            self.head_end[pipe] = end
        self.inflight[pipe].append((end, req, tag))

    def advance(self, x: np.ndarray) -> np.ndarray:
        """Serve ``x`` bytes per pipe; return the cumulative ``served`` before the step."""
        before = self.served
        self.served = before + x
        return before

    def completions(self, before: np.ndarray, active: np.ndarray) -> list[tuple[int, int, int, float]]:
        """Items done this step as ``(pipe, req, tag, share of the step at which it finished)``, removed.

        A pipe served at a constant rate for the ``active`` share of the step."""
        out: list[tuple[int, int, int, float]] = []
        reach = self.served * (1 + 4e-16) + 1e-6
        hit = np.flatnonzero(self.head_end <= reach)
        if not hit.size:
            return out
        spans = self.served[hit] - before[hit]
        cols = (hit.tolist(), reach[hit].tolist(), before[hit].tolist(), spans.tolist(), active[hit].tolist())
        for pipe, limit, start, span, run in zip(*cols):
            items = self.inflight[pipe]
            while items and items[0][0] <= limit:
                end, req, tag = items.popleft()
                out.append((pipe, req, tag, run * min(max((end - start) / span, 0.0), 1.0) if span > 0 else 0.0))
            self.head_end[pipe] = items[0][0] if items else np.inf
        return out


class DecodeSet:
    """The decoding sequences of every decode engine (module docstring)."""

    def __init__(self, layout: Layout) -> None:
        n = layout.n_de
        self.params, self.terms = layout.decode_step.vector, np.zeros(N_TERMS)
        self.batch_terms: dict[int, np.ndarray] = {}  # per batch size, its BATCH_TERMS (_step_s)
        self.step = np.full(n, np.inf)  # seconds per step of each engine's batch (inf: empty)
        self.V = np.zeros(n)
        self.read_sum = np.zeros(n)
        self.attn_sum = np.zeros(n)  # attention compute seconds per step of each engine's batch
        self.count = np.zeros(n, dtype=np.int64)
        self.heaps: list[list[tuple[float, int, float, float]]] = [[] for _ in range(n)]  # (end count, req, read, attn)
        self.first_end = np.full(n, np.inf)  # smallest end count of each engine's sequences

    def join(self, req: int, de: int, tokens: float, read: float, attn: float, head_start_s: float = 0.0) -> float | None:
        """Sequence ``req`` starts decoding ``tokens`` tokens on engine ``de``, reading ``read`` bytes per step and
        spending ``attn`` seconds of attention compute per step.

        ``head_start_s``: it joined that long before the end of the current (already advanced) step and
        makes tokens at its batch's rate meanwhile. Returns the seconds after joining at which it ends if
        that is within that time (it then never enters the batch), else ``None``."""
        step = self._step_s(self.count[de] + 1, self.read_sum[de] + read, self.attn_sum[de] + attn)  # this one included
        if tokens * step <= head_start_s:
            return tokens * step
        rate = 1.0 / step  # tokens/s of each sequence
        self.read_sum[de] += read
        self.attn_sum[de] += attn
        self.count[de] += 1
        self.step[de] = step
        end = float(self.V[de]) + tokens - head_start_s * rate
        heapq.heappush(self.heaps[de], (end, req, read, attn))
        if end < self.first_end[de]:
            self.first_end[de] = end
        return None

    def advance(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Run every batch for ``dt`` seconds; return ``(V before, tokens per sequence)`` per engine."""
        before = self.V
        gained = dt / self.step * (self.count > 0)
        self.V = before + gained
        return before, gained

    def completions(self, before: np.ndarray, gained: np.ndarray) -> list[tuple[int, float]]:
        """Sequences done this step as ``(req, fraction of the step)``; they leave their batches."""
        out: list[tuple[int, float]] = []
        reach = self.V * (1 + 4e-16) + 1e-9
        hit = np.flatnonzero(self.first_end <= reach)
        for de, limit, start, span in zip(hit.tolist(), reach[hit].tolist(), before[hit].tolist(), gained[hit].tolist()):
            heap = self.heaps[de]
            while heap and heap[0][0] <= limit:
                end, req, read, attn = heapq.heappop(heap)
                out.append((req, min(max((end - start) / span, 0.0), 1.0) if span > 0 else 0.0))
                self.read_sum[de] -= read
                self.attn_sum[de] -= attn
                self.count[de] -= 1
            self.first_end[de] = heap[0][0] if heap else np.inf
            if not heap:
                self.read_sum[de] = self.attn_sum[de] = 0.0  # no rounding drift for an empty batch
            self.step[de] = self._step_s(self.count[de], self.read_sum[de], self.attn_sum[de]) if heap else np.inf
        return out

    def _step_s(self, count: int, read_sum: float, attn_sum: float) -> float:
        """``decode_terms`` of the batch, with the terms its size alone sets (``BATCH_TERMS``) computed once per size
        and kept, as the compiled engine keeps them (``sim.compiled.queues.decode_step``)."""
        kept = self.batch_terms.get(int(count))
        if kept is None:
            decode_batch_terms(float(count), self.params, self.terms)
            self.batch_terms[int(count)] = self.terms[BATCH_ROWS].copy()
        else:
            self.terms[BATCH_ROWS] = kept
        return decode_step_terms(float(count), read_sum, attn_sum, self.params, self.terms)
