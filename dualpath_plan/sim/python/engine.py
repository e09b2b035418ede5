"""The fluid engine's request lifecycle: every transition of an agent turn, driven by ``sim.python.loop.Clock``.

One agent has at most one turn in flight, so a request is named by its agent; between its turns it may wait
for its tools (``sim.waits``; zero in the paper's method, §8.2). A turn moves through (paper sections 4-6; DESIGN section 6):

1. **wait** in the prefill queue, then the decode queue (the policy assigns a PE, then a DE and
   the read side, at engine-group fetches);
2. **read** its hit KV from storage into the chosen node's DRAM buffer (full blocks, PE or DE path
   1-2). A node's read queue is FIFO; its head is admitted (starts reading) while the node has less than
   its read window admitted (one step of its SNIC's line rate, ``Layout.read_window_bytes``: a storage
   client keeps its link busy with that much outstanding and allocates buffer only for it) and there is
   room: in that buffer for the read, and in the DE buffer for everything of the request that will land
   there (hit KV on either path plus miss KV), reserved at the same time. A request holding buffer space
   can then always finish, so no transfer ever waits on a buffer held by requests queued behind it (no
   deadlock). Reads on both paths share the DE buffer, so its room goes to the heads of the read queues in
   the order they asked for it (a ticket per DE node, taken when a read first asks at the head of its
   queue): without an order, reads on the PE side, whose own FIFO drains first, took every freed byte of a
   small decode side's buffer and the DE path starved. Tickets taken when reads *start* (this project's
   earlier reading) chained the queues of the whole cluster: a head waited for an older read queued behind
   another node's head, which waited for another; at 12P24D 30-35 of the 36 heads were blocked that way while
   the buffers still had room. With layer-wise prefill a turn with nothing to read reserves its DE-buffer
   space when it joins a forward batch (without, step 3). With a DRAM tier that holds the agent's KV (``sim.tier``)
   there is nothing to read either: the hit streams from the pool in the forward batch (layer-wise; it takes its
   DE-buffer room only while no read waits in that buffer's line) or in its load (step 3, through its PE's tier pipe,
   which takes that room in the line before PE HBM);
3. without layer-wise prefill (``basic``), **load** the whole hit KV into PE HBM (PE path 3-4),
   admitted when the PE's HBM has room. Every turn reserves its DE-buffer room before it takes PE HBM,
   so a turn with nothing to read makes an empty read on its PE node here, which reserves that room in the
   read queue's order. Reserved later, when its batch formed, first rounds holding PE HBM waited for DE-buffer
   room held by reads queued behind them for that PE HBM (``basic`` on 3P3D with 2,048 agents stopped at
   t = 457 s, before issue 22 too);
4. **prefill** in a forward batch of its PE: compute plus, with layer-wise prefill, the per-layer
   hit-KV stream into PE HBM (PE 3-4 or DE 3-5) and the KV sent on to the DE buffer (PE 5-7: hit +
   miss; DE path: miss only), one coupled flow that ends when its slowest part ends; a chunked
   request returns to the head of its PE's queue;
5. **H2D** from the DE buffer into DE HBM (PE 8-9 / DE 6-7), admitted when the DE's HBM has room;
6. **decode** its generated tokens in the DE's batch;
7. **write back** its new KV (exact accounting: miss + generated tokens, DE HBM -> DRAM -> SNIC);
   then the agent's next turn arrives, at once or after the round's tool time (``sim.waits``), and the sub-agents
   forked at this round are released.

With ``io_free`` (the oracle) steps 2, 3, 5, 7 and the transfers of 4 carry no bytes.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import TYPE_CHECKING, Iterator

import numpy as np

from dualpath_plan.bounds.steptime import N_TERMS, prefill_terms
from dualpath_plan.sim.layout import COMPUTE, DE_GPU, DE_NODE, PE_GPU, PE_NODE, ROUTES, Layout, attention_flops, decode_attn_seconds, decode_read_bytes
from dualpath_plan.sim.python.policies import Decisions, Fetch, SchedView, batch_all, batch_by_quota
from dualpath_plan.sim.python.state import H2D, LOAD, READ_DE, READ_PE, WB, DecodeSet, Pipes
from dualpath_plan.sim.rules import Features
from dualpath_plan.sim.pipes import NOT_NOW, NOT_THIS_ROUND, TAKEN
from dualpath_plan.sim.python.tier import Lru
from dualpath_plan.sim.waits import fork_children
from dualpath_plan.sim.stages import BATCH_WAIT, BUFFER_ROOM, DE_ASSIGN, DECODE, N_STAGES, NONE, PE_ASSIGN, PREFILL, READ_QUEUE, SERVING, WAITING_BY_TAG
from dualpath_plan.model.workload import Trajectories

if TYPE_CHECKING:
    from dualpath_plan.model.profiles import Model

_UNIT = {PE_NODE: 0, PE_GPU: 1, DE_NODE: 2, DE_GPU: 3}


class Engine:
    """All mutable state of one run and the transitions between stages (module docstring)."""

    def __init__(self, layout: Layout, model: Model, traj: Trajectories, view: SchedView, features: Features, exact: bool, quota_s: float,
                 dt: float) -> None:
        self.L, self.model, self.traj, self.view, self.feat, self.quota_s = layout, model, traj, view, features, quota_s
        self.read_window = layout.read_window_bytes(dt).tolist()
        self.prefill_params, self.terms = layout.prefill_pass.vector, np.zeros(N_TERMS)
        kv = layout.kv_bytes_per_token
        self.kv_hit = 0.0 if features.io_free else kv
        self.kv_miss = self.kv_wb = kv if (exact and not features.io_free) else 0.0
        self.pipes, self.dec = Pipes(layout), DecodeSet(layout)
        table = {name: tuple((layout.start[k], _UNIT[w], c) for k, w, c in hops) for name, hops in ROUTES.items()}
        self._routes = (table["kv_out"], table["stream_pe"], table["stream_de"]) if features.layerwise else (table["kv_out"],)
        n, rounds = traj.n_agents, traj.n_rounds
        # Per-agent state of the current turn, as Python lists: the transitions read and write one
        # agent at a time, where list items cost a fraction of numpy scalars.
        self.round = traj.offsets[:-1].tolist()
        self.last_round = (traj.offsets[1:] - 1).tolist()
        # schema v2 (sim.waits); empty when unused, so that a paper-method run of millions of rounds holds no more
        self.tool_s = traj.tool_s.tolist() if traj.tool_s.any() else []
        self.fork_delay_s = traj.fork_delay_s.tolist() if traj.n_forks else []
        ptr, kids = fork_children(traj)
        self.child_ptr, self.child_agent = ptr.tolist(), kids.tolist()
        self.waiting: list[tuple[float, int]] = []  # agents between turns: (arrival of the next turn, agent), a heap (sim.waits)
        self.miss, self.gen = [0] * n, [0] * n
        self.hit_b, self.debuf_b, self.wb_b = [0.0] * n, [0.0] * n, [0.0] * n  # bytes of the current turn
        self.read_b = [0.0] * n  # HBM bytes the current turn's sequence reads per decode step
        self.attn_s = [0.0] * n  # decode attention compute seconds per step of the current turn's sequence
        self.de_of, self.de_frac = [0] * n, [0.0] * n
        self.done_tok, self.reads_left = [0] * n, [0] * n
        self.de_reserved = [False] * n
        # DE-buffer room is granted in the order the heads of the read queues ask for it (a ticket per DE node, -1:
        # none asked yet): module docstring, step 2
        self.de_ticket, self.de_issued, self.de_served = [-1] * n, [0] * layout.D, [0] * layout.D
        # where each turn is (sim.stages; NONE: no turn in flight) and, per stage, its requests then its prompt tokens
        self.stage_of, self.stage_load = [NONE] * n, [0.0] * (2 * N_STAGES)
        self.pair_waiting = [False] * n  # both reads of a split request wait to be admitted together
        self.buf_used = [0.0] * (layout.P + layout.D)  # DRAM buffer bytes held, per node
        self.pe_hbm = [0.0] * layout.n_pe  # basic only: KV held in PE HBM
        self.de_hbm = [0.0] * layout.n_de  # KV held in DE HBM
        self.ready: list[deque] = [deque() for _ in range(layout.n_pe)]
        self.wanting: set[int] = set()  # PEs that may be able to start a batch
        self.batch_members: list[list[tuple[int, int]]] = [[] for _ in range(layout.n_pe)]
        self.batch_res: list[np.ndarray | None] = [None] * layout.n_pe
        self.batch_coef: list[np.ndarray | None] = [None] * layout.n_pe
        self.batch_weight, self.batch_prog = np.ones(layout.n_pe), np.zeros(layout.n_pe)
        self.active: set[int] = set()
        self.batches_changed = True
        self.instant: list[int] = []  # batches with no work, done at formation
        self.rec = {k: np.full(rounds, np.nan) for k in ("arrive", "first", "dec_start", "dec_end", "done")}
        self.rec_frac, self.rec_flops = np.zeros(rounds), np.zeros(rounds)
        # a DRAM tier (sim.tier): the LRU, whether the current turn's hit comes from it, and per round whether it did
        self.tier = layout.tier and not features.io_free
        self.lru = Lru(layout.tier_bytes) if self.tier else None
        self.tier_hit = [False] * n
        self.rec_tier = np.zeros(rounds)
        self.tier_hops = self.pipes.routes(self.pipes.tier0, layout.n_pe) if self.tier else []  # each PE's tier pipe's route
        self.finished = self.rounds_done = 0
        self.now: float | None = None  # when the transition being handled happened (None: at the step's start)
        self.late_pipes: list[tuple[int, float]] = []  # idle pipes given work at a known time: (pipe, when)

    # --- 1. arrival and assignment ------------------------------------------------------------------

    def start_turns(self, agents: np.ndarray, t: np.ndarray | float) -> None:
        """The current round of each of ``agents`` arrives at ``t`` and joins the prefill queue."""
        v, L, traj = self.view, self.L, self.traj
        r = np.array([self.round[a] for a in agents.tolist()], dtype=np.int64)
        hit, miss, gen = traj.context_tokens[r], traj.append_tokens[r], traj.gen_tokens[r]
        ctx = hit + miss + gen / 2.0  # mean context while decoding, as decode.py
        read = decode_read_bytes(self.model, ctx)
        attn = decode_attn_seconds(L, self.model.sparse_topk_tokens, ctx)
        self.rec["arrive"][r] = t
        kv_hit, kv_miss, kv_wb, per_token = self.kv_hit, self.kv_miss, self.kv_wb, L.hbm_held_per_token
        when = np.broadcast_to(t, agents.shape).tolist()
        for a, h, m, g, rb, at, ta in zip(agents.tolist(), hit.tolist(), miss.tolist(), gen.tolist(), read.tolist(), attn.tolist(), when):
            v.hit[a], v.length[a], v.need[a], v.arrive[a] = h, h + m, (h + m + g) * per_token, ta
            self.miss[a], self.gen[a], self.done_tok[a] = m, g, 0
            hb = h * kv_hit
            self.hit_b[a], self.debuf_b[a], self.wb_b[a], self.read_b[a], self.attn_s[a] = hb, hb + m * kv_miss, (m + g) * kv_wb, rb, at
            self.stage(a, PE_ASSIGN)
            self._join_prefill_queue(a)

    def _join_prefill_queue(self, a: int) -> None:
        """Turn ``a`` joins the prefill queue behind every request that arrived at or before it, so the queue is in
        arrival order and a fetch takes the requests that had arrived by its due time from its head
        (``policies.arrived``). Turns arrive in a step in the order their write-backs are handled (by pipe), not by
        time; a new agent arriving online joins at the step's start, behind turns of the step before that arrived
        after it: both find their place from the tail."""
        q, arrive = self.view.pe_wait, self.view.arrive
        t, i = arrive[a], len(q)
        while i > 0 and arrive[q[i - 1]] > t:
            i -= 1
        q.insert(i, a)

    def stage(self, a: int, s: int) -> None:
        """Turn ``a`` moves to stage ``s`` (``sim.stages``): the per-stage requests and prompt tokens follow it."""
        old, load, length = self.stage_of[a], self.stage_load, self.view.length[a]
        if old == s:
            return
        if old != NONE:
            load[old] -= 1.0
            load[N_STAGES + old] -= length
        if s != NONE:
            load[s] += 1.0
            load[N_STAGES + s] += length
        self.stage_of[a] = s

    def apply(self, dec: Decisions, fetch: Fetch) -> None:
        """Carry out a policy's decisions (the policy only chooses; the engine keeps the books)."""
        v = self.view
        if dec.rr is not None:
            v.rr = dec.rr
        for req, pe in dec.pe:
            v.pe_wait.popleft()
            v.pe_of[req] = pe
            v.pe_tok[pe] += v.length[req]
            v.pe_seq[pe] += 1
            v.de_wait.append(req)
            self.stage(req, DE_ASSIGN)
        if dec.to_group:
            v.de_wait.clear()
            for req, g in dec.to_group:
                v.de_private[g].append(req)
                v.group_queued[g] += v.length[req]
        if dec.de:
            self._apply_de(dec, fetch)

    def _apply_de(self, dec: Decisions, fetch: Fetch) -> None:
        v = self.view
        private = dec.de_source == "private"
        source = v.de_private[fetch.group] if private else v.de_wait
        for req, de, frac in dec.de:
            source.popleft()
            length = v.length[req]
            if private:
                v.group_queued[fetch.group] -= length
            self.de_of[req], self.de_frac[req] = de, frac
            v.de_tok[de] += length
            v.de_seq[de] += 1
            self.start_reads(req)

    # --- 2-3. reads and loads ----------------------------------------------------------------------

    def start_reads(self, a: int) -> None:
        """Offer turn ``a``'s storage read(s) to the chosen side(s); with a DRAM tier that holds its KV (``sim.tier``), none."""
        total, L = self.hit_b[a], self.L
        hit = self.tier and total > 0 and self.lru.ask(a, total)
        self.tier_hit[a] = hit
        if hit:
            self.de_frac[a], total = 0.0, 0.0  # read from the pool, in its forward batch or its load
            self.rec_tier[self.round[a]] = 1.0
        f = self.de_frac[a]
        self.rec_frac[self.round[a]] = f
        parts = ((self.view.pe_of[a] // L.g_pe, total * (1 - f), READ_PE), (L.P + self.de_of[a] // L.g_de, total * f, READ_DE))
        parts = [p for p in parts if p[1] > 0]
        if not parts and not self.feat.layerwise and self.debuf_b[a] > 0 and not hit:  # nothing to read: an empty read reserves the DE buffer (step 3)
            parts = [(self.view.pe_of[a] // L.g_pe, 0.0, READ_PE)]
        self.reads_left[a] = len(parts)
        self.de_ticket[a] = -1
        if len(parts) == 2:
            self._offer_pair(a, parts[0][1], self.pipes.read0 + parts[0][0], parts[1][1], self.pipes.read0 + parts[1][0])
        for node, size, tag in parts if len(parts) == 1 else ():
            self.offer(self.pipes.read0 + node, a, size, tag)
        if not parts:
            self.read_done(a)

    def _offer_pair(self, a: int, pe_size: float, pe_pipe: int, de_size: float, de_pipe: int) -> None:
        """A read split across both sides is admitted to both node pipes at once, with room for the whole
        request, or both parts wait. Admitted one by one, a part holding buffer room could wait behind
        a request whose other part waits for that room, on the other side: a deadlock. Both parts of
        every split request are queued together, so the oldest waiting request heads both its pipes and
        is admitted as soon as there is room."""
        pipes = self.pipes
        self.stage(a, READ_QUEUE)
        if (not pipes.queue[pe_pipe] and not pipes.queue[de_pipe] and not self._window_full(de_pipe)
                and self._take_room(pe_pipe, a, pe_size, READ_PE) == TAKEN):
            self._admit(pe_pipe, a, pe_size, READ_PE)  # the DE part needs no more room: the DE buffer is reserved
            self._admit(de_pipe, a, de_size, READ_DE)
            return
        pipes.enqueue(pe_pipe, a, pe_size, READ_PE)
        pipes.enqueue(de_pipe, a, de_size, READ_DE)
        self.pair_waiting[a] = True

    def _admit_pair_head(self, pipe: int, a: int) -> int:
        """Admit split request ``a`` at the head of ``pipe`` if it heads its other pipe too and its room fits; answers as
        :meth:`_take_room` (NOT_NOW while the other part does not head its pipe: an admission may bring it there)."""
        pipes, L = self.pipes, self.L
        pe_pipe, de_pipe = pipes.read0 + self.view.pe_of[a] // L.g_pe, pipes.read0 + L.P + self.de_of[a] // L.g_de
        other = de_pipe if pipe == pe_pipe else pe_pipe
        head = pipes.head(other)
        if head is None or head[0] != a:
            return NOT_NOW
        if self._window_full(de_pipe):
            return NOT_THIS_ROUND
        if (got := self._take_room(pe_pipe, a, pipes.head(pe_pipe)[1], READ_PE)) != TAKEN:
            return got
        pipes.admit_head(pe_pipe)
        pipes.admit_head(de_pipe)
        self.pair_waiting[a] = False
        self.stage(a, SERVING[READ_PE])
        return TAKEN

    def read_done(self, a: int) -> None:
        pe = self.view.pe_of[a]
        if self.feat.layerwise:
            self.ready[pe].append(a)
            self.wanting.add(pe)
            self.stage(a, BATCH_WAIT)
        else:  # the whole KV into PE HBM: from the PE buffer, or a tier hit's from the pool
            self.offer((self.pipes.tier0 if self.tier_hit[a] else self.pipes.load0) + pe, a, self.hit_b[a], LOAD)

    def load_done(self, a: int) -> None:
        pe = self.view.pe_of[a]
        if not self.tier_hit[a]:
            self.buf_used[pe // self.L.g_pe] -= self.hit_b[a]
        self.ready[pe].append(a)
        self.wanting.add(pe)
        self.stage(a, BATCH_WAIT)

    def offer(self, pipe: int, a: int, size: float, tag: int) -> None:
        """Admit an item at once if its pipe has nobody waiting and there is room, else queue it (FIFO)."""
        self.stage(a, WAITING_BY_TAG[tag])
        if not self.pipes.queue[pipe] and self._take_room(pipe, a, size, tag) == TAKEN:
            self._admit(pipe, a, size, tag)
        else:
            self.pipes.enqueue(pipe, a, size, tag)

    def _admit(self, pipe: int, a: int, size: float, tag: int) -> None:
        if self.now is not None and not self.pipes.inflight[pipe] and size > 0:  # an empty item starts no flow: no late capacity
            self.late_pipes.append((pipe, self.now))
        self.pipes.admit(pipe, a, size, tag)
        self.stage(a, SERVING[tag])

    def admit(self) -> int:
        """Admit the head items of every waiting pipe while there is room, in passes over the pipes until
        one admits nothing (an admission on a later pipe can unblock an earlier one); return how many.

        A pass asks only the pipes the pass before left waiting, in pipe order: while the passes run nothing is
        queued, and a pipe whose head got NOT_THIS_ROUND (``sim.pipes``) would get it again, changing nothing (its
        stage is set already; a DE-buffer ticket is taken at most once), so both drop out."""
        total, waiting = 0, sorted(self.pipes.blocked)
        while waiting:
            count, waiting = self._admit_pass(waiting)
            if not count:
                break
            total += count
        return total

    def _admit_pass(self, waiting: list[int]) -> tuple[int, list[int]]:
        """One pass over the pipes ``waiting``: how many items it admitted, and the pipes left to ask."""
        count, pipes, left = 0, self.pipes, []
        for pipe in waiting:
            got = TAKEN
            while (item := pipes.head(pipe)) is not None:
                if self.pair_waiting[item[0]]:
                    if (got := self._admit_pair_head(pipe, item[0])) != TAKEN:
                        break
                    count += 2
                    continue
                if (got := self._take_room(pipe, *item)) != TAKEN:
                    break
                pipes.admit_head(pipe)
                self.stage(item[0], SERVING[item[2]])
                count += 1
            if pipes.head(pipe) is not None and got != NOT_THIS_ROUND:
                left.append(pipe)
        return count, left

    def _take_room(self, pipe: int, a: int, size: float, tag: int) -> int:
        """Reserve the buffer or HBM room an item needs: TAKEN, or NOT_NOW or NOT_THIS_ROUND (``sim.pipes``; nothing
        reserved) if it does not fit. A read is admitted only while its node's read window has room (module
        docstring, step 2); a read that finds no buffer room is in stage ``buffer_room`` until it does."""
        L, buf = self.L, self.buf_used
        if tag == READ_PE or tag == READ_DE:
            if self._window_full(pipe):
                self.stage(a, READ_QUEUE)
                return NOT_THIS_ROUND
            node, de_node = pipe - self.pipes.read0, L.P + self.de_of[a] // L.g_de
            own = size if tag == READ_PE else 0.0
            de_need = self._de_turn(a)
            if de_need is None:
                self.stage(a, BUFFER_ROOM)
                return NOT_NOW
            if buf[node] + own > L.buffer_bytes or buf[de_node] + de_need > L.buffer_bytes:
                self.stage(a, BUFFER_ROOM)
                return NOT_THIS_ROUND
            buf[node] += own
            self._take_de(a, de_need)
        elif tag == LOAD:
            pe = self.view.pe_of[a]
            if self.tier_hit[a]:  # a tier hit, which reads nothing, reserves its DE-buffer room here first (sim.tier)
                de_need = self._de_turn(a)
                if de_need is None:
                    return NOT_NOW
                if buf[L.P + self.de_of[a] // L.g_de] + de_need > L.buffer_bytes:
                    return NOT_THIS_ROUND
                self._take_de(a, de_need)
            if self.pe_hbm[pe] + self.debuf_b[a] > L.pe_hbm_kv_bytes:
                return NOT_THIS_ROUND
            self.pe_hbm[pe] += self.debuf_b[a]
        elif tag == H2D:  # the DE allocates HBM at decode start (paper §4.1, notes 3); its report of free HBM drops
            de, need = pipe - self.pipes.h2d0, self.view.need[a]
            if self.de_hbm[de] + need > L.de_hbm_kv_bytes:
                return NOT_THIS_ROUND
            self.de_hbm[de] += need
            self.view.de_free[de] -= need
        return TAKEN

    def _de_turn(self, a: int) -> float | None:
        """The DE-buffer room turn ``a`` still needs (0: none, or reserved), once it is the oldest asking in its DE node's
        line (module docstring, step 2: it takes its ticket when it first asks); ``None`` while an older one waits."""
        need = 0.0 if self.de_reserved[a] else self.debuf_b[a]
        if need > 0:
            j = self.de_of[a] // self.L.g_de
            if self.de_ticket[a] < 0:  # the head asks this DE buffer for room: its place in line
                self.de_ticket[a], self.de_issued[j] = self.de_issued[j], self.de_issued[j] + 1
            if self.de_ticket[a] != self.de_served[j]:  # an older head waits for this DE buffer
                return None
        return need

    def _take_de(self, a: int, need: float) -> None:
        """Reserve ``need`` (:meth:`_de_turn`'s) in turn ``a``'s DE buffer; its line moves on."""
        j = self.de_of[a] // self.L.g_de
        self.buf_used[self.L.P + j] += need
        if need > 0:
            self.de_served[j] += 1
        self.de_reserved[a] = True

    def _window_full(self, pipe: int) -> bool:
        """Whether read pipe ``pipe`` has its read window admitted already (``Layout.read_window_bytes``)."""
        pipes = self.pipes
        return bool(pipes.admitted[pipe] - pipes.served[pipe] >= self.read_window[pipe - pipes.read0])

    # --- 4. forward batches ------------------------------------------------------------------------

    def attn_time(self, cached: float, tokens: int) -> float:
        """Predicted attention time of ``tokens`` new tokens after ``cached`` ones (paper §6 intra-engine scheduling, notes 4.5): from the
        theoretical FLOPs, each new token attending to ``cached + tokens / 2`` keys on average (the new
        tokens attend to each other too; the FLOPs charged follow compute.F, as the LP) at the attention kernel's rate."""
        return attention_flops(self.model, cached + tokens / 2.0, tokens) / self.L.attn_flops_per_s

    def _candidates(self, pe: int) -> Iterator[tuple[int, float, int]]:
        """Ready requests of ``pe`` in order as (request, cached, tokens left). One without DE-buffer space
        yet (with layer-wise prefill, a turn that had nothing to read: an agent's first round) joins only if the
        space can be reserved now; it takes no ticket (``_take_room``), so it may take freed room ahead of the
        read queues' heads, a small exception. A DRAM tier's hit (most turns, with a tier that holds the agents) takes
        it only while no read waits in that buffer's line."""
        L, buf = self.L, self.buf_used
        for a in self.ready[pe]:
            if not self.de_reserved[a] and self.debuf_b[a] > 0:
                node = L.P + self.de_of[a] // L.g_de
                if buf[node] + self.debuf_b[a] > L.buffer_bytes:
                    continue
                if self.tier_hit[a] and self.de_issued[node - L.P] != self.de_served[node - L.P]:  # a read waits in line
                    continue
                buf[node] += self.debuf_b[a]
                self.de_reserved[a] = True
            yield a, self.view.hit[a] + self.done_tok[a], self.miss[a] - self.done_tok[a]

    def form_batches(self) -> int:
        """Every idle PE with ready requests starts a forward batch (the policy's batching rule)."""
        started = 0
        for pe in sorted(self.wanting):
            self.wanting.discard(pe)
            if self.batch_members[pe] or not self.ready[pe]:
                continue
            items = self._candidates(pe)
            members = batch_by_quota(items, self.attn_time, self.quota_s) if self.feat.layerwise else batch_all(items)
            if members:
                self._take(pe, members)
                started += 1
            else:
                self.wanting.add(pe)  # nothing could reserve its DE buffer: retry next step
        return started

    def _take(self, pe: int, members: list[tuple[int, int]]) -> None:
        queue, n = self.ready[pe], len(members)
        if all(queue[i] == a for i, (a, _) in enumerate(members)):
            for _ in range(n):
                queue.popleft()
        else:
            chosen = {a for a, _ in members}
            self.ready[pe] = deque(a for a in queue if a not in chosen)
        self.batch_members[pe] = members
        for a, _chunk in members:
            self.stage(a, PREFILL)
        res, coef, byte_max = self._batch_entries(pe, members)
        if res.size == 0:
            self.instant.append(pe)
            return
        self.batch_res[pe], self.batch_coef[pe] = res, coef
        self.batch_weight[pe] = 1.0 / byte_max if byte_max > 0 else 1.0 / coef.max()
        self.batch_prog[pe] = 0.0
        self.active.add(pe)
        self.batches_changed = True

    def _batch_entries(self, pe: int, members: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, float]:
        """Resources one batch crosses and its total demand on each (bytes for links; for compute, the
        pass time of ``steptime.prefill_terms`` times the compute's peak FLOP/s, so that the batch alone
        takes exactly its pass time).

        Plain Python over the members: batches hold few requests, where numpy calls cost more than the
        arithmetic. A chunk streams the share of the hit KV equal to its share of the miss tokens."""
        L, m, layerwise = self.L, self.model, self.feat.layerwise
        demand: dict[int, float] = {}
        tokens, attn, requests = 0.0, 0.0, 0.0
        for a, chunk in members:
            miss, hit, de = self.miss[a], self.view.hit[a], self.de_of[a]
            hit_c = self.hit_b[a] * (chunk / miss if miss > 0 else 1.0)
            f, units = self.de_frac[a], (pe // L.g_pe, pe, de // L.g_de, de)
            tier = self.tier_hit[a]
            pe_part = hit_c * (1 - f) if layerwise and not tier else hit_c
            amounts = (pe_part + chunk * self.kv_miss, 0.0 if tier else hit_c * (1 - f), hit_c * f)
            for hops, amount in zip(self._routes, amounts):
                if amount > 0:
                    for start, unit, count in hops:
                        r = start + units[unit]
                        demand[r] = demand.get(r, 0.0) + count * amount
            if tier and layerwise and hit_c > 0:  # the hit streams from the pool (layout.TIER_ROUTES)
                for r, coef in self.tier_hops[pe]:
                    demand[r] = demand.get(r, 0.0) + coef * hit_c
            tokens += chunk
            attn += attention_flops(m, hit + self.done_tok[a], chunk)
            requests += 1.0
        byte_max = max(demand.values(), default=0.0)
        work = prefill_terms(tokens, attn, requests, self.prefill_params, self.terms) * L.prefill_flops_per_s
        if work > 0:
            demand[L.start[COMPUTE] + pe] = work
            for a, chunk in members:  # each turn is charged its tokens' share of the pass
                self.rec_flops[self.round[a]] += work * (chunk / tokens)
        return np.fromiter(demand, dtype=np.int64, count=len(demand)), np.fromiter(demand.values(), dtype=float, count=len(demand)), byte_max

    def batch_done(self, pe: int, t: float) -> None:
        """A forward batch ends at ``t``: finished requests go on to H2D, a chunked one back to the head."""
        v, L, h2d0 = self.view, self.L, self.pipes.h2d0
        for a, chunk in reversed(self.batch_members[pe]):
            self.done_tok[a] += chunk
            if self.done_tok[a] < self.miss[a]:
                self.ready[pe].appendleft(a)
                self.stage(a, BATCH_WAIT)
                continue
            self.rec["first"][self.round[a]] = t
            v.pe_tok[pe] -= v.length[a]
            v.pe_seq[pe] -= 1
            if self.feat.layerwise:
                if not self.tier_hit[a]:
                    self.buf_used[pe // L.g_pe] -= self.hit_b[a] * (1 - self.de_frac[a])
            else:
                self.pe_hbm[pe] -= self.debuf_b[a]
            self.offer(h2d0 + self.de_of[a], a, self.debuf_b[a], H2D)
        self.batch_members[pe] = []
        self.batch_res[pe] = self.batch_coef[pe] = None
        self.wanting.add(pe)
        if pe in self.active:
            self.active.discard(pe)
            self.batches_changed = True

    # --- 5-7. H2D, decode, write-back --------------------------------------------------------------

    def h2d_done(self, a: int, t: float, rest_s: float = 0.0) -> None:
        """Turn ``a``'s KV is in DE HBM at ``t``: its DE buffer space is freed and it starts decoding
        (``rest_s`` of the current step is left: it decodes during that time too)."""
        de = self.de_of[a]
        if self.de_reserved[a]:
            self.buf_used[self.L.P + de // self.L.g_de] -= self.debuf_b[a]
            self.de_reserved[a] = False
        self.rec["dec_start"][self.round[a]] = t
        self.stage(a, DECODE)
        ends_in = self.dec.join(a, de, self.gen[a], self.read_b[a], self.attn_s[a], rest_s)
        if ends_in is not None:  # done inside this step: its write-back becomes ready then, not at the H2D's end
            now = self.now
            self.now = None if now is None else t + ends_in
            self.decode_done(a, t + ends_in)
            self.now = now

    def decode_done(self, a: int, t: float) -> None:
        """Turn ``a`` made its last token at ``t``: its new KV is written back (needs no room: never queued)."""
        self.rec["dec_end"][self.round[a]] = t
        self._admit(self.pipes.wb0 + self.de_of[a], a, self.wb_b[a], WB)

    def writeback_done(self, a: int, t: float) -> bool:
        """The turn is over: HBM is freed and the DE's report drops it. Returns whether the agent's next turn arrives
        now (after tool time it waits in ``waiting``); forks of this round join ``waiting``."""
        v, de, need = self.view, self.de_of[a], self.view.need[a]
        if self.tier:  # its new KV is in the pool too (sim.tier)
            self.lru.written(a, (v.length[a] + self.gen[a]) * self.kv_hit, (self.miss[a] + self.gen[a]) * self.kv_hit)
        self.de_hbm[de] -= need
        v.de_free[de] += need
        v.de_tok[de] -= v.length[a]
        v.de_seq[de] -= 1
        self.stage(a, NONE)
        r = self.round[a]
        self.rec["done"][r] = t
        self.rounds_done += 1
        if self.child_ptr:
            for k in range(self.child_ptr[r], self.child_ptr[r + 1]):  # sub-agents forked at this round (sim.waits)
                child = self.child_agent[k]
                heapq.heappush(self.waiting, (t + self.fork_delay_s[child], child))
        if r < self.last_round[a]:
            self.round[a] = r + 1
            if self.tool_s and self.tool_s[r] > 0:  # the agent's tools run first (sim.waits)
                heapq.heappush(self.waiting, (t + self.tool_s[r], a))
                return False
            return True
        self.finished += 1
        return False
