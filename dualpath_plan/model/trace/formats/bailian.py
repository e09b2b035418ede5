"""Alibaba Bailian usage traces (``--format bailian``) as schema v2 sessions.

Source: github ``alibaba-edu/qwen-bailian-usagetraces-anon``, ``README.md`` (commit 03a51e3) and
``docs/qa-context-growth-pattern.md``, read 2026-12-02; the traces (``qwen_coder_blksz_16.jsonl``, the agentic coder
trace, and ``qwen_thinking_blksz_16.jsonl``) are in Git LFS. Licence: Apache-2.0. The format, one request per line::

    {"chat_id": 159, "parent_chat_id": 55, "timestamp": 61.114, "input_length": 521, "output_length": 132,
     "type": "text", "turn": 2, "hash_ids": [1089, 1090, 1091, 6326, 13148]}

``timestamp`` is in seconds from the trace's start; ``hash_ids`` are salted SipHashes of 16-token blocks remapped to
integers (the last, partial block included); ``parent_chat_id`` is -1 for a root. ``type`` and ``turn`` are not
read: the chain and the times give the order.

Rules (on top of ``convert``'s rules 1-6):

* **Sessions**: a root starts one. A request continues its parent's session when the parent is that session's last
  request; a request whose parent already has a child is a **branch**: a fork session of the parent's session at
  the parent's round (counted after rule 4's drops; a dropped repeat counts as the round before it), with
  ``delay_s`` = the gap between the two starts (an upper bound: it holds the parent's own call).
* A chain can grow until the file ends, so sessions are built there, in the order of their first line (a parent
  before its forks); memory holds the open chains' requests and one (session, index) per ``chat_id``.
* **Hits**: one prefix index of 16-token blocks over the file (within and across sessions); a root whose first
  request finds cached blocks gets the shared prefix ``<file>-block-<id of the last matched block>``.
* **Tool time**: rule 5, the gaps between a session's starts (no durations recorded: upper bounds).
* **Start**: ``start_s`` = the first request's timestamp minus the earliest timestamp of the file.
* **Refused** (naming the line): a ``parent_chat_id`` that no earlier line has, a repeated ``chat_id``, a request
  earlier than its parent, hash ids beyond the input. Session ids are ``<file>-<chat_id of the first request>``,
  ``<file>`` the file name up to its first dot.
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
from dualpath_plan.model.trace.schema import Session

NAME = "bailian"
DESCRIPTION = ("Alibaba Bailian usage traces (alibaba-edu/qwen-bailian-usagetraces-anon, qwen_*_blksz_16.jsonl): one "
               "request per line, chained by parent_chat_id")
HITS_FROM = "block hashes of 16 tokens, one prefix index over the file (within and across sessions)"
TOOL_FROM = "gaps between a session's request timestamps (no durations recorded: upper bounds)"
BLOCK_TOKENS = 16


def read(path: Path, opts: ImportOptions, report: Report,
         progress: Callable[[int], None] | None = None) -> Iterator[tuple[Session, int]]:
    """The sessions of one Bailian file (module docstring), built when the file ends."""
    index, name = PrefixIndex(BLOCK_TOKENS), stem(path)
    chains: list[Chain] = []
    nodes: dict[int, tuple[Chain, int]] = {}
    with open_text(path, progress) as handle:
        for line, record in json_lines(handle):
            report.records += 1
            chat, parent = _chat_id(record, "chat_id", line, -1), _chat_id(record, "parent_chat_id", line, -2)
            t_s = field_of(record, "timestamp", line, "time")
            req, ids = request(record, line, index, t_s)
            if chat in nodes:
                raise FormatError(line, f"chat_id {chat} appears on an earlier line; chat ids are unique")
            chain = _chain_of(parent, t_s, nodes, line, f"{name}-{chat}")
            if chain is None:
                chain = Chain(f"{name}-{chat}", shared_id=shared_id(name, ids, req.hit_tokens, BLOCK_TOKENS))
            if not chain.requests:
                chains.append(chain)
            chain.requests.append(req)
            nodes[chat] = (chain, len(chain.requests) - 1)
    yield from finish(chains, opts, report, BLOCK_TOKENS)


def _chain_of(parent: int, t_s: float, nodes: dict[int, tuple[Chain, int]], line: int, sid: str) -> Chain | None:
    """The chain a request starting at ``t_s`` continues, a new fork chain ``sid`` for a branch, or None for a root."""
    if parent == -1:
        return None
    if parent not in nodes:
        raise FormatError(line, f"parent_chat_id {parent} names no earlier request: a turn or branch without its parent")
    chain, at = nodes[parent]
    before = chain.requests[at].t_s or 0.0
    if t_s < before:
        raise FormatError(line, f"timestamp {t_s:g} s is earlier than its parent's ({before:g} s, chat_id {parent}); "
                                "times must not decrease in a session")
    if at == len(chain.requests) - 1:
        return chain
    return Chain(sid, fork=(chain, at, t_s - before))


def _chat_id(record: Any, key: str, line: int, low: int) -> int:
    """A chat id: a whole number above ``low`` (-1 is allowed for ``parent_chat_id`` only)."""
    value = field_of(record, key, line, "any")
    if isinstance(value, bool) or not isinstance(value, int) or value <= low:
        raise FormatError(line, f"{key} = {shown(value)} is not a chat id (a whole number >= {low + 1})")
    return value
