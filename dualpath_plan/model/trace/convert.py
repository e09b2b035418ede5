"""From a public trace's requests to schema v2 sessions: the rules every converter shares, stated once.

A converter (``formats`` package) reads its format as a stream and hands each session's requests, in order, to
:func:`build_session`. A :class:`Request` is what the public formats record of one LLM call: its input and output
tokens, the input tokens already cached (from block hashes or a cached-token count; None: from the counts), and
its times. The rules:

1. **Round 1**: the tokens the first request found cached are the session's prefix (a shared prefix, or a fork's
   tokens for a sub-agent), at most its input minus one; its append is the rest of its input.
2. **Later rounds** keep the v2 context rule (``schema``): without a ``keep_tokens`` the context is the previous
   input plus the previous output. A request whose cached prefix covers the whole previous input (to a block:
   the previous input rounded down to whole blocks) and whose input is longer than that context keeps it: its
   append is its input minus the context (the previous output and a partial block count as cached, as DualPath
   writes a turn's whole KV back). Otherwise the previous round gets ``keep_tokens`` = the cached prefix (at most
   the input minus one), and the append is the rest: a **shrink** when it falls below the previous input (a
   compaction or an edited prefix), a **trim** when only the previous output was not re-sent.
3. **Without a hit** (``hit_tokens`` None): the cached prefix is the whole previous input + output when the input
   grew past it, the previous input when the input grew past that only, else 0.
4. **Repeats**: a request whose input equals the previous one's with every token cached (a retry) is dropped.
5. **Tool time** after a round: the format's own tool or think time if it records one; else the gap from the end
   of the call (start + duration) to the next call's start; else the gap between the two starts (an upper bound:
   it includes the call's own time). A negative gap (calls that overlap) counts as 0.
6. **Context window** (``max_context_tokens``): a session is cut before its first round whose context + append +
   generated tokens pass the window; a session whose first round passes it is dropped.
The :class:`Report` counts what each rule did; ``trace import`` prints it.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from dualpath_plan.model.errors import PlanError, shown
from dualpath_plan.model.inputs import MAX_DEPTH, check_regular
from dualpath_plan.model.trace.schema import (
    NO_KEEP,
    Fork,
    Registry,
    Session,
    SharedPrefix,
    check,
    finite,
)


@dataclass(frozen=True)
class Request:
    """One LLM call of a session, as a public trace records it (tokens; seconds from the trace's origin)."""

    in_tokens: int
    out_tokens: int
    hit_tokens: int | None = None  # input tokens already cached (block hashes or a cached count); None: rule 3
    t_s: float | None = None  # when the call started
    end_s: float | None = None  # when its response ended
    tool_s: float | None = None  # the format's own tool or think time after the call
    line: int = 0  # where it was read, for messages


@dataclass
class Report:
    """What an import read and what each rule of the module docstring did.

    ``TraceSummary.report``, and what :func:`dualpath_plan.trace_import` returns. Counts are whole numbers.

    Attributes:
        format: The format read (``weka``, ``tracelab``, ``copilot``, ``bailian``, ``mooncake``, ``dynamo`` or
            ``jsonl``, this project's own).
        output: The file an import wrote (empty for statistics).
        hits_from: How hits were found (block hashes of N tokens and their scope, cached counts, or token counts).
        tool_from: How tool time was found.
        files: Files read.
        records: Requests (or sessions) read.
        sessions: Sessions written.
        rounds: Rounds written.
        repeats_dropped: Retries dropped (rule 4).
        shrinks: Rounds kept below the previous input (rule 2).
        trims: Rounds whose previous output was not re-sent (rule 2).
        overlaps: Negative gaps between calls counted as 0 (rule 5).
        upper_bound_tool: Tool times taken between two starts, an upper bound (rule 5).
        sessions_cut: Sessions cut at the context window (rule 6).
        rounds_over_window: Rounds dropped past the context window.
        sessions_over_window: Sessions dropped because their first round passes the window.
        forks: Sub-agent sessions forked from a parent.
        shared_prefixes: Sessions given a shared prefix.
        notes: The converter's remarks, one line each.
        shared: What a converter keeps across the files of one import.
    """

    format: str
    output: str = ""  # the file an import wrote
    hits_from: str = ""  # how hits were found (block hashes of N tokens, scope; cached counts; token counts)
    tool_from: str = ""  # how tool time was found
    files: int = 0
    records: int = 0  # requests (or sessions) read
    sessions: int = 0  # sessions written
    rounds: int = 0  # rounds written
    repeats_dropped: int = 0  # rule 4
    shrinks: int = 0  # rule 2: kept below the previous input
    trims: int = 0  # rule 2: the previous output not re-sent
    overlaps: int = 0  # rule 5: negative gaps counted as 0
    upper_bound_tool: int = 0  # rule 5: gaps between starts
    sessions_cut: int = 0  # rule 6
    rounds_over_window: int = 0
    sessions_over_window: int = 0
    forks: int = 0
    shared_prefixes: int = 0
    notes: list[str] = field(default_factory=list)
    shared: dict = field(default_factory=dict, repr=False)  # what a converter keeps across the files of one import

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "shared"}

    def wrote(self, s: Session) -> None:
        """Count ``s`` as written."""
        self.sessions += 1
        self.rounds += s.n_rounds
        self.forks += s.fork is not None
        self.shared_prefixes += s.shared_prefix is not None

    def lines(self) -> list[str]:
        """The report as short sentences, one per rule that did something."""
        out = [f"read {self.records:,} records from {self.files} file(s) in the {self.format} format; wrote {self.sessions:,} "
               f"sessions, {self.rounds:,} rounds", f"hits: {self.hits_from}", f"tool time: {self.tool_from}"]
        said = [(self.repeats_dropped, "repeated request (same input, all cached) dropped", "repeated requests (same input, all cached) dropped"),
                (self.shrinks, "round kept less than the previous input (compaction or an edited prefix: keep_tokens; counted as read, "
                 "before any cut below)", "rounds kept less than the previous input (compaction or an edited prefix: keep_tokens; "
                 "counted as read, before any cut below)"),
                (self.trims, "round did not re-send the previous output (keep_tokens = the previous input; counted as read)",
                 "rounds did not re-send the previous output (keep_tokens = the previous input; counted as read)"),
                (self.overlaps, "tool time was negative (overlapping calls) and counts as 0",
                 "tool times were negative (overlapping calls) and count as 0"),
                (self.upper_bound_tool, "tool time is a gap between call starts (no duration recorded): an upper bound",
                 "tool times are gaps between call starts (no duration recorded): upper bounds"),
                (self.forks, "session is a sub-agent fork", "sessions are sub-agent forks"),
                (self.shared_prefixes, "session starts with a shared prefix", "sessions start with a shared prefix"),
                (self.sessions_cut, "session cut at the context window", "sessions cut at the context window"),
                (self.rounds_over_window, "round dropped past the context window", "rounds dropped past the context window"),
                (self.sessions_over_window, "session dropped: its first round passes the context window",
                 "sessions dropped: their first round passes the context window")]
        return out + [f"{n:,} {one if n == 1 else many}" for n, one, many in said if n] + self.notes


class FormatError(ValueError):
    """A record that does not fit the named format; ``line`` is 1-based (0: the whole file)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def refuse(path: Path, fmt: str, exc: FormatError) -> PlanError:
    """The one-line refusal for a record of ``path`` that is not ``fmt``."""
    at = f"line {exc.line}: " if exc.line else ""
    return PlanError(f"{path}: {at}not a {fmt} trace: {exc}", 2)


# --- reading ------------------------------------------------------------------------------------------------------

def open_text(path: Path, progress: Callable[[int], None] | None = None) -> IO[str]:
    """``path`` as UTF-8 text (gunzipped when it starts with gzip's magic bytes), reporting the bytes read from disk to
    ``progress``. A path that is not a regular file is refused before it is opened (``model.inputs``)."""
    return io.TextIOWrapper(open_bytes(path, progress), encoding="utf-8", errors="strict", newline="")


def open_bytes(path: Path, progress: Callable[[int], None] | None = None) -> IO[bytes]:
    """``path``'s bytes as :func:`open_text` reads them (gunzipped, counted), not decoded."""
    check_regular(path, "trace file")
    buffered = io.BufferedReader(_CountingRaw(open(path, "rb", buffering=0), progress))
    return gzip.GzipFile(fileobj=buffered) if buffered.peek(2)[:2] == b"\x1f\x8b" else buffered  # type: ignore[return-value]


class _CountingRaw(io.RawIOBase):
    """A raw binary file that reports every read's size."""

    def __init__(self, raw: IO[bytes], progress: Callable[[int], None] | None) -> None:
        self._raw, self._progress = raw, progress

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._raw.readinto(b) or 0  # type: ignore[attr-defined]
        if self._progress is not None and n:
            self._progress(n)
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def json_lines(handle: IO[str]) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON) for every non-blank line; a line that is not JSON is a :class:`FormatError`."""
    number = 0
    while True:
        try:
            text = handle.readline()
        except (UnicodeDecodeError, EOFError, OSError, gzip.BadGzipFile, zlib.error) as exc:
            raise FormatError(number + 1, f"unreadable ({exc})") from None
        if not text:
            return
        number += 1
        if not text.strip():
            continue
        yield number, loads(text, number)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def check_json_shape(text: str, line: int) -> None:
    """``model.inputs``' nesting limit on one line of JSON, at C speed for lines of megabytes (a WEKA conversation is
    one line): no nesting deeper than MAX_DEPTH outside strings. Long numbers need no check here: the JSON parser
    refuses an integer of more than 4,300 digits (a ValueError, caught by :func:`loads`) and every field's check
    refuses the rest (``schema.finite``: a 400-digit integer is no finite float)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return  # too few brackets to nest that deep
    if _depth(text) > MAX_DEPTH and _depth(_STRING.sub('""', text)) > MAX_DEPTH:  # brackets in strings only add depth
        raise FormatError(line, f"nested too deep (more than {MAX_DEPTH} levels); a record nests a few levels")


def _depth(text: str) -> int:
    """The deepest nesting of brackets and braces in ``text``."""
    codes = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    step = ((codes == 91) | (codes == 123)).astype(np.int8) - ((codes == 93) | (codes == 125))
    return int(np.cumsum(step, dtype=np.int32).max()) if step.size else 0


def loads(text: str, line: int) -> Any:
    """JSON text within the input limits (depth, digits); a :class:`FormatError` naming ``line`` otherwise."""
    check_json_shape(text, line)
    if text.startswith("\ufeff"):
        raise FormatError(line, "starts with a byte-order mark (U+FEFF), which JSON lines do not take; save the file as UTF-8 "
                                "without a BOM")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(line, f"not JSON ({exc.msg.removesuffix(' at')} at column {exc.colno}; truncated?)") from None
    except (RecursionError, ValueError) as exc:
        raise FormatError(line, f"not JSON ({exc.__class__.__name__})") from None


def field_of(record: Any, key: str, line: int, kind: str = "count") -> Any:
    """``record[key]`` checked as ``kind``: "count" (a whole number >= 0), "time" (finite, >= 0 s), "list", "str", "any"."""
    if not isinstance(record, dict):
        raise FormatError(line, f"a record must be a JSON object, got {type(record).__name__}")
    if key not in record:
        raise FormatError(line, f"no {key!r} field")
    value = record[key]
    if kind == "count":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()) or value < 0:
            raise FormatError(line, f"{key} = {shown(value)} is not a whole number >= 0")
        if value > 2**31 - 1:
            raise FormatError(line, f"{key} = {shown(value)} tokens is more than {2**31 - 1}")
        return int(value)
    if kind == "time":
        if finite(value) is None:
            raise FormatError(line, f"{key} = {shown(value)} is not a finite number of seconds")
        if value < 0:
            raise FormatError(line, f"{key} = {shown(value)} s is negative")
        return float(value)
    if kind == "list" and not isinstance(value, list):
        raise FormatError(line, f"{key} = {shown(value)} is not a list")
    if kind == "str" and not isinstance(value, (str, int)):
        raise FormatError(line, f"{key} = {shown(value)} is not a string or a number")
    return value


class PrefixIndex:
    """Block-prefix matching (traces notes): a request's cached prefix is the run of its leading block ids already
    seen in the scope, times the block size; every id of the request is then seen. Ids are kept as given (ints or
    strings)."""

    def __init__(self, block_tokens: int) -> None:
        self.block_tokens = block_tokens
        self.seen: set = set()

    def hit(self, hash_ids: list, in_tokens: int) -> int:
        seen = list(map(self.seen.__contains__, hash_ids))  # at C speed: conversations have tens of thousands of blocks
        run = seen.index(False) if False in seen else len(seen)
        self.seen.update(hash_ids)
        return min(run * self.block_tokens, in_tokens)

    def check_ids(self, hash_ids: Any, in_tokens: int, line: int) -> list:
        """``hash_ids`` checked against the input: a list of hashable ids, one per (partial) block."""
        if not isinstance(hash_ids, list) or not set(map(type, hash_ids)) <= {int, str}:
            raise FormatError(line, f"hash_ids = {shown(hash_ids)} is not a list of block ids")
        most = -(-in_tokens // self.block_tokens)
        if len(hash_ids) > most:
            raise FormatError(line, f"{len(hash_ids)} hash_ids for {in_tokens} input tokens break the prefix rule: at most "
                                    f"{most} blocks of {self.block_tokens} tokens")
        return hash_ids


# --- building sessions -------------------------------------------------------------------------------------------

def tool_time(prev: Request, nxt: Request, report: Report) -> float:
    """Rule 5: the tool time between ``prev`` and ``nxt``."""
    if prev.tool_s is not None:
        return prev.tool_s
    if nxt.t_s is None or prev.t_s is None:
        return 0.0
    if prev.end_s is not None:
        gap = nxt.t_s - prev.end_s
    else:
        gap = nxt.t_s - prev.t_s
        report.upper_bound_tool += 1
    if gap < 0:
        report.overlaps += 1
        return 0.0
    return gap


def build_session(sid: str, requests: list[Request], report: Report, *, start_s: float | None = None,
                  shared_id: str | None = None, fork: tuple[str, int, float] | None = None,
                  block_tokens: int = 1, max_context_tokens: int | None = None) -> Session | None:
    """One v2 session from a session's requests in order (rules 1-6); None when nothing is left of it.

    ``fork`` is ``(parent id, parent round, delay_s)`` for a sub-agent; its prefix is what its first request found
    cached. ``shared_id`` names the shared prefix of a root session whose first request found tokens cached.
    ``block_tokens`` is the hash block (rule 2's "to a block"; 1 for exact counts)."""
    kept = drop_repeats(requests, report)
    if not kept:
        return None
    first = kept[0]
    prefix = min(_hit(first, None), first.in_tokens - 1) if first.in_tokens > 1 else 0
    append, gen, tool, keep = [first.in_tokens - prefix], [max(first.out_tokens, 1)], [], []
    for prev, req in zip(kept, kept[1:]):
        full = prev.in_tokens + max(prev.out_tokens, 1)
        hit = _hit(req, prev)
        floor = prev.in_tokens - prev.in_tokens % block_tokens
        if hit >= floor and req.in_tokens > full:
            keep.append(NO_KEEP)
            append.append(req.in_tokens - full)
        else:
            k = min(hit, req.in_tokens - 1, full)
            if k < floor:
                report.shrinks += 1
            else:
                report.trims += 1
            keep.append(k)
            append.append(req.in_tokens - k)
        gen.append(max(req.out_tokens, 1))
        tool.append(tool_time(prev, req, report))
    keep.append(NO_KEEP)
    tool.append(0.0 if kept[-1].tool_s is None else kept[-1].tool_s)
    shared = SharedPrefix(shared_id or f"{sid}-prefix", prefix) if prefix > 0 and fork is None else None
    forked = Fork(fork[0], fork[1], prefix, fork[2]) if fork is not None and prefix > 0 else None
    s = Session(sid, np.array(append, dtype=np.int64), np.array(gen, dtype=np.int64), np.array(tool), np.array(keep, dtype=np.int64),
                start_s if forked is None else None, shared, forked)
    s = cut_at_window(s, max_context_tokens, report)
    if s is None:
        return None
    check(s)
    report.wrote(s)
    return s


def _hit(req: Request, prev: Request | None) -> int:
    """The cached prefix of ``req`` (rule 3 when the format records none)."""
    if req.hit_tokens is not None:
        return min(req.hit_tokens, req.in_tokens)
    if prev is None:
        return 0
    full = prev.in_tokens + max(prev.out_tokens, 1)
    if req.in_tokens > full:
        return full
    return prev.in_tokens if req.in_tokens > prev.in_tokens else 0


def drop_repeats(requests: list[Request], report: Report) -> list[Request]:
    """Rule 4, and a request with no input token dropped with it (it has nothing to prefill or load)."""
    kept: list[Request] = []
    for req in requests:
        if req.in_tokens < 1:
            report.repeats_dropped += 1
            continue
        if kept and req.in_tokens == kept[-1].in_tokens and req.hit_tokens is not None and req.hit_tokens >= req.in_tokens:
            report.repeats_dropped += 1
            continue
        kept.append(req)
    return kept


def cut_at_window(s: Session, window: int | None, report: Report) -> Session | None:
    """Rule 6: ``s`` cut before its first round that passes ``window`` tokens (None: dropped, its first round passes)."""
    if window is None:
        return s
    over = np.flatnonzero(s.held_after() > window)
    if not over.size:
        return s
    cut = int(over[0])
    report.rounds_over_window += s.n_rounds - cut
    if cut == 0:
        report.sessions_over_window += 1
        return None
    report.sessions_cut += 1
    keep = s.keep_tokens[:cut].copy()
    keep[-1] = NO_KEEP
    return Session(s.id, s.append_tokens[:cut], s.gen_tokens[:cut], s.tool_s[:cut], keep, s.start_s, s.shared_prefix, s.fork)


class Emitter:
    """The last check before a converted session is written: the file's rules that name another session
    (``schema.Registry``). A fork whose parent was dropped or cut before its round is dropped too (counted as an
    orphan); a fork that found more tokens cached than its parent held then takes what the parent held and
    prefills the rest (counted)."""

    def __init__(self, report: Report) -> None:
        self.report, self.registry = report, Registry()
        self.orphans = self.fork_clamps = 0

    def emit(self, s: Session | None, line: int) -> Session | None:
        if s is None:
            return None
        if s.fork is not None:
            held = self.registry.held.get(s.fork.parent)
            if held is None or s.fork.round > held.size:
                self.orphans += 1
                self._unsay(s)
                return None
            most = int(held[s.fork.round - 1])
            if s.fork.tokens > most:
                self.fork_clamps += 1
                extra = s.fork.tokens - most
                append = s.append_tokens.copy()
                append[0] += extra
                s = Session(s.id, append, s.gen_tokens, s.tool_s, s.keep_tokens, None, None, Fork(s.fork.parent, s.fork.round, most, s.fork.delay_s))
        try:
            self.registry.add(s)
        except ValueError as exc:
            raise FormatError(line, str(exc)) from None
        return s

    def _unsay(self, s: Session) -> None:
        self.report.sessions -= 1
        self.report.rounds -= s.n_rounds
        self.report.forks -= 1

    def notes(self) -> list[str]:
        out = []
        if self.orphans:
            out.append(f"{self.orphans:,} fork dropped: its parent was dropped or cut before the fork's round" if self.orphans == 1 else
                       f"{self.orphans:,} forks dropped: their parent was dropped or cut before the fork's round")
        if self.fork_clamps:
            out.append(f"{self.fork_clamps:,} fork found more tokens cached than its parent held; it takes what it held" if self.fork_clamps == 1
                       else f"{self.fork_clamps:,} forks found more tokens cached than their parent held; they take what it held")
        return out


def tally(report: Report, n: int, what: str) -> None:
    """Add ``n`` to the report's note ``"<count> <what>"`` (one note per kind over the files of an import)."""
    if not n:
        return
    for k, note in enumerate(report.notes):
        count, _, text = note.partition(" ")
        if text == what and count.replace(",", "").isdigit():
            report.notes[k] = f"{int(count.replace(',', '')) + n:,} {what}"
            return
    report.notes.append(f"{n:,} {what}")
