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

**JSONL traces** (:func:`load_jsonl`). One trajectory per line: a JSON list of rounds, each either
``{"append_tokens": A, "gen_tokens": g}`` (exactly these keys) or a pair ``[A, g]``; ``A`` and ``g`` are whole
numbers >= 1 (every round brings at least one new prompt token and yields at least one token). Blank lines
are ignored. ``examples/trace-example.jsonl`` is a small made-up file showing the format (not data).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from dualpath_plan.model import datacache
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import MAX_AGENTS, check_flag
from dualpath_plan.model.inputs import MAX_TRACE_BYTES, read_regular
from dualpath_plan.model.profiles import Workload
from dualpath_plan.model.table2 import Targets, draw_shapes, realise

# The most agents of one run: about 7 GiB and a few minutes here (49,152 agents, the paper's largest run: 1.35 GiB, 37 s).
DEFAULT_AGENTS = 1024  # the paper's agent count for its DS 660B append-scaling and ablation runs (paper 7, Fig. 9/12)
MAX_ROUND_TOKENS = 2**31 - 1  # a bound on one round's tokens in a trace: far above any model's context window


def _frozen(values: Any) -> np.ndarray:
    array = np.array(values, dtype=np.int64)
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

    ``append_tokens`` is the A_i and ``gen_tokens`` the g_i of the replay rule (paper A.3), int64 per round;
    ``offsets`` (int64, ``n_agents + 1``) delimits the agents. ``skipped`` lists the lines a tolerant
    :func:`load_jsonl` left out, as ``(line_number, reason)``. The arrays are read-only.
    """

    append_tokens: np.ndarray
    gen_tokens: np.ndarray
    offsets: np.ndarray
    source: str
    skipped: tuple[tuple[int, str], ...] = field(default=())
    workload: str | None = None  # the workload profile drawn from (None: a trace)

    def __post_init__(self) -> None:
        for name in ("append_tokens", "gen_tokens", "offsets"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        rounds, offsets = self.append_tokens.size, self.offsets
        if not (self.gen_tokens.size == rounds and offsets.size >= 2 and offsets[0] == 0 and offsets[-1] == rounds
                and np.all(np.diff(offsets) >= 1)):
            raise ValueError(f"{self.source}: offsets must rise from 0 to the number of rounds by >= 1 per agent")
        if rounds and min(self.append_tokens.min(), self.gen_tokens.min()) < 1:
            raise ValueError(f"{self.source}: every round appends and generates >= 1 token")

    @property
    def n_agents(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def n_rounds(self) -> int:
        return int(self.append_tokens.size)

    @cached_property
    def rounds_per_agent(self) -> np.ndarray:
        return _frozen(np.diff(self.offsets))

    @cached_property
    def agent_of_round(self) -> np.ndarray:
        return _frozen(np.repeat(np.arange(self.n_agents), self.rounds_per_agent))

    @cached_property
    def _cumulative(self) -> np.ndarray:
        """0 followed by the running sum of append + gen over all rounds."""
        return np.concatenate(([0], np.cumsum(self.append_tokens + self.gen_tokens)))

    @cached_property
    def context_tokens(self) -> np.ndarray:
        """Tokens before each round: Context_{i+1} = A_1 + G_1 + ... + A_i + G_i of the same agent (A.3)."""
        start = self._cumulative[self.offsets[:-1]]
        return _frozen(self._cumulative[:-1] - start[self.agent_of_round])

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
        """Tokens per agent at the end of its trajectory: every append and generation."""
        return _frozen(self._cumulative[self.offsets[1:]] - self._cumulative[self.offsets[:-1]])

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
    source = f"the {workload.name} data set ({workload.trajectories} trajectories)"
    key = dataset_key(workload)
    kept = _kept(key, source, workload)
    if kept is not None:
        return kept
    traj = synthesize(workload, workload.trajectories, np.random.default_rng(DATASET_SEED), strict=True)
    datacache.store(key, {name: getattr(traj, name) for name in _DATASET_ARRAYS})
    return replace(traj, source=source)


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
        return {"context_tokens": float(self.hit.mean()), "append_tokens": float(self.miss.mean()), "gen_tokens": float(self.gen.mean())}


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
    return replace(traj, source=f"{n_agents} agents replayed from the {workload.name} data set")


def take(traj: Trajectories, n_agents: int, rng: np.random.Generator, prefix_tokens: int = 0) -> Trajectories:
    """Resample ``n_agents`` trajectories with replacement from ``traj`` (paper A.3: more agents than trajectories).

    A.3 prepends a synthetic round (random tokens as ``A_1``, ``g_1 = 1``) to each sampled copy so copies share
    no prefix; our model has no cross-trajectory hits, so copies are distinct without it and the default
    ``prefix_tokens = 0`` adds nothing. A positive value prepends that round.
    """
    if isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)) or n_agents < 1:
        raise PlanError(f"take: n_agents = {n_agents!r} agents is not allowed; must be a whole number >= 1", 2)
    if prefix_tokens < 0:
        raise PlanError(f"take: prefix_tokens = {prefix_tokens!r} tokens is not allowed; must be >= 0", 2)
    chosen = rng.integers(0, traj.n_agents, n_agents)
    lengths = traj.rounds_per_agent[chosen]
    starts = traj.offsets[:-1][chosen]
    index = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(lengths.sum())
    append, gen = traj.append_tokens[index], traj.gen_tokens[index]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    if prefix_tokens > 0:
        append = np.insert(append, offsets[:-1], prefix_tokens)
        gen = np.insert(gen, offsets[:-1], 1)
        offsets = offsets + np.arange(n_agents + 1)
    return Trajectories(append, gen, offsets, f"{n_agents} agents drawn from {traj.source}", workload=traj.workload)


# --- JSONL traces ------------------------------------------------------------------------------------------

def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} = {value!r} tokens is not a whole number")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{name} = {value!r} tokens is not a whole number")
    if not 1 <= value <= MAX_ROUND_TOKENS:
        raise ValueError(f"{name} = {value!r} tokens is not allowed; must be >= 1 and <= {MAX_ROUND_TOKENS}")
    return int(value)


def _parse_round(item: Any, k: int) -> tuple[int, int]:
    if isinstance(item, dict):
        if set(item) != {"append_tokens", "gen_tokens"}:
            raise ValueError(f"round {k} has keys {sorted(item)}; must be exactly append_tokens, gen_tokens")
        return _count(item["append_tokens"], f"round {k} append_tokens"), _count(item["gen_tokens"], f"round {k} gen_tokens")
    if isinstance(item, list) and len(item) == 2:
        return _count(item[0], f"round {k} append_tokens"), _count(item[1], f"round {k} gen_tokens")
    raise ValueError(f"round {k} = {item!r} is not {{\"append_tokens\": A, \"gen_tokens\": g}} or [A, g]")


def parse_line(text: str) -> np.ndarray:
    """One trajectory line -> (n_rounds, 2) int64 array of [append, gen]; ``ValueError`` says what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except (RecursionError, ValueError) as exc:  # nested past the parser's depth, or an integer of thousands of digits
        what = "nested too deep for a trajectory (a list of rounds, each a list or object)" if isinstance(exc, RecursionError) else str(exc)
        raise ValueError(f"not a trajectory: {what}") from None
    if not isinstance(data, list):
        raise ValueError(f"a trajectory must be a JSON list of rounds, got {type(data).__name__}")
    if not data:
        raise ValueError("empty trajectory; a trajectory has at least one round")
    return np.array([_parse_round(item, k) for k, item in enumerate(data, start=1)], dtype=np.int64)


def _read_lines(path: Path) -> list[str]:
    data = read_regular(path, "trace file", MAX_TRACE_BYTES)  # a regular file, not a FIFO or device (model.inputs)
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})", 2) from None


def load_jsonl(path: Path, skip_bad: bool = False) -> Trajectories:
    """Load a JSONL trace (format in the module docstring).

    A bad line raises :class:`PlanError` naming the file and line number (exit 2). With ``skip_bad=True`` bad
    lines are left out instead, listed in the result's ``skipped`` as ``(line_number, reason)``, and every good
    line is kept. A file with no good trajectory is always an error.
    """
    path = Path(path)
    rounds: list[np.ndarray] = []
    skipped: list[tuple[int, str]] = []
    for number, text in enumerate(_read_lines(path), start=1):
        if not text.strip():
            continue
        try:
            rounds.append(parse_line(text))
        except ValueError as exc:
            if not skip_bad:
                raise PlanError(f"{path}: line {number}: {exc}", 2) from None
            skipped.append((number, str(exc)))
    if not rounds:
        raise PlanError(f"{path}: no valid trajectory in the file" + (f" ({len(skipped)} bad lines)" if skipped else " (it is empty)"), 2)
    flat = np.concatenate(rounds)
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rounds])))
    return Trajectories(flat[:, 0], flat[:, 1], offsets, str(path), tuple(skipped))


def write_jsonl(traj: Trajectories, path: Path) -> None:
    """Write ``traj`` as JSONL (``[A, g]`` pairs), through a temporary file renamed into place."""
    path = Path(path)
    lines = []
    for a in range(traj.n_agents):
        lo, hi = traj.offsets[a], traj.offsets[a + 1]
        pairs = np.stack([traj.append_tokens[lo:hi], traj.gen_tokens[lo:hi]], axis=1).tolist()
        lines.append(json.dumps(pairs, separators=(",", ":")))
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def source_of(workload: Workload, trace: Path | None = None) -> Trajectories:
    """What a run's agents are copies of: the workload's data set, or every trajectory of a JSONL trace."""
    return dataset(workload) if trace is None else load_jsonl(trace)


def trajectories(workload: Workload, agents: int | None = None, trace: Path | None = None, seed: int = 0) -> Trajectories:
    """The agents of a run: ``agents`` copies drawn from the workload's data set (:func:`replay`; default
    :data:`DEFAULT_AGENTS`), or a JSONL trace (all its trajectories, or ``agents`` drawn from it)."""
    if agents is not None:
        check_flag("--agents", agents)
    check_flag("--seed", seed)
    rng = np.random.default_rng(seed)
    if trace is None:
        return replay(workload, DEFAULT_AGENTS if agents is None else agents, rng)
    traj = load_jsonl(trace)
    if agents is None and traj.n_agents > MAX_AGENTS:
        raise PlanError(f"{trace}: {traj.n_agents} trajectories is more than the {MAX_AGENTS} agents a run takes; "
                        f"use --agents N to sample fewer", 2)
    return traj if agents is None else take(traj, agents, rng)
