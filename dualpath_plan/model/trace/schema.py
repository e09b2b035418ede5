"""Trace schema v2: one agent session per line, with tool time, start times, compaction, forks and shared prefixes.

A line is a JSON object (a v1 line, a JSON list of ``[A, g]`` rounds, is still read: ``workload`` module)::

    {"v": 2, "id": "s7", "start_s": 12.5,
     "shared_prefix": {"id": "claude-code-sys", "tokens": 14000},
     "rounds": [{"append_tokens": 2100, "gen_tokens": 310, "tool_s": 4.2},
                {"append_tokens": 800, "gen_tokens": 150, "tool_s": 12.0, "keep_tokens": 5000},
                {"append_tokens": 900, "gen_tokens": 95}]}

Session keys: ``v`` (2), ``id`` (a string unique in the file), ``rounds`` (at least one), and optionally
``start_s`` (s, when the session starts, from the trace's origin), ``shared_prefix`` (``id``, ``tokens``) or
``fork`` (``parent``, ``round``, ``tokens``, optional ``delay_s``). Round keys: ``append_tokens`` and
``gen_tokens`` (whole numbers >= 1), optionally ``tool_s`` (s >= 0, the tool or think time after the round)
and ``keep_tokens`` (a whole number >= 0: after this round only the first ``keep_tokens`` tokens of the context
stay cached, a compaction). No other key is allowed.

**The context rule** (the paper's replay rule, A.3, with a starting prefix and compaction). The tokens cached
before round 1 are the prefix: ``shared_prefix.tokens``, or ``fork.tokens``, else 0. Before round ``i + 1``
they are ``keep_tokens`` of round ``i`` if it has one, else the context before round ``i`` plus its append and
its generated tokens. A round loads its context from storage (hit tokens) and prefills its append (miss
tokens), so its prompt is context + append.

**Shared prefix**: the session's first ``tokens`` tokens (a system prompt, tool definitions) are already in the KV
store when it starts, shared with every session of the same ``id``; they load as hits. **Fork**: a sub-agent.
It starts ``delay_s`` (default 0) after round ``round`` (1-based) of session ``parent`` ends, from the first
``tokens`` tokens of the parent's context at that moment (its context before that round plus that round's
append and generated tokens), which it loads as hits; the parent appears on an earlier line. A fork has no
``start_s`` and no ``shared_prefix``. **Start time**: a session without ``start_s`` (and not a fork) starts
when the replay starts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dualpath_plan.model.errors import shown

VERSION = 2
MAX_ROUND_TOKENS = 2**31 - 1  # a bound on one round's tokens: far above any model's context window
MAX_SECONDS = 1e9  # a bound on a start or tool time (about 32 years): any real trace is far below
MAX_ID_CHARS = 200
SESSION_KEYS = {"v", "id", "rounds", "start_s", "shared_prefix", "fork"}
ROUND_KEYS = {"append_tokens", "gen_tokens", "tool_s", "keep_tokens"}
NO_KEEP = -1  # keep_tokens of a round that keeps its whole context


@dataclass(frozen=True)
class SharedPrefix:
    """Tokens at the start of a session already in the KV store, shared by every session of ``id``."""

    id: str
    tokens: int


@dataclass(frozen=True)
class Fork:
    """A sub-agent: it starts ``delay_s`` after round ``round`` (1-based) of ``parent`` ends, from the first
    ``tokens`` tokens of the parent's context then."""

    parent: str
    round: int
    tokens: int
    delay_s: float = 0.0


@dataclass(frozen=True, eq=False)
class Session:
    """One agent session of a v2 trace: per-round int64/float64 arrays and the session's own fields."""

    id: str
    append_tokens: np.ndarray
    gen_tokens: np.ndarray
    tool_s: np.ndarray
    keep_tokens: np.ndarray  # NO_KEEP where the round keeps its whole context
    start_s: float | None = None
    shared_prefix: SharedPrefix | None = None
    fork: Fork | None = None

    @property
    def n_rounds(self) -> int:
        return int(self.append_tokens.size)

    @property
    def prefix_tokens(self) -> int:
        """Tokens cached before round 1 (the context rule)."""
        return prefix_of(self.shared_prefix, self.fork)

    def context_tokens(self) -> np.ndarray:
        """Tokens cached before each round (the context rule, module docstring), int64: the running sum of append +
        gen from the prefix, started again from ``keep_tokens`` after each round that has one."""
        return self._context

    @cached_property
    def _context(self) -> np.ndarray:
        grown = np.concatenate(([0], np.cumsum(self.append_tokens + self.gen_tokens)))  # grown[i]: added before round i
        kept = np.flatnonzero(self.keep_tokens[:-1] != NO_KEEP) + 1  # rounds that start from a kept context
        if not kept.size:
            return self.prefix_tokens + grown[:-1]
        base = np.concatenate(([self.prefix_tokens], self.keep_tokens[kept - 1]))
        first = np.concatenate(([0], kept))
        segment = np.searchsorted(first, np.arange(self.n_rounds), side="right") - 1
        return base[segment] + grown[:-1] - grown[first][segment]

    def held_after(self) -> np.ndarray:
        """Tokens the session holds at the end of each round, before any compaction: context + append + gen."""
        return self._held

    @cached_property
    def _held(self) -> np.ndarray:
        return self.context_tokens() + self.append_tokens + self.gen_tokens

    def to_json(self) -> dict[str, Any]:
        """The line's JSON object (keys in the documented order; optional ones only when set)."""
        out: dict[str, Any] = {"v": VERSION, "id": self.id}
        if self.start_s is not None:
            out["start_s"] = self.start_s
        if self.shared_prefix is not None:
            out["shared_prefix"] = {"id": self.shared_prefix.id, "tokens": self.shared_prefix.tokens}
        if self.fork is not None:
            fork = {"parent": self.fork.parent, "round": self.fork.round, "tokens": self.fork.tokens}
            if self.fork.delay_s:
                fork["delay_s"] = self.fork.delay_s
            out["fork"] = fork
        rounds = []
        for a, g, t, k in zip(self.append_tokens.tolist(), self.gen_tokens.tolist(), self.tool_s.tolist(), self.keep_tokens.tolist()):
            r: dict[str, Any] = {"append_tokens": a, "gen_tokens": g}
            if t:
                r["tool_s"] = t
            if k != NO_KEEP:
                r["keep_tokens"] = k
            rounds.append(r)
        out["rounds"] = rounds
        return out

    def line(self) -> str:
        """The session as one compact JSON line (no newline)."""
        return json.dumps(self.to_json(), separators=(",", ":"))


def prefix_of(shared: SharedPrefix | None, fork: Fork | None) -> int:
    """Tokens cached before a session's round 1: a fork's tokens, else its shared prefix's, else 0."""
    if fork is not None:
        return fork.tokens
    return 0 if shared is None else shared.tokens


def given_context(s: Session, context: np.ndarray, held: np.ndarray) -> Session:
    """``s`` with its context and held tokens (``context_tokens``, ``held_after``) given, computed for many sessions at
    once (``block.context_of``): the values its own computation gives, seeded in its cache."""
    s.__dict__["_context"], s.__dict__["_held"] = context, held
    return s


def session(id: str, append: Any, gen: Any, tool_s: Any = None, keep: Any = None, *, start_s: float | None = None,
            shared_prefix: SharedPrefix | None = None, fork: Fork | None = None) -> Session:
    """A :class:`Session` from per-round sequences, checked as a parsed line is (``ValueError`` says what is wrong)."""
    n = len(append)
    tool = np.zeros(n) if tool_s is None else np.asarray(tool_s, dtype=float)
    kept = np.full(n, NO_KEEP, dtype=np.int64) if keep is None else np.asarray(keep, dtype=np.int64)
    s = Session(id, np.asarray(append, dtype=np.int64), np.asarray(gen, dtype=np.int64), tool, kept, start_s, shared_prefix, fork)
    check(s)
    return s


# --- parsing -------------------------------------------------------------------------------------------------

def whole(value: Any, name: str, low: int, unit: str = "tokens") -> int:
    """``value`` as a whole number in ``[low, MAX_ROUND_TOKENS]``; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{name} = {shown(value)} {unit} is not a whole number")
    if not low <= value <= MAX_ROUND_TOKENS:
        raise ValueError(f"{name} = {shown(value)} {unit} is not allowed; must be >= {low} and <= {MAX_ROUND_TOKENS}")
    return int(value)


def finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (a bool, a string, NaN, infinity, or an integer too long for a float:
    ``float`` raises OverflowError on 400 digits, which must not escape as a traceback)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def seconds(value: Any, name: str) -> float:
    """``value`` as a finite time in ``[0, MAX_SECONDS]`` s; ``ValueError`` naming ``name`` otherwise."""
    if finite(value) is None:
        raise ValueError(f"{name} = {shown(value)} is not a finite number of seconds")
    if not 0 <= value <= MAX_SECONDS:
        raise ValueError(f"{name} = {shown(value)} s is not allowed; must be >= 0 and <= {MAX_SECONDS:g}")
    return float(value)


def text_id(value: Any, name: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_CHARS:
        raise ValueError(f"{name} = {shown(value)} is not allowed; must be a string of 1 to {MAX_ID_CHARS} characters")
    return value


def _only(obj: Any, allowed: set[str], required: set[str], what: str) -> dict:
    if not isinstance(obj, dict):
        raise ValueError(f"{what} must be a JSON object, got {type(obj).__name__}")
    extra, missing = set(obj) - allowed, required - set(obj)
    if extra:
        raise ValueError(f"{what} has unknown keys {sorted(extra)}; allowed: {', '.join(sorted(allowed))}")
    if missing:
        raise ValueError(f"{what} lacks {', '.join(sorted(missing))}")
    return obj


def parse_session(data: Any) -> Session:
    """A decoded v2 line (a JSON object) as a :class:`Session`; ``ValueError`` says what is wrong."""
    sid, start, shared, fork = parse_head(data)
    rounds = data["rounds"]
    if not isinstance(rounds, list) or not rounds:
        raise ValueError(f"session {sid}: rounds must be a non-empty JSON list")
    append, gen, tool, keep = _fast_rounds(rounds) or _checked_rounds(rounds, sid)
    s = Session(sid, append, gen, tool, keep, start, shared, fork)
    check(s)
    return s


def parse_head(data: Any, without_rounds: bool = False) -> tuple[str, float | None, SharedPrefix | None, Fork | None]:
    """A decoded v2 line's own fields, checked: ``(id, start_s, shared_prefix, fork)`` (``rounds`` is read apart, and
    left out of ``data`` when ``without_rounds``); ``ValueError`` says what is wrong."""
    obj = _only(data, SESSION_KEYS, {"v", "id"} if without_rounds else {"v", "id", "rounds"}, "a session")
    if obj["v"] != VERSION or isinstance(obj["v"], bool):
        raise ValueError(f"v = {shown(obj['v'])} is not allowed; this reader knows schema v{VERSION}")
    sid = text_id(obj["id"], "id")
    start = None if "start_s" not in obj else seconds(obj["start_s"], f"session {sid} start_s")
    shared = fork = None
    if "shared_prefix" in obj:
        sp = _only(obj["shared_prefix"], {"id", "tokens"}, {"id", "tokens"}, f"session {sid} shared_prefix")
        shared = SharedPrefix(text_id(sp["id"], f"session {sid} shared_prefix id"), whole(sp["tokens"], f"session {sid} shared_prefix tokens", 1))
    if "fork" in obj:
        f = _only(obj["fork"], {"parent", "round", "tokens", "delay_s"}, {"parent", "round", "tokens"}, f"session {sid} fork")
        fork = Fork(text_id(f["parent"], f"session {sid} fork parent"), whole(f["round"], f"session {sid} fork round", 1, "rounds"),
                    whole(f["tokens"], f"session {sid} fork tokens", 1),
                    0.0 if "delay_s" not in f else seconds(f["delay_s"], f"session {sid} fork delay_s"))
    return sid, start, shared, fork


def fork_rules(sid: str, start_s: float | None, shared: SharedPrefix | None, fork: Fork | None) -> None:
    """A fork takes no start time and no shared prefix, and not itself as parent; ``ValueError`` otherwise."""
    if fork is not None and (start_s is not None or shared is not None):
        raise ValueError(f"session {sid}: a fork starts from its parent's context; it takes no start_s and no shared_prefix")
    if fork is not None and fork.parent == sid:
        raise ValueError(f"session {sid}: a session cannot fork from itself")


_REQUIRED = frozenset({"append_tokens", "gen_tokens"})


def _fast_rounds(rounds: list) -> tuple[np.ndarray, ...] | None:
    """The rounds' columns when every round is valid, checked a column at a time (a trace of millions of rounds
    reads at tens of MB/s); None when any is not, so that :func:`_checked_rounds` names the first bad one."""
    if not set(map(type, rounds)) <= {dict}:
        return None
    keysets = set(map(frozenset, rounds))
    if not all(_REQUIRED <= keys <= ROUND_KEYS for keys in keysets):
        return None
    has = frozenset().union(*keysets)
    append = _counts([r["append_tokens"] for r in rounds], 1)
    gen = _counts([r["gen_tokens"] for r in rounds], 1)
    keep = np.full(len(rounds), NO_KEEP, dtype=np.int64)
    if "keep_tokens" in has:
        at = [k for k, r in enumerate(rounds) if "keep_tokens" in r]
        kept = _counts([rounds[k]["keep_tokens"] for k in at], 0)  # a present keep_tokens is >= 0 (-1 only means absent)
        if kept is None:
            return None
        keep[at] = kept
    tool = _times([r.get("tool_s", 0.0) for r in rounds]) if "tool_s" in has else np.zeros(len(rounds))
    if append is None or gen is None or tool is None:
        return None
    return append, gen, tool, keep


def _counts(values: list, low: int) -> np.ndarray | None:
    """Whole numbers in ``[low, MAX_ROUND_TOKENS]`` as int64, or None (a bool, a fraction, a string, out of range)."""
    if not set(map(type, values)) <= {int}:
        return None
    if max(values) > MAX_ROUND_TOKENS or min(values) < low:
        return None
    return np.array(values, dtype=np.int64)


def _times(values: list) -> np.ndarray | None:
    """Finite times in ``[0, MAX_SECONDS]`` s as float64, or None."""
    if not set(map(type, values)) <= {int, float}:
        return None
    try:
        out = np.array(values, dtype=float)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return out if np.all(np.isfinite(out)) and out.min() >= 0 and out.max() <= MAX_SECONDS else None


def _checked_rounds(rounds: list, sid: str) -> tuple[np.ndarray, ...]:
    """The rounds' columns, checked one round at a time; ``ValueError`` names the first bad round and field."""
    n = len(rounds)
    append, gen = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    tool, keep = np.zeros(n), np.full(n, NO_KEEP, dtype=np.int64)
    for k, item in enumerate(rounds):
        where = f"session {sid} round {k + 1}"
        r = _only(item, ROUND_KEYS, {"append_tokens", "gen_tokens"}, where)
        append[k] = whole(r["append_tokens"], f"{where} append_tokens", 1)
        gen[k] = whole(r["gen_tokens"], f"{where} gen_tokens", 1)
        if "tool_s" in r:
            tool[k] = seconds(r["tool_s"], f"{where} tool_s")
        if "keep_tokens" in r:
            keep[k] = whole(r["keep_tokens"], f"{where} keep_tokens", 0)
    return append, gen, tool, keep


def check(s: Session) -> None:
    """The rules a session must keep on its own (those about its parent: :class:`Registry`), the same a parsed line
    keeps, so that a converter never writes a file the reader refuses."""
    text_id(s.id, "id")
    if s.shared_prefix is not None:
        text_id(s.shared_prefix.id, f"session {s.id} shared_prefix id")
    if s.fork is not None:
        text_id(s.fork.parent, f"session {s.id} fork parent")
        seconds(s.fork.delay_s, f"session {s.id} fork delay_s")
    if s.start_s is not None:
        seconds(s.start_s, f"session {s.id} start_s")
    if s.tool_s.size and not (np.all(np.isfinite(s.tool_s)) and s.tool_s.min() >= 0 and s.tool_s.max() <= MAX_SECONDS):
        k = int(np.flatnonzero(~((s.tool_s >= 0) & (s.tool_s <= MAX_SECONDS)))[0])
        seconds(float(s.tool_s[k]), f"session {s.id} round {k + 1} tool_s")
    fork_rules(s.id, s.start_s, s.shared_prefix, s.fork)
    if not (s.append_tokens.size == s.gen_tokens.size == s.tool_s.size == s.keep_tokens.size >= 1):
        raise ValueError(f"session {s.id}: every round needs append_tokens and gen_tokens")
    held = s.held_after()
    over = np.flatnonzero(s.keep_tokens > held)
    if over.size:
        k = int(over[0])
        raise ValueError(f"session {s.id} round {k + 1}: keep_tokens = {int(s.keep_tokens[k])} tokens is not allowed; must be <= "
                         f"the {int(held[k])} tokens the session holds after that round")
    if held.max() > MAX_ROUND_TOKENS:
        raise ValueError(f"session {s.id}: a context of {int(held.max())} tokens is more than {MAX_ROUND_TOKENS}")


class Registry:
    """The sessions seen so far in a file, for the rules that name another session: ids are unique and a fork's
    parent came earlier and held at least the tokens the fork takes. It keeps each session's tokens held after
    every round (8 bytes per round)."""

    def __init__(self) -> None:
        self.held: dict[str, np.ndarray] = {}

    def add(self, s: Session) -> None:
        if s.id in self.held:
            raise ValueError(f"session id {s.id!r} appears twice; ids must be unique in a trace")
        if s.fork is not None:
            f = s.fork
            parent = self.held.get(f.parent)
            if parent is None:
                raise ValueError(f"session {s.id}: fork parent {f.parent!r} does not exist on an earlier line")
            if f.round > parent.size:
                raise ValueError(f"session {s.id}: fork round = {f.round} is not allowed; parent {f.parent!r} has {parent.size} rounds")
            if f.tokens > parent[f.round - 1]:
                raise ValueError(f"session {s.id}: fork tokens = {f.tokens} tokens is not allowed; parent {f.parent!r} holds "
                                 f"{int(parent[f.round - 1])} tokens after round {f.round}")
        self.held[s.id] = s.held_after()

    def forget(self, ids: Iterable[str]) -> None:
        """Take sessions out again (a block whose later session broke a rule is read again a line at a time)."""
        for sid in ids:
            del self.held[sid]
