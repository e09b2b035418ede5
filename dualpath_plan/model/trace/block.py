"""A block of sessions whose rounds sit in shared columns, so that a trace is checked and counted an array at a time.

``native`` reads a file a block at a time (a few MB of lines): the rounds of every canonical line are read at once
(``columns``), the sessions' context (schema v2's context rule) is computed once for the block, and every rule a
session keeps on its own (``schema.check``) is checked on the columns. Each :class:`~dualpath_plan.model.trace.schema.Session`
of the block then holds views of the columns, its context given, so that nothing is computed twice; ``stats`` counts
a block's rounds from the columns directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualpath_plan.model.trace.schema import (
    MAX_ROUND_TOKENS,
    MAX_SECONDS,
    NO_KEEP,
    Session,
    given_context,
    prefix_of,
)


@dataclass(frozen=True, eq=False)
class Block:
    """Sessions in file order with their rounds in shared columns (every round of every session, in order).

    Attributes:
        sessions: The sessions; each one's arrays are views of the columns.
        lines: Each session's line number in its file (0 for sessions that come from no file).
        starts: Each session's first round in the columns, int64, one more entry than sessions (the end).
        append: Appended tokens per round, int64.
        gen: Generated tokens per round, int64.
        tool_s: Tool time after each round, s.
        keep: ``keep_tokens`` per round, int64 (``NO_KEEP`` where a round keeps its context).
        context: Tokens cached before each round (schema v2's context rule), int64.
    """

    sessions: tuple[Session, ...]
    lines: tuple[int, ...]
    starts: np.ndarray
    append: np.ndarray
    gen: np.ndarray
    tool_s: np.ndarray
    keep: np.ndarray
    context: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Each session's rounds."""
        return np.diff(self.starts)


def of_sessions(sessions: list[Session], lines: list[int] | None = None) -> Block:
    """The sessions (already checked) as a block: their columns concatenated, each one's context as it computes it."""
    lengths = np.array([s.n_rounds for s in sessions], dtype=np.int64)
    columns = [np.concatenate([getattr(s, name) for s in sessions] or [np.zeros(0, dtype)])
               for name, dtype in (("append_tokens", np.int64), ("gen_tokens", np.int64), ("tool_s", float), ("keep_tokens", np.int64))]
    context = np.concatenate([s.context_tokens() for s in sessions] or [np.zeros(0, np.int64)])
    return Block(tuple(sessions), tuple(lines or [0] * len(sessions)), np.concatenate(([0], np.cumsum(lengths))), *columns, context)


def context_of(lengths: np.ndarray, prefix: np.ndarray, append: np.ndarray, gen: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Tokens cached before each round of sessions laid end to end (``lengths`` rounds each, ``prefix`` tokens before
    round 1): ``Session.context_tokens`` of each, in one pass. A round starts again from the prefix at its session's
    start and from the round before's ``keep_tokens`` where that has one; in between the context grows by append + gen."""
    n = int(append.size)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    grown = np.concatenate(([0], np.cumsum(append + gen)))  # grown[i]: added before round i
    base = np.zeros(n, dtype=np.int64)
    restart = np.zeros(n, dtype=bool)
    after_keep = np.flatnonzero(keep[:-1] != NO_KEEP) + 1
    after_keep = after_keep[~np.isin(after_keep, starts)]  # a session's last keep does nothing
    base[after_keep], restart[after_keep] = keep[after_keep - 1], True
    base[starts], restart[starts] = prefix, True
    first = np.maximum.accumulate(np.where(restart, np.arange(n), 0))  # the round each context grows from
    return base[first] + grown[:-1] - grown[first]


def checked_block(heads: list[tuple], lines: list[int], columns: tuple[np.ndarray, ...]) -> Block | None:
    """The sessions of parsed heads ``(id, start_s, shared_prefix, fork)`` and their rounds' ``columns`` (``columns.
    read_columns``), when every session keeps ``schema.check``'s rules; None when any does not (the caller then reads
    the lines one at a time, and the first bad one is named)."""
    append, gen, tool, keep, lengths = columns
    if (append.min() < 1 or gen.min() < 1 or max(append.max(), gen.max(), keep.max()) > MAX_ROUND_TOKENS
            or not np.all(np.isfinite(tool)) or tool.max() > MAX_SECONDS):
        return None
    prefix = np.array([prefix_of(shared, fork) for _sid, _start, shared, fork in heads], dtype=np.int64)
    context = context_of(lengths, prefix, append, gen, keep)
    held = context + append + gen
    if np.any(keep > held) or held.max() > MAX_ROUND_TOKENS:
        return None
    starts = np.concatenate(([0], np.cumsum(lengths)))
    sessions = []
    for (sid, start_s, shared, fork), a, b in zip(heads, starts[:-1].tolist(), starts[1:].tolist()):
        sessions.append(given_context(Session(sid, append[a:b], gen[a:b], tool[a:b], keep[a:b], start_s, shared, fork),
                                      context[a:b], held[a:b]))
    return Block(tuple(sessions), tuple(lines), starts, append, gen, tool, keep, context)

