"""GitHub Copilot coding agent traces 2026 (``--format copilot``) as schema v2 sessions.

Source: github ``Azure/AzurePublicDataset``: ``GitHubCopilotCodingAgentDataset2026.md`` and
``analysis/GitHubCopilotCodingAgents/`` (``schema.json``, ``DATASET_CARD.md``, ``trace_loader.py``,
``trace_metrics.py``) at commits 2df2e31 and 5a79a2c, read 2026-12-02; release ``ghcp-coding-agent-2026`` (its
shards were not read). Licence: CC-BY (the repository's ``LICENSE``). Files ``date=YYYY-MM-DD/shard-NNNN.jsonl.gz``,
one agentic session per line: ``session_id``, ``date`` (the UTC partition date), ``turns`` (in time order):
``turn_id``, ``llm_calls``
(``message_id``, ``timestamp`` ISO 8601, ``duration_ms``, ``initiator_type``, ``model`` ("Model A", ... and
"tool-model", the instant-apply edit model), ``result``, ``status_code``, ``tokens`` {``total``, ``prompt``,
``completion``, ``cached``, ``cached_pct``}, ``message_metadata``) and ``tool_batches`` (``timestamp``,
``duration_ms``, ``auto_continue``, ``result``, ``request_id``, ``function_calls``).

Rules (on top of ``convert``'s rules 1-6):

* **Sessions**: one per line. A turn's calls are taken in ``timestamp`` order (the release does not promise it;
  its own analysis sorts them); a turn starting before the turn before it is refused. ``tool-model`` calls (one-off
  instant-apply edits outside the agent's context) are dropped, counted. The other calls split by model as in
  ``tracelab``: the model of most calls is the session, each other model's calls (a model switch, side calls) a
  session ``<session_id>/<model>``. Sub-agents are not marked in the release: their calls stay in their model's chain.
* **Hits**: ``tokens.cached``, with ``tracelab``'s rule: a call whose prompt did not shrink keeps at least the
  previous prompt cached (a lower count is the provider's miss or expiry, counted).
* **Times**: a call runs from ``timestamp`` for ``duration_ms``. ``start_s`` counts from 00:00 UTC of the ``date``
  of the import's first line (the release partitions by that date); a session starting before it (the release
  warns of client clock skew, or shards given out of date order) starts at 0, counted.
* **Tool time**: rule 5's gap from a call's end to the next call's start; the tool batches' ``duration_ms`` and the
  user's idle time lie in it; overlapping (parallel) calls count 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dualpath_plan.model.trace.convert import (
    FormatError,
    Report,
    Request,
    field_of,
    json_lines,
    open_text,
    tally,
)
from dualpath_plan.model.trace.formats import ImportOptions
from dualpath_plan.model.trace.formats.tracelab import seconds, sessions_of
from dualpath_plan.model.trace.schema import Session

NAME = "copilot"
GLOBAL_IDS = True  # session ids (UUIDs): unique across the files of a set
DESCRIPTION = "GitHub Copilot coding agent sessions 2026 (date=YYYY-MM-DD/shard-NNNN.jsonl.gz: one session per line)"
HITS_FROM = "cached-token counts (tokens.cached); a prompt that did not shrink keeps the previous prompt cached"
TOOL_FROM = "gaps from a call's end (timestamp + duration_ms) to the next call's start (tool batches, user idle time)"
TOOL_MODEL = "tool-model"
DROPPED = "tool-model calls (instant-apply edits outside the agent's context) dropped"
SIDE = "calls of another model than their session's main one (a model switch or side calls) made sessions <id>/<model>"
EARLY = "sessions start before the origin (client clock skew, or shards out of date order) and start at 0"


def read(path: Path, opts: ImportOptions, report: Report,
         progress: Callable[[int], None] | None = None) -> Iterator[tuple[Session, int]]:
    """The sessions of one shard (module docstring), one line each."""
    with open_text(path, progress) as handle:
        for line, record in json_lines(handle):
            sid = str(field_of(record, "session_id", line, "str"))
            day = seconds(field_of(record, "date", line, "str"), line, "date")
            turns = field_of(record, "turns", line, "list")
            report.records += 1
            origin = report.shared.setdefault("copilot-origin", day)  # the first record's day, for every shard (Report.shared)
            rows = _calls(turns, line)
            first = min((req.t_s for _, req in rows), default=None)
            if first is not None and first < origin:
                tally(report, 1, EARLY)
            kept = [(model, req) for model, req in rows if model != TOOL_MODEL]
            tally(report, len(rows) - len(kept), DROPPED)
            yield from sessions_of(sid, kept, opts, report, origin, line, SIDE)


def _calls(turns: list, line: int) -> list[tuple[str, Request]]:
    """A session's calls as (model, :class:`Request`): turn by turn, each turn's in timestamp order (stable)."""
    rows: list[tuple[str, Request]] = []
    before = None  # the start of the previous turn's first call
    for k, turn in enumerate(turns):
        with _at(f"turns[{k}]"):
            calls = field_of(turn, "llm_calls", line, "list")
        ordered = []
        for j, call in enumerate(calls):
            with _at(f"turns[{k}].llm_calls[{j}]"):
                ordered.append(_call(call, line))
        ordered.sort(key=lambda row: row[1].t_s)
        if ordered and before is not None and ordered[0][1].t_s < before:
            raise FormatError(line, f"turns[{k}] starts {before - ordered[0][1].t_s:.3f} s before the turn before it; "
                                    "turns are in time order")
        before = ordered[0][1].t_s if ordered else before
        rows += ordered
    return rows


def _call(call: Any, line: int) -> tuple[str, Request]:
    """One call as (model, :class:`Request`): prompt, completion and cached tokens, start and end."""
    model = str(field_of(call, "model", line, "str"))
    t = seconds(field_of(call, "timestamp", line, "any"), line, "timestamp")
    tokens = field_of(call, "tokens", line, "any")
    prompt, done, cached = (field_of(tokens, key, line) for key in ("prompt", "completion", "cached"))
    ms = field_of(call, "duration_ms", line, "time") if call.get("duration_ms") is not None else None
    return model, Request(prompt, done, min(cached, prompt), t, None if ms is None else t + ms / 1000.0, None, line)


@contextmanager
def _at(where: str) -> Iterator[None]:
    """Name ``where`` (a path in the session record) in the format errors raised inside."""
    try:
        yield
    except FormatError as exc:
        raise FormatError(exc.line, f"{where}: {exc}") from None
