"""Set up and drive the compiled fluid engine; hand its results back in the shapes ``sim.runner`` reports.

**Which engine runs.** The compiled engine (``sim.compiled``, numba) and the Python one (``sim.python``)
take the same steps and give the same results (tests/sim/test_compiled.py). The compiled one is
about 10x faster but is compiled on its first use after installation (about 40 s here; numba
then caches it on disk, ``sim.compiled.cache``). ``--engine auto`` (:func:`choose`) therefore runs the compiled engine when it is
already compiled or when the Python engine would take longer than compiling, over all the command's runs of that
size together (``SimOptions.runs``: policies x seeds), and the Python engine otherwise.

:func:`build` lays a run's inputs out as ``sim.compiled.state``'s arenas (per-round token counts; the per-agent
quantities the Python engine derives at arrival are derived by ``engine.start_turn`` with the same arithmetic); :class:`CompiledRun` steps it in chunks of
``sim.compiled.loop.PROGRESS_S`` simulated seconds, reporting progress and checking an online run's stop rule
between chunks, and exposes the records, meter totals and leftovers that ``sim.runner`` turns into a
``SimResult``.
"""

from __future__ import annotations

import importlib
from typing import Callable

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.sim.beside import Beside, in_halves
from dualpath_plan.sim.compiled.cache import versioned_cache_dir
from dualpath_plan.sim.compiled.state import (
    AF_W,
    AI_LAST_ROUND,
    AI_Q_NEXT,
    AI_Q_PREV,
    AI_ROUND,
    AI_STAGE,
    AI_TICKET,
    AI_W,
    Fill,
    Cols,
    REC_NAMES,
    REC_START,
    REC_W,
    Rows,
    FP_ATTN_PER_CTX,
    FP_BETA,
    FP_BUFFER,
    FP_DE_FRACTION,
    FP_DE_HBM,
    FP_DT,
    FP_ATTN_RATE,
    FP_PEAK,
    FP_KV,
    FP_KV_MISS,
    FP_PE_HBM,
    FP_PERIOD,
    FP_QUOTA,
    FP_SPARSE_PER_KEY,
    FP_STALL_S,
    FP_KV_HIT,
    FP_HBM_PER_TOKEN,
    FP_READ_LAYOUT,
    FP_READ_INDEXER,
    FP_READ_SPARSE,
    FP_DEC_ATTN_CTX,
    FP_DEC_ATTN_KEY,
    FP_TIER_BYTES,
    FP_TOPK,
    FP_WINDOW_S,
    IP_COMPUTE0,
    IP_D,
    IP_G_DE,
    IP_G_PE,
    IP_H2D0,
    IP_LAYERWISE,
    IP_LOAD0,
    IP_N_AGENTS,
    IP_N_PIPE_ENTRIES,
    IP_N_PIPES,
    IP_N_ROUTES,
    IP_P,
    IP_POLICY,
    IP_TIER,
    IP_TIER0,
    IP_WB0,
    MF_DECODE_TOKENS,
    MF_NEXT_REPORT,
    MF_NOW,
    MF_RATIO_SUM,
    MF_T,
    MF_SNAP_NEXT,
    MF_SNAP_SPACING,
    MF_WINDOW_END,
    MI_BATCHES_CHANGED,
    MI_LRU_HEAD,
    MI_LRU_TAIL,
    MI_N_SNAPS,
    MI_N_WINDOWS,
    MI_ROUNDS_DONE,
    MI_STEPS,
    N_FP,
    N_IP,
    N_MF,
    N_MI,
    POL_RR,
    POL_RR_SIDES,
    POL_TWO_LEVEL,
    POL_TWO_LEVEL_SPLIT,
    Q_PRIVATE0,
    RUN_DONE,
    RUN_STALLED,
    pack,
    view,
)
from dualpath_plan.sim.layout import COMPUTE, DE_GPU, DE_NODE, PE_GPU, PE_NODE, ROUTES, Layout
from dualpath_plan.sim.metrics import Meter, record_width, snapshot_rows
from dualpath_plan.sim.stages import N_STAGES
from dualpath_plan.bounds.steptime import N_TERMS
from dualpath_plan.sim.pipes import PipeLayout
from dualpath_plan.sim.rules import Features, PolicyName
from dualpath_plan.sim.waits import fork_children, root_order
from dualpath_plan.model.workload import Trajectories

_UNIT = {PE_NODE: 0, PE_GPU: 1, DE_NODE: 2, DE_GPU: 3}
_POLICY = {PolicyName.BASIC: POL_RR, PolicyName.LAYERWISE: POL_RR, PolicyName.DUALPATH_RR: POL_RR_SIDES,
           PolicyName.DUALPATH: POL_TWO_LEVEL, PolicyName.ORACLE: POL_TWO_LEVEL, PolicyName.SPLIT: POL_TWO_LEVEL_SPLIT}


ENGINES = ("auto", "compiled", "python")
PYTHON_S_PER_TURN = 75e-6  # the Python engine's wall time per turn and per step (measured on a 2-core machine: docs/benchmarks.md)
PYTHON_S_PER_STEP = 520e-6
COMPILE_S = 60.0  # compiling the compiled engine once: 36.8-43.3 s in docs/benchmarks.md, 50-57 s on a slower day (2026-12-03); rounded up
# The compiled engine's wall time per turn, steps included (measured on this 2-core machine, 2026-12-02: 2P4D hopper,
# 8,192 agents of agentic-64k, 1,293,704 turns in 8.9 s of wall time, loading and building included).
COMPILED_S_PER_TURN = 7e-6


def numba_available() -> bool:
    """Whether numba can be imported (it is a dependency, but a platform may lack a build of it)."""
    versioned_cache_dir()
    try:
        importlib.import_module("numba")
    except ImportError:
        return False
    return True


def python_estimate_s(turns: int, sim_s: float, dt_s: float) -> float:
    """The Python engine's expected wall time for ``turns`` turns over ``sim_s`` simulated seconds."""
    return turns * PYTHON_S_PER_TURN + sim_s / dt_s * PYTHON_S_PER_STEP


def estimate_s(engine: str, turns: int, sim_s: float, dt_s: float) -> float:
    """The expected wall time of a run of ``turns`` turns over ``sim_s`` simulated seconds on ``engine`` (compiling
    not included)."""
    return python_estimate_s(turns, sim_s, dt_s) if engine == "python" else turns * COMPILED_S_PER_TURN


def _signature() -> tuple:
    """The compiled engine's argument types: the same for every run (the arenas and the scratch arrays
    are 1-D float64 and int64 arrays), so small stand-ins give them."""
    import numba
    f, i = np.zeros(1), np.zeros(1, np.int64)
    return tuple(numba.typeof(a) for a in ((f, i, i, i), i, i, i, f))


def is_compiled() -> bool:
    """Whether the compiled engine is in memory or in numba's on-disk cache (it is then loaded)."""
    try:
        from dualpath_plan.sim.compiled.loop import run_chunk
        sig = _signature()
        if sig in run_chunk.overloads:  # compiled or loaded in this process already
            return True
        cres = run_chunk._cache.load_overload(sig, run_chunk.targetctx)  # noqa: SLF001 (what Dispatcher.compile calls first)
        if cres is None:
            return False
        run_chunk.add_overload(cres)
        return True
    except Exception:  # noqa: BLE001 (any failure: treat as not compiled)
        return False


_LOADING: list[Beside[bool]] = []  # a load started by preload and not yet waited for


def preload() -> None:
    """Start loading the engine from numba's cache (:func:`is_compiled`) in a second thread (``sim.beside``), so that
    it loads while this thread draws the agents and builds the run; :func:`build_beside_load` waits for it. For a
    caller that will run the compiled engine (``--engine compiled``)."""
    if not _LOADING:
        _LOADING.append(Beside(is_compiled))


def build_beside_load(build_core: Callable[[], tuple]) -> tuple[tuple, bool]:
    """``build_core()`` (:func:`build`) in this thread while a second one loads the engine from numba's cache (started
    here unless :func:`preload` started it); returns the core and whether the engine was cached. At 48P96D each takes
    about a second: loading is llvmlite's calls, building numpy's writes into fresh pages."""
    preload()
    loading = _LOADING[0]
    try:
        core = build_core()
    finally:
        _LOADING.clear()
        loaded = loading.result()
    return core, loaded or is_compiled()  # a preload that found nothing may predate a compile since


def compile_engine() -> None:
    """Compile the engine, or load it from numba's cache, before a run starts (its wall time is then the run's alone)."""
    from dualpath_plan.sim.compiled.loop import run_chunk
    run_chunk.compile(_signature())


def choose(engine: str, python_s: float, cached: Callable[[], bool]) -> str:
    """``"compiled"`` or ``"python"`` for ``--engine engine`` (module docstring)."""
    if engine != "auto":
        return engine
    if not numba_available():
        return "python"
    return "compiled" if python_s > COMPILE_S or cached() else "python"


def scratch_for(core: tuple) -> tuple:
    """The work arrays :func:`sim.compiled.loop.run_chunk` needs for a run (completions of one step)."""
    n = 2 * int(view(core, "ip")[IP_N_AGENTS]) + 1
    return np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n)


def _settings(L: Layout, model, feat: Features, name: PolicyName, n_agents: int, pipes: PipeLayout,
              kv_miss: float, beta: float, de_fraction: float, dt: float, period: float, quota: float, window: float,
              stall: float) -> tuple[np.ndarray, np.ndarray]:
    ip, fp = np.zeros(N_IP, dtype=np.int64), np.zeros(N_FP)
    ints = {IP_P: L.P, IP_D: L.D, IP_G_PE: L.g_pe, IP_G_DE: L.g_de, IP_N_PIPES: pipes.n, IP_LOAD0: pipes.load0, IP_H2D0: pipes.h2d0, IP_WB0: pipes.wb0, IP_LAYERWISE: int(feat.layerwise),
            IP_N_ROUTES: 3 if feat.layerwise else 1, IP_N_AGENTS: n_agents, IP_POLICY: _POLICY[name],
            IP_COMPUTE0: L.start[COMPUTE], IP_N_PIPE_ENTRIES: int(pipes.res.size), IP_TIER: int(L.tier and not feat.io_free),
            IP_TIER0: pipes.tier0}
    floats = {FP_BUFFER: L.buffer_bytes, FP_PE_HBM: L.pe_hbm_kv_bytes, FP_DE_HBM: L.de_hbm_kv_bytes, FP_KV: L.kv_bytes_per_token,
              FP_KV_MISS: kv_miss, FP_ATTN_RATE: L.attn_flops_per_s, FP_PEAK: L.prefill_flops_per_s,
              FP_DT: dt, FP_PERIOD: period, FP_QUOTA: quota, FP_BETA: beta, FP_DE_FRACTION: de_fraction,
              FP_ATTN_PER_CTX: model.attn_flops_per_ctx_token,
              FP_SPARSE_PER_KEY: model.sparse_attn_flops_per_key, FP_TOPK: model.sparse_topk_tokens, FP_WINDOW_S: window,
              FP_STALL_S: stall, FP_KV_HIT: 0.0 if feat.io_free else L.kv_bytes_per_token, FP_HBM_PER_TOKEN: L.hbm_held_per_token,
              FP_READ_LAYOUT: float(model.kv_layouts[model.kv_layout]), FP_READ_INDEXER: model.indexer_bytes_per_token,
              FP_READ_SPARSE: float(model.indexer_bytes_per_token > 0 and model.sparse_topk_tokens > 0),  # layout.decode_read_bytes
              FP_DEC_ATTN_CTX: L.decode_attn_s_per_ctx, FP_DEC_ATTN_KEY: L.decode_attn_s_per_key,  # layout.decode_attn_seconds
              FP_TIER_BYTES: L.tier_bytes}
    for k, v in ints.items():
        ip[k] = v
    for k, v in floats.items():
        fp[k] = v
    return ip, fp


def _routes(L: Layout) -> tuple[np.ndarray, ...]:
    rt_len, rt_start, rt_unit, rt_count = np.zeros(3, np.int64), np.zeros((3, 3), np.int64), np.zeros((3, 3), np.int64), np.zeros((3, 3))
    for k, name in enumerate(("kv_out", "stream_pe", "stream_de")):
        hops = ROUTES[name]
        rt_len[k] = len(hops)
        for h, (kind, where, count) in enumerate(hops):
            rt_start[k, h], rt_unit[k, h], rt_count[k, h] = L.start[kind], _UNIT[where], count
    return rt_len, rt_start, rt_unit, rt_count


def build(L: Layout, model, traj: Trajectories, feat: Features, name: PolicyName, exact: bool, *, beta: float,
          alpha: np.ndarray, de_fraction: float, dt: float, period: float, quota: float, window: float, stall: float,
          arrivals: np.ndarray) -> tuple:
    """The state of a run at t = 0: the arenas of ``sim.compiled.state``."""
    from dualpath_plan.sim.compiled.share import idle_sure  # numba, loaded only when a compiled run is built
    n, rounds = traj.n_agents, traj.n_rounds
    kv = L.kv_bytes_per_token
    kv_miss = kv if (exact and not feat.io_free) else 0.0
    pipes = PipeLayout.of(L)
    budget = L.capacity * dt  # what each resource delivers in a step
    ip, fp = _settings(L, model, feat, name, n, pipes, kv_miss, beta, de_fraction, dt, period, quota, window, stall)
    hit, miss, gen = traj.context_tokens, traj.append_tokens, traj.gen_tokens
    n_queues = Q_PRIVATE0 + L.D + L.n_pe
    cap = 4 + 2 * L.n_de + L.D + _tier_entries(pipes)  # distinct resources one batch can cross
    n_flows = pipes.n + L.n_pe
    entries = int(pipes.res.size)
    inc_flow, inc_res, inc_coef, inc_aw = (np.zeros(entries + _pool_size(L, n, pipes), dt_) for dt_ in (np.int64, np.int64, float, float))
    inc_starts, inc_lengths, inc_weight = np.zeros(n_flows, np.int64), np.zeros(n_flows, np.int64), np.ones(n_flows)
    inc_lengths[:pipes.n] = pipes.lengths
    inc_starts[:pipes.n] = np.cumsum(pipes.lengths) - pipes.lengths
    inc_flow[:entries] = np.repeat(np.arange(pipes.n), pipes.lengths)
    inc_res[:entries], inc_coef[:entries], inc_aw[:entries] = pipes.res, pipes.coef, pipes.coef * 1.0
    order = root_order(arrivals)  # forks (inf) arrive when their parent releases them (sim.waits)
    child_ptr, child_agent = fork_children(traj)  # both empty without forks
    ticks = sorted([(i * period / L.P, 0, i) for i in range(L.P)] + [((0.5 + j / L.D) * period, 1, j) for j in range(L.D)])  # a heap (loop.fetches)
    pe_starts = np.array([L.start[COMPUTE]] + ([L.start["pe_cnic_read"], L.start["pe_cnic_write"]] if feat.layerwise else []), np.int64)
    mi, mf = np.zeros(N_MI, np.int64), np.zeros(N_MF)
    mi[MI_BATCHES_CHANGED] = 1
    mi[MI_LRU_HEAD] = mi[MI_LRU_TAIL] = -1
    mf[MF_NOW], mf[MF_WINDOW_END], mf[MF_NEXT_REPORT] = np.nan, window, 10.0
    mf[MF_SNAP_SPACING] = mf[MF_SNAP_NEXT] = window  # metrics.Meter's first record time and spacing
    routes = _routes(L)
    f64, i64 = (lambda size, v=0.0: Fill(int(size), float(v))), (lambda size, v=0: Fill(int(size), int(v)))
    return pack(dict(
        ip=ip, fp=fp, mi=mi, mf=mf,
        r_tok=Cols((hit, miss, gen)),  # state.RT_HIT, RT_MISS, RT_GEN
        agent_f=_agent_rows(n, AF_W, np.float64, {}),
        agent_i=_agent_rows(n, AI_W, np.int64, {AI_ROUND: traj.offsets[:-1], AI_LAST_ROUND: traj.offsets[1:] - 1, AI_Q_NEXT: -1, AI_Q_PREV: -1,
                                                    AI_TICKET: -1, AI_STAGE: -1}),
        rec=Rows(rounds * REC_W, REC_START + (0.0,) * (REC_W - len(REC_START))),
        dq_issued=i64(L.D), dq_served=i64(L.D),
        q_head=i64(n_queues, -1), q_tail=i64(n_queues, -1), q_len=i64(n_queues),
        p_served=f64(pipes.n), p_before=f64(pipes.n), p_admitted=f64(pipes.n), p_waiting=f64(pipes.n), p_head_end=f64(pipes.n, np.inf),
        p_lengths=pipes.lengths.astype(np.int64), p_res=pipes.res.astype(np.int64), p_coef=pipes.coef.astype(float),
        pq_head=i64(pipes.n, -1), pq_tail=i64(pipes.n, -1), s_pipes=i64(pipes.n), pf_head=i64(pipes.n, -1), pf_tail=i64(pipes.n, -1),
        it_next=i64(2 * n, -1), it_size=f64(2 * n), it_tag=i64(2 * n), it_end=f64(2 * n),
        d_V=f64(L.n_de), d_before=f64(L.n_de), d_gained=f64(L.n_de), d_read_sum=f64(L.n_de), d_count=i64(L.n_de),
        d_first_end=f64(L.n_de, np.inf), dh_root=i64(L.n_de, -1), dh_link=i64(2 * n, -1), dh_end=f64(n),
        dh_read=f64(n), dh_attn=f64(n), d_attn_sum=f64(L.n_de), dh_scratch=i64(n),
        buf_used=f64(L.P + L.D), pe_hbm=f64(L.n_pe), de_hbm=f64(L.n_de), pe_tok=f64(L.n_pe), pe_seq=i64(L.n_pe),
        de_tok=f64(L.n_de), de_seq=i64(L.n_de), de_free=f64(L.n_de, L.de_hbm_kv_bytes), group_queued=f64(L.D),
        read_q=f64(L.P + L.D), alpha=np.asarray(alpha, float), wanting=np.zeros(L.n_pe, np.bool_), ready_at=f64(L.n_pe, np.nan),
        bm_head=i64(L.n_pe, -1), bm_tail=i64(L.n_pe, -1), bm_next=i64(n, -1), bm_chunk=i64(n), bm_count=i64(L.n_pe),
        b_off=i64(L.n_pe), b_len=i64(L.n_pe), b_weight=f64(L.n_pe, 1.0), b_prog=f64(L.n_pe), b_active=np.zeros(L.n_pe, np.bool_),
        instant=i64(L.n_pe), bp_res=i64(_pool_size(L, n, pipes)), bp_coef=f64(_pool_size(L, n, pipes)),
        capacity=L.capacity.astype(float), budget=budget, step_budget=budget + 0.0,  # loop.late_bonus
        inc_flow=inc_flow, inc_res=inc_res, inc_coef=inc_coef, inc_aw=inc_aw, inc_starts=inc_starts, inc_lengths=inc_lengths,
        inc_weight=inc_weight, ids=i64(L.n_pe), work=f64(n_flows),
        x=f64(n_flows), used=f64(L.n_res), active=f64(n_flows, 1.0), alloc_x=f64(n_flows), alloc_used=f64(L.n_res),
        alloc_active=f64(n_flows), alloc_busy=np.zeros(n_flows, np.bool_),
        pend_pipe=f64(pipes.n, np.inf), pend_pe=f64(L.n_pe, np.inf), span_pipe=f64(pipes.n), span_pe=f64(L.n_pe),
        prev_budget=f64(L.n_res), prev_used=f64(L.n_res), pe_starts=pe_starts, share=f64(L.n_res),
        tick_when=np.array([w for w, _, _ in ticks]), tick_side=np.array([s for _, s, _ in ticks], np.int64),
        tick_group=np.array([g for _, _, g in ticks], np.int64), order=order.astype(np.int64), arrival=arrivals[order].astype(float),
        m_used=f64(L.n_res), m_read=f64(L.P + L.D), m_window=f64(L.P + L.D),
        m_snap_t=f64(snapshot_rows(L.n_res)), m_snap=f64(snapshot_rows(L.n_res) * record_width(L.n_res)),
        st_load=f64(2 * N_STAGES), m_stage=f64(2 * N_STAGES), read_window=L.read_window_bytes(dt), s_detok=f64(L.n_de),
        s_tok=f64(L.g_pe), s_cls=i64(L.g_pe), s_pos=i64(L.n_res, -1), s_req=i64(n), s_load=f64(L.D), s_free=f64(L.g_de),
        s_tok2=f64(L.g_de), s_seq=i64(L.g_de), s_group=i64(n), s_de=i64(n), s_frac=f64(n), s_units=i64(4), s_amounts=f64(3),
        s_bres=i64(cap), s_bcoef=f64(cap), rt_len=routes[0], rt_start=routes[1], rt_unit=routes[2], rt_count=routes[3],
        d_step=f64(L.n_de, np.inf), dec_tab=f64((n + 2) * N_TERMS), dec_done=i64(n + 2), dec_p=L.decode_step.vector, pre_p=L.prefill_pass.vector, terms=f64(N_TERMS),
        sh_flow_f=f64(4 * n_flows), sh_res_f=f64(3 * L.n_res), s_prog=f64(L.n_pe), s_rate=f64(L.P + L.D), sh_flow_i=i64(4 * n_flows), sh_res_i=i64(2 * L.n_res),
        s_members=i64(n), s_run=i64(L.n_pe),
        r_tool=traj.tool_s if traj.tool_s.any() else np.zeros(0), a_delay=traj.fork_delay_s if traj.n_forks else np.zeros(0),
        w_time=f64(n), c_ptr=child_ptr, c_agent=child_agent, w_agent=i64(n), s_start_t=f64(n), s_start_a=i64(n),
        late_units=i64(pipes.n + L.n_pe), span_units=i64(pipes.n + L.n_pe), late_res=i64(L.n_res),
        late_dense=np.flatnonzero(~(np.isfinite(L.capacity) & (L.capacity >= 0))).astype(np.int64),
        lru_size=f64(n if L.tier else 0, -1.0), lru_link=i64(2 * n if L.tier else 0, -1),
        p_starts=(np.cumsum(pipes.lengths) - pipes.lengths).astype(np.int64),
        sure=np.concatenate([idle_sure(pipes.res, pipes.coef, inc_starts[:pipes.n], pipes.lengths, budget), np.zeros(L.n_pe, np.int64)]),
    ), rows_by=in_halves)  # the rounds' rows (rec, r_tok: 0.7 GB at 48P96D) in two threads


def _agent_rows(n: int, width: int, dtype: type, start: dict) -> Cols:
    """The agents' rows of one arena (``state.AF_*`` or ``AI_*`` columns): every field 0 at t = 0 except those in
    ``start`` (an array over agents or one value)."""
    return Cols(tuple(np.broadcast_to(np.asarray(start.get(f, 0), dtype), (n,)) for f in range(width)))


def kv_per_token(core: tuple) -> tuple[float, float, float]:
    """Bytes per hit, miss and written-back token (``Engine.kv_hit``, ``kv_miss``, ``kv_wb``)."""
    fp = view(core, "fp")
    return float(fp[FP_KV_HIT]), float(fp[FP_KV_MISS]), float(fp[FP_KV_MISS])


def _pool_size(L: Layout, n_agents: int, pipes: PipeLayout) -> int:
    """Entries of the batch-entry pool: twice what running batches can hold at once (each at most its
    PE-side resources and compute, 4, and with a DRAM tier its pool partners', plus 3 per member, and a request is in at
    most one batch)."""
    return 2 * ((4 + _tier_entries(pipes)) * L.n_pe + 3 * n_agents)


def _tier_entries(pipes: PipeLayout) -> int:
    """The most resources a batch's tier stream can add: the longest tier pipe's route (its PE's CNIC and the DRAMs and
    CNICs of the pool nodes its stretch covers, ``layout.TIER_ROUTES``; more than two nodes a side where a side has more
    nodes than there are prefill engines), an upper bound; 0 without a tier."""
    return int(pipes.lengths[pipes.tier0:].max()) if pipes.tier0 < pipes.n else 0


class CompiledRun:
    """Steps the arenas of a run to the end; the attributes ``sim.runner`` reads after a run."""

    def __init__(self, core: tuple, feat: Features, meter: Meter) -> None:
        self.core, self.feat, self.meter = core, feat, meter
        self.kv_hit, self.kv_miss, self.kv_wb = kv_per_token(core)
        records = view(core, "rec").reshape(-1, REC_W)  # one row per round (state.REC_*): strided views per field
        self.rec = {name: records[:, k] for k, name in enumerate(REC_NAMES)}
        self.rec_frac, self.rec_flops, self.rec_tier = self.rec.pop("frac"), self.rec.pop("flops"), self.rec.pop("tier")
        self.tier = bool(view(core, "ip")[IP_TIER])
        self._mi, self._mf, self._fp = view(core, "mi"), view(core, "mf"), view(core, "fp")
        meter.used, meter.read_bytes = view(core, "m_used"), view(core, "m_read")
        meter.stage_time = view(core, "m_stage")
        meter.snap_times, meter.snaps = view(core, "m_snap_t"), view(core, "m_snap").reshape(-1, record_width(meter.used.size))
        self._scratch = scratch_for(core)
        self.stopped_early = False

    def run(self, on_progress: Callable[[float], None] | None, stop_check: Callable[[float], bool] | None) -> float:
        """Step to the end (or until ``stop_check`` says stop); returns the simulated time reached."""
        from dualpath_plan.sim.compiled.loop import run_chunk  # compiled on first use
        while True:
            code = run_chunk(self.core, *self._scratch)
            t = float(self._mf[MF_T])
            self.meter.decode_tokens = float(self._mf[MF_DECODE_TOKENS])
            self.meter.n_snaps = int(self._mi[MI_N_SNAPS])
            if code == RUN_DONE:
                return t
            if code == RUN_STALLED:
                raise PlanError(f"the fluid run made no progress for {self._fp[FP_STALL_S]:g} s of simulated time at t = {t:.6g} s "
                                f"({self.rounds_done} turns done); this is a bug in the runner, please report it", 1)
            if on_progress is not None:
                on_progress(t)
            if stop_check is not None and stop_check(t):
                self.stopped_early = True
                return t

    @property
    def steps(self) -> int:
        return int(self._mi[MI_STEPS])

    @property
    def rounds_done(self) -> int:
        return int(self._mi[MI_ROUNDS_DONE])

    def snic_max_over_avg(self) -> float | None:
        """Meter.snic_max_over_avg from the closed windows' ratios and the open window."""
        total, count = float(self._mf[MF_RATIO_SUM]), int(self._mi[MI_N_WINDOWS])
        w = view(self.core, "m_window")
        if w.sum() > 0:
            total, count = total + float(w.max() / w.mean()), count + 1
        return total / count if count else None

    def leftover(self) -> dict[str, float]:
        """``sim.runner._leftover`` of this run."""
        v = lambda name: view(self.core, name)  # noqa: E731
        items = sum(_chain_length(v("it_next"), head) for head in (*v("pq_head"), *v("pf_head")))
        return {
            "requests_waiting": float(v("q_len").sum() + items + v("bm_count").sum()),
            "pipe_bytes": float(np.abs(v("p_waiting") + v("p_admitted") - v("p_served")).sum()),
            "buffer_bytes": float(np.abs(v("buf_used")).sum()),
            "hbm_bytes": float(np.abs(v("de_hbm")).sum() + np.abs(v("pe_hbm")).sum()),
            "decoding": float(v("d_count").sum()),
            "reported_tokens": float(np.abs(v("pe_tok")).sum() + np.abs(v("de_tok")).sum() + np.abs(v("group_queued")).sum()),
            "reported_requests": float(np.abs(v("pe_seq")).sum() + np.abs(v("de_seq")).sum()),
            "stage_load": float(np.abs(v("st_load")).sum()),
        }


def _chain_length(nxt: np.ndarray, head: int) -> int:
    n = 0
    while head >= 0:
        n, head = n + 1, int(nxt[head])
    return n
