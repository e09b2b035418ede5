"""One converter per public trace format (``reference/traces.md``), each a module with:

* ``NAME`` (the ``--format`` word), ``DESCRIPTION`` (one line: whose traces, which files), and ``GLOBAL_IDS = True``
  when its session ids are unique across files (else an import of several files prefixes each id with ``f<k>/``,
  ``k`` the file's place);
* ``HITS_FROM`` and ``TOOL_FROM`` (one line each: how the converter finds hits and tool time, for the report);
* ``read(path, opts, report, progress) -> Iterator[tuple[Session, int]]``: the sessions of one input file, each with
  the line it ends on, streamed (memory bounded by one session and the prefix index, never the whole file), built
  with ``convert.build_session``; a record that does not fit the format raises ``convert.FormatError``.

:func:`sessions` runs one of them over several files and applies the rules that span sessions (``convert.Emitter``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace.convert import Emitter, FormatError, Report, refuse
from dualpath_plan.model.trace.schema import Session

NAMES = ("weka", "tracelab", "copilot", "bailian", "mooncake", "dynamo")


@dataclass(frozen=True)
class ImportOptions:
    """What an import may change: the context window that cuts sessions (``convert`` rule 6; None: no cut)."""

    max_context_tokens: int | None = None


def module(name: str) -> ModuleType:
    """The converter of format ``name``; an unknown name is one line listing the known ones."""
    if name not in NAMES:
        raise PlanError(f"--format {name!r} is not allowed; must be one of {', '.join(NAMES)}", 2)
    return importlib.import_module(f"dualpath_plan.model.trace.formats.{name}")


def sessions(name: str, paths: list[Path], opts: ImportOptions, report: Report,
             progress: Callable[[int], None] | None = None) -> Iterator[Session]:
    """Every session of ``paths`` read as format ``name``, in file order, checked across sessions."""
    conv = module(name)
    report.hits_from, report.tool_from = conv.HITS_FROM, conv.TOOL_FROM
    return emitted(name, conv.read, paths, opts, report, progress, not getattr(conv, "GLOBAL_IDS", False))


def emitted(name: str, read: Callable, paths: list[Path], opts: ImportOptions, report: Report,
            progress: Callable[[int], None] | None = None, own_ids: bool = True) -> Iterator[Session]:
    """The sessions ``read(path, opts, report, progress)`` yields with their lines, file after file, checked across
    sessions (``convert.Emitter``); with several files of per-file ids (``own_ids``), each id gets its file's place."""
    emitter = Emitter(report)
    per_file = own_ids and len(paths) > 1
    for k, path in enumerate(paths):
        report.files += 1
        try:
            for s, line in read(Path(path), opts, report, progress):
                out = emitter.emit(in_file(s, k) if per_file else s, line)
                if out is not None:
                    yield out
        except FormatError as exc:
            raise refuse(Path(path), name, exc) from None
    report.notes.extend(emitter.notes())


def in_file(s: Session, k: int) -> Session:
    """``s`` with its id (and its fork's parent, always in the same file) prefixed by its file's place in the import:
    two files of a format whose ids are per file (``session_id: "main"`` in each) then never collide."""
    fork = None if s.fork is None else replace(s.fork, parent=f"f{k}/{s.fork.parent}")
    return replace(s, id=f"f{k}/{s.id}", fork=fork)
