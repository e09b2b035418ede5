"""Mooncake FAST'25 traces (``--format mooncake``) as schema v2 sessions.

Source: github ``kvcache-ai/Mooncake``, ``FAST25-release/README.md`` and ``FAST25-release/traces/*.jsonl``
(``conversation_trace``, ``toolagent_trace``, ``synthetic_trace``; the older ``arxiv-trace/mooncake_trace.jsonl``
has the same fields), commit 3b5a594, read 2026-12-02. Licence: Apache-2.0. The format, one request per line::

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, 2353, 2354]}

``timestamp`` is the arrival time in milliseconds from the trace's start; ``hash_ids`` are remapped prefix hashes of
512-token blocks, one per (partial) block of the input. No other field: a record with another (a session id, a
chat id) is refused, so a Bailian or Dynamo trace named as Mooncake fails on its first line.

Rules (on top of ``convert``'s rules 1-6):

* **Sessions**: the trace records no session, so every request is a one-round session, id ``<file>-<line>``
  (``<file>``: the file name up to its first dot), written as soon as it is read.
* **Hits**: one prefix index of 512-token blocks over the file; a request that finds cached blocks starts with the
  shared prefix ``<file>-block-<id of the last matched block>`` (rule 1: at most its input minus one).
* **Tool time**: none (one round per session).
* **Start**: ``start_s`` = the timestamp minus the first record's, which is the earliest: the file is in arrival
  order, and a timestamp below the line before it is refused, naming the line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dualpath_plan.model.errors import shown
from dualpath_plan.model.trace.convert import (
    FormatError,
    PrefixIndex,
    Report,
    build_session,
    field_of,
    json_lines,
    open_text,
)
from dualpath_plan.model.trace.formats import ImportOptions
from dualpath_plan.model.trace.formats.chains import request, shared_id, stem
from dualpath_plan.model.trace.schema import Session, finite

NAME = "mooncake"
DESCRIPTION = ("Mooncake FAST'25 request traces (kvcache-ai/Mooncake, FAST25-release/traces/*.jsonl): one request per "
               "line, no sessions")
HITS_FROM = "block hashes of 512 tokens, one prefix index over the file (each request is a one-round session)"
TOOL_FROM = "none: each request is a one-round session"
BLOCK_TOKENS = 512
FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")


def read(path: Path, opts: ImportOptions, report: Report,
         progress: Callable[[int], None] | None = None) -> Iterator[tuple[Session, int]]:
    """The one-round sessions of one Mooncake file (module docstring), streamed line by line."""
    index, name = PrefixIndex(BLOCK_TOKENS), stem(path)
    origin = last = None
    with open_text(path, progress) as handle:
        for line, record in json_lines(handle):
            report.records += 1
            t_s = ms(record, "timestamp", line)
            _only_fields(record, line)
            if last is not None and t_s < last:
                raise FormatError(line, f"timestamp {t_s * 1000:g} ms is below the line before's ({last * 1000:g} ms); "
                                        "a Mooncake trace is in arrival order")
            origin = t_s if origin is None else origin
            last = t_s
            req, ids = request(record, line, index, t_s)
            s = build_session(f"{name}-{line}", [req], report, start_s=t_s - origin,
                              shared_id=shared_id(name, ids, req.hit_tokens, BLOCK_TOKENS), block_tokens=BLOCK_TOKENS,
                              max_context_tokens=opts.max_context_tokens)
            if s is not None:
                yield s, line


def _only_fields(record: dict, line: int) -> None:
    """Refuse a record with a field Mooncake does not write (it belongs to another format)."""
    extra = sorted(str(k) for k in record if k not in FIELDS)
    if extra:
        raise FormatError(line, f"unknown field(s) {shown(extra)}: a Mooncake FAST'25 record has only "
                                f"{', '.join(FIELDS)} (a trace with sessions: --format bailian or dynamo)")


def ms(record: Any, key: str, line: int) -> float:
    """``record[key]``, a time in milliseconds (finite, >= 0), in seconds."""
    return millis(record, key, line) / 1000.0


def millis(record: Any, key: str, line: int) -> float:
    """``record[key]`` checked as a time in milliseconds: a finite number >= 0."""
    value = field_of(record, key, line, "any")
    if finite(value) is None:
        raise FormatError(line, f"{key} = {shown(value)} is not a finite number of milliseconds")
    if value < 0:
        raise FormatError(line, f"{key} = {shown(value)} ms is negative")
    return float(value)
