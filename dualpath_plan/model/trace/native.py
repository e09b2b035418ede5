"""Reading this project's own trace files as a stream: schema v2 lines and v1 lines (``workload`` module docstring).

A v1 line (a JSON list of ``[A, g]`` rounds or ``{"append_tokens": A, "gen_tokens": g}`` objects) is a session with
id ``#N`` (its line number), no tool time, no prefix, no start time. Every line is checked on its own and against
the lines before it (``schema.Registry``); a bad line is one :class:`~dualpath_plan.model.errors.PlanError` naming
the file and line, or, when asked, skipped and listed.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.inputs import MAX_TRACE_BYTES
from dualpath_plan.model.trace.convert import FormatError, loads, open_text
from dualpath_plan.model.trace.schema import (
    MAX_ROUND_TOKENS,
    MAX_SECONDS,
    NO_KEEP,
    Registry,
    Session,
    parse_session,
    whole,
)


def parse_v1(data: list, line: int) -> Session:
    """A decoded v1 line as a session ``#line``; ``ValueError`` says what is wrong."""
    if not data:
        raise ValueError("empty trajectory; a trajectory has at least one round")
    pairs = np.empty((len(data), 2), dtype=np.int64)
    for k, item in enumerate(data, start=1):
        if isinstance(item, dict):
            if set(item) != {"append_tokens", "gen_tokens"}:
                raise ValueError(f"round {k} has keys {sorted(item)}; must be exactly append_tokens, gen_tokens")
            pairs[k - 1] = whole(item["append_tokens"], f"round {k} append_tokens", 1), whole(item["gen_tokens"], f"round {k} gen_tokens", 1)
        elif isinstance(item, list) and len(item) == 2:
            pairs[k - 1] = whole(item[0], f"round {k} append_tokens", 1), whole(item[1], f"round {k} gen_tokens", 1)
        else:
            raise ValueError(f"round {k} = {json.dumps(item)[:60]} is not {{\"append_tokens\": A, \"gen_tokens\": g}} or [A, g]")
    n = len(data)
    return Session(f"#{line}", pairs[:, 0], pairs[:, 1], np.zeros(n), np.full(n, NO_KEEP, dtype=np.int64))


_INT = r"(?:0|[1-9][0-9]{0,9})"
_NUM = r"(?:0|[1-9][0-9]{0,15})(?:\.[0-9]{1,17})?(?:[eE][+-]?[0-9]{1,3})?"
_ROUND = '\\{"append_tokens":(%s),"gen_tokens":(%s)(?:,"tool_s":(%s))?(?:,"keep_tokens":(%s))?\\}' % (_INT, _INT, _NUM, _INT)
_ROUND_BARE = _ROUND.replace("(", "(?:").replace("(?:?:", "(?:")
_ROUNDS = re.compile("\\[%s(?:,%s)*\\]" % (_ROUND_BARE, _ROUND_BARE))
_ROUND_FIELDS = re.compile(_ROUND)
_KEY = ',"rounds":['
_ZERO, _NO_KEEP = {"": "0"}, {"": str(NO_KEEP)}  # an absent tool_s or keep_tokens (map(d.get, col, col): C speed)


def _canonical(text: str, line: int) -> Session | None:
    """The fast path for a v2 line as ``Session.line`` writes it (compact, rounds last, keys in order): the rounds
    are matched by one regular expression and read a column at a time, the few other fields by the JSON parser.
    None when the line is not in that form or a value is out of range: the full parser then reads it and names what
    is wrong. Both paths give the same session for every line the fast one takes."""
    end = len(text.rstrip())
    k = text.rfind(_KEY)
    if k < 0 or not text.startswith('{"v":2,') or text[end - 2:end] != "]}" or not _ROUNDS.fullmatch(text, k + len(_KEY) - 1, end - 1):
        return None
    head = loads(text[:k] + "}", line)
    if not isinstance(head, dict) or "rounds" in head:
        return None
    a, g, t, kept = zip(*_ROUND_FIELDS.findall(text, k + len(_KEY) - 1, end - 1))  # columns of strings, "" where absent
    n = len(a)
    append, gen = np.fromiter(map(int, a), np.int64, n), np.fromiter(map(int, g), np.int64, n)
    tool = np.fromiter(map(float, map(_ZERO.get, t, t)), float, n)
    keep = np.fromiter(map(int, map(_NO_KEEP.get, kept, kept)), np.int64, n)
    if (append.min() < 1 or gen.min() < 1 or max(append.max(), gen.max(), keep.max()) > MAX_ROUND_TOKENS
            or not np.all(np.isfinite(tool)) or tool.max() > MAX_SECONDS):
        return None
    return parse_session(head, (append, gen, tool, keep))


def parse_text(text: str, line: int) -> Session:
    """One line of a trace file (v1 or v2) as a session; ``ValueError`` says what is wrong."""
    fast = _canonical(text, line) if text.startswith('{"v":2,') else None
    if fast is not None:
        return fast
    try:
        data = loads(text, line)
    except FormatError as exc:
        raise ValueError(str(exc)) from None
    if isinstance(data, list):
        return parse_v1(data, line)
    if isinstance(data, dict) and "v" not in data:
        raise ValueError(f"an object with keys {sorted(data)[:6]} is not a trajectory: a session is an object with v = 2, id and "
                         "rounds (schema v2), a v1 trajectory a JSON list of rounds")
    if isinstance(data, dict):
        return parse_session(data)
    raise ValueError(f"a line must be a session (a JSON object, schema v2) or a list of rounds (v1), got {type(data).__name__}")


def read(path: Path, skip: list[tuple[int, str]] | None = None,
         progress: Callable[[int], None] | None = None) -> Iterator[tuple[Session, int]]:
    """Every session of the file at ``path`` with its line number. A bad line raises (exit 2) naming the file and
    line, unless ``skip`` is a list: then it is appended there as ``(line, reason)`` and left out."""
    path = Path(path)
    _size_ok(path)
    registry = Registry()
    with open_text(path, progress) as handle:
        number = 0
        while True:
            try:
                text = handle.readline()
            except (UnicodeDecodeError, OSError, EOFError, zlib.error) as exc:
                raise PlanError(f"{path}: line {number + 1}: not UTF-8 text or not readable ({exc.__class__.__name__})", 2) from None
            if not text:
                return
            number += 1
            if not text.strip():
                continue
            try:
                s = parse_text(text, number)
                registry.add(s)
            except ValueError as exc:
                if skip is None:
                    raise PlanError(f"{path}: line {number}: {exc}", 2) from None
                skip.append((number, str(exc)))
                continue
            yield s, number


def _size_ok(path: Path) -> None:
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise PlanError(f"{path}: trace file not found", 2) from None
    except OSError as exc:
        raise PlanError(f"{path}: trace file cannot be read ({exc.strerror})", 2) from None
    if size > MAX_TRACE_BYTES:
        raise PlanError(f"{path}: {size} bytes is too large for a trace file; at most {MAX_TRACE_BYTES} bytes", 2)


def write(sessions: Iterable[Session], out: Path) -> int:
    """Write ``sessions`` as v2 lines to ``out`` (:func:`write_lines`); returns the number of sessions written."""
    count = [0]

    def lines() -> Iterator[str]:
        for s in sessions:
            count[0] += 1
            yield s.line()
    write_lines(lines(), out)
    return count[0]


def write_lines(lines: Iterable[str], out: Path) -> None:
    """Write ``lines`` to ``out`` through a temporary file renamed into place: nothing half written when a line
    fails on the way (the temporary file is removed)."""
    out = Path(out)
    handle, temp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent if str(out.parent) else ".")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            for text in lines:
                f.write(text + "\n")
        os.replace(temp, out)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
