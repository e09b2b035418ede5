"""State of the compiled fluid engine: every array of one run, in two arenas the kernels share.

The compiled engine (``sim.compiled.queues``, ``sim.compiled.engine``, ``sim.compiled.policies``, ``sim.compiled.loop``) is the same
machine as the Python one (``sim.python.engine``, ``sim.python.state``, ``sim.python.late``, ``sim.python.loop``,
``sim.python.policies``), step for step and in the same order of arithmetic; this module lays its state out as
flat numpy arrays so that numba can compile it:

* **Scalars** live in small arrays indexed by the constants below: ``ip`` (int settings), ``fp``
  (float settings), ``mi`` and ``mf`` (int and float counters that change).
* **Queues of requests** (the prefill queue, the global and per-group decode queues, each prefill
  engine's ready queue) are one doubly linked list per queue over the agents: an agent is in at most
  one queue at a time (links ``AI_Q_NEXT``/``AI_Q_PREV`` of ``agent_i``, ``q_head``/``q_tail``/``q_len``).
* **Pipe items** are slots ``2 * agent`` (every tag but ``READ_DE``) and ``2 * agent + 1`` (``READ_DE``):
  one agent has at most one item of each kind at a time. Each pipe has a waiting and an in-flight FIFO,
  singly linked through ``it_next``.
* **Decode batches** are pairing heaps over the agents (``dh_*``): smallest (end count, agent) first, the
  order ``heapq`` gives the Python engine's ``(end, req, read)`` tuples.
* **Per round**, two rows: its token counts (hit, miss, generated; ``r_tok``, RT_W ints) and its records
  (``rec``, REC_W floats). ``rec`` and the int field ``agent_i`` start on a cache line, and ``agent_f`` and
  ``r_tok`` follow them, so a round's record row is one line and its token row at most two. An agent reads
  its tokens through its current round; ``loop.touch_next_rounds`` loads the next round's token rows of all
  agents whose write-back completed in a step together, before any of them starts. A turn's record is kept in
  its agent's float row while the turn runs (``AF_REC``: the events of a turn come seconds apart, and a round's
  row, one of millions, would be out of the caches at each) and copied to ``rec`` when the turn ends
  (``engine.writeback_done``), and for the turns still running whenever a run chunk returns
  (``loop.flush_records``).
* **Per agent**, two rows: ``agent_f`` (AF_W floats: the quantities the Python engine derives per agent at
  arrival, bytes, HBM need, decode read, its DE-read share, then the current turn's record) and ``agent_i`` (AI_W ints: round, PE, DE, tokens,
  reads left, reservations, queue links, ...). They are written when the turn starts (``engine.start_turn``)
  with the same arithmetic, so a run of millions of turns holds them once per agent, not once per round, and
  what a turn's events read and write for one agent sits in three cache lines, not in 21 arrays (8 MB on 48P96D,
  far beyond a core's L2 cache). The kernels see each field as a strided view over
  the agents (``queues.fa_agent``, ``ia_agent``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from dualpath_plan.sim.pipes import H2D, LOAD, READ_DE, READ_PE, WB  # noqa: F401 (the item tags, shared with the Python engine)

# ip: int settings
(IP_P, IP_D, IP_G_PE, IP_G_DE, IP_N_PIPES, IP_LOAD0, IP_H2D0, IP_WB0, IP_LAYERWISE, IP_N_ROUTES, IP_N_AGENTS, IP_POLICY,
 IP_COMPUTE0, IP_N_PIPE_ENTRIES, IP_TIER, IP_TIER0) = range(16)  # IP_TIER: a DRAM tier (sim.tier); IP_TIER0: its first pipe
N_IP = 16
# fp: float settings
(FP_BUFFER, FP_PE_HBM, FP_DE_HBM, FP_KV, FP_KV_MISS, FP_ATTN_RATE, FP_PEAK, FP_DT, FP_PERIOD, FP_QUOTA, FP_BETA,
 FP_DE_FRACTION, FP_ATTN_PER_CTX, FP_SPARSE_PER_KEY, FP_TOPK, FP_WINDOW_S, FP_STALL_S, FP_KV_HIT, FP_HBM_PER_TOKEN,
 FP_READ_LAYOUT, FP_READ_INDEXER, FP_READ_SPARSE, FP_DEC_ATTN_CTX, FP_DEC_ATTN_KEY, FP_TIER_BYTES) = range(25)
N_FP = 25
# mi: int counters
(MI_FINISHED, MI_ROUNDS_DONE, MI_NEXT_ARRIVAL, MI_STEPS, MI_BATCHES_CHANGED, MI_RR_PE, MI_RR_SIDE, MI_N_INSTANT,
 MI_HAVE_ALLOC, MI_HAVE_STEP, MI_HAVE_PREV, MI_ANY_SPAN, MI_N_WINDOWS, MI_N_FLOWS, MI_N_ENTRIES, MI_N_IDS,
 MI_STEP_BONUS, MI_N_SCRATCH, MI_POOL_TOP, MI_N_SNAPS, MI_N_WAIT, MI_N_LATE, MI_N_SPAN, MI_N_LATE_RES, MI_LRU_HEAD,
 MI_LRU_TAIL) = range(26)
# MI_N_WAIT: agents in the wait heap; MI_N_LATE, MI_N_SPAN, MI_N_LATE_RES: lengths of late_units, span_units, late_res;
# MI_LRU_HEAD, MI_LRU_TAIL: the DRAM tier's least and most recently used objects (sim.compiled.tier; -1: none)
N_MI = 26
# mf: float counters
(MF_NOW, MF_T, MF_LAST_PROGRESS, MF_WINDOW_END, MF_DECODE_TOKENS, MF_STEP_DECODING, MF_NEXT_REPORT,
 MF_RATIO_SUM, MF_SINK, MF_SNAP_SPACING, MF_SNAP_NEXT, MF_LRU_USED) = range(12)  # MF_SINK: where loop.touch_next_rounds puts the values it loads (never read)
N_MF = 12  # MF_LRU_USED: the DRAM tier's bytes held (Lru.used)

# the fields of a round's record (field ``rec``, REC_W floats per round: every time a turn records sits in one cache
# line, so a turn touches one line of the records, not seven arrays)
REC_ARRIVE, REC_FIRST, REC_DEC_START, REC_DEC_END, REC_DONE, REC_FRAC, REC_FLOPS, REC_TIER = range(8)  # REC_TIER: 1 where a DRAM tier served the hit
REC_W = 8
REC_NAMES = ("arrive", "first", "dec_start", "dec_end", "done", "frac", "flops", "tier")
REC_START = (np.nan, np.nan, np.nan, np.nan, np.nan, 0.0, 0.0, 0.0)  # before the turn: times unknown, nothing charged
# the fields of a round's tokens (field ``r_tok``, RT_W ints per round, read together when the round starts)
RT_HIT, RT_MISS, RT_GEN = range(3)
RT_W = 3

# the fields of an agent's rows (``agent_f``: AF_W floats, ``agent_i``: AI_W ints per agent; each row is one or
# two cache lines, so the state a turn's events read and write for an agent sits together, not in 21 arrays)
# floats: the current turn's HBM need, hit bytes, DE-buffer bytes, write-back bytes and decode read per step (all
# derived in engine.start_turn), and its DE-read share
(AF_NEED, AF_HIT_B, AF_DEBUF_B, AF_WB_B, AF_READ_B, AF_DE_FRAC, AF_ATTN_S, AF_TIER) = range(8)  # AF_ATTN_S: decode attention compute s per step;
# AF_TIER: 1 while the current turn's hit comes from a DRAM tier (Engine.tier_hit)
AF_REC = 8  # then the current turn's record, laid out as a row of ``rec`` (REC_W floats), copied there when the turn ends
AF_W = AF_REC + REC_W  # two cache lines
# ints: prompt length, current and last round, PE and DE, tokens prefilled, reads left, DE buffer reserved, waiting
# as a split pair, place in its DE node's order of buffer reservations (Engine.de_ticket), the current turn's hit,
# miss and generated tokens, and the links of the request queue it is in
(AI_LENGTH, AI_ROUND, AI_LAST_ROUND, AI_PE, AI_DE, AI_DONE_TOK, AI_READS_LEFT, AI_DE_RESERVED, AI_PAIR_WAIT, AI_TICKET,
 AI_HIT, AI_MISS, AI_GEN, AI_Q_NEXT, AI_Q_PREV, AI_STAGE) = range(16)  # AI_STAGE: sim.stages (Engine.stage_of)
AI_W = 16

# policies (ip[IP_POLICY])
POL_RR, POL_RR_SIDES, POL_TWO_LEVEL, POL_TWO_LEVEL_SPLIT = range(4)
# queues: the prefill queue, the global decode queue, then one private decode queue per DE group, then one ready queue per PE
Q_PE_WAIT, Q_DE_WAIT, Q_PRIVATE0 = 0, 1, 2
# return codes of a run chunk
RUN_DONE, RUN_REPORT, RUN_STALLED = range(3)

# Every array of a run is a field of one of two arenas, float64 (``FLOAT``) and int64 (``INT``, bools as
# 0/1); field ``K_NAME`` of an arena is ``arena[offsets[K]:offsets[K + 1]]``. The kernels take
# ``c = (floats, float offsets, ints, int offsets)``: four arrays, however many fields (numba compiles a
# call that passes a hundred separate arrays very slowly). ``sim.compiled.queues.fa(c, K_NAME)`` and ``ia(c, K_NAME)``
# are the views.
FLOAT = tuple("""fp mf rec agent_f p_served p_before p_admitted p_waiting p_head_end p_coef it_size it_end d_V d_before d_gained d_read_sum d_first_end dh_end dh_read buf_used pe_hbm de_hbm pe_tok de_tok de_free group_queued read_q alpha ready_at b_weight b_prog bp_coef capacity budget step_budget inc_coef inc_aw inc_weight work x used active alloc_x alloc_used alloc_active pend_pipe pend_pe span_pipe span_pe prev_budget prev_used share tick_when arrival m_used m_read m_window s_tok s_load s_free s_tok2 s_frac s_amounts s_bcoef rt_count d_step dec_p pre_p terms sh_flow_f sh_res_f s_prog s_rate m_snap_t m_snap st_load m_stage read_window s_detok d_attn_sum dh_attn r_tool a_delay w_time s_start_t lru_size dec_tab""".split())
INT = tuple("""ip mi agent_i r_tok q_head q_tail q_len p_lengths p_res pq_head pq_tail pf_head pf_tail it_next it_tag d_count dh_root dh_link dh_scratch pe_seq de_seq wanting bm_head bm_tail bm_next bm_chunk bm_count b_off b_len b_active instant bp_res inc_flow inc_res inc_starts inc_lengths ids alloc_busy pe_starts tick_side tick_group order s_cls s_pos s_req s_seq s_group s_de s_units s_bres rt_len rt_start rt_unit dq_issued dq_served sh_flow_i sh_res_i s_members s_run c_ptr c_agent w_agent s_start_a late_units span_units late_res late_dense sure lru_link p_starts dec_done s_pipes""".split())
K_FP = 0
K_MF = 1
K_REC = 2  # per round: REC_W floats, the fields REC_ARRIVE ... REC_FLOPS (one record per round, one cache line)
K_AGENT_F = 3  # per agent: AF_W floats, the fields AF_* (one row per agent; follows rec, so aligned too)
K_P_SERVED = 4
K_P_BEFORE = 5
K_P_ADMITTED = 6
K_P_WAITING = 7
K_P_HEAD_END = 8
K_P_COEF = 9
K_IT_SIZE = 10
K_IT_END = 11
K_D_V = 12
K_D_BEFORE = 13
K_D_GAINED = 14
K_D_READ_SUM = 15
K_D_FIRST_END = 16
K_DH_END = 17
K_DH_READ = 18
K_BUF_USED = 19
K_PE_HBM = 20
K_DE_HBM = 21
K_PE_TOK = 22
K_DE_TOK = 23
K_DE_FREE = 24
K_GROUP_QUEUED = 25
K_READ_Q = 26
K_ALPHA = 27
K_READY_AT = 28
K_B_WEIGHT = 29
K_B_PROG = 30
K_BP_COEF = 31
K_CAPACITY = 32
K_BUDGET = 33
K_STEP_BUDGET = 34
K_INC_COEF = 35
K_INC_AW = 36
K_INC_WEIGHT = 37
K_WORK = 38
K_X = 39
K_USED = 40
K_ACTIVE = 41
K_ALLOC_X = 42
K_ALLOC_USED = 43
K_ALLOC_ACTIVE = 44
K_PEND_PIPE = 45
K_PEND_PE = 46
K_SPAN_PIPE = 47
K_SPAN_PE = 48
K_PREV_BUDGET = 49
K_PREV_USED = 50
K_SHARE = 51
K_TICK_WHEN = 52
K_ARRIVAL = 53
K_M_USED = 54
K_M_READ = 55
K_M_WINDOW = 56
K_S_TOK = 57
K_S_LOAD = 58
K_S_FREE = 59
K_S_TOK2 = 60
K_S_FRAC = 61
K_S_AMOUNTS = 62
K_S_BCOEF = 63
K_RT_COUNT = 64
K_D_STEP = 65  # seconds per step of each decode engine's batch (inf: empty), as DecodeSet.step
K_DEC_P = 66  # steptime.DecodeStep.vector
K_PRE_P = 67  # steptime.PrefillPass.vector
K_TERMS = 68  # scratch for the step-time kernels' terms
K_SH_FLOW_F = 69  # scratch of the sharing rule: 4 rows over flows (share.allocate_into)
K_SH_RES_F = 70  # 3 rows over resources
K_S_PROG = 71  # batch progress before a step (loop.advance)
K_S_RATE = 72  # per-node read rates of quiet steps (loop.meter_span)
K_M_SNAP_T = 73  # times of the use-over-time records (metrics.snapshot)
K_M_SNAP = 74  # the records: per record, cumulative use of every resource, decode tokens, stage times (metrics.snapshot)
K_ST_LOAD = 75  # per stage (sim.stages) its requests, then its prompt tokens (Engine.stage_load)
K_M_STAGE = 76  # their integrals over time: request-seconds, then token-seconds (metrics.Meter.stage_time)
K_READ_WINDOW = 77  # bytes each node's read pipe keeps admitted (Layout.read_window_bytes)
K_S_DETOK = 78  # scratch: every DE's tokens during one dispatch (policies.least_tokens)
K_D_ATTN_SUM = 79  # per DE: attention compute seconds per step of its batch (DecodeSet.attn_sum)
K_DH_ATTN = 80  # per sequence in a DE heap: its attention compute seconds per step
K_R_TOOL = 81  # per round: tool time after it, s (sim.waits)
K_A_DELAY = 82  # per agent: a fork's delay after its parent's round, s
K_W_TIME = 83  # the heap of agents between turns (sim.waits): arrival times of their next turns
K_LRU_SIZE = 85  # per agent: the bytes of its object in a DRAM tier (-1: none; sim.compiled.tier)
K_DEC_TAB = 86  # per batch size b (0 ... agents + 1): the decode step's terms b alone sets (steptime.BATCH_TERMS; queues.decode_step)
K_S_START_T = 84  # scratch: the times of the turns a step's write-backs start (loop.pipe_done), by time, or that
# leave the wait heap (loop.waits)
K_IP = 0
K_MI = 1
K_AGENT_I = 2  # per agent: AI_W ints, the fields AI_* (one row per agent, cache-line aligned; r_tok follows it)
K_R_TOK = 3  # per round: RT_W ints, its hit, miss and generated tokens (one row per round, within one cache line)
K_Q_HEAD = 4
K_Q_TAIL = 5
K_Q_LEN = 6
K_P_LENGTHS = 7
K_P_RES = 8
K_PQ_HEAD = 9
K_PQ_TAIL = 10
K_PF_HEAD = 11
K_PF_TAIL = 12
K_IT_NEXT = 13
K_IT_TAG = 14
K_D_COUNT = 15
K_DH_ROOT = 16
K_DH_LINK = 17  # per agent in a decode heap: its first child, then its next sibling (queues.dh_child, dh_sib)
K_DH_SCRATCH = 18
K_PE_SEQ = 19
K_DE_SEQ = 20
K_WANTING = 21
K_BM_HEAD = 22
K_BM_TAIL = 23
K_BM_NEXT = 24
K_BM_CHUNK = 25
K_BM_COUNT = 26
K_B_OFF = 27
K_B_LEN = 28
K_B_ACTIVE = 29
K_INSTANT = 30
K_BP_RES = 31
K_INC_FLOW = 32
K_INC_RES = 33
K_INC_STARTS = 34
K_INC_LENGTHS = 35
K_IDS = 36
K_ALLOC_BUSY = 37
K_PE_STARTS = 38
K_TICK_SIDE = 39
K_TICK_GROUP = 40
K_ORDER = 41
K_S_CLS = 42
K_S_POS = 43
K_S_REQ = 44
K_S_SEQ = 45
K_S_GROUP = 46
K_S_DE = 47
K_S_UNITS = 48
K_S_BRES = 49
K_RT_LEN = 50
K_RT_START = 51
K_RT_UNIT = 52
K_DQ_ISSUED = 53
K_DQ_SERVED = 54
K_SH_FLOW_I = 55  # scratch of the sharing rule: 4 rows over flows
K_SH_RES_I = 56  # 2 rows over resources
K_S_MEMBERS = 57  # a finished batch's members (engine.batch_done)
K_S_RUN = 58  # running batches in pool order (engine._pool_alloc)
K_C_PTR = 59  # per round + 1: CSR of the forks each round releases (waits.fork_children)
K_C_AGENT = 60  # the forks, by releasing round
K_W_AGENT = 61  # the heap of agents between turns: the agents (key: time, then agent)
K_S_START_A = 62  # scratch: the agents of those turns
# the late work's lists (loop.late_bonus), so that a step touches only the units and resources that changed:
K_LATE_UNITS = 63  # units with a late start pending (pipes as themselves, prefill engines after the pipes)
K_SPAN_UNITS = 64  # units whose span this step is not 0 (the same numbering)
K_LATE_RES = 65  # resources whose step budget differs from the budget (+ 0.0) by a bonus, or may
K_LATE_DENSE = 66  # resources without a finite, non-negative capacity: their bonus is computed every bonus step
K_LRU_LINK = 68  # per agent: its next (more recent) and previous object in the DRAM tier's use order (-1: none)
K_P_STARTS = 69  # per pipe: its first entry in p_res / p_coef (a tier pipe's route is a layer-wise batch's tier stream)
K_DEC_DONE = 70  # per batch size b: 1 once its row of dec_tab is written
K_S_PIPES = 71  # scratch: the pipes engine.admit_all still asks, in pipe order
K_SURE = 67  # per flow: 1 if, idle, it runs alone at 0 with active share 0 under the run's budget or any above it (share.idle_sure)


@dataclass(frozen=True)
class Fill:
    """A field of ``size`` elements all equal to ``value``, written straight into its arena (no array of its own)."""

    size: int
    value: float


@dataclass(frozen=True)
class Rows:
    """A field of ``size`` elements, rows of ``len(row)`` each equal to ``row``, written straight into its arena."""

    size: int
    row: tuple[float, ...]

    def rows_into(self, part: np.ndarray) -> tuple[int, Callable[[int, int], None]]:
        """The number of rows of ``part`` (this field's stretch of its arena) and a function writing rows ``a:b``."""
        rows = part.reshape(-1, len(self.row))

        def write(a: int, b: int) -> None:
            rows[a:b] = self.row
        return rows.shape[0], write


LINE_BYTES = 64  # a cache line
ALIGNED = {np.float64: "rec", np.int64: "agent_i"}  # per arena, the field whose rows must start on a cache line;
# the fields right after them (agent_f, r_tok) start on one too, as rec and agent_i hold whole lines


def _aligned(size: int, dtype: type, offset: int) -> np.ndarray:
    """An empty arena of ``size`` elements whose element ``offset`` starts on a cache line (a view into a
    buffer one line longer), so that rows of a field there that fit a line each stay within one line."""
    item = np.dtype(dtype).itemsize
    buffer = np.empty(size + LINE_BYTES // item, dtype)
    shift = (-(buffer.ctypes.data + offset * item) % LINE_BYTES) // item
    return buffer[shift:shift + size]


@dataclass(frozen=True)
class Cols:
    """A field of rows, column ``j`` of every row from ``columns[j]`` (all of one length), written straight into its
    arena (no interleaved copy beside it)."""

    columns: tuple[np.ndarray, ...]

    @property
    def size(self) -> int:
        return sum(int(np.size(col)) for col in self.columns)

    def rows_into(self, part: np.ndarray) -> tuple[int, Callable[[int, int], None]]:
        """The number of rows of ``part`` (this field's stretch of its arena) and a function writing rows ``a:b``."""
        rows = part.reshape(-1, len(self.columns))

        def write(a: int, b: int) -> None:
            for j, column in enumerate(self.columns):
                rows[a:b, j] = column[a:b]
        return rows.shape[0], write


def _at_once(n: int, write: Callable[[int, int], None]) -> None:
    write(0, n)


def pack(fields: dict[str, np.ndarray | Fill | Rows | Cols], rows_by: Callable[[int, Callable[[int, int], None]], None] = _at_once,
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arenas of ``fields`` (every name of FLOAT and INT; 2-D fields are flattened row by row). ``rows_by(n, write)``
    writes the ``n`` rows of a ``Rows`` or ``Cols`` field by calls ``write(a, b)`` over disjoint ranges (at once, or
    ``sim.beside.in_halves``)."""
    out = []
    for names, dtype in ((FLOAT, np.float64), (INT, np.int64)):
        sizes = [fields[n].size if isinstance(fields[n], (Fill, Rows, Cols)) else np.size(fields[n]) for n in names]
        offsets = np.zeros(len(names) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(sizes)
        arena = _aligned(int(offsets[-1]), dtype, int(offsets[names.index(ALIGNED[dtype])]))
        for k, name in enumerate(names):  # one copy per field, cast on the way in; a Fill is only written
            value = fields[name]
            if isinstance(value, (Rows, Cols)):
                rows_by(*value.rows_into(arena[offsets[k]:offsets[k + 1]]))
            else:
                arena[offsets[k]:offsets[k + 1]] = value.value if isinstance(value, Fill) else np.ravel(value)
            del value
        out += [arena, offsets]
    return out[0], out[1], out[2], out[3]


def view(c: tuple, name: str) -> np.ndarray:
    """Field ``name`` of the arenas ``c``, from Python (a view: it follows the run)."""
    if name in FLOAT:
        k = FLOAT.index(name)
        return c[0][c[1][k]:c[1][k + 1]]
    k = INT.index(name)
    return c[2][c[3][k]:c[3][k + 1]]
