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
from typing import IO

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.filemode import give_usual_mode
from dualpath_plan.model.inputs import MAX_TRACE_BYTES
from dualpath_plan.model.trace.block import Block, checked_block, of_sessions
from dualpath_plan.model.trace.columns import read_columns
from dualpath_plan.model.trace.convert import FormatError, loads, open_bytes
from dualpath_plan.model.trace.schema import (
    NO_KEEP,
    Registry,
    Session,
    fork_rules,
    parse_head,
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


def parse_text(text: str, line: int) -> Session:
    """One line of a trace file (v1 or v2) as a session; ``ValueError`` says what is wrong."""
    try:
        data = loads(text, line)
    except FormatError as exc:
        raise ValueError(str(exc)) from None
    if isinstance(data, list):
        return parse_v1(data, line)
    if isinstance(data, dict) and "v" not in data:
        raise ValueError(f"an object with keys {sorted(data)[:6]} is not a trajectory: a session is an object with v = 2, id and "
                         "rounds (schema v2), a v1 trajectory a JSON list of rounds; a public trace's record? name its format "
                         "(--trace-format F; trace stats --format F) or convert it with `dualpath-plan trace import`")
    if isinstance(data, dict):
        return parse_session(data)
    raise ValueError(f"a line must be a session (a JSON object, schema v2) or a list of rounds (v1), got {type(data).__name__}")


def read(path: Path, skip: list[tuple[int, str]] | None = None,
         progress: Callable[[int], None] | None = None) -> Iterator[tuple[Session, int]]:
    """Every session of the file at ``path`` with its line number. A bad line raises (exit 2) naming the file and
    line, unless ``skip`` is a list: then it is appended there as ``(line, reason)`` and left out."""
    for blk in read_blocks(path, skip, progress):
        yield from zip(blk.sessions, blk.lines)


def read_blocks(path: Path, skip: list[tuple[int, str]] | None = None,
                progress: Callable[[int], None] | None = None) -> Iterator[Block]:
    """The sessions of the file at ``path`` (as :func:`read`) in blocks of about ``BLOCK_BYTES`` of lines. A block of
    canonical lines (``Session.line``'s form) is read and checked an array at a time (``columns``, ``block``); a
    block with any other line, one at a time with the JSON parser, which names the first bad line."""
    path = Path(path)
    _size_ok(path)
    registry = Registry()
    with open_bytes(path, progress) as handle:
        number = 0
        while True:
            raws, error = _lines(handle)
            raws = _universal(raws)
            if raws:
                blk = _fast(raws, number, registry) or _one_at_a_time(raws, number, registry, path, skip)
                number += len(raws)
                if blk.sessions:
                    yield blk
            if error is not None:  # the lines before it are read; the one it stopped in is named
                raise PlanError(f"{path}: line {number + 1}: not UTF-8 text or not readable ({error.__class__.__name__})", 2)
            if not raws:
                return


def _lines(handle: IO[bytes]) -> tuple[list[bytes], Exception | None]:
    """The next lines of ``handle``, about ``BLOCK_BYTES`` of them (none at the end), and the read error that stopped
    them early (a damaged gzip stream), if any."""
    raws: list[bytes] = []
    size = 0
    while size < BLOCK_BYTES:
        try:
            raw = handle.readline()
        except (OSError, EOFError, zlib.error) as exc:
            return raws, exc
        if not raw:
            break
        raws.append(raw)
        size += len(raw)
    return raws, None


_LONE_CR = re.compile(rb"(?<=\r)(?!\n)")
BLOCK_BYTES = 1 << 22  # lines read and checked together (a few MB: the arrays of a block stay in the caches' reach)
_HEAD, _KEY = b'{"v":2,', b',"rounds":['


def _universal(raws: list[bytes]) -> list[bytes]:
    """The lines as text mode with universal newlines reads them: a lone carriage return ends a line too."""
    if not any(b"\r" in raw for raw in raws):
        return raws
    return [part for raw in raws for part in _LONE_CR.split(raw) if part]


def _fast(raws: list[bytes], before: int, registry: Registry) -> Block | None:
    """The block of ``raws`` (lines ``before + 1`` on) when every line is canonical and valid, added to ``registry``;
    None (``registry`` as it was) otherwise."""
    heads, lists, lines = [], [], []
    for k, raw in enumerate(raws, start=before + 1):
        line = raw.rstrip(b" \t\r\n")  # JSON's whitespace only
        if not line:
            continue
        cut = line.rfind(_KEY)
        if cut < 0 or not line.startswith(_HEAD) or not line.endswith(b"]}"):
            return None
        try:
            head = loads(line[:cut].decode("utf-8") + "}", k)
            if not isinstance(head, dict) or "rounds" in head:
                return None
            heads.append(parse_head(head, without_rounds=True))
            fork_rules(*heads[-1])
        except (ValueError, UnicodeDecodeError):  # FormatError is a ValueError
            return None
        lists.append(line[cut + len(_KEY):-2])
        lines.append(k)
    if not lists:
        return None
    cols = read_columns(lists)
    blk = None if cols is None else checked_block(heads, lines, cols)
    if blk is None or not _register(blk, registry):
        return None
    return blk


def _register(blk: Block, registry: Registry) -> bool:
    """Add the block's sessions to ``registry`` (unique ids, forks' parents); False, nothing added, when one breaks a rule."""
    for k, s in enumerate(blk.sessions):
        try:
            registry.add(s)
        except ValueError:
            registry.forget(s.id for s in blk.sessions[:k])
            return False
    return True


def _one_at_a_time(raws: list[bytes], before: int, registry: Registry, path: Path, skip: list[tuple[int, str]] | None) -> Block:
    """The block of ``raws`` read a line at a time: a bad line raises naming ``path`` and the line, or goes to ``skip``."""
    sessions, lines = [], []
    for number, raw in enumerate(raws, start=before + 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PlanError(f"{path}: line {number}: not UTF-8 text or not readable ({exc.__class__.__name__})", 2) from None
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
        sessions.append(s)
        lines.append(number)
    return of_sessions(sessions, lines)


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
        give_usual_mode(temp)  # mkstemp makes 0600
        os.replace(temp, out)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
