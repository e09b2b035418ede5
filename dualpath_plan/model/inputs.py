"""Reading the files and values a user hands in, with limits, before any parser sees them.

Profile files, ``--set`` values and trace lines reach Python's TOML and JSON parsers, which recurse
once per nesting level (2,000 levels end in a RecursionError) and turn digit strings into integers of
any length (past 4,300 digits a ValueError; a 310-digit integer overflows the float it becomes).
Nothing a profile or a trace needs comes near these, so the limits below are far above any real input
and far below where the parsers break; a breach is one line naming the file (and line) and the limit.
A path that is not a regular file (a FIFO would block until a writer comes, a device may never end, a
directory has no text) is refused before it is opened.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from dualpath_plan.model.errors import PlanError

MAX_PROFILE_BYTES = 1 << 20  # 1 MiB: a shipped profile is a few KB of TOML with its sources
MAX_TRACE_BYTES = 1 << 31  # 2 GiB: a trace of a million agents with hundreds of rounds each is well below
MAX_DEPTH = 16  # nesting of arrays and tables: profiles nest two deep (a table of arrays), trace lines three
MAX_DIGITS = 40  # digits in one number: every real quantity fits in 20 (bytes of a whole cluster: ~1e15)

_DIGITS = re.compile(rf"\d{{{MAX_DIGITS + 1},}}")
_OPEN, _CLOSE = "[{", "]}"


def check_regular(path: Path, what: str) -> os.stat_result:
    """``path``'s status if it is a regular file; a missing file, a directory, a FIFO, a socket or a device is one
    line (exit 2) naming ``what`` was wanted."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise PlanError(f"{path}: {what} not found", 2) from None
    except OSError as exc:
        raise PlanError(f"{path}: cannot read ({exc.strerror})", 2) from None
    if stat.S_ISDIR(info.st_mode):
        raise PlanError(f"{path}: is a directory; give a {what}", 2)
    if not stat.S_ISREG(info.st_mode):
        raise PlanError(f"{path}: is not a regular file (a FIFO, socket or device); give a {what}", 2)
    return info


def read_regular(path: Path, what: str, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; anything else is one line (exit 2)."""
    info = check_regular(path, what)
    if info.st_size > limit:
        raise PlanError(f"{path}: {info.st_size} bytes is too large for a {what}; at most {limit} bytes", 2)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise PlanError(f"{path}: cannot read ({exc.strerror})", 2) from None
    if len(data) > limit:  # it grew after the check
        raise PlanError(f"{path}: more than {limit} bytes is too large for a {what}", 2)
    return data


def check_shape(text: str, where: str) -> None:
    """Refuse text nested deeper than MAX_DEPTH or holding a number of more than MAX_DIGITS digits, naming
    ``where`` and the line. Quoted strings are skipped for nesting (TOML's and JSON's basic and literal
    strings on one line), so a bracket in a description does not count."""
    lines = text.splitlines()
    at = (lambda number: f"{where}, line {number}") if len(lines) > 1 else (lambda _number: where)  # noqa: E731
    for number, line in enumerate(lines, start=1):
        if _DIGITS.search(line):
            raise PlanError(f"{at(number)}: a number of more than {MAX_DIGITS} digits; no quantity needs that many", 2)
    depth, quote = 0, ""
    for number, line in enumerate(lines, start=1):
        escaped = False
        for char in line:
            if quote:
                if escaped:
                    escaped = False
                elif char == "\\" and quote == '"':
                    escaped = True
                elif char == quote:
                    quote = ""
                continue
            if char in "\"'":
                quote = char
            elif char == "#":  # a TOML comment to the end of the line (JSON has none)
                break
            elif char in _OPEN:
                depth += 1
                if depth > MAX_DEPTH:
                    raise PlanError(f"{at(number)}: nested more than {MAX_DEPTH} deep; profiles and --set values need a few "
                                    "levels", 2)
            elif char in _CLOSE:
                depth -= 1
        quote = ""  # a one-line string ends with its line (a multi-line one only delays the count)
