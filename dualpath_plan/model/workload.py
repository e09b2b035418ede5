"""Agent trajectories for the fluid runner: synthetic sets drawn to the paper's Table 2, and JSONL traces.

A trajectory is a list of rounds; round ``i`` appends ``A_i`` tokens to the prompt and generates
``g_i`` tokens. The replay rule (paper A.3, notes section 1) fixes the context: the prompt of round
``i+1`` is ``Context_{i+1} + A_{i+1}`` with ``Context_{i+1} = A_1, G_1, ..., A_i, G_i``. KV hits happen
only within a trajectory and nothing is evicted, so a round's hit tokens are its context and its miss
tokens are its append.

**Synthetic rule** (:func:`synthesize`). All six columns of Table 2 hold at once when Turns, Total and the
per-turn Append and Gen are read as means over trajectories (the last two of each trajectory's own per-turn
mean) and Context as a mean over turns; ``table2`` builds trajectories under that reading (a tilted prior
pool, a balanced draw, rounds split from each trajectory's totals). Round 1 of each is the prompt present
before the agent starts (paper A.3's prepended round: ``A_1`` tokens, ``g_1 = 1``). For Table 2 this gives
60 / 106 / 157 turns per agent (32K / 48K / 64K), with pooled rounds of 360 + 117 / 270 + 132 / 235 + 121
appended + generated tokens: long trajectories have short rounds.

**Data set and replay** (:func:`dataset`, :func:`replay`). Each workload has one data set of
``trajectories`` (Table 2: 500) drawn with a fixed seed; a run's agents are copies drawn from it, so more
agents add copies, not a longer tail. Every command counts an agent's turns as the data set's mean
(:func:`agent_turns`), and the bounds charge the mean of the data set's turns (:func:`served_turns`).

**Traces** (:func:`load_jsonl`, :func:`trace_name`). One session per line in schema v2 (``trace.schema``: tool time
after each round, start times, compaction, sub-agent forks, shared prefixes), or a v1 trajectory: a JSON list of
rounds, each ``{"append_tokens": A, "gen_tokens": g}`` or ``[A, g]`` (whole numbers >= 1). A public trace reads
through its converter (``trace.formats``). A trace is a workload like a profile (:func:`workload_of_trace`): its
sessions are the data set every command replays and bounds. ``examples/trace-example.jsonl`` (v1) and
``examples/trace-v2-example.jsonl`` are small made-up files showing the formats (not data).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any
from collections.abc import Iterable

import numpy as np

from dualpath_plan.model import datacache
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import MAX_AGENTS, check_flag
from dualpath_plan.model.profiles import Model, Workload
from dualpath_plan.model.sums import CHUNK, dot_by_slice
from dualpath_plan.model.table2 import Targets, draw_shapes, realise
from dualpath_plan.model.trace import formats, native
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.formats import ImportOptions
from dualpath_plan.model.trace.ops import expand
from dualpath_plan.model.trace.schema import NO_KEEP, Fork, Session, SharedPrefix

# The most agents of one run: about 7 GiB and a few minutes here (49,152 agents, the paper's largest run: 1.35 GiB, 37 s).
DEFAULT_AGENTS = 1024  # the paper's agent count for its DS 660B append-scaling and ablation runs (paper 7, Fig. 9/12)


def _frozen(values: Any) -> np.ndarray:
    """``values`` as a read-only int64 array: one that nobody can write, through it or through the arrays it views
    (another set's, or one its maker has just frozen, :func:`_fresh`), is kept as it is, anything else copied (a
    caller's array stays the caller's)."""
    if isinstance(values, np.ndarray) and values.dtype == np.int64 and _read_only(values):
        return values
    array = np.array(values, dtype=np.int64)
    array.setflags(write=False)
    return array


def _read_only(array: np.ndarray) -> bool:
    """Whether neither ``array`` nor any array it is a view of can be written (memory that is not an array's: no)."""
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        if array.base is None:
            return True
        array = array.base
    return False


def _fresh(array: np.ndarray) -> np.ndarray:
    """An array just computed here, which nothing else holds, made read-only in place: at millions of rounds a copy
    is tens of MB of fresh memory, which a virtual machine may give slowly."""
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class TrajectoryStats:
    """Achieved statistics of a trajectory set, in tokens (per round or per agent as named)."""

    n_agents: int
    n_rounds: int
    mean_turns: float  # rounds per agent
    mean_append_tokens: float  # per round, all rounds
    mean_gen_tokens: float  # per round, all rounds
    mean_turn_append_tokens: float  # mean over agents of each agent's mean append per round (Table 2's Append/turn)
    mean_turn_gen_tokens: float  # mean over agents of each agent's mean generation per round (Table 2's Gen/turn)
    mean_later_append_tokens: float  # per round, rounds after each agent's first
    mean_later_gen_tokens: float  # per round, rounds after each agent's first
    mean_context_tokens: float  # per round (the hit tokens loaded from storage)
    mean_total_tokens: float  # per agent
    max_total_tokens: int  # per agent
    hit_rate_frac: float  # sum of context / sum of (context + append)

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, eq=False)
class Trajectories:
    """Agent trajectories as flat arrays: round k of agent a is index ``offsets[a] + k``.

    Arrays are read-only; per-round arrays have one entry per round of every agent, per-agent arrays one per agent.
    What ``Simulation.trajectories`` holds, and what :func:`dualpath_plan.simulate` replays.

    Attributes:
        append_tokens: Per round, the tokens appended and prefilled (the A_i of the replay rule, paper A.3), int64.
        gen_tokens: Per round, the tokens generated (the g_i), int64.
        offsets: Where each agent's rounds start, int64, ``n_agents + 1`` entries.
        source: Where the trajectories came from (a workload's data set or a trace file), for reports.
        skipped: Lines a tolerant :func:`load_jsonl` left out, as ``(line_number, reason)``.
        workload: The workload profile drawn from, or ``None`` for a trace.
        tool_s: Per round, seconds of tool or think time after it; ``None``: none (schema v1, the paper's method).
        keep_tokens: Per round, ``NO_KEEP`` or the context tokens kept after it (a compaction); ``None``: none.
        prefix_tokens: Per agent, tokens cached before round 1 (a shared prefix or a fork's); ``None``: none.
        start_s: Per agent, the recorded start time, seconds (NaN: none); ``None``: all start at once.
        fork_round: Per agent, the global index of the parent's round it starts after (-1: a root); ``None``: no forks.
        fork_delay_s: Per agent, seconds after that round ends; ``None``: no forks.
        line_no: Per agent, the trace line it came from (0: not from a file); ``None``: not from a file.
    """

    append_tokens: np.ndarray
    gen_tokens: np.ndarray
    offsets: np.ndarray
    source: str
    skipped: tuple[tuple[int, str], ...] = field(default=())
    workload: str | None = None  # the workload profile drawn from (None: a trace)
    # schema v2 (``trace.schema``); None: the v1 default (no tool time, no compaction, no prefix, all start at once, no forks)
    tool_s: np.ndarray | None = None  # per round: s of tool or think time after it
    keep_tokens: np.ndarray | None = None  # per round: NO_KEEP, or the context tokens kept after it (compaction)
    prefix_tokens: np.ndarray | None = None  # per agent: tokens cached before round 1 (a shared prefix or a fork's)
    start_s: np.ndarray | None = None  # per agent: recorded start time, s (NaN: none)
    fork_round: np.ndarray | None = None  # per agent: the global index of the parent's round it starts after (-1: a root)
    fork_delay_s: np.ndarray | None = None  # per agent: s after that round ends
    line_no: np.ndarray | None = None  # per agent: the trace line it came from (0: not from a file)

    def __post_init__(self) -> None:
        rounds, n = np.asarray(self.append_tokens).size, max(np.asarray(self.offsets).size - 1, 0)
        defaults = {"tool_s": (0.0, float, rounds), "keep_tokens": (NO_KEEP, np.int64, rounds), "prefix_tokens": (0, np.int64, n),
                    "start_s": (np.nan, float, n), "fork_round": (-1, np.int64, n), "fork_delay_s": (0.0, float, n),
                    "line_no": (0, np.int64, n)}
        for name in ("append_tokens", "gen_tokens", "offsets"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        for name, (default, dtype, size) in defaults.items():
            value = getattr(self, name)
            if value is None:  # a constant of no memory (a stride-0 view of one value): a v1 set of millions of rounds holds no more
                array = np.broadcast_to(np.array(default, dtype=dtype), (size,))
            elif isinstance(value, np.ndarray) and value.dtype == dtype and not value.flags.writeable:
                array = value  # another set's array (dataclasses.replace): kept as it is, a constant stays one
            else:
                array = np.array(value, dtype=dtype)
                array.setflags(write=False)
            object.__setattr__(self, name, array)
        offsets = self.offsets
        if not (self.gen_tokens.size == rounds and offsets.size >= 2 and offsets[0] == 0 and offsets[-1] == rounds
                and np.all(np.diff(offsets) >= 1)):
            raise ValueError(f"{self.source}: offsets must rise from 0 to the number of rounds by >= 1 per agent")
        if rounds and min(self.append_tokens.min(), self.gen_tokens.min()) < 1:
            raise ValueError(f"{self.source}: every round appends and generates >= 1 token")
        self._check_v2(rounds, n)

    def _check_v2(self, rounds: int, n: int) -> None:
        """The v2 arrays' sizes and the rules a replay relies on (``trace.schema``)."""
        if not (self.tool_s.size == self.keep_tokens.size == rounds and
                self.prefix_tokens.size == self.start_s.size == self.fork_round.size == self.fork_delay_s.size == self.line_no.size == n):
            raise ValueError(f"{self.source}: v2 arrays must have one entry per round (tool_s, keep_tokens) or per agent")
        if not (np.all(np.isfinite(self.tool_s)) and np.all(self.tool_s >= 0) and np.all(self.fork_delay_s >= 0)):
            raise ValueError(f"{self.source}: tool and fork delay times must be finite and >= 0 s")
        if np.any(self.start_s < 0) or np.any(np.isinf(self.start_s)):
            raise ValueError(f"{self.source}: start times must be finite and >= 0 s")
        if np.any(self.prefix_tokens < 0) or np.any(self.keep_tokens < NO_KEEP):
            raise ValueError(f"{self.source}: prefix and kept tokens must be >= 0")
        forks = np.flatnonzero(self.fork_round >= 0)
        if forks.size and np.any(self.fork_round[forks] >= self.offsets[forks]):
            raise ValueError(f"{self.source}: a fork starts after a round of an earlier agent")
        if forks.size and np.any(self.prefix_tokens[forks] > self.held_tokens[self.fork_round[forks]]):
            raise ValueError(f"{self.source}: a fork reads more tokens than its parent held")
        if np.any(self.keep_tokens != NO_KEEP) and np.any(self.keep_tokens > self.held_tokens):
            raise ValueError(f"{self.source}: a round keeps more tokens than it held")

    @property
    def is_v1(self) -> bool:
        """Whether the set uses none of schema v2's additions (a v1 replay: every agent starts at once, back to back)."""
        return not (self.tool_s.any() or np.any(self.keep_tokens != NO_KEEP) or self.prefix_tokens.any()
                    or np.any(np.isfinite(self.start_s)) or np.any(self.fork_round >= 0))

    def rescaled(self, time_scale: float = 1.0, tool_scale: float = 1.0) -> Trajectories:
        """The set with recorded start times times ``time_scale`` (< 1 compresses the trace's timeline: more sessions at
        once) and tool times and fork delays times ``tool_scale`` (0: the paper's method, no tool time)."""
        if time_scale == 1.0 and tool_scale == 1.0:
            return self
        return replace(self, start_s=self.start_s * time_scale, tool_s=self.tool_s * tool_scale, fork_delay_s=self.fork_delay_s * tool_scale)

    @property
    def n_forks(self) -> int:
        return int(np.count_nonzero(self.fork_round >= 0))

    @property
    def n_agents(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def n_rounds(self) -> int:
        return int(self.append_tokens.size)

    @cached_property
    def rounds_per_agent(self) -> np.ndarray:
        return _fresh(np.diff(self.offsets))

    @cached_property
    def agent_of_round(self) -> np.ndarray:
        return _fresh(np.repeat(np.arange(self.n_agents, dtype=np.int64), self.rounds_per_agent))

    @cached_property
    def _cumulative(self) -> np.ndarray:
        """0 followed by the running sum of append + gen over all rounds."""
        return np.concatenate(([0], np.cumsum(self.append_tokens + self.gen_tokens)))

    @cached_property
    def context_tokens(self) -> np.ndarray:
        """Tokens before each round: Context_{i+1} = A_1 + G_1 + ... + A_i + G_i of the same agent (A.3), from the
        agent's prefix, and from ``keep_tokens`` after a round that compacts (the context rule of ``trace.schema``)."""
        if not np.any(self.keep_tokens != NO_KEEP):  # no compaction: one running sum per agent (the v1 arithmetic)
            return _fresh(_running_context(self.append_tokens, self.gen_tokens, self.offsets, self.prefix_tokens))
        starts = np.zeros(self.n_rounds, dtype=bool)
        starts[self.offsets[:-1]] = True
        base = np.zeros(self.n_rounds, dtype=np.int64)
        base[self.offsets[:-1]] = self.prefix_tokens
        kept = np.flatnonzero(self.keep_tokens[:-1] != NO_KEEP) + 1
        kept = kept[~starts[kept]]  # a keep on an agent's last round does not reach the next agent
        starts[kept] = True
        base[kept] = self.keep_tokens[kept - 1]
        first = np.flatnonzero(starts)
        segment = np.cumsum(starts) - 1
        return _fresh(base[first][segment] + self._cumulative[:-1] - self._cumulative[first][segment])

    @cached_property
    def held_tokens(self) -> np.ndarray:
        """Tokens each round's sequence holds at its end, before any compaction: context + append + generated."""
        return _fresh(self.context_tokens + self.append_tokens + self.gen_tokens)

    @property
    def hit_tokens(self) -> np.ndarray:
        """Tokens per round whose KV is loaded from storage: the whole context (no eviction, A.3)."""
        return self.context_tokens

    @property
    def miss_tokens(self) -> np.ndarray:
        """Tokens per round whose KV is computed by prefill: the append."""
        return self.append_tokens

    @cached_property
    def total_tokens(self) -> np.ndarray:
        """Tokens per agent at the end of its trajectory: every append and generation (v1), what its last round
        holds (v2: from its prefix, after any compaction)."""
        return _frozen(self.held_tokens[self.offsets[1:] - 1])

    def summary(self) -> TrajectoryStats:
        """Means per round and per agent (Table 2's columns, computed on this set)."""
        later = np.ones(self.n_rounds, dtype=bool)
        later[self.offsets[:-1]] = False
        context = float(self.context_tokens.sum())
        mean = lambda values: float(values.mean()) if values.size else float("nan")  # noqa: E731
        per_agent = lambda values: mean(np.add.reduceat(values, self.offsets[:-1]) / self.rounds_per_agent)  # noqa: E731
        return TrajectoryStats(
            self.n_agents, self.n_rounds, self.n_rounds / self.n_agents, mean(self.append_tokens), mean(self.gen_tokens),
            per_agent(self.append_tokens), per_agent(self.gen_tokens),
            mean(self.append_tokens[later]), mean(self.gen_tokens[later]), mean(self.context_tokens),
            mean(self.total_tokens), int(self.total_tokens.max()), context / (context + float(self.append_tokens.sum())),
        )


# --- synthetic trajectories ------------------------------------------------------------------------------

def targets_of(workload: Workload) -> Targets:
    """Table 2's columns of ``workload`` under the six-column reading (``table2`` module)."""
    return Targets(workload.turns, workload.append_tokens, workload.gen_tokens, workload.total_tokens,
                   workload.context_tokens, int(workload.max_len_tokens))


def synthesize(workload: Workload, n_agents: int, rng: np.random.Generator, strict: bool = False) -> Trajectories:
    """Draw ``n_agents`` trajectories whose Table 2 statistics meet the workload's columns under the six-column
    reading as closely as that many can (module docstring; ``table2.draw_shapes`` and ``table2.realise``);
    ``strict``: refuse a set that misses a column by ``table2.SAMPLE_TOL`` or more (a workload's data set)."""
    if isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)) or n_agents < 1:
        raise PlanError(f"synthesize: n_agents = {n_agents!r} agents is not allowed; must be a whole number >= 1", 2)
    if workload.max_len_tokens < 4:
        raise PlanError(f"workload {workload.name}: max_len_tokens = {workload.max_len_tokens:g} tokens is not allowed; "
                        "must hold round 1 and one ordinary round (at least 4 tokens)", 2)
    shapes = draw_shapes(workload.name, targets_of(workload), int(n_agents), rng, strict)
    append, gen, offsets = realise(shapes, rng)
    return Trajectories(append, gen, offsets, f"synthetic {workload.name} ({n_agents} agents)", workload=workload.name)


# The data set of a workload is drawn once, with this seed, as the paper's 500 trajectories per Table 2 row are
# one fixed set; a run's agents are copies drawn from it (:func:`replay`), so more agents add copies, not tails.
DATASET_SEED = 20260221


_DATASET_ARRAYS = ("append_tokens", "gen_tokens", "offsets")


@functools.lru_cache(maxsize=64)
def dataset(workload: Workload) -> Trajectories:
    """The workload's data set: ``workload.trajectories`` trajectories (Table 2: 500) by the synthetic rule,
    each opening with its prepended round (paper A.3), drawn once with :data:`DATASET_SEED` and kept on disk
    (``datacache``) for the next command."""
    if workload.trace is not None:
        return _trace_set(*workload.trace)
    return with_tool_time(_synthetic(workload), workload.tool_s)


def _synthetic(workload: Workload) -> Trajectories:
    source = f"the {workload.name} data set ({workload.trajectories} trajectories)"
    key = dataset_key(workload)
    kept = _kept(key, source, workload)
    if kept is not None:
        return kept
    traj = synthesize(workload, workload.trajectories, np.random.default_rng(DATASET_SEED), strict=True)
    datacache.store(key, {name: getattr(traj, name) for name in _DATASET_ARRAYS})
    return replace(traj, source=source)


TOOL_SEED = (DATASET_SEED, 2)  # a stream apart from the data set's own draws, so tool time leaves the tokens as they were


def with_tool_time(traj: Trajectories, mean_s: float | None) -> Trajectories:
    """``traj`` with a tool time after every round drawn from an exponential distribution of mean ``mean_s`` (the
    workload's ``tool_time_s``; an assumption: coding agents' tool times are spread from seconds to minutes, and an
    exponential is the one-parameter law with that mean), seeded; ``None`` or 0 leaves the paper's method."""
    if not mean_s:
        return traj
    rng = np.random.default_rng(TOOL_SEED)
    return replace(traj, tool_s=rng.exponential(mean_s, traj.n_rounds))


# --- traces as workloads ------------------------------------------------------------------------------------

TRACE_PREFIX = "trace:"  # a workload name that is a trace: trace:["path", "format", time_scale, tool_scale]


def trace_name(path: Path | str, trace_format: str | None = None, time_scale: float = 1.0, tool_scale: float = 1.0) -> str:
    """The workload name under which every command (and a sweep's workers) finds the trace at ``path``."""
    check_flag("--time-scale", time_scale)
    check_flag("--tool-scale", tool_scale)
    fmt = trace_format or "jsonl"
    if fmt != "jsonl":
        formats.module(fmt)  # an unknown format is refused here, listing the known ones
    return TRACE_PREFIX + json.dumps([str(Path(path).resolve()), fmt, float(time_scale), float(tool_scale)])


def is_trace_name(name: str) -> bool:
    return name.startswith(TRACE_PREFIX)


@functools.lru_cache(maxsize=16)
def workload_of_trace(name: str) -> Workload:
    """The workload a trace is (a name from :func:`trace_name`): Table 2's columns computed on its sessions, its mean
    tool time, and the trace itself, which every command replays in place of a synthetic data set."""
    try:
        path, fmt, time_scale, tool_scale = json.loads(name[len(TRACE_PREFIX):])
        if not (isinstance(path, str) and isinstance(fmt, str)):
            raise TypeError
    except (ValueError, TypeError, RecursionError):
        raise PlanError(f"workload {name[:80]!r} is not a trace name; give the trace with --trace FILE", 2) from None
    trace_name(path, fmt, time_scale, tool_scale)  # the same checks as a name made from the flags
    traj = _trace_set(path, fmt, float(time_scale), float(tool_scale))
    if not traj.context_tokens.sum() > 0:  # as sim.bound says of a trace given to a run
        raise PlanError(f"{traj.source}: every trajectory has one round, so no turn loads KV-Cache from storage and "
                        "there is nothing for the read paths to carry; give trajectories of two or more rounds", 1)
    st = traj.summary()
    between = np.ones(traj.n_rounds, dtype=bool)
    between[traj.offsets[1:] - 1] = False  # a session's last round has no next round to wait for
    mean_tool = float(traj.tool_s[between].mean()) if between.any() else 0.0
    label = f"trace {Path(path).name}" + ("" if fmt == "jsonl" else f" ({fmt})")
    return Workload(name=label, path=path, trajectories=traj.n_agents,
                    description=f"{label}: {traj.n_agents:,} sessions, {traj.n_rounds:,} rounds, {mean_tool:.3g} s of tool time between rounds",
                    turns=st.mean_turns, append_tokens=st.mean_turn_append_tokens, gen_tokens=st.mean_turn_gen_tokens,
                    context_tokens=st.mean_context_tokens, total_tokens=st.mean_total_tokens, max_len_tokens=float(traj.held_tokens.max()),
                    hit_rate=None, sources=(("trace", f"{path} read as {fmt}"),), tool_s=mean_tool, trace=(path, fmt, time_scale, tool_scale))


@functools.lru_cache(maxsize=16)
def _trace_set(path: str, fmt: str, time_scale: float = 1.0, tool_scale: float = 1.0) -> Trajectories:
    return _trace_read(path, fmt).rescaled(time_scale, tool_scale)


@functools.lru_cache(maxsize=8)
def _trace_read(path: str, fmt: str) -> Trajectories:
    """The trace as read, once per process whatever its times are scaled by (``--check`` replays it from t = 0)."""
    return load_jsonl(Path(path), trace_format=fmt)


def dataset_key(workload: Workload) -> str | None:
    """The data-set cache's key of the workload's data set: everything :func:`synthesize` reads (the name, which its
    refusals name, the size, every column of :func:`targets_of`) and the seed."""
    return datacache.key_of(workload.name, workload.trajectories, *dataclasses.astuple(targets_of(workload)), DATASET_SEED)


def _kept(key: str | None, source: str, workload: Workload) -> Trajectories | None:
    """The data set the cache holds under ``key``, if it holds a whole one of the workload's size."""
    arrays = datacache.load(key, _DATASET_ARRAYS)
    if arrays is None or any(a.dtype != np.int64 or a.ndim != 1 for a in arrays.values()):
        return None
    try:
        traj = Trajectories(*(arrays[name] for name in _DATASET_ARRAYS), source, workload=workload.name)
    except ValueError:  # offsets or token counts a data set cannot have
        return None
    return traj if traj.n_agents == workload.trajectories else None


def agent_turns(workload: Workload) -> float:
    """Turns per agent, the one definition every command uses: the mean rounds of the data set's
    trajectories, prepended round included (an agent is a copy of one of them, drawn uniformly)."""
    data = dataset(workload)
    return data.n_rounds / data.n_agents


@dataclass(frozen=True, eq=False)
class TurnSet:
    """Concrete turns: per turn the tokens loaded from storage (``hit``), prefilled (``miss``) and generated
    (``gen``), numeric arrays, and the turns an agent has (``turns_per_agent``). The bounds take their per-turn means
    from a set like this, the data set's (:func:`served_turns`) or a run's own, so they charge what runs serve."""

    hit: np.ndarray
    miss: np.ndarray
    gen: np.ndarray
    turns_per_agent: float

    @classmethod
    def of(cls, traj: Trajectories) -> TurnSet:
        """Every turn of ``traj``, each loading its whole context (no eviction, paper A.3); the trajectory's own
        arrays, not copies."""
        return cls(traj.context_tokens, traj.append_tokens, traj.gen_tokens, traj.n_rounds / traj.n_agents)

    def mean_turn(self, workload: Workload) -> Workload:
        """``workload`` with its per-turn columns replaced by these turns' means (hits as its context)."""
        return replace(workload, **self._means, hit_rate=None, turns=self.turns_per_agent)

    @cached_property
    def _means(self) -> dict[str, float]:
        """The per-turn means, taken once per set (every split of a sweep or a plan reads them)."""
        if not self.hit.size or not self.hit.sum() > 0:
            raise PlanError("no served turn has a KV hit (every context is empty); the bound needs hit tokens", 1)
        gen = float(self.gen.sum())
        # sum over turns of gen x (prompt + gen / 2), a slice of turns at a time
        decode = dot_by_slice(self.gen, lambda s: self.hit[s] + self.miss[s] + self.gen[s] / 2.0) / gen if gen > 0 else None
        return {"context_tokens": float(self.hit.mean()), "append_tokens": float(self.miss.mean()), "gen_tokens": float(self.gen.mean()),
                "decode_context": decode}


@functools.lru_cache(maxsize=64)
def served_turns(workload: Workload) -> TurnSet:
    """The turns of the workload's data set, the ones every run replays. With ``hit_rate_frac`` set (a what-if
    of the bounds), every turn loads the same share ``k`` of its context and prefills the rest, ``k`` chosen so
    that the share of prompt tokens loaded is the hit rate; a rate above the data set's own (``k > 1``) would
    need more hits than there are cached tokens and is refused."""
    turns = TurnSet.of(dataset(workload))
    if workload.hit_rate is None:
        return turns
    prompt, cached = float((turns.hit + turns.miss).sum()), float(turns.hit.sum())
    k = workload.hit_rate * prompt / cached
    if k > 1.0 + 1e-12:
        most = np.floor(cached / prompt * 1e6) / 1e6  # rounded down, so that the limit stated is itself allowed
        raise PlanError(f"hit_rate_frac = {workload.hit_rate:g} is not allowed for workload {workload.name}; its data set "
                        f"caches {most:.6f} of all prompt tokens, so the share loaded from storage must be <= {most:.6f}", 2)
    return TurnSet(k * turns.hit, turns.miss + (1.0 - k) * turns.hit, turns.gen, turns.turns_per_agent)


@functools.lru_cache(maxsize=64)
def mean_turn(workload: Workload) -> Workload:
    """``workload`` as the mean of the turns its data set serves (:func:`served_turns`): the record the
    bandwidth model, the decode rate and the step-time breakdown take."""
    return served_turns(workload).mean_turn(workload)


def replay(workload: Workload, n_agents: int, rng: np.random.Generator) -> Trajectories:
    """The paper's replay method (A.3): ``n_agents`` agents, each a copy of a trajectory drawn uniformly from
    the workload's data set with its own prepended round (random tokens, one generated token), so copies share
    no prefix. The data set's rounds already open with that round (the trajectory's initial prompt, ``table2``)."""
    traj = take(dataset(workload), n_agents, rng)
    return replace(traj, source=f"{n_agents} agent{'' if n_agents == 1 else 's'} replayed from the {workload.name} data set")


def take(traj: Trajectories, n_agents: int, rng: np.random.Generator, prefix_tokens: int = 0) -> Trajectories:
    """Resample ``n_agents`` trajectories with replacement from ``traj`` (paper A.3: more agents than trajectories).

    A.3 prepends a synthetic round (random tokens as ``A_1``, ``g_1 = 1``) to each sampled copy so copies share
    no prefix; our model has no cross-trajectory hits, so copies are distinct without it and the default
    ``prefix_tokens = 0`` adds nothing. A positive value prepends that round (v1 sets only).

    With forks (schema v2), the unit drawn is a root session with every sub-agent forked from it (its family), so
    ``n_agents`` counts root sessions and each brings its sub-agents; the v2 arrays follow their rounds and agents.
    """
    if isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)) or n_agents < 1:
        raise PlanError(f"take: n_agents = {n_agents!r} agents is not allowed; must be a whole number >= 1", 2)
    if prefix_tokens < 0 or (prefix_tokens > 0 and not traj.is_v1):
        raise PlanError(f"take: prefix_tokens = {prefix_tokens!r} tokens is not allowed; must be >= 0 (0 for a v2 set)", 2)
    roots = np.flatnonzero(traj.fork_round < 0)
    chosen_roots = roots[rng.integers(0, roots.size, n_agents)]
    chosen, parents = _families(traj, chosen_roots)
    if chosen.size > MAX_AGENTS:
        raise PlanError(f"{n_agents:,} root sessions of {traj.source} bring {chosen.size:,} agents with their sub-agents, more than the "
                        f"{MAX_AGENTS:,} a run takes; draw fewer (--agents)", 2)
    lengths = traj.rounds_per_agent[chosen]
    starts = traj.offsets[:-1][chosen]
    gather = lambda values: _fresh(_gather(values, starts, lengths))  # noqa: E731
    append, gen = gather(traj.append_tokens), gather(traj.gen_tokens)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    if prefix_tokens > 0:
        append = np.insert(append, offsets[:-1], prefix_tokens)
        gen = np.insert(gen, offsets[:-1], 1)
        offsets = offsets + np.arange(chosen.size + 1)
        return Trajectories(append, gen, offsets, f"{n_agents} agents drawn from {traj.source}", workload=traj.workload)
    fork_round = np.full(chosen.size, -1, dtype=np.int64)
    forks = np.flatnonzero(parents >= 0)
    old_parent_round = traj.fork_round[chosen[forks]]
    fork_round[forks] = offsets[parents[forks]] + old_parent_round - traj.offsets[chosen[parents[forks]]]
    used = _used(traj)  # a v2 array the source does not use stays a constant of no memory in the sample too
    drawn = (f"{n_agents} agents drawn from {traj.source}" if not forks.size else
             f"{n_agents:,} root session{'s' if n_agents != 1 else ''} drawn from {traj.source}, {chosen.size:,} agents with their "
             f"{forks.size:,} sub-agent{'s' if forks.size != 1 else ''}")
    return Trajectories(append, gen, offsets, drawn, workload=traj.workload,
                        tool_s=gather(traj.tool_s) if used["tool_s"] else None,
                        keep_tokens=gather(traj.keep_tokens) if used["keep_tokens"] else None,
                        prefix_tokens=traj.prefix_tokens[chosen] if used["prefix_tokens"] else None,
                        start_s=traj.start_s[chosen] if used["start_s"] else None,
                        fork_round=fork_round if forks.size else None, fork_delay_s=traj.fork_delay_s[chosen] if forks.size else None,
                        line_no=traj.line_no[chosen] if used["line_no"] else None)


def _gather(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``values[starts[k]:starts[k] + lengths[k]]`` for every ``k``, one after another (the rounds of the trajectories
    drawn), a block of about ``CONTEXT_BLOCK`` rounds at a time: an index array of one block, not of every round (three
    of those, 62 MB each, at 7.7 M rounds)."""
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    out = np.empty(int(offsets[-1]), dtype=values.dtype)
    for a0, a1 in _agent_blocks(offsets):
        lo, hi = int(offsets[a0]), int(offsets[a1])
        out[lo:hi] = values[np.repeat(starts[a0:a1] - offsets[a0:a1], lengths[a0:a1]) + np.arange(lo, hi)]
    return out


def _running_context(append: np.ndarray, gen: np.ndarray, offsets: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    """Per round, its agent's prefix plus the tokens its agent appended and generated before it (``context_tokens``
    without compaction), in one array: the running sum over all rounds before each, less the sum before the agent's
    first round, subtracted a block of about ``CONTEXT_BLOCK`` rounds at a time. Whole numbers, so exact in any order."""
    out = np.add(append, gen)
    np.cumsum(out, out=out)
    out -= append
    out -= gen  # the running sum before each round
    base = out[offsets[:-1]] - prefix  # per agent: what its rounds' sums carry from earlier agents, less its prefix
    for a0, a1 in _agent_blocks(offsets):
        out[offsets[a0]:offsets[a1]] -= np.repeat(base[a0:a1], np.diff(offsets[a0:a1 + 1]))
    return out


def _agent_blocks(offsets: np.ndarray) -> list[tuple[int, int]]:
    """The agents (``offsets``: where each one's rounds start, then the end) cut into runs ``[a0, a1)`` of about
    ``CONTEXT_BLOCK`` rounds each (an agent longer than that alone), in order, covering every agent."""
    firsts = np.unique(np.searchsorted(offsets, np.arange(0, int(offsets[-1]), CONTEXT_BLOCK), side="right") - 1)
    return list(zip(firsts.tolist(), [*firsts[1:].tolist(), offsets.size - 1]))


CONTEXT_BLOCK = CHUNK  # rounds per block of _gather and _running_context (model.sums.CHUNK)


def _used(traj: Trajectories) -> dict[str, bool]:
    """Which v2 arrays of ``traj`` hold anything but their default."""
    return {"tool_s": bool(traj.tool_s.any()), "keep_tokens": bool(np.any(traj.keep_tokens != NO_KEEP)),
            "prefix_tokens": bool(traj.prefix_tokens.any()), "start_s": bool(np.any(np.isfinite(traj.start_s))),
            "line_no": bool(traj.line_no.any())}


def _families(traj: Trajectories, roots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The agents of the families of ``roots`` (each root, then its sub-agents in their order), and for each the
    position of its parent in that list (-1: a root)."""
    if traj.n_forks == 0:
        return roots, np.full(roots.size, -1, dtype=np.int64)
    parent_of = np.where(traj.fork_round >= 0, traj.agent_of_round[np.maximum(traj.fork_round, 0)], -1)
    members: dict[int, list[int]] = {}
    family = np.arange(traj.n_agents)
    for a in np.flatnonzero(parent_of >= 0).tolist():  # parents come first: their family is known
        family[a] = family[parent_of[a]]
    for a, f in enumerate(family.tolist()):
        members.setdefault(f, []).append(a)
    chosen: list[int] = []
    parents: list[int] = []
    for r in roots.tolist():
        place: dict[int, int] = {}
        for a in members[r]:
            place[a] = len(chosen)
            chosen.append(a)
            parents.append(-1 if parent_of[a] < 0 else place[int(parent_of[a])])
    return np.array(chosen, dtype=np.int64), np.array(parents, dtype=np.int64)


# --- JSONL traces ------------------------------------------------------------------------------------------

def from_sessions(items: Iterable[tuple[Session, int]], source: str, skipped: tuple[tuple[int, str], ...] = ()) -> Trajectories:
    """The agents of a stream of ``(session, line)`` (checked sessions, parents before forks) as flat arrays."""
    append, gen, tool, keep = [], [], [], []
    prefix, start, fork_round, delay, lines = [], [], [], [], []
    first_round: dict[str, int] = {}
    rounds = 0
    for sess, line in items:
        first_round[sess.id] = rounds
        append.append(sess.append_tokens)
        gen.append(sess.gen_tokens)
        tool.append(sess.tool_s)
        keep.append(sess.keep_tokens)
        prefix.append(sess.prefix_tokens)
        start.append(np.nan if sess.start_s is None else sess.start_s)
        fork_round.append(-1 if sess.fork is None else first_round[sess.fork.parent] + sess.fork.round - 1)
        delay.append(0.0 if sess.fork is None else sess.fork.delay_s)
        lines.append(line)
        rounds += sess.n_rounds
    if not append:
        return None  # type: ignore[return-value]
    lengths = [a.size for a in append]
    return Trajectories(np.concatenate(append), np.concatenate(gen), np.concatenate(([0], np.cumsum(lengths))), source, skipped,
                        tool_s=np.concatenate(tool), keep_tokens=np.concatenate(keep), prefix_tokens=np.array(prefix, dtype=np.int64),
                        start_s=np.array(start), fork_round=np.array(fork_round, dtype=np.int64), fork_delay_s=np.array(delay),
                        line_no=np.array(lines, dtype=np.int64))


def load_jsonl(path: Path, skip_bad: bool = False, trace_format: str | None = None,
               opts: ImportOptions | None = None) -> Trajectories:
    """Load a trace: this project's JSONL (schema v2 sessions or v1 trajectories, ``trace.native``), or with
    ``trace_format`` a public format read through its converter (``trace.formats``) without a separate import.

    A bad line raises :class:`PlanError` naming the file and line number (exit 2). With ``skip_bad=True`` bad
    lines of this project's format are left out instead, listed in the result's ``skipped`` as ``(line_number,
    reason)``, and every good line is kept. A file with no good trajectory is always an error.
    """
    path = Path(path)
    skipped: list[tuple[int, str]] = []
    if path.is_dir() and (trace_format is None or trace_format == "jsonl"):
        raise PlanError(f"{path}: a directory; this project's own trace is one file (a public trace's directory is read with "
                        "--trace-format F, or converted into one file with `dualpath-plan trace import`)", 2)
    if trace_format is None or trace_format == "jsonl":
        traj = from_sessions(native.read(path, skipped if skip_bad else None), str(path), ())
    else:
        report = Report(trace_format)
        files = expand([path])  # a directory: the files in it (a WEKA set is one file per conversation)
        traj = from_sessions(((s, 0) for s in formats.sessions(trace_format, files, opts or ImportOptions(), report)), str(path))
    if traj is None:
        raise PlanError(f"{path}: no valid trajectory in the file" + (f" ({len(skipped)} bad lines)" if skipped else " (it is empty)"), 2)
    return replace(traj, skipped=tuple(skipped)) if skipped else traj


def write_jsonl(traj: Trajectories, path: Path) -> None:
    """Write ``traj`` as JSONL through a temporary file renamed into place: v1 ``[A, g]`` pairs for a set that uses
    none of schema v2, else v2 sessions (ids ``a0``, ``a1``, ...)."""
    path = Path(path)
    if traj.is_v1:
        lines = []
        for a in range(traj.n_agents):
            lo, hi = traj.offsets[a], traj.offsets[a + 1]
            pairs = np.stack([traj.append_tokens[lo:hi], traj.gen_tokens[lo:hi]], axis=1).tolist()
            lines.append(json.dumps(pairs, separators=(",", ":")))
        native.write_lines(lines, path)
        return
    native.write((session_of(traj, a) for a in range(traj.n_agents)), path)


def session_of(traj: Trajectories, a: int) -> Session:
    """Agent ``a`` of ``traj`` as a v2 session with id ``a<index>`` (a fork names its parent the same way)."""
    lo, hi = int(traj.offsets[a]), int(traj.offsets[a + 1])
    fork = None
    if traj.fork_round[a] >= 0:
        parent = int(traj.agent_of_round[traj.fork_round[a]])
        fork = Fork(f"a{parent}", int(traj.fork_round[a] - traj.offsets[parent]) + 1, int(traj.prefix_tokens[a]), float(traj.fork_delay_s[a]))
    shared = SharedPrefix(f"a{a}-prefix", int(traj.prefix_tokens[a])) if fork is None and traj.prefix_tokens[a] > 0 else None
    start = None if not np.isfinite(traj.start_s[a]) else float(traj.start_s[a])
    return Session(f"a{a}", traj.append_tokens[lo:hi], traj.gen_tokens[lo:hi], traj.tool_s[lo:hi], traj.keep_tokens[lo:hi],
                   start, shared, fork)


def source_of(workload: Workload, trace: Path | None = None) -> Trajectories:
    """What a run's agents are copies of: the workload's data set (a trace's sessions when the workload is a trace),
    or every trajectory of a JSONL trace."""
    return dataset(workload) if trace is None else load_jsonl(trace)


def trajectories(workload: Workload, agents: int | None = None, trace: Path | None = None, seed: int = 0) -> Trajectories:
    """The agents of a run: ``agents`` copies drawn from the workload's data set (:func:`replay`; default
    :data:`DEFAULT_AGENTS`), or a JSONL trace (all its trajectories, or ``agents`` drawn from it)."""
    if agents is not None:
        check_flag("--agents", agents)
    check_flag("--seed", seed)
    rng = np.random.default_rng(seed)
    if trace is None and workload.trace is None:
        return replay(workload, DEFAULT_AGENTS if agents is None else agents, rng)
    traj = source_of(workload, trace)
    trace = trace or Path(workload.trace[0])  # type: ignore[index]
    if agents is None and traj.n_agents > MAX_AGENTS:
        raise PlanError(f"{trace}: {traj.n_agents} trajectories is more than the {MAX_AGENTS} agents a run takes; "
                        f"use --agents N to sample fewer", 2)
    return traj if agents is None else take(traj, agents, rng)


def check_window(model: Model, workload: Workload) -> None:
    """Refuse a workload longer than the model's context window (``context_window_tokens``; unset: not checked): a
    synthetic one whose MaxLen passes it, a trace with a session that does (:func:`check_trace_window`)."""
    window = model.context_window_tokens
    if window is None:
        return
    if workload.trace is not None:
        check_trace_window(model, dataset(workload))
    elif workload.max_len_tokens > window:
        raise PlanError(f"workload {workload.name}: max_len_tokens = {workload.max_len_tokens:,.0f} tokens is more than the "
                        f"{window:,}-token context window of model {model.name} (context_window_tokens); pick a model with a "
                        "longer window or a shorter workload", 1)


def check_trace_window(model: Model, traj: Trajectories) -> None:
    """Refuse a trace with a session that holds more tokens than the model's context window, naming its line; the
    one rule that cuts sessions instead is the import's (``trace.convert`` rule 6)."""
    window = model.context_window_tokens
    if window is None:
        return
    over = np.flatnonzero(traj.held_tokens > window)
    if not over.size:
        return
    r = int(over[0])
    a = int(traj.agent_of_round[r])
    line = int(traj.line_no[a])
    where = f"line {line}" if line else f"session {a + 1}"
    raise PlanError(f"{traj.source}: {where}: round {r - int(traj.offsets[a]) + 1} holds {int(traj.held_tokens[r]):,} tokens, more than "
                    f"the {window:,}-token context window of model {model.name}; cut sessions at the window with `dualpath-plan trace "
                    f"import --format F --max-context-tokens {window} -o CUT.jsonl FILE` (F: the trace's format, jsonl for this "
                    "project's own) or pick a model with a longer window", 1)
