"""TraceLab Claude Code and Codex round traces (``--format tracelab``) as schema v2 sessions.

Source: github ``uw-syfi/TraceLab`` at commit 0b8a262 (2026-06-25): ``README.md`` (Data format),
``example_sessions/sanitized/round_trace.jsonl``, ``scripts/extract_claude_rounds.py``,
``scripts/extract_codex_rounds.py``, ``scripts/sanitize_round_trace.py`` and ``artifacts/utils/DB_SCHEMA.md``, which
document the rows of the release asset ``syfi_coding_trace.jsonl.gz`` (v0.0.1; the asset itself was not read).
Licence: code Apache-2.0, data CC BY 4.0 (``LICENSE-DATASET.md``). One LLM round per line: ``provider``,
``session_id``, ``round_index``, ``round_id``, ``model``, ``input_tokens_total`` (= ``prefix_tokens`` + ``newly_append_tokens``), ``prefix_tokens`` (the
provider's cached prefix: Claude's cache read, Codex's ``cached_input_tokens``), the ``claude_*`` cache split,
``output_tokens``, ``reasoning_output_tokens``, ``timing_events`` (``event_type``, ISO 8601 ``timestamp``), ``tools``
(``tool_wall_latency_ms``, ``tool_internal_latency_ms``, ...) and input-size summaries.

Rules (on top of ``convert``'s rules 1-6):

* **Sessions**: a session's rows follow one another (the extractor writes one session file after another); a row of
  a session that ended earlier in the file (a Codex sub-agent file re-listing its parent's turns) is dropped,
  counted. A session's rows split by model: the model of most rows (the first on a tie) is the session, each other
  model's rows (a model switch, side calls) a session ``<session_id>/<model>`` of their own, counted. The release
  pseudonymises session ids, so a sub-agent is not linked to its parent: it is a session with its own start.
* **Hits**: ``prefix_tokens``, except that a round whose input did not shrink keeps at least the previous input
  cached: a lower count is the provider's miss or expiry, or the uncached tail of Claude's last message, not an
  edit of the context (counted). Rule 3 fits an append-only chain; the counts show compactions (the input shrinks).
* **Times**: a round starts at its last input event (``user_message``, ``tool_result``: the request goes when its
  input is complete), or its first event without one; it ends at its last event. ``start_s`` counts from the
  earliest first event of the file (a first pass reads only those timestamps).
* **Tool time**: rule 5's gap from a round's end to the next round's start; the tools' latencies and the user's
  waits lie in it.
* **Refused**: a round starting before the previous round of its session.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from dualpath_plan.model.errors import shown
from dualpath_plan.model.trace.convert import (
    FormatError,
    Report,
    Request,
    build_session,
    field_of,
    json_lines,
    open_text,
    tally,
)
from dualpath_plan.model.trace.formats import ImportOptions
from dualpath_plan.model.trace.schema import Session

NAME = "tracelab"
DESCRIPTION = "TraceLab Claude Code and Codex rounds (syfi_coding_trace.jsonl.gz: one LLM round per line)"
HITS_FROM = "cached-token counts (prefix_tokens: Claude cache read, Codex cached input); a growing input keeps the last"
TOOL_FROM = "gaps from a round's last event to the next round's last input event (tool latencies and user waits)"
INPUTS = ("user_message", "tool_result")
SIDE = "requests of another model than their session's main one (a model switch, side calls) made sessions <id>/<model>"
MISSES = ("rounds found fewer tokens cached than the previous input though the input did not shrink (a provider miss "
          "or expiry); the previous input counts as cached")
ENDED = "rows of a session that ended earlier in the file (not next to its other rows) dropped"
_STAMP = re.compile(r'"timestamp"\s*:\s*"([^"]+)"')


def read(path: Path, opts: ImportOptions, report: Report,
         progress: Callable[[int], None] | None = None) -> Iterator[tuple[Session, int]]:
    """The sessions of one TraceLab file (module docstring), each when its last row has been read."""
    origin, ended = _origin(path), set()
    sid, rows, last = None, [], 0
    with open_text(path, progress) as handle:
        for line, record in json_lines(handle):
            row_sid = str(field_of(record, "session_id", line, "str"))
            model, req = _round(record, line)
            report.records += 1
            if row_sid != sid:
                if sid is not None:
                    ended.add(sid)
                    yield from sessions_of(sid, rows, opts, report, origin, last)
                    sid = None
                if row_sid in ended:
                    tally(report, 1, ENDED)
                    continue
                sid, rows = row_sid, []
            if rows and req.t_s is not None and rows[-1][1].t_s is not None and req.t_s < rows[-1][1].t_s:
                raise FormatError(line, f"the round starts {rows[-1][1].t_s - req.t_s:.3f} s before the previous round "
                                        f"of session {sid!r}; times must not decrease in a session")
            rows.append((model or (rows[-1][0] if rows else "unknown"), req))  # no model: the row before's
            last = line
    if sid is not None:
        yield from sessions_of(sid, rows, opts, report, origin, last)


def _round(record: Any, line: int) -> tuple[str | None, Request]:
    """One row as (model, :class:`Request`): tokens, cached prefix and times."""
    n_in, cached = field_of(record, "input_tokens_total", line), field_of(record, "prefix_tokens", line)
    out, events = field_of(record, "output_tokens", line), field_of(record, "timing_events", line, "list")
    model = record.get("model")
    start, end = _span(events, line)
    req = Request(n_in, out, min(cached, n_in), start, end, None, line)
    return (model if isinstance(model, str) and model else None), req


def _span(events: list, line: int) -> tuple[float | None, float | None]:
    """A round's start (its last input event, else its first event) and end (its last event), epoch seconds."""
    stamps = []
    for k, event in enumerate(events):
        kind = field_of(event, "event_type", line, "str")
        if event.get("timestamp") is not None:
            stamps.append((seconds(event["timestamp"], line, f"timing_events[{k}].timestamp"), kind in INPUTS))
    if not stamps:
        return None, None
    inputs = [t for t, is_input in stamps if is_input]
    return (max(inputs) if inputs else stamps[0][0]), max(t for t, _ in stamps)


def _origin(path: Path) -> float | None:
    """The earliest first timestamp of the file's rows (a text scan; the reading pass refuses bad rows)."""
    earliest = None
    with open_text(path) as handle:
        try:
            for text in handle:
                found = _STAMP.search(text)
                if found:
                    t = datetime.fromisoformat(found.group(1))
                    t = (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()
                    earliest = t if earliest is None else min(earliest, t)
        except (ValueError, EOFError, OSError, zlib.error):  # undecodable, truncated or not a timestamp: the reading pass says
            pass
    return earliest


# --- shared with the other cached-count format (copilot) ---------------------------------------------------------

def seconds(text: Any, line: int, what: str) -> float:
    """An ISO 8601 timestamp as seconds since the Unix epoch (UTC when it names no zone)."""
    try:
        stamp = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise FormatError(line, f"{what} = {shown(text)} is not an ISO 8601 timestamp") from None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def sessions_of(sid: str, rows: list[tuple[str, Request]], opts: ImportOptions, report: Report, origin: float | None,
                line: int, side: str = SIDE) -> Iterator[tuple[Session, int]]:
    """A session's requests split by model (module docstring), main model first, as v2 sessions ending on ``line``."""
    chains: dict[str, list[Request]] = {}
    for model, req in rows:
        chains.setdefault(model, []).append(req)
    main = max(chains, key=lambda m: len(chains[m]), default=None)
    for model, reqs in sorted(chains.items(), key=lambda kv: kv[0] != main):
        if model != main:
            tally(report, len(reqs), side)
        start = next((r.t_s for r in reqs if r.t_s is not None), None)
        s = build_session(sid if model == main else f"{sid}/{model}", kept_at_least(reqs, report), report,
                          start_s=None if start is None or origin is None else max(0.0, start - origin),
                          max_context_tokens=opts.max_context_tokens)
        if s is not None:
            yield s, line


def kept_at_least(reqs: list[Request], report: Report) -> list[Request]:
    """The hits rule (module docstring): after the first request, one whose input did not shrink keeps at least the
    previous input cached."""
    out = reqs[:1]
    for prev, req in pairwise(reqs):
        if req.in_tokens >= prev.in_tokens and (req.hit_tokens or 0) < prev.in_tokens:
            req = replace(req, hit_tokens=prev.in_tokens)
            tally(report, 1, MISSES)
        out.append(req)
    return out

