"""WEKA kv-cache-tester agentic coding traces (``--format weka``) as schema v2 sessions.

Source: github ``callanjfox/kv-cache-tester`` at commit 94f6046 (2026-07-12): ``traces/trace_NNNN.json``,
``docs/trace_replay_tester.md`` and ``trace_replay_tester.py`` (``normalize_trace``, ``spawn_subagent``,
``_compute_delay``). Licence: Apache-2.0. One conversation per file, one JSON document on one line: ``id``,
``models``, ``block_size`` (64), ``hash_id_scope`` ("local"; "global" shares ids across files), ``tool_tokens``,
``system_tokens``, ``totals`` and ``requests``. A request has ``t`` (s from its agent's start), ``type`` ("s", "n"),
``model``, ``in``, ``out``, ``hash_ids`` (one per whole block of the input), ``input_types``, ``output_types``,
``stop``, mostly ``api_time`` (s the call took) and ``think_time`` (s from the end of the last call that has an
``api_time``), sometimes ``ttft``. A sub-agent is an entry ``{"type": "subagent", "t", "agent_id",
"subagent_type", "models", "requests", ...}`` in a ``requests`` list: ``t`` in its parent's clock, its requests'
``t`` from its own start; sub-agents nest.

Rules (on top of ``convert``'s rules 1-6):

* **Sessions**: an agent's requests split by model. The model of most requests (the first on a tie) is the
  agent's session: the trace ``id``, a sub-agent ``<parent session>/<agent_id>``. Each other model's requests (a
  model switch or side calls, whose own prefix chain would show as fake compactions in the main one) are a
  session ``<session>/<model>``, counted in the notes. Sessions come parents first.
* **Forks**: a sub-agent forks from the session of the request before its entry (else the agent's session), an
  other-model session from the agent's session: at the parent's last round started by then, ``delay_s`` = its
  start minus that round's end (at least 0). Its tokens are what its first request found cached; one that found
  none cannot fork (a fork holds at least one token) and starts at its recorded time from its conversation's start
  (``start_s``; conversations share no origin, so they have none and start with the replay), counted.
* **Hits**: ``convert.PrefixIndex`` of ``block_size``: one per file (a conversation with its sub-agents), or one
  over the files of the import when ``hash_id_scope`` is "global". A request whose every block was seen, its ids
  covering its input to a block, counts as wholly cached, so a re-sent request (a streaming / non-streaming pair)
  is a repeat (rule 4).
* **Tool time** after a request: the next request's ``think_time`` when that one comes next in the same list on
  the same model and this one has an ``api_time``; else rule 5 with the end ``t + api_time``.
* **Refused**: a request starting before the previous one of its session. Messages name line 1 (the document)
  and the request's path in it (``requests[4].requests[2]``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dualpath_plan.model.errors import shown
from dualpath_plan.model.trace.convert import (
    FormatError,
    PrefixIndex,
    Report,
    Request,
    build_session,
    drop_repeats,
    field_of,
    json_lines,
    open_text,
    tally,
)
from dualpath_plan.model.trace.formats import ImportOptions
from dualpath_plan.model.trace.schema import Session

NAME = "weka"
GLOBAL_IDS = True  # conversation ids (trace_NNNN): unique across the files of a set
DESCRIPTION = "WEKA kv-cache-tester agentic coding traces (traces/trace_NNNN.json: one conversation per JSON file)"
HITS_FROM = "block hashes (hash_ids of block_size tokens): an index per file, or one over the files if hash_id_scope is global"
TOOL_FROM = "the next request's think_time; else gaps from t + api_time to the next start; else gaps between starts"
SIDE = "requests of another model than their agent's main one (a model switch or side calls) made sessions <id>/<model>"
UNFORKED = "sub-agent or other-model sessions found nothing cached and start at their recorded time instead of forking"


def read(path: Path, opts: ImportOptions, report: Report,
         progress: Callable[[int], None] | None = None) -> Iterator[tuple[Session, int]]:
    """The sessions of one conversation file (module docstring), parents first."""
    with open_text(path, progress) as handle:
        records = json_lines(handle)
        line, doc = next(records, (0, None))
        requests, block, cid = _top(doc, line)
        second = next(records, None)
    if second is not None:
        raise FormatError(second[0], "a second JSON document; a WEKA trace file holds one conversation")
    conv = _Conversation(opts, report, _index(doc.get("hash_id_scope"), block, report), line)
    yield from conv.agent(cid, requests, "requests", None, None)


def _top(doc: Any, line: int) -> tuple[list, int, str]:
    """The document's ``requests``, ``block_size`` and ``id``."""
    if doc is None:
        raise FormatError(0, "the file is empty; a WEKA trace is one JSON document")
    with _at("the trace"):
        requests, block = field_of(doc, "requests", line, "list"), field_of(doc, "block_size", line)
        cid = str(field_of(doc, "id", line, "str"))
    if block < 1:
        raise FormatError(line, "block_size = 0 tokens; a block holds at least one")
    return requests, block, cid


def _index(scope: Any, block: int, report: Report) -> PrefixIndex:
    """A new index per file; one per import for "global" ids (a new one when the block size changes)."""
    if scope != "global":
        return PrefixIndex(block)
    index = report.shared.get("weka-global")  # the index the files of one import share (Report.shared)
    if index is None or index.block_tokens != block:
        index = report.shared["weka-global"] = PrefixIndex(block)
    return index


@contextmanager
def _at(where: str) -> Iterator[None]:
    """Name ``where`` (a request's path in the document) in the format errors raised inside."""
    try:
        yield
    except FormatError as exc:
        raise FormatError(exc.line, f"{where}: {exc}") from None


@dataclass
class _Chains:
    """One agent's requests by model (in order), and its sub-agent entries with the model of the request before."""

    by_model: dict[str, list[Request]] = field(default_factory=dict)
    subs: list[tuple[str | None, dict, str]] = field(default_factory=list)


@dataclass
class _Conversation:
    """What one file's agents share: the options, the report, the prefix index and the document's line."""

    opts: ImportOptions
    report: Report
    index: PrefixIndex
    line: int

    def agent(self, sid: str, items: list, where: str, parent: tuple[str, list[Request], float] | None,
              start: float | None) -> Iterator[tuple[Session, int]]:
        """The sessions of one agent: its main one, its other models', then its sub-agents' (recursively).
        ``parent``: (session id, its requests kept by rule 4, this agent's start in that session's clock);
        ``start``: this agent's start from the conversation's start (None: the conversation itself)."""
        chains, base = self.chains(items, where), start or 0.0
        kept = {m: drop_repeats(reqs, self.report) for m, reqs in chains.by_model.items()}
        main = max(kept, key=lambda m: len(chains.by_model[m]), default=None)
        names = {m: sid if m == main else f"{sid}/{m}" for m in kept}
        for m, reqs in sorted(kept.items(), key=lambda kv: kv[0] != main):  # the main session first
            if m == main:
                yield from self.emit(sid, reqs, parent, start)
            elif reqs:
                tally(self.report, len(chains.by_model[m]), SIDE)
                yield from self.emit(names[m], reqs, (sid, kept[main], reqs[0].t_s), base + reqs[0].t_s)
        for k, (model, entry, at) in enumerate(chains.subs):
            with _at(at):
                t, requests = field_of(entry, "t", self.line, "time"), field_of(entry, "requests", self.line, "list")
            owner = model if model is not None else main
            up = None if owner is None else (names[owner], kept[owner], t)
            sub = f"{sid}/{entry.get('agent_id') or f'subagent{k + 1}'}"
            yield from self.agent(sub, requests, f"{at}.requests", up, base + t)

    def chains(self, items: list, where: str) -> _Chains:
        """Read one ``requests`` list: requests by model with their tool time, and the sub-agent entries."""
        out, last, prev = _Chains(), None, None  # last: the model of the last request; prev: (model, has api_time)
        for k, item in enumerate(items):  # of the entry before when it is a request
            at = f"{where}[{k}]"
            if isinstance(item, dict) and item.get("type") == "subagent":
                out.subs.append((last, item, at))
                prev = None
                continue
            with _at(at):
                model, req, think = self.request(item)
            chain = out.by_model.setdefault(model, [])
            if chain and req.t_s < chain[-1].t_s:
                raise FormatError(self.line, f"{at}: t = {shown(req.t_s)} s is before the previous {model} request's "
                                             f"{shown(chain[-1].t_s)} s; times must not decrease in a session")
            if chain and prev == (model, True) and think is not None:
                chain[-1] = replace(chain[-1], tool_s=think)
            chain.append(req)
            last, prev = model, (model, req.end_s is not None)
        return out

    def request(self, item: Any) -> tuple[str, Request, float | None]:
        """One request: its model, its :class:`Request` (hit from the prefix index) and its think_time."""
        line = self.line
        model = str(field_of(item, "model", line, "str"))
        n_in, out, t = field_of(item, "in", line), field_of(item, "out", line), field_of(item, "t", line, "time")
        ids = self.index.check_ids(field_of(item, "hash_ids", line, "any"), n_in, line)
        api = field_of(item, "api_time", line, "time") if item.get("api_time") is not None else None
        think = field_of(item, "think_time", line, "time") if item.get("think_time") is not None else None
        self.report.records += 1
        return model, Request(n_in, out, self.hit(ids, n_in), t, None if api is None else t + api, None, line), think

    def hit(self, ids: list, n_in: int) -> int:
        """The cached prefix: the run of seen leading blocks; all of ``n_in`` when every block was seen."""
        hit, block = self.index.hit(ids, n_in), self.index.block_tokens
        whole = bool(ids) and hit >= min(len(ids) * block, n_in) and len(ids) >= n_in // block
        return n_in if whole else hit

    def emit(self, sid: str, reqs: list[Request], parent: tuple[str, list[Request], float] | None,
             start: float | None) -> Iterator[tuple[Session, int]]:
        """One session, forked from ``parent`` (module docstring) when it has one with a round, else from ``start``."""
        fork = _fork(*parent) if parent is not None and parent[1] else None
        s = build_session(sid, reqs, self.report, start_s=start, fork=fork,
                          block_tokens=self.index.block_tokens, max_context_tokens=self.opts.max_context_tokens)
        if s is None:
            return
        if fork is not None and s.fork is None:
            tally(self.report, 1, UNFORKED)
        yield s, self.line


def _fork(parent: str, reqs: list[Request], start: float) -> tuple[str, int, float]:
    """Fork from the parent's last round started by ``start``; the delay runs from that round's end."""
    n = max(1, sum(1 for r in reqs if r.t_s <= start))
    r = reqs[n - 1]
    return parent, n, max(0.0, start - (r.end_s if r.end_s is not None else r.t_s))
