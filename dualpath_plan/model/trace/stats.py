"""Statistics of a trace, streamed: sessions, rounds, tokens and tool time, hits within and across sessions.

Every mean is exact (running sums). Percentiles come from histograms with log-spaced bins (``BINS_PER_DECADE``
per decade, so a percentile is within 0.3 % of the exact one), so memory stays constant however long the trace.
Sessions are taken in chunks of about ``CHUNK_ROUNDS`` rounds and counted with numpy.

Definitions (schema v2's context rule, ``schema``): a round's **prompt** is its context plus its append; its **hit
tokens** are its context (loaded from storage), **within** its session from round 2 on and **across** sessions in
round 1 (a shared prefix or a fork's prefix). **Tool time** is counted after every round but a session's last (the
time before a next round). Table 2's columns are computed as ``workload`` reads the paper's: turns, Append and Gen
per turn as means over sessions of each one's per-round mean, Total as the mean of what a session holds at its end,
Context as a mean over rounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dualpath_plan.model.trace.block import Block, of_sessions
from dualpath_plan.model.trace.schema import NO_KEEP, Session

BINS_PER_DECADE = 400
CHUNK_ROUNDS = 1 << 16
PERCENTILES = (50.0, 90.0, 99.0)
_TOKEN_EDGES = np.concatenate(([0.0, 1.0], np.logspace(0.0, 10.0, 10 * BINS_PER_DECADE + 1)[1:]))  # [0,1), then log bins
_SECOND_EDGES = np.concatenate(([0.0, 1e-3], np.logspace(-3.0, 9.0, 12 * BINS_PER_DECADE + 1)[1:]))


class Histogram:
    """Counts over fixed log-spaced bins; the first bin holds the zeros (below the first positive edge)."""

    def __init__(self, edges: np.ndarray) -> None:
        self.edges = edges
        self.counts = np.zeros(edges.size - 1, dtype=np.int64)
        self.total = 0.0
        self.n = 0
        self.max = 0.0

    def add(self, values: np.ndarray) -> None:
        if not values.size:
            return
        v = np.clip(values, 0.0, self.edges[-1] * (1 - 1e-12))
        idx = self._bin(v)
        self.counts += np.bincount(idx, minlength=self.counts.size)
        self.total += float(values.sum())
        self.n += int(values.size)
        self.max = max(self.max, float(values.max()))

    def _bin(self, v: np.ndarray) -> np.ndarray:
        """``searchsorted(edges, v, side="right") - 1`` for log-spaced edges: the bin from the logarithm, then moved by
        one where rounding put it beside the edge that holds ``v`` (edges start 0, 1 or 1e-3, then ``BINS_PER_DECADE``
        per decade)."""
        first = self.edges[1]  # the first positive edge; bin 0 holds what lies below it
        with np.errstate(divide="ignore"):
            guess = np.floor(np.log10(np.maximum(v, first) / first) * BINS_PER_DECADE).astype(np.int64) + 1
        idx = np.clip(np.where(v < first, 0, guess), 0, self.counts.size - 1)
        idx -= (idx > 0) & (v < self.edges[idx])
        idx += (idx < self.counts.size - 1) & (v >= self.edges[np.minimum(idx + 1, self.edges.size - 1)])
        return idx

    def mean(self) -> float:
        return self.total / self.n if self.n else float("nan")

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile: the geometric middle of the bin that holds it (0 in the zero bin)."""
        if not self.n:
            return float("nan")
        k = int(np.searchsorted(np.cumsum(self.counts), q / 100.0 * self.n, side="left"))
        k = min(k, self.counts.size - 1)
        lo, hi = self.edges[k], self.edges[k + 1]
        return 0.0 if lo == 0.0 else min(float(np.sqrt(lo * hi)), self.max)

    def summary(self) -> dict[str, float]:
        out = {"mean": self.mean(), **{f"p{q:g}": self.percentile(q) for q in PERCENTILES}, "max": self.max if self.n else float("nan")}
        return out


@dataclass
class TraceStats:
    """What :func:`collect` counts over a trace (``as_dict`` gives the JSON of ``trace stats``).

    Token counts are tokens, times seconds.

    Attributes:
        sessions: Sessions read.
        rounds: Rounds read.
        forks: Sessions that fork from a parent.
        compactions: Rounds with ``keep_tokens``.
        shared_prefix_sessions: Sessions that start from a shared prefix.
        shared_prefix_ids: The shared prefixes' ids.
        timed_sessions: Sessions with a recorded ``start_s``.
        first_start_s: The earliest recorded start, seconds (``inf`` with none).
        last_start_s: The latest recorded start, seconds (``-inf`` with none).
        prompt_tokens: Prompt tokens over every round (context + append).
        hit_within_tokens: Of them, cached from the session's own earlier rounds.
        hit_across_tokens: Of them, cached from other sessions (shared prefixes, forks).
        turn_append_sum: Sum over sessions of each one's mean append per round, tokens.
        turn_gen_sum: Sum over sessions of each one's mean generated tokens per round.
        total_sum: Sum over sessions of the tokens each holds at its end.
        context: Distribution of the context per round, tokens (log-spaced bins, 400 per decade).
        append: Distribution of the appended tokens per round.
        gen: Distribution of the generated tokens per round.
        prompt: Distribution of the prompt per round.
        tool: Distribution of the tool time between rounds, seconds.
        held_max: The most tokens a session held.
    """

    sessions: int = 0
    rounds: int = 0
    forks: int = 0
    compactions: int = 0  # rounds with keep_tokens
    shared_prefix_sessions: int = 0
    shared_prefix_ids: set = field(default_factory=set)
    timed_sessions: int = 0  # sessions with a recorded start_s
    first_start_s: float = float("inf")
    last_start_s: float = float("-inf")
    prompt_tokens: float = 0.0
    hit_within_tokens: float = 0.0
    hit_across_tokens: float = 0.0
    turn_append_sum: float = 0.0  # sum over sessions of each one's mean append per round
    turn_gen_sum: float = 0.0
    total_sum: float = 0.0  # sum over sessions of what each holds at its end
    context: Histogram = field(default_factory=lambda: Histogram(_TOKEN_EDGES))
    append: Histogram = field(default_factory=lambda: Histogram(_TOKEN_EDGES))
    gen: Histogram = field(default_factory=lambda: Histogram(_TOKEN_EDGES))
    prompt: Histogram = field(default_factory=lambda: Histogram(_TOKEN_EDGES))
    tool: Histogram = field(default_factory=lambda: Histogram(_SECOND_EDGES))
    held_max: int = 0

    @property
    def hit_tokens(self) -> float:
        return self.hit_within_tokens + self.hit_across_tokens

    def as_dict(self, kv_bytes_per_token: float | None = None) -> dict[str, Any]:
        """The figures of ``trace stats --json`` (tokens and seconds; shares as fractions)."""
        prompt = self.prompt_tokens or float("nan")
        s = max(self.sessions, 1)
        out: dict[str, Any] = {
            "sessions": self.sessions, "rounds": self.rounds, "forks": self.forks, "compactions": self.compactions,
            "shared_prefix_sessions": self.shared_prefix_sessions, "shared_prefix_ids": len(self.shared_prefix_ids),
            "sessions_with_start_s": self.timed_sessions,
            "span_s": (self.last_start_s - self.first_start_s) if self.timed_sessions else None,
            "hit_share": self.hit_tokens / prompt, "hit_share_within_sessions": self.hit_within_tokens / prompt,
            "hit_share_across_sessions": self.hit_across_tokens / prompt,
            "mean_rounds_per_session": self.rounds / s,
            "mean_context_tokens": self.context.mean(), "mean_append_tokens": self.append.mean(), "mean_gen_tokens": self.gen.mean(),
            "mean_prompt_tokens": self.prompt.mean(), "mean_tool_s": self.tool.mean() if self.tool.n else 0.0,
            "max_held_tokens": self.held_max,
            "table2": {"turns": self.rounds / s, "append_tokens": self.turn_append_sum / s, "gen_tokens": self.turn_gen_sum / s,
                       "total_tokens": self.total_sum / s, "context_tokens": self.context.mean()},
            "distributions": {"context_tokens": self.context.summary(), "append_tokens": self.append.summary(),
                              "gen_tokens": self.gen.summary(), "prompt_tokens": self.prompt.summary(),
                              "tool_s": self.tool.summary() if self.tool.n else None},
        }
        if kv_bytes_per_token is not None:
            out["kv_bytes_per_turn"] = self.context.mean() * kv_bytes_per_token
            out["kv_bytes_per_token"] = kv_bytes_per_token
        return out


def collect(sessions: Iterable[Session], stats: TraceStats | None = None) -> TraceStats:
    """Count ``sessions`` (a stream) into ``stats`` (a new one by default), about ``CHUNK_ROUNDS`` rounds at a time."""
    return collect_blocks(_chunks(sessions), stats)


def collect_blocks(blocks: Iterable[Block], stats: TraceStats | None = None) -> TraceStats:
    """Count the sessions of ``blocks`` (a stream; ``native.read_blocks`` reads a file so) into ``stats``."""
    st = stats or TraceStats()
    for blk in blocks:
        for s in blk.sessions:
            _session_fields(st, s)
        if blk.sessions:
            _rounds(st, blk)
    return st


def _chunks(sessions: Iterable[Session]) -> Iterator[Block]:
    chunk: list[Session] = []
    rounds = 0
    for s in sessions:
        chunk.append(s)
        rounds += s.n_rounds
        if rounds >= CHUNK_ROUNDS:
            yield of_sessions(chunk)
            chunk, rounds = [], 0
    if chunk:
        yield of_sessions(chunk)


def _session_fields(st: TraceStats, s: Session) -> None:
    st.sessions += 1
    st.rounds += s.n_rounds
    st.forks += s.fork is not None
    if s.shared_prefix is not None:
        st.shared_prefix_sessions += 1
        st.shared_prefix_ids.add(s.shared_prefix.id)
    if s.start_s is not None:
        st.timed_sessions += 1
        st.first_start_s = min(st.first_start_s, s.start_s)
        st.last_start_s = max(st.last_start_s, s.start_s)


def _rounds(st: TraceStats, blk: Block) -> None:
    """The per-round counts of a block of sessions, vectorised."""
    append, gen, context = blk.append.astype(float), blk.gen.astype(float), blk.context.astype(float)
    lengths = blk.lengths
    starts = blk.starts[:-1]
    last = starts + lengths - 1
    tool = np.delete(blk.tool_s, last)  # the time after a session's last round leads to no next round
    prompt = context + append
    held = context + append + gen
    st.compactions += int(np.count_nonzero(blk.keep != NO_KEEP)) - int(np.count_nonzero(blk.keep[last] != NO_KEEP))  # a last round's keep does nothing
    st.prompt_tokens += float(prompt.sum())
    first = context[starts]
    st.hit_across_tokens += float(first.sum())
    st.hit_within_tokens += float(context.sum() - first.sum())
    st.turn_append_sum += float((np.add.reduceat(append, starts) / lengths).sum())
    st.turn_gen_sum += float((np.add.reduceat(gen, starts) / lengths).sum())
    st.total_sum += float(held[last].sum())
    st.held_max = max(st.held_max, int(held.max()))
    for hist, values in ((st.context, context), (st.append, append), (st.gen, gen), (st.prompt, prompt), (st.tool, tool)):
        hist.add(values)
