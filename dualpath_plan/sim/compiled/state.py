"""State of the compiled fluid engine: every array of one run, in two arenas the kernels share.

The compiled engine (``sim.compiled.queues``, ``sim.compiled.engine``, ``sim.compiled.policies``, ``sim.compiled.loop``) is the same
machine as the Python one (``sim.python.engine``, ``sim.python.state``, ``sim.python.late``, ``sim.python.loop``,
``sim.python.policies``), step for step and in the same order of arithmetic; this module lays its state out as
flat numpy arrays so that numba can compile it:

* **Scalars** live in small arrays indexed by the constants below: ``ip`` (int settings), ``fp``
  (float settings), ``mi`` and ``mf`` (int and float counters that change).
* **Queues of requests** (the prefill queue, the global and per-group decode queues, each prefill
  engine's ready queue) are one doubly linked list per queue over the agents: an agent is in at most
  one queue at a time (``q_next``/``q_prev``, ``q_head``/``q_tail``/``q_len``).
* **Pipe items** are slots ``2 * agent`` (every tag but ``READ_DE``) and ``2 * agent + 1`` (``READ_DE``):
  one agent has at most one item of each kind at a time. Each pipe has a waiting and an in-flight FIFO,
  singly linked through ``it_next``.
* **Decode batches** are pairing heaps over the agents (``dh_*``): smallest (end count, agent) first, the
  order ``heapq`` gives the Python engine's ``(end, req, read)`` tuples.
* **Per round**, two rows: its token counts (hit, miss, generated; ``r_tok``, RT_W ints) and its records
  (``rec``, REC_W floats). Each field starts on a cache line, so a round's record row is one line and its
  token row at most two; an agent reads them through its current round, and ``loop.touch_next_rounds`` loads
  the next round's rows of all agents whose write-back completed in a step together, before any of them starts. The **quantities the Python engine derives per agent at arrival** (bytes, HBM need, decode
  read, prompt length) are per-agent fields written when the turn starts (``engine.start_turn``), with the
  same arithmetic, so a run of millions of turns holds them once per agent, not once per round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualpath_plan.sim.pipes import H2D, LOAD, READ_DE, READ_PE, WB  # noqa: F401 (the item tags, shared with the Python engine)

# ip: int settings
(IP_P, IP_D, IP_G_PE, IP_G_DE, IP_N_PIPES, IP_LOAD0, IP_H2D0, IP_WB0, IP_LAYERWISE, IP_N_ROUTES, IP_N_AGENTS, IP_POLICY,
 IP_COMPUTE0, IP_N_PIPE_ENTRIES) = range(14)
N_IP = 14
# fp: float settings
(FP_BUFFER, FP_PE_HBM, FP_DE_HBM, FP_KV, FP_KV_MISS, FP_ATTN_RATE, FP_PEAK, FP_DT, FP_PERIOD, FP_QUOTA, FP_BETA,
 FP_DE_FRACTION, FP_ATTN_PER_CTX, FP_SPARSE_PER_KEY, FP_TOPK, FP_WINDOW_S, FP_STALL_S, FP_KV_HIT, FP_HBM_PER_TOKEN,
 FP_READ_LAYOUT, FP_READ_INDEXER, FP_READ_SPARSE) = range(22)
N_FP = 22
# mi: int counters
(MI_FINISHED, MI_ROUNDS_DONE, MI_NEXT_ARRIVAL, MI_STEPS, MI_BATCHES_CHANGED, MI_RR_PE, MI_RR_DE, MI_RR_SIDE, MI_N_INSTANT,
 MI_HAVE_ALLOC, MI_HAVE_STEP, MI_HAVE_PREV, MI_ANY_SPAN, MI_N_WINDOWS, MI_N_FLOWS, MI_N_ENTRIES, MI_N_IDS,
 MI_STEP_BONUS, MI_N_SCRATCH, MI_POOL_TOP) = range(20)
N_MI = 20
# mf: float counters
(MF_NOW, MF_T, MF_LAST_PROGRESS, MF_WINDOW_END, MF_DECODE_TOKENS, MF_STEP_DECODING, MF_NEXT_REPORT,
 MF_RATIO_SUM, MF_SINK) = range(9)  # MF_SINK: where loop.touch_next_rounds puts the values it loads (never read)
N_MF = 9

# the fields of a round's record (field ``rec``, REC_W floats per round: every time a turn records sits in one cache
# line, so a turn touches one line of the records, not seven arrays)
REC_ARRIVE, REC_FIRST, REC_DEC_START, REC_DEC_END, REC_DONE, REC_FRAC, REC_FLOPS = range(7)
REC_W = 8
REC_NAMES = ("arrive", "first", "dec_start", "dec_end", "done", "frac", "flops")
REC_START = (np.nan, np.nan, np.nan, np.nan, np.nan, 0.0, 0.0)  # before the turn: times unknown, nothing charged
# the fields of a round's tokens (field ``r_tok``, RT_W ints per round, read together when the round starts)
RT_HIT, RT_MISS, RT_GEN = range(3)
RT_W = 3

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
FLOAT = tuple("""fp mf a_need a_hit_b a_debuf_b a_wb_b a_read_b rec a_de_frac p_served p_before p_admitted p_waiting p_head_end p_coef it_size it_end d_V d_before d_gained d_read_sum d_first_end dh_end dh_read buf_used pe_hbm de_hbm pe_tok de_tok de_free group_queued read_q alpha ready_at b_weight b_prog bp_coef capacity budget step_budget inc_coef inc_aw inc_weight work x used active alloc_x alloc_used alloc_active pend_pipe pend_pe span_pipe span_pe prev_budget prev_used share tick_when arrival m_used m_read m_window s_tok s_load s_free s_tok2 s_frac s_amounts s_bcoef rt_count d_step dec_p pre_p terms sh_flow_f sh_res_f s_prog s_rate""".split())
INT = tuple("""ip mi r_tok a_length a_round a_last_round a_pe a_de a_done_tok a_reads_left a_de_reserved q_next q_prev q_head q_tail q_len p_lengths p_res p_entry_pipe pq_head pq_tail pf_head pf_tail it_next it_tag d_count dh_root dh_child dh_sib dh_scratch pe_seq de_seq wanting bm_head bm_tail bm_next bm_chunk bm_count b_off b_len b_active instant bp_res inc_flow inc_res inc_starts inc_lengths ids alloc_busy pe_starts tick_side tick_group order s_cls s_pos s_req s_seq s_group s_de s_units s_bres rt_len rt_start rt_unit a_pair_wait a_ticket dq_issued dq_served sh_flow_i sh_res_i s_members s_run a_hit a_miss a_gen""".split())
K_FP = 0
K_MF = 1
K_A_NEED = 2
K_A_HIT_B = 3
K_A_DEBUF_B = 4
K_A_WB_B = 5
K_A_READ_B = 6
K_REC = 7  # per round: REC_W floats, the fields REC_ARRIVE ... REC_FLOPS (one record per round, one cache line)
K_A_DE_FRAC = 8
K_P_SERVED = 9
K_P_BEFORE = 10
K_P_ADMITTED = 11
K_P_WAITING = 12
K_P_HEAD_END = 13
K_P_COEF = 14
K_IT_SIZE = 15
K_IT_END = 16
K_D_V = 17
K_D_BEFORE = 18
K_D_GAINED = 19
K_D_READ_SUM = 20
K_D_FIRST_END = 21
K_DH_END = 22
K_DH_READ = 23
K_BUF_USED = 24
K_PE_HBM = 25
K_DE_HBM = 26
K_PE_TOK = 27
K_DE_TOK = 28
K_DE_FREE = 29
K_GROUP_QUEUED = 30
K_READ_Q = 31
K_ALPHA = 32
K_READY_AT = 33
K_B_WEIGHT = 34
K_B_PROG = 35
K_BP_COEF = 36
K_CAPACITY = 37
K_BUDGET = 38
K_STEP_BUDGET = 39
K_INC_COEF = 40
K_INC_AW = 41
K_INC_WEIGHT = 42
K_WORK = 43
K_X = 44
K_USED = 45
K_ACTIVE = 46
K_ALLOC_X = 47
K_ALLOC_USED = 48
K_ALLOC_ACTIVE = 49
K_PEND_PIPE = 50
K_PEND_PE = 51
K_SPAN_PIPE = 52
K_SPAN_PE = 53
K_PREV_BUDGET = 54
K_PREV_USED = 55
K_SHARE = 56
K_TICK_WHEN = 57
K_ARRIVAL = 58
K_M_USED = 59
K_M_READ = 60
K_M_WINDOW = 61
K_S_TOK = 62
K_S_LOAD = 63
K_S_FREE = 64
K_S_TOK2 = 65
K_S_FRAC = 66
K_S_AMOUNTS = 67
K_S_BCOEF = 68
K_RT_COUNT = 69
K_D_STEP = 70  # seconds per step of each decode engine's batch (inf: empty), as DecodeSet.step
K_DEC_P = 71  # steptime.DecodeStep.vector
K_PRE_P = 72  # steptime.PrefillPass.vector
K_TERMS = 73  # scratch for the step-time kernels' terms
K_SH_FLOW_F = 74  # scratch of the sharing rule: 4 rows over flows (share.allocate_into)
K_SH_RES_F = 75  # 3 rows over resources
K_S_PROG = 76  # batch progress before a step (loop.advance)
K_S_RATE = 77  # per-node read rates of quiet steps (loop.meter_span)
K_IP = 0
K_MI = 1
K_R_TOK = 2  # per round: RT_W ints, its hit, miss and generated tokens (one row per round, within one cache line)
K_A_LENGTH = 3
K_A_ROUND = 4
K_A_LAST_ROUND = 5
K_A_PE = 6
K_A_DE = 7
K_A_DONE_TOK = 8
K_A_READS_LEFT = 9
K_A_DE_RESERVED = 10
K_Q_NEXT = 11
K_Q_PREV = 12
K_Q_HEAD = 13
K_Q_TAIL = 14
K_Q_LEN = 15
K_P_LENGTHS = 16
K_P_RES = 17
K_P_ENTRY_PIPE = 18
K_PQ_HEAD = 19
K_PQ_TAIL = 20
K_PF_HEAD = 21
K_PF_TAIL = 22
K_IT_NEXT = 23
K_IT_TAG = 24
K_D_COUNT = 25
K_DH_ROOT = 26
K_DH_CHILD = 27
K_DH_SIB = 28
K_DH_SCRATCH = 29
K_PE_SEQ = 30
K_DE_SEQ = 31
K_WANTING = 32
K_BM_HEAD = 33
K_BM_TAIL = 34
K_BM_NEXT = 35
K_BM_CHUNK = 36
K_BM_COUNT = 37
K_B_OFF = 38
K_B_LEN = 39
K_B_ACTIVE = 40
K_INSTANT = 41
K_BP_RES = 42
K_INC_FLOW = 43
K_INC_RES = 44
K_INC_STARTS = 45
K_INC_LENGTHS = 46
K_IDS = 47
K_ALLOC_BUSY = 48
K_PE_STARTS = 49
K_TICK_SIDE = 50
K_TICK_GROUP = 51
K_ORDER = 52
K_S_CLS = 53
K_S_POS = 54
K_S_REQ = 55
K_S_SEQ = 56
K_S_GROUP = 57
K_S_DE = 58
K_S_UNITS = 59
K_S_BRES = 60
K_RT_LEN = 61
K_RT_START = 62
K_RT_UNIT = 63
K_A_PAIR_WAIT = 64
K_A_TICKET = 65  # an agent's place in its DE node's order of buffer reservations (Engine.de_ticket)
K_DQ_ISSUED = 66
K_DQ_SERVED = 67
K_SH_FLOW_I = 68  # scratch of the sharing rule: 4 rows over flows
K_SH_RES_I = 69  # 1 row over resources
K_S_MEMBERS = 70  # a finished batch's members (engine.batch_done)
K_S_RUN = 71  # running batches in pool order (engine._pool_alloc)
K_A_HIT = 72  # the current turn's hit, miss and generated tokens, per agent (engine.start_turn)
K_A_MISS = 73
K_A_GEN = 74


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


LINE_BYTES = 64  # a cache line
ALIGNED = {np.float64: "rec", np.int64: "r_tok"}  # per arena, the field whose rows must start on a cache line


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


def pack(fields: dict[str, np.ndarray | Fill | Rows | Cols]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arenas of ``fields`` (every name of FLOAT and INT; 2-D fields are flattened row by row)."""
    out = []
    for names, dtype in ((FLOAT, np.float64), (INT, np.int64)):
        sizes = [fields[n].size if isinstance(fields[n], (Fill, Rows, Cols)) else np.size(fields[n]) for n in names]
        offsets = np.zeros(len(names) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(sizes)
        arena = _aligned(int(offsets[-1]), dtype, int(offsets[names.index(ALIGNED[dtype])]))
        for k, name in enumerate(names):  # one copy per field, cast on the way in; a Fill is only written
            value = fields[name]
            if isinstance(value, Rows):
                arena[offsets[k]:offsets[k + 1]].reshape(-1, len(value.row))[:] = value.row
            elif isinstance(value, Cols):
                rows = arena[offsets[k]:offsets[k + 1]].reshape(-1, len(value.columns))
                for j, column in enumerate(value.columns):
                    rows[:, j] = column
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
