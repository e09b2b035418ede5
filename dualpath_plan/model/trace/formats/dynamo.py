"""NVIDIA Dynamo agentic Mooncake traces (``--format dynamo``) as schema v2 sessions.

Source: github ``ai-dynamo/dynamo``: ``lib/data-gen/src/mooncake.rs`` (``AgenticMooncakeRow``), the writers
``lib/bench/agent_trace_to_mooncake.rs`` and ``request_trace_to_mooncake.rs`` (``--agentic``), the reader
``AgenticTrace::from_agentic_mooncake`` (``lib/mocker/src/loadgen/trace.rs``), ``docs/agents/agent-simulation.md``,
``docs/agents/agent-replay.md``, ``docs/dynosim/trace-formats.md``; ``ai-dynamo/aiperf``
``src/aiperf/dataset/loader/mooncake_trace.py`` and ``models.py`` (``session_id``, ``delay`` in ms); read 2026-12-02.
Licence: Apache-2.0. One request per line::

    {"request_id":"r2","session_id":"main","input_length":420,"output_length":30,"hash_ids":[0,1,2,3,5,6,7],
     "timestamp":2500.0,"delay":300.0,"wait_for":["r1"],"branches":["c1"],"prefix_reset":false,"tool_wait_ms":1200.0}

Mooncake's fields plus: ``request_id`` (unique), ``session_id`` (the trajectory; none: the request is its own
session), ``wait_for`` (request ids that must finish first), ``branches`` (child request ids this row spawns),
``delay`` and ``tool_wait_ms`` (ms waited after ``wait_for`` finish: other and tool time). ``timestamp`` (ms, the
start) is required on every row (Dynamo writes it on every row). ``prefix_reset`` (a trajectory's first row) and
``tool_events`` are metadata that Dynamo's replay ignores and are not read: the hash ids show a reset as a shrink
(rule 2). The serde aliases (``input_tokens``, ``delay_ms`` ...) and the later versioned format (a header line,
``not_before_ms``, ``dependencies``) are not read.

Rules (on top of ``convert``'s rules 1-6):

* **Sessions**: the rows of one ``session_id``, in file order. A session's first row that an earlier row names in
  its ``branches`` (else whose ``wait_for`` names a row of another session) is a **fork** of that row's session at
  its round (counted after rule 4), ``delay_s`` = its ``delay`` + ``tool_wait_ms``. Sessions are built when the
  file ends, in the order of their first line, as for Bailian (``chains.finish``).
* **Refused** (naming the line): a ``wait_for`` id no earlier line has (a branch without its parent), a repeated
  ``request_id``, a row starting before the row before it in its session or before the row it forks from.
* **Block size**: the rows do not record it (Dynamo prints it; AIPerf defaults to 512). It is the power of two
  that the first row with two or more hash ids fits (``ceil(input_length / block) == len(hash_ids)``); before that
  row every hit is all or nothing whatever the block.
* **Hits**: one prefix index over the file; a root session's first hit is the shared prefix
  ``<file>-block-<id of the last matched block>``.
* **Tool time** after a round: the next row's ``delay`` + ``tool_wait_ms`` (0 if it has only ``wait_for``); rule 5
  (the gap between the starts, an upper bound) when it has none of the three, or joins another session's row (its
  delay then counts from the sub-agent's end). A repeat dropped by rule 4 leaves the wait before it as the tool time.
* **Start**: ``start_s`` = the first row's timestamp minus the earliest timestamp of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dualpath_plan.model.errors import shown
from dualpath_plan.model.trace.convert import (
    FormatError,
    PrefixIndex,
    Report,
    field_of,
    json_lines,
    open_text,
)
from dualpath_plan.model.trace.formats import ImportOptions
from dualpath_plan.model.trace.formats.chains import (
    Chain,
    finish,
    request,
    shared_id,
    stem,
)
from dualpath_plan.model.trace.formats.mooncake import millis, ms
from dualpath_plan.model.trace.schema import MAX_ID_CHARS, Session

NAME = "dynamo"
DESCRIPTION = ("NVIDIA Dynamo agentic Mooncake traces (request_trace_to_mooncake --agentic, replayed by DynoSim and "
               "AIPerf): Mooncake's fields plus session_id, wait_for, branches, delay, tool_wait_ms")
HITS_FROM = ("block hashes (block size: the power of two the rows' input_length and hash_ids fit), one prefix index "
             "over the file (within and across sessions)")
TOOL_FROM = ("each row's delay + tool_wait_ms; gaps between timestamps (upper bounds) for a row with neither or that "
             "joins a sub-agent")
UNKNOWN_BLOCK = 2**31  # the block size until a row has two hash ids: every hit so far is all or nothing


@dataclass
class _State:
    """What the reader keeps: open sessions, where each request is, and the children rows have spawned."""

    index: PrefixIndex = field(default_factory=lambda: PrefixIndex(UNKNOWN_BLOCK))
    chains: dict[str, Chain] = field(default_factory=dict)
    where: dict[str, tuple[Chain, int]] = field(default_factory=dict)
    spawned: dict[str, str] = field(default_factory=dict)  # child request id -> the request naming it in branches


def read(path: Path, opts: ImportOptions, report: Report,
         progress: Callable[[int], None] | None = None) -> Iterator[tuple[Session, int]]:
    """The sessions of one Dynamo agentic trace (module docstring), built when the file ends."""
    state, name = _State(), stem(path)
    with open_text(path, progress) as handle:
        for line, record in json_lines(handle):
            report.records += 1
            _row(record, line, state, name)
    block = state.index.block_tokens
    if block != UNKNOWN_BLOCK:
        report.notes.append(f"{path.name}: hash blocks of {block} tokens (inferred from input_length and hash_ids)")
    yield from finish(list(state.chains.values()), opts, report, 1 if block == UNKNOWN_BLOCK else block)


def _row(record: Any, line: int, state: _State, name: str) -> None:
    """Place one row in its session (a new root, a new fork, or the next round of an open session)."""
    rid = _text(record, "request_id", line)
    if rid in state.where:
        raise FormatError(line, f"request_id {rid!r} appears on an earlier line; request ids are unique")
    sid = _text(record, "session_id", line) if record.get("session_id") is not None else rid
    t_s = ms(record, "timestamp", line)
    deps, branches = _texts(record, "wait_for", line), _texts(record, "branches", line)
    for dep in deps:
        if dep not in state.where:
            raise FormatError(line, f"wait_for names request {dep!r}, which no earlier line has (a branch without its parent)")
    wait = _wait(record, line, bool(deps))
    _learn_block(state.index, record, line)
    req, ids = request(record, line, state.index, t_s)
    chain = state.chains.get(sid)
    parent = state.spawned.pop(rid, None)
    others = [d for d in deps if state.where[d][0] is not chain]
    if chain is None:
        chain = state.chains[sid] = _open(state, sid, parent or (others[0] if others else None), t_s, wait, line)
        if chain.fork is None:
            chain.shared_id = shared_id(name, ids, req.hit_tokens, state.index.block_tokens)
    else:
        prev = chain.requests[-1]
        _not_before(t_s, prev.t_s, line, f"the row before it in session {sid!r}")
        chain.requests[-1] = replace(prev, tool_s=None if others else wait)
    chain.requests.append(req)
    state.where[rid] = (chain, len(chain.requests) - 1)
    state.spawned.update((child, rid) for child in branches)


def _open(state: _State, sid: str, parent: str | None, t_s: float, wait: float | None, line: int) -> Chain:
    """A new session: a root, or a fork of ``parent``'s session at its round, ``wait`` after it."""
    if parent is None:
        return Chain(sid)
    at_chain, at = state.where[parent]
    _not_before(t_s, at_chain.requests[at].t_s, line, f"the row it forks from ({parent!r})")
    return Chain(sid, fork=(at_chain, at, wait or 0.0))


def _not_before(t_s: float, before: float | None, line: int, what: str) -> None:
    if before is not None and t_s < before:
        raise FormatError(line, f"timestamp {t_s * 1000:g} ms is before {what}, at {before * 1000:g} ms; times must not "
                                "decrease in a session")


def _wait(record: dict, line: int, has_deps: bool) -> float | None:
    """``delay`` + ``tool_wait_ms`` in seconds; 0 for a row with only ``wait_for``; None for a row with none."""
    parts = [millis(record, key, line) for key in ("delay", "tool_wait_ms") if record.get(key) is not None]
    if parts:
        return sum(parts) / 1000.0
    return 0.0 if has_deps else None


def _learn_block(index: PrefixIndex, record: Any, line: int) -> None:
    """Set the index's block size from the first row with two or more hash ids (module docstring)."""
    if index.block_tokens != UNKNOWN_BLOCK:
        return
    in_tokens = field_of(record, "input_length", line)
    n = len(field_of(record, "hash_ids", line, "list"))
    if n < 2:
        return
    for k in range(21):
        if -(-in_tokens // (1 << k)) == n:
            index.block_tokens = 1 << k
            return
    raise FormatError(line, f"{n} hash_ids for {in_tokens} input tokens fit no block of a power-of-two size; Dynamo "
                            "writes one id per (partial) block")


def _text(record: Any, key: str, line: int) -> str:
    """An id: a string (or a number) of 1 to 200 characters."""
    value = str(field_of(record, key, line, "str"))
    if not 1 <= len(value) <= MAX_ID_CHARS:
        raise FormatError(line, f"{key} = {shown(value)} is not an id of 1 to {MAX_ID_CHARS} characters")
    return value


def _texts(record: dict, key: str, line: int) -> list[str]:
    """A list of request ids (absent or null: none)."""
    if record.get(key) is None:
        return []
    values = field_of(record, key, line, "list")
    if not all(isinstance(v, str) and v for v in values):
        raise FormatError(line, f"{key} = {shown(values)} is not a list of request ids")
    return values
