"""Agent trajectories for the fluid runner: synthetic sets drawn to the paper's Table 2, and JSONL traces.

A trajectory is a list of rounds; round ``i`` appends ``A_i`` tokens to the prompt and generates
``g_i`` tokens. The replay rule (paper A.3, notes section 1) fixes the context: the prompt of round
``i+1`` is ``Context_{i+1} + A_{i+1}`` with ``Context_{i+1} = A_1, G_1, ..., A_i, G_i``. KV hits happen
only within a trajectory and nothing is evicted, so a round's hit tokens are its context and its miss
tokens are its append.

**Synthetic rule** (:func:`synthesize`). Table 2's per-turn and per-trajectory columns come from different
populations (notes section 1): ``Turns x (Append + Gen)`` exceeds even MaxLen (64K: 157 x 605 = 95k > 65.5k),
so no set of trajectories under the cap matches every column. We match, in this order of importance for
the I/O model: the per-round ``Append`` and ``Gen`` means, the MaxLen cap, the per-trajectory ``Total`` mean
and the per-round ``Context`` mean. ``Turns`` then follows and is reported, not matched.

- Appends and generations of ordinary rounds are i.i.d. geometric on {1, 2, ...} with Table 2's means: the
  maximum-entropy distribution on the positive integers for a known mean (Table 2 gives nothing else), with
  a long exponential tail as tool outputs have.
- A trajectory continues after each ordinary round with a constant probability ``1 - q`` (constant hazard:
  the maximum-entropy, geometric turn count for a known mean) and ends early when its next round would take
  its total above ``max_len_tokens`` (the dataset's MaxLen, a hard cap on the trajectory length).
- Round 1 is the paper's prepended synthetic round (A.3: random tokens as ``A_1``, ``g_1 = 1``). A.3 does not
  give its length; we give it ``prefix_tokens`` = the prompt present before the agent's first turn.
  Table 2's ``Context`` is 0.59-0.60 of ``Total``, but a context growing linearly from zero averages at most
  ``MaxLen / 2`` per round, below Table 2's Context for 32K and 48K: the excess is context present from the
  start, i.e. the initial prompt (system prompt, tool schemas, task).
- ``q`` and ``prefix_tokens`` are the two unknowns solved (:func:`fit_synthetic`) from the two equations
  E[total per trajectory] = Total and E[context per round] = Context, in the expected-round-size
  approximation (cap reached after ``floor((MaxLen - prefix - 1) / s)`` rounds of mean size ``s``). Where a
  workload's targets are out of reach the solution sits on the nearest boundary; :meth:`Trajectories.summary`
  gives what was achieved, which is the number to quote. For Table 2 the prefix comes out 5,228 / 5,366 /
  5,175 tokens (32K / 48K / 64K), nearly one initial prompt for one agent, which nothing imposed; the mean
  rounds come out 32 / 59 / 85, about 0.54 of Table 2's Turns (60 / 106 / 157).

**JSONL traces** (:func:`load_jsonl`). One trajectory per line: a JSON list of rounds, each either
``{"append_tokens": A, "gen_tokens": g}`` (exactly these keys) or a pair ``[A, g]``; ``A`` and ``g`` are whole
numbers >= 1 (every round brings at least one new prompt token and yields at least one token). Blank lines
are ignored. ``examples/trace-example.jsonl`` is a small made-up file showing the format (not data).
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import Workload

# The most agents of one run: about 5 GiB and an hour here (49,152 agents, the paper's largest run: 0.95 GiB, 9 min).
MAX_AGENTS = 1 << 18
DEFAULT_AGENTS = 1024  # the paper's agent count for its DS 660B append-scaling and ablation runs (paper 7, Fig. 9/12)
MAX_ROUND_TOKENS = 2**31 - 1  # a bound on one round's tokens in a trace: far above any model's context window
_Q_LOW = 1e-9  # smallest continuation hazard searched: mean of 1e9 rounds, far beyond any cap


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
        return TrajectoryStats(
            self.n_agents, self.n_rounds, self.n_rounds / self.n_agents, mean(self.append_tokens), mean(self.gen_tokens),
            mean(self.append_tokens[later]), mean(self.gen_tokens[later]), mean(self.context_tokens),
            mean(self.total_tokens), int(self.total_tokens.max()), context / (context + float(self.append_tokens.sum())),
        )


# --- synthetic trajectories ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SyntheticFit:
    """The two solved parameters of the synthetic rule (module docstring) and the inputs they came from."""

    workload: str
    prefix_tokens: int  # A_1 of the prepended first round (g_1 = 1)
    stop_prob: float  # q: probability that a trajectory ends after an ordinary round
    append_mean_tokens: float
    gen_mean_tokens: float
    max_len_tokens: int

    @property
    def round_mean_tokens(self) -> float:
        return self.append_mean_tokens + self.gen_mean_tokens

    @property
    def max_ordinary_rounds(self) -> int:
        """K: ordinary rounds of mean size that fit under the cap after round 1."""
        return max(1, int((self.max_len_tokens - self.prefix_tokens - 1) // self.round_mean_tokens))


def expected_stats(prefix_tokens: float, stop_prob: float, round_tokens: float, max_len_tokens: float) -> tuple[float, float, float]:
    """(E[total per agent], E[context per round], E[rounds per agent]) in the expected-round-size approximation.

    Ordinary rounds ``m = min(Geometric(q) on {1, 2, ...}, K)``; round 1 carries ``c1 = prefix + 1`` tokens and
    context 0; ordinary round ``j`` (1-based) has context ``c1 + (j - 1) * s``.
    """
    c1 = prefix_tokens + 1.0
    K = max(1, int((max_len_tokens - c1) // round_tokens))
    m = np.arange(1, K + 1, dtype=float)
    p = stop_prob * (1.0 - stop_prob) ** (m - 1)
    p[-1] = (1.0 - stop_prob) ** (K - 1)  # every longer draw is cut to K by the cap
    rounds = p @ (m + 1)
    context_sum = p @ (m * c1 + round_tokens * m * (m - 1) / 2)
    return c1 + round_tokens * (p @ m), context_sum / rounds, rounds


def _root(func, low: float, high: float) -> float:
    """Root of a monotone ``func`` on [low, high], or the end nearer to one when it has none there."""
    f_low, f_high = func(low), func(high)
    if f_low * f_high > 0:
        return low if abs(f_low) <= abs(f_high) else high
    return _illinois(func, low, high, f_low, f_high, xtol=1e-10, rtol=1e-12)


def _illinois(func, a: float, b: float, fa: float, fb: float, xtol: float, rtol: float) -> float:
    """A bracketed root by the Illinois variant of regula falsi (superlinear, never leaves the bracket),
    in plain Python: scipy.optimize would add ~0.3 s of start-up to every command that reads a workload."""
    side = 0
    for _ in range(200):
        c = b - fb * (b - a) / (fb - fa) if fb != fa else (a + b) / 2
        fc = func(c)
        if fc == 0 or abs(b - a) <= xtol + rtol * abs(c):
            return c
        if fc * fb < 0:
            a, fa = b, fb
            side = 0
        else:
            fa = fa / 2 if side == -1 else fa  # the same end kept twice: halve its value (Illinois)
            side = -1
        b, fb = c, fc
    return (a + b) / 2


def fit_synthetic(workload: Workload) -> SyntheticFit:
    """Solve ``stop_prob`` and ``prefix_tokens`` so the expected Total and Context equal Table 2's (docstring).

    For each prefix, ``stop_prob`` follows from Total (E[total] falls monotonically in q). Context, as a
    function of the prefix, rises and then falls (a huge prefix leaves room for one round), so we take the
    smallest prefix that reaches Context: the first sign change on a 64-point grid, refined by regula falsi.
    If no prefix reaches it, the grid point that comes closest.
    """
    s = workload.append_tokens + workload.gen_tokens
    cap = workload.max_len_tokens
    if cap < s + 2:
        raise PlanError(f"workload {workload.name}: max_len_tokens = {cap:g} tokens is not allowed; "
                        f"must hold round 1 and one round of append + gen = {s + 2:g} tokens", 1)

    def stop_for(prefix: float) -> float:
        def total_gap(log_q: float) -> float:
            return expected_stats(prefix, float(np.exp(log_q)), s, cap)[0] - workload.total_tokens
        return float(np.exp(_root(total_gap, np.log(_Q_LOW), 0.0)))

    def context_gap(prefix: float) -> float:
        return expected_stats(prefix, stop_for(prefix), s, cap)[1] - workload.context_tokens

    grid = np.linspace(0.0, max(0.0, min(workload.total_tokens, cap) - s - 1.0), 64)
    gaps = np.array([context_gap(p) for p in grid])
    reached = np.flatnonzero(gaps >= 0)
    if reached.size == 0:
        prefix = grid[int(np.argmax(gaps))]
    elif reached[0] == 0:
        prefix = 0.0
    else:
        low, high = grid[reached[0] - 1], grid[reached[0]]
        prefix = _illinois(context_gap, low, high, float(gaps[reached[0] - 1]), float(gaps[reached[0]]), xtol=0.5, rtol=0.0)
    prefix = max(1, int(round(prefix)))  # A.3: A_1 holds random tokens, so at least one
    return SyntheticFit(workload.name, prefix, stop_for(prefix), workload.append_tokens, workload.gen_tokens, int(cap))


def _positive_geometric(rng: np.random.Generator, mean: float, size: int) -> np.ndarray:
    """Geometric on {1, 2, ...} with the given mean (a mean <= 1 gives all ones)."""
    return rng.geometric(min(1.0, 1.0 / mean), size).astype(np.int64)


def _ordinary_rounds(fit: SyntheticFit, drawn: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(agent, append, gen) of every ordinary round kept, agent-major and in round order.

    Rounds are drawn in blocks of ``K + 1`` per still-active agent; an agent stops at its drawn count or at the
    first round that would take its total above the cap. Blocks keep memory at agents x K whatever q is.
    """
    block = fit.max_ordinary_rounds + 1
    total = np.full(drawn.size, fit.prefix_tokens + 1, dtype=np.int64)
    left = drawn.copy()
    active = np.arange(drawn.size)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while active.size:
        append = _positive_geometric(rng, fit.append_mean_tokens, active.size * block).reshape(active.size, block)
        gen = _positive_geometric(rng, fit.gen_mean_tokens, active.size * block).reshape(active.size, block)
        running = total[active, None] + np.cumsum(append + gen, axis=1)
        keep = (running <= fit.max_len_tokens) & (np.arange(block) < left[active, None])  # a prefix of each row
        count = keep.sum(axis=1)
        parts.append((np.repeat(active, count), append[keep], gen[keep]))
        total[active] = np.where(count > 0, running[np.arange(active.size), count - 1], total[active])
        left[active] -= count
        active = active[count == block]
    agent, append, gen = (np.concatenate(column) for column in zip(*parts))
    order = np.argsort(agent, kind="stable")
    return agent[order], append[order], gen[order]


def synthesize(workload: Workload, n_agents: int, rng: np.random.Generator) -> Trajectories:
    """Draw ``n_agents`` trajectories by the synthetic rule of the module docstring (paper Table 2, A.3)."""
    if isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)) or n_agents < 1:
        raise PlanError(f"synthesize: n_agents = {n_agents!r} agents is not allowed; must be a whole number >= 1", 2)
    fit = fit_synthetic(workload)
    drawn = rng.geometric(fit.stop_prob, n_agents).astype(np.int64)
    agent, append, gen = _ordinary_rounds(fit, drawn, rng)
    kept = np.bincount(agent, minlength=n_agents)
    offsets = np.concatenate(([0], np.cumsum(kept + 1)))
    ordinary = np.ones(int(offsets[-1]), dtype=bool)
    ordinary[offsets[:-1]] = False
    out_append = np.full(ordinary.size, fit.prefix_tokens, dtype=np.int64)
    out_gen = np.ones(ordinary.size, dtype=np.int64)
    out_append[ordinary], out_gen[ordinary] = append, gen
    return Trajectories(out_append, out_gen, offsets, f"synthetic {workload.name} ({n_agents} agents)", workload=workload.name)


# The data set of a workload is drawn once, with this seed, as the paper's 500 trajectories per Table 2 row are
# one fixed set; a run's agents are copies drawn from it (:func:`replay`), so more agents add copies, not tails.
DATASET_SEED = 20260221


@functools.lru_cache(maxsize=64)
def dataset(workload: Workload) -> Trajectories:
    """The workload's data set: ``workload.trajectories`` trajectories (Table 2: 500) by the synthetic rule,
    each opening with its prepended round (paper A.3), drawn once with :data:`DATASET_SEED`."""
    traj = synthesize(workload, workload.trajectories, np.random.default_rng(DATASET_SEED))
    return replace(traj, source=f"the {workload.name} data set ({workload.trajectories} trajectories)")


def agent_turns(workload: Workload) -> float:
    """Turns per agent, the one definition every command uses: the mean rounds of the data set's
    trajectories, prepended round included (an agent is a copy of one of them, drawn uniformly)."""
    data = dataset(workload)
    return data.n_rounds / data.n_agents


def replay(workload: Workload, n_agents: int, rng: np.random.Generator) -> Trajectories:
    """The paper's replay method (A.3): ``n_agents`` agents, each a copy of a trajectory drawn uniformly from
    the workload's data set with its own prepended round (random tokens, one generated token), so copies share
    no prefix. The data set's rounds already open with that round (its length is the fitted ``prefix_tokens``)."""
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
    if not isinstance(data, list):
        raise ValueError(f"a trajectory must be a JSON list of rounds, got {type(data).__name__}")
    if not data:
        raise ValueError("empty trajectory; a trajectory has at least one round")
    return np.array([_parse_round(item, k) for k, item in enumerate(data, start=1)], dtype=np.int64)


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise PlanError(f"{path}: trace file not found", 2) from None
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})", 2) from None
    except OSError as exc:
        raise PlanError(f"{path}: cannot read ({exc.strerror})", 2) from None


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
    if agents is not None and not 1 <= agents <= MAX_AGENTS:
        raise PlanError(f"--agents = {agents} agents is not allowed; must be a whole number from 1 to {MAX_AGENTS}", 2)
    rng = np.random.default_rng(seed)
    if trace is None:
        return replay(workload, DEFAULT_AGENTS if agents is None else agents, rng)
    traj = load_jsonl(trace)
    if agents is None and traj.n_agents > MAX_AGENTS:
        raise PlanError(f"{trace}: {traj.n_agents} trajectories is more than the {MAX_AGENTS} agents a run takes; "
                        f"use --agents N to sample fewer", 2)
    return traj if agents is None else take(traj, agents, rng)
