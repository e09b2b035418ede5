"""The fluid runner: what a scheduling policy actually reaches on a cluster, against the LP bound.

**Mechanism (style rule 13).** Time advances in steps of ``dt``; inside a step all rates are constant
(``sim.python.loop``). Each step: (1) agents that arrived join the prefill queue; (2) engine groups whose
fetch is due call the policy (PE groups at phases ``i/P`` of the fetch period, DE groups half a period
later at ``j/D``; ties in time go PE before DE, lower group first); (3) waiting pipe items are admitted
in FIFO order where their buffer or HBM has room; (4) idle prefill engines start forward batches;
(5) the sharing rule (``sim.python.share``: max-min fair, exact) gives every active flow its progress for the
step, charging elapsed time times rate to every resource it crosses; (6) flows that finish are stamped
with their time inside the step (rates are constant, so it is linear) and hand their request to the
next stage. Work a flow leaves when it finishes early goes to the other flows of the same step (a pipe
serves its next item at once), and work that becomes ready inside a step starts, in capacity and in
time, when it became ready (``sim.python.late``). After a step in which nothing happened the clock jumps
over the quiet steps up to the next event.

Flows: one per FIFO pipe (node reads, basic's HBM loads, H2D, write-back) and one per running forward
batch (its compute and, with layer-wise prefill, its KV streams: one coupled flow). Decode is not a
shared-link flow: each decode engine's batch advances at its own roofline step time
(``sim.python.state.DecodeSet``). Per step the work is a few numpy calls over all flows; Python runs per
scheduling decision and per stage change.

**Engines.** The mechanism runs in Python (``sim.python``: ``engine``, ``state``, ``late``, ``loop``,
``policies``, ``share``) or compiled (``sim.compiled``, numba): the same steps in the same order of
arithmetic, chosen by ``SimOptions.engine`` (``sim.compiled.run.choose``); ``SimResult.engine`` says which ran.

**Modes.** Offline: all agents start at t = 0 (a trace's sessions at their recorded start times, a fork after its
parent's round: ``sim.waits``); the run ends when the last turn is written back (JCT).
Online: agents arrive as a Poisson process at ``aps``, each replaying its trajectory from its first round;
latencies and throughput are taken over the turns that arrive between ``warmup_frac`` of the last arrival
and the last arrival. The paper's online method (section 7.4, notes 6.3) sets no agent count: agents keep
arriving until the run stops, when TTFT breaks the SLO or at steady state. Here steady state is a horizon
(:func:`steady_horizon_s`): twice the time after which the population of agents is within 1 % of its
steady state, from the agents' own lifetimes at the SLO. The agents are the Poisson arrivals before it
(:func:`online_agents`), the run stops there, and the SLO is measured over its second half.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from dualpath_plan.bounds.decode import DecodeOptions
from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import Bound, BoundOptions, Limits
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.finite import RAW, guard
from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.sim.beside import BIG_ROWS, begun
from dualpath_plan.sim.bound import bound_for, bound_limits, turns_limits
from dualpath_plan.sim.compiled import run as compiled_run
from dualpath_plan.bounds.compute import CHUNK_TURNS, turn_prefill_seconds
from dualpath_plan.sim.layout import Layout, build_layout
from dualpath_plan.sim.metrics import (WINDOW_S, Latency, Meter, StageCurve, StageLoad, TurnRecords, Use, UseCurve, demanded, stage_curve,
                                       use_curve, window_snic_balance, window_stages, window_use)
from dualpath_plan.sim.python.engine import Engine
from dualpath_plan.sim.python.loop import Clock
from dualpath_plan.sim.python.policies import POLICIES, SchedView
from dualpath_plan.sim.search import Bracket
from dualpath_plan.sim.waits import start_times
from dualpath_plan.sim.steady import offline_window
from dualpath_plan.sim.window import WindowSpan
from dualpath_plan.sim.rules import ALPHA_S, BETA_S, DT_S, FEATURES, QUOTA_S, TPOT_SLO_S, TTFT_SLO_S, Features, PolicyName
from dualpath_plan.model.profiles import Workload
from dualpath_plan.model.flags import MAX_AGENTS
from dualpath_plan.model.sums import dot
from dualpath_plan.model.workload import Trajectories, check_trace_window, source_of, take, trajectories

MIN_DT_S = 0.001  # 1 ms: a 50th of the paper's 50 ms TPOT SLO; finer steps only cost wall time
FETCH_PERIOD_S = QUOTA_S  # engine groups fetch once per attention quota (no period in the paper; see SimOptions)
STALL_S = 3600.0  # simulated seconds without any progress before the run is declared stuck (a bug guard)
SLO_WINDOW_S = 150.0  # paper §7 online, notes 6.3: TTFT over a 150 s sliding window


@dataclass(frozen=True)
class SimOptions:
    """Engine settings. ``fetch_period_s``: the paper gives none; one attention quota (300 ms) is the
    cadence at which a prefill engine starts forward batches, far below alpha's 3 s and beta's 5 s
    horizons, so assigned work never runs dry between fetches. ``buffer_bytes``: DRAM buffer per node
    (``None``: ``sim.layout.default_buffer_bytes``). ``seed`` draws online arrivals."""

    dt_s: float = DT_S
    fetch_period_s: float = FETCH_PERIOD_S
    quota_s: float = QUOTA_S
    buffer_bytes: float | None = None
    window_s: float = WINDOW_S
    seed: int = 0
    dtype: str | None = None  # prefill GEMM dtype (None: the model's), as --dtype of the bound commands
    decode_instance_nodes: int | None = None  # decode nodes one model instance spans (None: the whole decode side)
    mtp: int = 0  # multi-token-prediction drafts per decode step (0: off), as --mtp of the bound commands
    mtp_accepted: float | None = None  # tokens kept per step (None: decode.mtp_accepted_tokens)
    engine: str = "auto"  # "compiled", "python" or "auto" (compiled_run.choose); both give the same results
    prefill_instance_nodes: int | None = None  # prefill nodes one instance spans (None: the fewest that hold the weights)
    runs: int = 1  # runs of this size the command makes (policies x seeds): "auto" weighs them together against one compile

    def __post_init__(self) -> None:
        if self.engine not in compiled_run.ENGINES:
            raise PlanError(f"--engine {self.engine!r} is not allowed; must be one of {', '.join(compiled_run.ENGINES)}", 2)
        if self.engine == "compiled" and not compiled_run.numba_available():
            raise PlanError("--engine compiled needs numba, which cannot be imported here; install it (pip install numba) "
                            "or use --engine python", 2)
        BoundOptions.parse(self.dtype, decode_instance_nodes=self.decode_instance_nodes, mtp=self.mtp,
                           mtp_accepted=self.mtp_accepted, prefill_instance_nodes=self.prefill_instance_nodes)  # the bound commands' checks
        for name in ("fetch_period_s", "quota_s", "window_s"):  # set from Python only
            value = getattr(self, name)
            if not (value > 0 and np.isfinite(value)):
                raise PlanError(f"{name} = {value!r} s is not allowed; must be a finite number > 0", 2)
        check_flag("--seed", self.seed)
        check_flag("--dt-ms", round(self.dt_s * 1e3, 9) if np.isfinite(self.dt_s) else self.dt_s)
        if self.dt_s > self.quota_s:  # a step must resolve one forward batch under the attention quota (set from Python)
            raise PlanError(f"--dt-ms = {self.dt_s * 1e3:g} ms is not allowed with an attention quota of {self.quota_s * 1e3:g} ms; "
                            "a step must fit in the quota", 2)

    def bound_options(self, online: OnlineSpec | None) -> BoundOptions:
        """The LP's options for a run with these settings: the TPOT SLO caps decode batches online only."""
        tpot = online.tpot_slo_s if online is not None else float("inf")
        return BoundOptions(self.dtype, DecodeOptions(tpot, self.decode_instance_nodes, self.mtp, self.mtp_accepted), self.prefill_instance_nodes)

    @classmethod
    def of(cls, options: BoundOptions, **rest) -> SimOptions:
        """Run settings that match the bound's ``options`` (dtype, instances, MTP), with ``rest`` on top."""
        d = options.decode
        return cls(dtype=options.dtype, decode_instance_nodes=d.instance_nodes, mtp=d.mtp_drafts, mtp_accepted=d.mtp_accepted,
                   prefill_instance_nodes=options.prefill_instance_nodes, **rest)


@dataclass(frozen=True)
class OnlineSpec:
    """Online serving: Poisson agent arrivals at ``aps`` agents/s; the SLO (paper §7 online) and the warm-up.

    Attributes:
        aps: Agent arrival rate, agents/s.
        ttft_slo_s: The SLO's mean TTFT, seconds (default the paper's 4 s).
        tpot_slo_s: The SLO's TPOT, seconds (default the paper's 0.05 s).
        warmup_frac: Share of the arrival span left out before the measured window, a fraction (0.5).
        stop_on_violation: Stop the run when the windowed TTFT breaks the SLO (a capacity probe).
        horizon_s: Steady state: arrivals stop and the run ends here, seconds of simulated time; ``None`` runs every
            agent to the end.
    """

    aps: float
    ttft_slo_s: float = TTFT_SLO_S
    tpot_slo_s: float = TPOT_SLO_S
    warmup_frac: float = 0.5
    stop_on_violation: bool = False
    horizon_s: float | None = None  # steady state: arrivals stop and the run ends here (None: run every agent to the end)

    def __post_init__(self) -> None:
        if not (self.aps > 0 and np.isfinite(self.aps)):
            raise PlanError(f"--aps = {self.aps!r} agents/s is not allowed; must be a finite number > 0", 2)
        for name in ("ttft_slo_s", "tpot_slo_s"):
            if not getattr(self, name) > 0:
                raise PlanError(f"{name} = {getattr(self, name)!r} s is not allowed; must be > 0", 2)


def online_spec(online: bool, aps: float | None, ttft_slo_s: float, tpot_slo_s: float, find_capacity: bool, n_policies: int) -> OnlineSpec | None:
    """Check the mode flags together: ``--online --aps X``, or ``--find-capacity`` (online, APS searched)."""
    if find_capacity and n_policies > 1:
        raise PlanError("--find-capacity searches one policy; use --policy NAME, not --compare", 2)
    if find_capacity and aps is not None:
        raise PlanError(f"--aps = {aps!r} agents/s is not allowed with --find-capacity; the search chooses the rate", 2)
    check_flag("--ttft-slo-s", ttft_slo_s)
    check_flag("--tpot-slo-ms", tpot_slo_s * 1e3)
    if aps is not None:
        check_flag("--aps", aps)
    if not online:
        if aps is not None:
            raise PlanError(f"--aps = {aps!r} agents/s needs --online (offline runs start every agent at t = 0)", 2)
        if not (math.isclose(ttft_slo_s, TTFT_SLO_S) and math.isclose(tpot_slo_s, TPOT_SLO_S)):
            raise PlanError("--ttft-slo-s and --tpot-slo-ms apply to online runs (--online or --find-capacity); "
                            "an offline run has no SLO and its bound none either", 2)
        return None
    if aps is None and not find_capacity:
        raise PlanError("--online needs --aps X (agent arrivals per second, > 0) or --find-capacity", 2)
    return OnlineSpec(1.0 if aps is None else aps, ttft_slo_s, tpot_slo_s)


@dataclass(frozen=True)
class SimResult:
    """One run: throughput, its LP bound, utilisation, balance, latencies, cost of the run itself.

    Each entry of ``Simulation.runs``. Times are simulated seconds unless they say wall.

    Attributes:
        policy: The policy played (``basic``, ``layerwise``, ``dualpath-rr``, ``dualpath``, ``oracle``, ``split``).
        mode: ``offline`` (every agent at t = 0, or a trace's at its start times) or ``online`` (Poisson arrivals).
        agents: Agents in the run.
        turns: Turns finished.
        sim_s: Simulated time at the run's end, seconds.
        jct_s: Offline: job completion time, when the last turn finished, seconds; ``None`` online.
        turns_per_s: Turns finished over the run (offline: over the JCT; online: in the measured window), turns/s;
            ``None`` for an online window of no length.
        steady_turns_per_s: Turns finished in the steady window (``steady_window_s``) over its length, turns/s.
        bound_turns_per_s: The LP bound of the run's own turns in ``lp_mode``, turns/s.
        steady_bound_turns_per_s: The LP bound of the turns the steady window finished, turns/s; ``None`` when none
            finished.
        lp_mode: The LP mode that bounds the policy (``basic``, ``dualpath`` or ``oracle``).
        utilization: Delivered over capacity times time, per resource kind (the nine links and DRAMs,
            ``prefill_compute``) and ``decode``, a fraction over the run.
        snic_max_over_avg: The busiest node's storage-NIC reads over the mean node's, averaged over 3 s windows with
            reads, a ratio; ``None`` when no storage NIC read anything (the oracle).
        de_read_share: Share of the hit KV read on the DE path, a fraction.
        ttft: Time to first token of the measured turns (:class:`~dualpath_plan.sim.metrics.Latency`, seconds).
        ttst: Time from the first to the second token.
        tpot: Decode time per generated token.
        aps: The arrival rate online, agents/s; ``None`` offline.
        slo_met: Online: the window's mean TTFT and TPOT within ``slo``; ``None`` offline.
        stopped_early: The run stopped before its end (an online run that broke the SLO).
        wall_s: Wall-clock seconds of the run's stepping, without the compile.
        steps: Steps the engine took.
        dt_s: The step, seconds (``--dt-ms``).
        seed: The seed of the agents' draw and arrivals.
        engine: ``compiled`` or ``python``: the engine that ran.
        slo: The online spec (:class:`OnlineSpec`), or ``None`` offline.
        leftover: What is still held at the end (all zero after an offline run): ``requests_waiting``, ``pipe_bytes``,
            ``buffer_bytes``, ``hbm_bytes`` (bytes), ``decoding`` sequences, and the schedulers' reported tokens and
            requests.
        delivered: Units each resource kind delivered over the run: bytes for the links and DRAMs, FLOP (pass time at
            peak) for ``prefill_compute``.
        demanded: Units each resource kind the finished turns needed along their routes, in the same units.
        records: Per turn (trajectory order): arrival, first token, decode start and end, done (seconds; NaN for a turn
            not reached) and the DE-read share.
        steady_binding: The limits that bind ``steady_bound_turns_per_s``.
        steady_use: Per resource kind and ``decode``, what it delivered in the steady window
            (``sim.metrics.Use``: units, capacity over the window, the busiest instance's share).
        use_over_time: Cumulative units per resource kind at the meter's records (``sim.metrics.UseCurve``).
        steady_stages: Where turns were in the steady window, per stage (``sim.metrics.StageLoad``: mean requests and
            prompt tokens, seconds per turn by Little's law).
        stages_over_time: Cumulative request-seconds and token-seconds per stage at the meter's records
            (``sim.metrics.StageCurve``).
        steady_snic_max_over_avg: The storage NICs' balance in the steady window (busiest node's reads over the mean
            node's), a ratio; ``None`` without reads.
        steady_window_s: The steady window (start, stop), seconds. Offline: the middle half of the JCT cut to the span
            after the agents' cold first turns and before the agents in the cluster fall below half their peak
            (``sim.steady``); online: from the warm-up's end to the last arrival or the horizon.
        steady_window_by: Offline: what set the window's start and stop, keys of ``sim.steady.ENDS``
            (``jct_quarter`` or ``cold_start``; ``population_halved`` or ``jct_three_quarters``); ``None`` online.
        prefill_instance_gpus: GPUs of one prefill instance the run's prefill passes are for (their all-to-all's EP
            size; ``--prefill-instance-nodes``, else the fewest nodes that hold the weights).
        tier_share: With a DRAM tier (``--dram-tier``; ``sim.tier``), the share of the finished turns' hit KV its LRU
            served, a fraction; ``None`` without one.
        steady_tier_share: The same over the turns the steady window finished; ``None`` without a tier or such turns.
        bound_tier_share: With a DRAM tier, the share the bound's optimum has it serve (``bounds.lru``: Che's
            approximation's cap); ``None`` without one.
    """

    policy: str
    mode: str
    agents: int
    turns: int
    sim_s: float
    jct_s: float | None
    turns_per_s: float | None  # None: an online window of no length (one agent, arriving at t = 0)
    steady_turns_per_s: float | None
    bound_turns_per_s: float
    steady_bound_turns_per_s: float | None  # None: no turn finished in the window
    lp_mode: str
    utilization: dict[str, float]
    snic_max_over_avg: float | None  # None: no storage NIC read anything (the oracle)
    de_read_share: float
    ttft: Latency
    ttst: Latency
    tpot: Latency
    aps: float | None
    slo_met: bool | None  # online: mean TTFT and TPOT in the window within the SLO below
    stopped_early: bool
    wall_s: float
    steps: int
    dt_s: float
    seed: int
    engine: str  # "compiled" or "python": the engine that ran (compiled_run.choose)
    slo: OnlineSpec | None = field(repr=False)
    leftover: dict[str, float] = field(repr=False)
    delivered: dict[str, float] = field(repr=False)
    demanded: dict[str, float] = field(repr=False)
    records: TurnRecords = field(repr=False, metadata={RAW: "per-turn times; NaN for a turn not reached"})
    steady_binding: tuple[str, ...] = ()  # what binds the bound of the window's turns (steady_bound_turns_per_s)
    steady_use: dict[str, Use] = field(default_factory=dict, repr=False)  # per resource kind and decode, in the window
    use_over_time: UseCurve | None = field(default=None, repr=False, compare=False)  # per kind, at the meter's records
    steady_stages: dict[str, StageLoad] = field(default_factory=dict, repr=False)  # where turns were in the window (sim.stages)
    stages_over_time: StageCurve | None = field(default=None, repr=False, compare=False)  # per stage, at the meter's records
    steady_snic_max_over_avg: float | None = None  # the SNICs' balance in the window (metrics.window_snic_balance)
    steady_window_s: tuple[float, float] | None = None  # (start, stop) of the steady window, s (sim.steady; online: the measured window)
    steady_window_by: tuple[str, str] | None = None  # offline: what set its start and its stop (sim.steady.ENDS); online: None
    prefill_instance_gpus: int = 0  # one prefill instance's GPUs (the bound's lp.Limits.prefill_instance)
    tier_share: float | None = None  # the hit KV the DRAM tier's LRU served (None: no tier)
    steady_tier_share: float | None = None  # the same in the steady window
    bound_tier_share: float | None = None  # the hit KV the bound has the tier serve (None: no tier)

    @property
    def achieved_over_bound(self) -> float | None:
        return _ratio(self.turns_per_s, self.bound_turns_per_s)

    @property
    def steady_over_window_bound(self) -> float | None:
        """Steady throughput over the LP bound of the turns that finished in the steady window."""
        return _ratio(self.steady_turns_per_s, self.steady_bound_turns_per_s)

    @property
    def steady_over_workload_bound(self) -> float | None:
        """Steady throughput over the run's LP bound of its whole workload (``bound_turns_per_s``): the ratio the checks of
        ``plan`` and ``sweep`` call ``steady_over_workload_bound`` (theirs divide by the candidate's bound)."""
        return _ratio(self.steady_turns_per_s, self.bound_turns_per_s)

    @property
    def sim_s_per_wall_s(self) -> float:
        return self.sim_s / self.wall_s if self.wall_s > 0 else float("inf")


def policy_name(policy: str | PolicyName, flag: str = "--policy") -> PolicyName:
    """Parse a policy name given to ``flag``; an unknown one lists the known ones."""
    try:
        return PolicyName(policy)
    except ValueError:
        known = ", ".join(p.value for p in PolicyName)
        raise PlanError(f"{flag} {policy!r} is not allowed; must be one of {known}", 2) from None


# --- running ----------------------------------------------------------------------------------------------

def _view(layout: Layout, scenario: Scenario, traj: Trajectories, de_fraction: float) -> SchedView:
    """The scheduler's view at t = 0, with alpha and beta from the hardware and the trajectories (A.4)."""
    n, L = traj.n_agents, layout
    prompt = int(traj.context_tokens.sum()) + int(traj.append_tokens.sum())
    seconds = turn_prefill_seconds(L.prefill_pass, scenario.model, traj.context_tokens, traj.append_tokens)
    beta = BETA_S * float(prompt) / max(float(seconds.sum()), 1e-12)  # prompt tokens one GPU prefills in BETA_S
    snic = np.concatenate((np.full(L.P, L.snic_pe_Bps), np.full(L.D, L.snic_de_Bps)))
    return SchedView(
        g_pe=L.g_pe, g_de=L.g_de, P=L.P, D=L.D,
        pe_tok=[0.0] * L.n_pe, pe_seq=[0] * L.n_pe, de_tok=[0.0] * L.n_de, de_seq=[0] * L.n_de,
        de_free=[L.de_hbm_kv_bytes] * L.n_de, group_queued=[0.0] * L.D, read_q=np.zeros(L.P + L.D),
        alpha=ALPHA_S * snic / L.kv_bytes_per_token, beta=beta,
        length=[0] * n, hit=[0] * n, need=[0.0] * n, pe_of=[0] * n, arrive=[0.0] * n,
        de_private=[deque() for _ in range(L.D)], de_fraction=de_fraction,
    )


def _check_fits(layout: Layout, traj: Trajectories, policy: PolicyName) -> None:
    """Refuse turns that could never be placed: HBM of one decode GPU, one node's DRAM buffer."""
    final = _most(traj.context_tokens, traj.append_tokens, traj.gen_tokens)
    need = final * layout.hbm_held_per_token
    if need > layout.de_hbm_kv_bytes:
        raise PlanError(f"{traj.source}: a turn of {final} tokens needs {need / 1e9:.3g} GB of decode HBM, more than the "
                        f"{layout.de_hbm_kv_bytes / 1e9:.3g} GB a decode GPU has free after weights; use fewer tokens or more decode GPUs", 1)
    prompt = _most(traj.context_tokens, traj.append_tokens)
    if not FEATURES[policy].io_free and prompt * layout.kv_bytes_per_token > layout.buffer_bytes:
        raise PlanError(f"{traj.source}: a turn of {prompt} prompt tokens ({prompt * layout.kv_bytes_per_token / 1e9:.3g} GB of KV) "
                        f"does not fit the {layout.buffer_bytes / 1e9:.3g} GB DRAM buffer of a node", 1)
    if not FEATURES[policy].layerwise and prompt * layout.kv_bytes_per_token > layout.pe_hbm_kv_bytes:
        raise PlanError(f"{traj.source}: without layer-wise prefill a turn of {prompt} prompt tokens does not fit the "
                        f"{layout.pe_hbm_kv_bytes / 1e9:.3g} GB a prefill GPU has free after weights", 1)


def _most(*tokens: np.ndarray) -> int:
    """The largest per-round sum of ``tokens`` (whole numbers), a slice of ``CHUNK_TURNS`` rounds at a time."""
    return max(int(sum(t[i:i + CHUNK_TURNS] for t in tokens).max()) for i in range(0, tokens[0].size, CHUNK_TURNS))


def _arrivals(n: int, online: OnlineSpec | None, seed: int) -> np.ndarray | None:
    if online is None:
        return None
    gaps = np.random.default_rng([seed, 1]).exponential(1.0 / online.aps, n)  # a stream apart from the trajectories' (seed)
    return np.cumsum(gaps) - gaps[0]  # the first agent arrives at t = 0


STEADY_FRAC = 0.99  # the population of agents must be this close to its steady state from the window's start on


def steady_horizon_s(source: Trajectories, slo: OnlineSpec) -> float:
    """The online horizon: twice the time ``t`` after which the population of agents in the cluster is within
    1 % of its steady state, so that the measured second half (``warmup_frac``) is steady throughout.

    Agents arrive at a constant rate and each lives ``L``: its turns, each taking the TTFT SLO plus its generated
    tokens at the TPOT SLO (the longest an agent may live in a cluster at capacity), and its tool time. At ``t`` after the first
    arrival the population is the rate times ``E[min(L, t)]``, against the rate times ``E[L]`` at steady state
    (Little's law), so ``t`` solves ``E[min(L, t)] = STEADY_FRAC E[L]`` over the agents' own lifetimes. With
    lifetimes as spread as the data set's (the longest 8x the mean), one or two mean lifetimes are far from
    steady: ``t`` is about three mean lifetimes for agentic-64k."""
    turns = source.rounds_per_agent.astype(float)
    gen = np.add.reduceat(source.gen_tokens, source.offsets[:-1]).astype(float)
    tool = np.add.reduceat(source.tool_s, source.offsets[:-1])  # an agent also lives through its tool time (sim.waits)
    life = np.sort(turns * slo.ttft_slo_s + gen * slo.tpot_slo_s + tool)
    # E[min(L, t)] at t = life[i]: the mean of the lifetimes below it plus t for every one from i on
    below = np.concatenate(([0.0], np.cumsum(life)[:-1]))
    reached = (below + life * np.arange(life.size, 0, -1)) / life.size
    target = STEADY_FRAC * life.mean()
    i = int(np.searchsorted(reached, target))  # the first lifetime at which E[min(L, t)] reaches the target
    if i == 0:
        return 2.0 * target  # every lifetime is at least the target (E[min(L, t)] = t below the shortest)
    # between life[i-1] and life[i], E[min(L, t)] rises by (size - i) / size per second
    t = life[i - 1] + (target - reached[i - 1]) * life.size / (life.size - i)
    return 2.0 * float(t)


def run_agents(workload: Workload, agents: int | None, trace: Path | None, seed: int,
               online: OnlineSpec | None) -> tuple[Trajectories, OnlineSpec | None]:
    """The agents of a run and its online spec: ``agents`` copies (or the default set) when a count is given
    or the run is offline; online without a count, the paper's method: the arrivals before the steady-state
    horizon (:func:`steady_horizon_s`, :func:`online_agents`)."""
    if online is None or agents is not None:
        return trajectories(workload, agents, trace, seed), online
    source = source_of(workload, trace)
    online = replace(online, horizon_s=steady_horizon_s(source, online))
    return online_agents(source, online, seed), online


def capacity_source(workload: Workload, agents: int | None, trace: Path | None) -> Trajectories:
    """What ``find_capacity`` draws each probe's agents from; ``agents`` must be None (the rule sets them)."""
    if agents is not None:
        raise PlanError(f"--agents = {agents} agents is not allowed with --find-capacity; each probe's agents are the Poisson "
                        "arrivals before its steady-state horizon (the paper's online method)", 2)
    return source_of(workload, trace)


def online_agents(source: Trajectories, online: OnlineSpec, seed: int) -> Trajectories:
    """The agents of an online run with a horizon: one copy of a trajectory of ``source`` (the workload's data
    set or a trace) for every Poisson arrival before the horizon (the run's own arrival stream, ``seed``)."""
    if online.horizon_s is None:
        raise PlanError("online_agents needs an OnlineSpec with horizon_s", 2)
    expected = online.aps * online.horizon_s
    if expected > MAX_AGENTS + 10 * math.sqrt(MAX_AGENTS):  # ten sigma past the cap: refuse before drawing them
        raise _too_many(online, expected)
    n = max(1, int(expected * 1.5) + 16)
    while True:
        arrivals = _arrivals(n, online, seed)
        if arrivals[-1] >= online.horizon_s:
            break
        n *= 2
    count = int(np.searchsorted(arrivals, online.horizon_s, side="left"))
    if count > MAX_AGENTS:
        raise _too_many(online, count)
    return take(source, max(1, count), np.random.default_rng(seed))


def _too_many(online: OnlineSpec, count: float) -> PlanError:
    """Too many arrivals for one run: at the rate (``--aps``, or a capacity probe's) over the horizon the SLOs set
    (:func:`steady_horizon_s`: agents live their turns at the SLOs), so either can be lowered."""
    fix = "the SLOs that set the horizon" if online.stop_on_violation else "the rate (--aps) or the SLOs that set the horizon"  # a probe: the search's rate
    return PlanError(f"arrivals at {online.aps:g} agents/s over a {online.horizon_s:,.0f} s horizon (the steady state at a TTFT SLO of "
                     f"{online.ttft_slo_s:g} s and a TPOT SLO of {online.tpot_slo_s * 1e3:g} ms) are {count:,.0f} agents, more than the "
                     f"{MAX_AGENTS:,} a run takes; lower {fix} (--ttft-slo-s, --tpot-slo-ms)", 2)


def _stop_check(eng: Engine, online: OnlineSpec, arrivals: np.ndarray, span: WindowSpan) -> Callable[[float], bool]:
    """Online stop rule (paper §7 online, notes 6.3): the mean TTFT of the turns that arrived in the last 150 s, counting a
    turn still waiting by its wait so far, exceeds the SLO once the warm-up is over. It reads only the records
    ``span`` says can be in the window (``sim.window``: the same turns, so the same mean)."""
    horizon = online.horizon_s
    warm = online.warmup_frac * (float(arrivals.max()) if horizon is None else horizon)
    arrive_all, first_all = eng.rec["arrive"], eng.rec["first"]

    def check(t: float) -> bool:
        if horizon is not None and t >= horizon:
            return True  # steady state: the run is over
        if not online.stop_on_violation or t < max(warm, SLO_WINDOW_S):
            return False
        since = t - SLO_WINDOW_S
        start, stop = span.span(arrive_all, t, since)
        at = start + np.flatnonzero(arrive_all[start:stop] > since)  # one pass over the span; the window's turns are few
        at = at[arrive_all[at] <= t]
        if not at.size:
            return False
        first = first_all[at]
        ttft = np.where(np.isfinite(first), first, t) - arrive_all[at]
        return float(ttft.mean()) > online.ttft_slo_s

    return check


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or not b > 0 else a / b


def _rate(done: np.ndarray, start: float, stop: float) -> float | None:
    """Turns completed per second in [start, stop] (None for a window of no length)."""
    if not stop > start:
        return None
    return float(((done >= start) & (done <= stop)).sum()) / (stop - start)


@dataclass(frozen=True)
class RunCost:
    """What a run is about to cost, said before it starts (``run``'s ``on_start``).

    Attributes:
        turns: Turns the run serves.
        sim_s: Simulated seconds it is expected to span (s): at least its turns at the bound's rate, plus an
            agent's mean tool time.
        engine: The engine that plays it, ``compiled`` or ``python``.
        wall_s: Expected wall time (s) on that engine (``compiled_run.estimate_s``), compiling not included.
    """

    turns: int
    sim_s: float
    engine: str
    wall_s: float


def _engine(layout: Layout, scenario: Scenario, traj: Trajectories, view: SchedView, feat: Features, name: PolicyName,
            exact: bool, options: SimOptions, times: np.ndarray, bound_turns_per_s: float, de_fraction: float,
            on_compile: Callable[[], None] | None, on_start: Callable[[RunCost], None] | None = None) -> Engine | compiled_run.CompiledRun:
    """The engine that runs (``compiled_run.choose``): a Python ``Engine`` or a ``compiled_run.CompiledRun``."""
    sim_s = max(float(times[np.isfinite(times)].max()), traj.n_rounds / bound_turns_per_s if bound_turns_per_s > 0 else 0.0)
    sim_s += float(traj.tool_s.sum()) / traj.n_agents  # an agent's tool time lengthens the run
    python_s = compiled_run.python_estimate_s(traj.n_rounds, sim_s, options.dt_s)
    engine = compiled_run.choose(options.engine, python_s * options.runs, compiled_run.is_compiled)
    if on_start is not None:
        on_start(RunCost(traj.n_rounds, sim_s, engine, compiled_run.estimate_s(engine, traj.n_rounds, sim_s, options.dt_s)))
    if engine == "python":
        return Engine(layout, scenario.model, traj, view, feat, exact, options.quota_s, options.dt_s)
    core, cached = compiled_run.build_beside_load(lambda: compiled_run.build(
        layout, scenario.model, traj, feat, name, exact, beta=view.beta, alpha=view.alpha, de_fraction=de_fraction, dt=options.dt_s,
        period=options.fetch_period_s, quota=options.quota_s, window=options.window_s, stall=STALL_S, arrivals=times))
    if not cached and on_compile is not None:
        on_compile()
    compiled_run.compile_engine()
    return compiled_run.CompiledRun(core, feat, Meter(layout, options.window_s, own_records=False))


def run(scenario: Scenario, traj: Trajectories, policy: str | PolicyName, *, online: OnlineSpec | None = None,
        options: SimOptions = SimOptions(), on_progress: Callable[[float, float], None] | None = None,
        on_compile: Callable[[], None] | None = None, on_start: Callable[[RunCost], None] | None = None) -> SimResult:
    """Serve ``traj`` on ``scenario``'s cluster with ``policy``; offline unless ``online`` is given.

    ``on_progress(fraction of turns done, simulated s)`` is called every few hundred steps;
    ``on_compile()`` before the compiled engine is compiled (its first use after installation);
    ``on_start(cost)`` once the engine is chosen, before the run starts (:class:`RunCost`).
    """
    name = policy_name(policy)
    feat = FEATURES[name]
    if scenario.workload.hit_rate is not None:
        raise PlanError(f"hit_rate_frac = {scenario.workload.hit_rate:g} is not allowed for simulate; it is a what-if of the "
                        "bounds, and the runner replays every turn's whole context as hits (paper A.3): drop it", 2)
    if (instance := options.decode_instance_nodes) is not None and scenario.D % instance:
        raise PlanError(f"--decode-instance-nodes = {instance} nodes is not allowed with D = {scenario.D}; the runner's decode "
                        "side must be whole instances (D a multiple of it)", 2)
    if (instance := options.prefill_instance_nodes) is not None:
        options.bound_options(online).prefill_floor(scenario.model, scenario.pe_hw)  # the instance holds the weights
        if instance > scenario.P:
            raise PlanError(f"--prefill-instance-nodes = {instance} nodes is not allowed with P = {scenario.P}; an instance spans at "
                            "most the prefill side", 2)
    mtp = options.bound_options(online).decode.mtp_for(scenario.model)
    layout = build_layout(scenario, options.buffer_bytes, options.dtype, options.decode_instance_nodes, mtp, options.prefill_instance_nodes)
    if traj.workload is None:  # a trace (a data set drawn from a workload was checked by its MaxLen: model.workload.check_window)
        check_trace_window(scenario.model, traj)
    _check_fits(layout, traj, name)
    lim = bound_limits(scenario, traj, options.bound_options(online))
    de_fraction = solve_closed(lim, "dualpath").de_read_fraction if name is PolicyName.SPLIT else 0.0
    view = _view(layout, scenario, traj, de_fraction)
    exact = scenario.accounting == "exact"
    arrivals = _arrivals(int(np.count_nonzero(traj.fork_round < 0)), online, options.seed)
    times = start_times(traj, arrivals)  # recorded start times (already scaled: Trajectories.rescaled), forks at inf
    bound = solve_closed(lim, feat.lp_mode)
    eng = _engine(layout, scenario, traj, view, feat, name, exact, options, times, bound.turns_per_s, de_fraction, on_compile, on_start)
    meter = Meter(layout, options.window_s) if isinstance(eng, Engine) else eng.meter
    stop = _stop_check(eng, online, arrivals, WindowSpan(traj, times)) if online is not None and (online.stop_on_violation or online.horizon_s is not None) else None
    progress = None if on_progress is None else (lambda t: on_progress(eng.rounds_done / traj.n_rounds, t))
    start = time.perf_counter()
    if isinstance(eng, Engine):
        clock = Clock(eng, POLICIES[name], meter, options.dt_s, options.fetch_period_s, times, stop, STALL_S, progress)
        end = clock.run()
        steps, stopped = clock.steps, clock.stopped_early
    else:
        end = eng.run(progress, stop)
        steps, stopped = eng.steps, eng.stopped_early
    wall = time.perf_counter() - start
    window = None
    if arrivals is not None:
        last = float(arrivals.max()) if online.horizon_s is None else online.horizon_s
        window = (online.warmup_frac * last, last)
        stopped = stopped and (online.horizon_s is None or end < online.horizon_s)  # the horizon is steady state, not a miss
    return _result(name, scenario, traj, online, options, eng, meter, bound, lim,
                   (end, wall, steps, stopped), window)


def _window_bound(scenario: Scenario, traj: Trajectories, bound_options: BoundOptions, done: np.ndarray,
                  window: tuple[float, float], mode: str) -> tuple[Bound, Limits] | None:
    """The LP bound for the turns that finished inside ``window`` (their mix, not the run's average), with its data."""
    inside = (done >= window[0]) & (done <= window[1])
    if not np.count_nonzero(inside):
        return None
    hit = traj.context_tokens[inside]  # taken once: the check and the bound read the same copy
    if not hit.sum() > 0:
        return None
    lim = turns_limits(scenario, hit, traj.append_tokens[inside], traj.gen_tokens[inside], traj.n_rounds / traj.n_agents, bound_options)
    return solve_closed(lim, mode), lim


def _leftover(eng: Engine) -> dict[str, float]:
    """What is still held when the run ends (all zero after an offline run): requests waiting anywhere,
    bytes in pipes, DRAM buffers and HBM, decoding sequences, and the engines' reported tokens."""
    if not isinstance(eng, Engine):
        return eng.leftover()
    v, pipes = eng.view, eng.pipes
    waiting = len(v.pe_wait) + len(v.de_wait) + sum(map(len, v.de_private)) + sum(map(len, eng.ready)) + sum(map(len, pipes.queue))
    return {
        "requests_waiting": float(waiting + sum(map(len, pipes.inflight)) + sum(map(len, eng.batch_members))),
        "pipe_bytes": float(np.abs(pipes.backlog()).sum()),
        "buffer_bytes": float(np.abs(eng.buf_used).sum()),
        "hbm_bytes": float(np.abs(eng.de_hbm).sum() + np.abs(eng.pe_hbm).sum()),
        "decoding": float(eng.dec.count.sum()),
        "reported_tokens": float(np.abs(v.pe_tok).sum() + np.abs(v.de_tok).sum() + np.abs(v.group_queued).sum()),
        "reported_requests": float(np.abs(v.pe_seq).sum() + np.abs(v.de_seq).sum()),
        "stage_load": float(np.abs(eng.stage_load).sum()),
    }


def _result(name: PolicyName, scenario: Scenario, traj: Trajectories, online: OnlineSpec | None, options: SimOptions,
            eng: Engine, meter: Meter, bound: Bound, lim: Limits, clock: tuple, window: tuple | None) -> SimResult:
    end, wall, steps, stopped = clock
    rec = TurnRecords(eng.rec["arrive"], eng.rec["first"], eng.rec["dec_start"], eng.rec["dec_end"], eng.rec["done"], eng.rec_frac,
                      eng.rec_tier if eng.tier else None)
    done = np.isfinite(rec.done)
    window_by = None
    if window is None:
        jct = float(np.max(rec.done, where=done, initial=-np.inf)) if done.any() else end  # no copy of the done turns' times
        cut = offline_window(rec.arrive, rec.done, traj.offsets, jct)  # past the cold start, before the drain
        window, window_by = (cut.start_s, cut.stop_s), (cut.start_by, cut.stop_by)
        span, mask, turns_per_s = jct, done, done.sum() / jct
    else:
        jct, span = None, end
        mask = done & (rec.arrive >= window[0]) & (rec.arrive <= window[1])
        turns_per_s = _rate(rec.done, *window)
    steady = _rate(rec.done, *window)
    latencies = begun(mask.size > BIG_ROWS, rec.latencies, traj.gen_tokens, mask)  # beside the window's bound (sim.beside)
    try:
        in_window = _window_bound(scenario, traj, options.bound_options(online), rec.done, window, bound.mode)
    except BaseException:
        with contextlib.suppress(BaseException):  # wait for the thread; what the bound raised is what is reported
            latencies()
        raise
    ttft, ttst, tpot = latencies()
    steady_bound, steady_lim = (None, lim) if in_window is None else in_window
    use = window_use(meter, window[0], window[1], end, steady_lim.decode_tokens_per_gpu_s)  # decode at the window mix's rate
    curve = use_curve(meter, end, lim.decode_tokens_per_gpu_s)
    slo = None
    if online is not None:
        slo_ttft = ttft.mean_s
        if online.horizon_s is not None:  # a turn still waiting at the horizon counts by its wait so far, as the stop rule
            arrived = (rec.arrive >= window[0]) & (rec.arrive <= window[1])
            waits = np.where(np.isfinite(rec.first[arrived]), rec.first[arrived], end) - rec.arrive[arrived]
            slo_ttft = float(waits.mean()) if waits.size else None
        slo = bool(not stopped and slo_ttft is not None and slo_ttft <= online.ttft_slo_s
                   and tpot.mean_s is not None and tpot.mean_s <= online.tpot_slo_s)
    served = (lambda a: a) if done.all() else (lambda a: a[done])  # noqa: E731 (no copies when every turn was served)
    demand = demanded(served(traj.context_tokens), served(traj.append_tokens), served(traj.gen_tokens), served(rec.de_frac),
                      eng.kv_hit, eng.kv_miss, eng.kv_wb, eng.feat.layerwise, float(served(eng.rec_flops).sum()),
                      None if rec.tier is None else served(rec.tier), lim.tier_sigma)
    return guard(SimResult(
        policy=name.value, mode="offline" if online is None else "online", agents=traj.n_agents, turns=int(done.sum()),
        sim_s=end, jct_s=jct, turns_per_s=_float(turns_per_s), steady_turns_per_s=_float(steady),
        bound_turns_per_s=bound.turns_per_s, steady_bound_turns_per_s=None if steady_bound is None else steady_bound.turns_per_s, lp_mode=bound.mode, utilization=curve.utilization(span),
        snic_max_over_avg=meter.snic_max_over_avg() if isinstance(eng, Engine) else eng.snic_max_over_avg(), de_read_share=meter.de_read_share(), ttft=ttft, ttst=ttst, tpot=tpot,
        aps=None if online is None else online.aps, slo_met=slo, slo=online, stopped_early=stopped, wall_s=wall, steps=steps,
        dt_s=options.dt_s, seed=options.seed, engine="python" if isinstance(eng, Engine) else "compiled", leftover=_leftover(eng), delivered=meter.delivered(), demanded=demand, records=rec,
        steady_binding=() if steady_bound is None else steady_bound.binding, steady_use=use,
        use_over_time=curve, steady_stages=window_stages(meter, window[0], window[1], end, _float(steady)),
        stages_over_time=stage_curve(meter, end), steady_snic_max_over_avg=window_snic_balance(meter, window[0], window[1], end),
        steady_window_s=(float(window[0]), float(window[1])), steady_window_by=window_by,
        prefill_instance_gpus=lim.prefill_instance[0],
        tier_share=None if rec.tier is None else _tier_share(served(traj.context_tokens), served(rec.tier)),
        steady_tier_share=None if rec.tier is None else _tier_share(*_in_window(rec.done, window, traj.context_tokens, rec.tier)),
        bound_tier_share=min(1.0, bound.R_m_Bps / bound.kv_Bps if bound.kv_Bps > 0 else 0.0) if rec.tier is not None else None,  # clamped: rounding; the oracle reads nothing
    ), f"the {name.value} run", scenario.inputs)


def _in_window(done: np.ndarray, window: tuple[float, float], *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays`` at the turns finished inside ``window``."""
    inside = (done >= window[0]) & (done <= window[1])
    return tuple(a[inside] for a in arrays)


def _tier_share(hit: np.ndarray, tier: np.ndarray) -> float | None:
    """The share of these turns' hit tokens the DRAM tier served (``None`` without hits)."""
    total = float(hit.sum())
    return dot(hit, tier) / total if total > 0 else None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`compare`: the runs that finished before it (``runs``, in order), on ``trajectories``, of
    ``policies`` asked for. A ``KeyboardInterrupt``, so a caller that does not look at them still stops."""

    def __init__(self, runs: dict[str, SimResult], trajectories: Trajectories, policies: int) -> None:
        super().__init__(f"interrupted after {len(runs)} of {policies} runs")
        self.runs, self.trajectories, self.policies = runs, trajectories, policies


def compare(scenario: Scenario, traj: Trajectories, policies: list[str | PolicyName], *, online: OnlineSpec | None = None,
            options: SimOptions = SimOptions(), on_progress: Callable[[str, float, float], None] | None = None,
            on_compile: Callable[[], None] | None = None, on_start: Callable[[RunCost], None] | None = None) -> dict[str, SimResult]:
    """Run several policies on the same trajectories and options; results by policy name, in order. Ctrl-C raises
    :class:`Interrupted` with the runs that finished. ``on_start``: as :func:`run`'s, before each run."""
    out: dict[str, SimResult] = {}
    options = replace(options, runs=max(options.runs, len(policies)))  # every policy's run weighs in auto's choice
    for policy in policies:
        name = policy_name(policy)
        hook = None if on_progress is None else (lambda frac, t, n=name.value: on_progress(n, frac, t))
        try:
            out[name.value] = run(scenario, traj, name, online=online, options=options, on_progress=hook, on_compile=on_compile,
                                  on_start=on_start)
        except Interrupted:
            raise
        except KeyboardInterrupt:
            raise Interrupted(out, traj, len(policies)) from None
    return out


@dataclass(frozen=True)
class Capacity:
    """The highest APS meeting the SLO, found by bisection, every probe made, and the run at that APS.

    When no probe met the SLO, ``lowest_miss`` is the run at the lowest rate probed (what the cluster does nearly
    unloaded).

    Attributes:
        policy: The policy searched.
        aps: The capacity: the highest arrival rate whose probe kept the SLO, agents/s (0 when none did).
        bound_aps: The LP bound of the probes' turns at the SLO, agents/s: the search's ceiling.
        probes: Every probe in order, as (arrival rate in agents/s, whether it kept the SLO).
        result: The probe at ``aps`` (:class:`SimResult`), or ``None`` when no probe kept the SLO.
        slo: The SLO and horizon every probe ran under (:class:`OnlineSpec`).
        turns_per_agent: The trajectories' mean turns per agent: agents/s = turns/s over this.
        lowest_miss: With no probe within the SLO, the run at the lowest rate probed; else ``None``.
    """

    policy: str
    aps: float
    bound_aps: float
    probes: tuple[tuple[float, bool], ...]
    result: SimResult | None
    slo: OnlineSpec
    turns_per_agent: float  # the trajectories' mean: agents/s = turns/s over this
    lowest_miss: SimResult | None = None


def find_capacity(scenario: Scenario, source: Trajectories, policy: str | PolicyName, *, slo: OnlineSpec,
                  options: SimOptions = SimOptions(), rel_tol: float = 0.05, max_probes: int = 12,
                  on_progress: Callable[[float, float], None] | None = None, on_compile: Callable[[], None] | None = None) -> Capacity:
    """The highest APS in (0, LP bound in agents/s] whose online run meets ``slo`` (paper §7 online, notes 6.3), by the
    search of ``sim.search`` with one probe at a time: first at ``1 - rel_tol`` of the bound, then bisection.

    Each probe is the paper's online method (:func:`probe`): Poisson arrivals at the probed rate until the
    steady-state horizon, each agent a copy of a trajectory of ``source`` (the workload's data set or a trace)
    replayed from its first round; the probe stops when its windowed TTFT breaks the SLO or at the horizon. So
    how many agents arrive follows from the rate and the stopping rule. The search stops when the bracket is
    within ``rel_tol`` of its upper end, after ``max_probes`` runs, or when the floor probe misses too.
    """
    slo = probe_spec(source, slo)
    options = replace(options, runs=max(options.runs, max_probes))  # auto weighs the search's probes together
    bound, turns = bound_for(scenario, source, policy_name(policy), options.bound_options(slo)), source.summary().mean_turns
    bracket = Bracket(bound.turns_per_s / turns, rel_tol, max_probes)  # one probe a round: rounds are probes
    runs: dict[float, SimResult] = {}
    while rates := bracket.rates(1):
        for aps in rates:
            runs[aps] = probe(scenario, source, policy, slo, aps, options, on_progress, on_compile)
        bracket = bracket.after([(aps, bool(runs[aps].slo_met)) for aps in rates])
    missed = [aps for aps, ok in bracket.probes if not ok]
    best = runs.get(bracket.lo) if bracket.met else None
    miss = runs[min(missed)] if best is None and missed else None
    cap = Capacity(policy_name(policy).value, bracket.lo, bracket.bound_aps, bracket.probes, best, slo, turns, miss)
    return guard(cap, "the capacity search", scenario.inputs)


def probe_spec(source: Trajectories, slo: OnlineSpec) -> OnlineSpec:
    """``slo`` as a capacity probe runs it: with its steady-state horizon (:func:`steady_horizon_s`, unless given) and
    stopping at the first window that breaks the SLO."""
    return replace(slo, horizon_s=steady_horizon_s(source, slo) if slo.horizon_s is None else slo.horizon_s, stop_on_violation=True)


def probe(scenario: Scenario, source: Trajectories, policy: str | PolicyName, slo: OnlineSpec, aps: float, options: SimOptions = SimOptions(),
          on_progress: Callable[[float, float], None] | None = None, on_compile: Callable[[], None] | None = None) -> SimResult:
    """One capacity probe: the online run at ``aps`` of ``slo`` as :func:`probe_spec` makes it (the arrivals drawn with
    ``options.seed``)."""
    spec = replace(slo, aps=aps)
    return run(scenario, online_agents(source, spec, options.seed), policy, online=spec, options=options, on_progress=on_progress,
               on_compile=on_compile)
