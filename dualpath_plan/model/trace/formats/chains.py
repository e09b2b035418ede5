"""Sessions built from requests linked into chains, shared by the converters whose files interleave sessions
request by request (``bailian``, ``dynamo``): a chain is an open session; it ends with the file, when every chain
is built into a session, parents first, start times from the earliest timestamp."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualpath_plan.model.trace import convert
from dualpath_plan.model.trace.convert import (
    PrefixIndex,
    Report,
    Request,
    build_session,
    field_of,
)
from dualpath_plan.model.trace.formats import ImportOptions
from dualpath_plan.model.trace.schema import Session


@dataclass
class Chain:
    """An open session: its requests in order, the shared prefix its first request found, or where it forks from
    (parent chain, index of the parent request there, delay_s)."""

    sid: str
    requests: list[Request] = field(default_factory=list)
    shared_id: str | None = None
    fork: tuple[Chain, int, float] | None = None
    rounds: list[int] = field(default_factory=list)  # each request's round, once built


def stem(path: Path) -> str:
    """The file's name up to its first dot: the prefix of its session and shared prefix ids."""
    return path.name.split(".")[0][:80] or "trace"


def request(record: Any, line: int, index: PrefixIndex, t_s: float) -> tuple[Request, list]:
    """The record's :class:`convert.Request` (``input_length``, ``output_length``, its hit from ``hash_ids``)."""
    in_tokens = field_of(record, "input_length", line)
    out_tokens = field_of(record, "output_length", line)
    ids = index.check_ids(field_of(record, "hash_ids", line, "list"), in_tokens, line)
    return Request(in_tokens, out_tokens, index.hit(ids, in_tokens), t_s, line=line), ids


def shared_id(name: str, ids: list, hit: int | None, block_tokens: int) -> str | None:
    """The shared prefix a root's first request found: named by the last block it matched (None: no hit)."""
    if not hit:
        return None
    return f"{name}-block-{ids[-(-hit // block_tokens) - 1]}"


def rounds(requests: list[Request]) -> list[int]:
    """Each request's round (1-based) once rule 4 has dropped repeats; a dropped one counts as the round before it."""
    kept = {id(r) for r in convert.drop_repeats(requests, Report(""))}
    out, n = [], 0
    for r in requests:
        n += id(r) in kept
        out.append(max(n, 1))
    return out


def finish(chains: list[Chain], opts: ImportOptions, report: Report,
           block_tokens: int) -> Iterator[tuple[Session, int]]:
    """Every chain as a session, in the order given (parents first), each with the line it ends on; start times
    from the earliest timestamp of all chains."""
    if not chains:
        return
    origin = min(r.t_s for c in chains for r in c.requests if r.t_s is not None)
    for chain in chains:
        chain.rounds = rounds(chain.requests)
        fork = None
        if chain.fork is not None:
            parent, at, delay_s = chain.fork
            fork = (parent.sid, parent.rounds[at], delay_s)
        first = chain.requests[0].t_s
        s = build_session(chain.sid, chain.requests, report, start_s=None if first is None else first - origin,
                          shared_id=chain.shared_id, fork=fork, block_tokens=block_tokens,
                          max_context_tokens=opts.max_context_tokens)
        line = chain.requests[-1].line
        chain.requests = []
        if s is not None:
            yield s, line
