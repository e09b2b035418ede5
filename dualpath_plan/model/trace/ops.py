"""What the ``trace`` commands do: import a public trace into schema v2, count a trace's statistics, and write a
workload profile that stands for a trace (Table 2's columns and its mean tool time)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.schema import did_you_mean
from dualpath_plan.model.trace import formats, native
from dualpath_plan.model.trace.block import Block
from dualpath_plan.model.trace.convert import Report, cut_at_window
from dualpath_plan.model.trace.formats import ImportOptions
from dualpath_plan.model.trace.schema import Session
from dualpath_plan.model.trace.stats import TraceStats, collect, collect_blocks

MIN_TRAJECTORIES = 500  # the paper's data-set size (Table 2): a smaller synthetic set often cannot meet all six columns
NATIVE = "jsonl"  # this project's own format (schema v2 and v1 lines)
FORMATS = (NATIVE,) + formats.NAMES


def check_format(name: str | None, flag: str = "--format") -> str:
    """``name`` (default: this project's own), or a one-line refusal naming ``flag`` and listing the known formats."""
    fmt = name or NATIVE
    if fmt not in FORMATS:
        raise PlanError(f"{flag} {fmt!r}{did_you_mean(fmt, FORMATS)} is not allowed; must be one of {', '.join(FORMATS)}", 2)
    return fmt


# What a downloaded trace directory holds beside its data: documentation and pictures, never a trace of any format.
_NOT_TRACES = frozenset({".md", ".txt", ".rst", ".html", ".pdf", ".png", ".jpg", ".jpeg", ".svg"})
_DOC_NAMES = ("readme", "license", "licence", "notice", "copying", "authors", "changelog")


def expand(paths: list[Path]) -> list[Path]:
    """The input files: a directory stands for the files in it (not below it), sorted by name (a WEKA set is a
    directory of one file per conversation); hidden files and the directory's documentation (README, LICENSE and other
    ``.md``, ``.txt`` or picture files, which a repository's trace folder ships beside its data) are left out. A file
    named on its own is read whatever its name."""
    out: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".") and not _documentation(p))
            if not files:
                raise PlanError(f"{path}: the directory holds no trace file", 2)
            out += files
        else:
            out.append(path)
    return out


def _documentation(path: Path) -> bool:
    return path.suffix.lower() in _NOT_TRACES or path.name.lower().startswith(_DOC_NAMES)


def input_bytes(paths: list[Path]) -> int:
    """The bytes of every input (for a progress bar); a missing input is refused here, before anything is read."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except FileNotFoundError:
            raise PlanError(f"{path}: trace file not found", 2) from None
        except OSError as exc:
            raise PlanError(f"{path}: cannot read ({exc.strerror})", 2) from None
    return total


def sessions_of(paths: list[Path], fmt: str | None, report: Report, opts: ImportOptions = ImportOptions(),
                progress: Callable[[int], None] | None = None) -> Iterator[Session]:
    """The sessions of ``paths`` read as ``fmt`` (this project's own by default), streamed."""
    fmt = check_format(fmt)
    if fmt == NATIVE:
        return _native(paths, report, progress)
    return formats.sessions(fmt, paths, opts, report, progress)


def _native(paths: list[Path], report: Report, progress: Callable[[int], None] | None) -> Iterator[Session]:
    for blk in _native_blocks(paths, report, progress):
        yield from blk.sessions


def _own_sources(report: Report) -> None:
    report.hits_from = "the trace's own rounds (schema v2 context rule)"
    report.tool_from = "the trace's own tool_s"


def _native_blocks(paths: list[Path], report: Report, progress: Callable[[int], None] | None) -> Iterator[Block]:
    _own_sources(report)
    for path in paths:
        report.files += 1
        for blk in native.read_blocks(path, None, progress):
            report.records += len(blk.sessions)
            report.sessions += len(blk.sessions)
            report.rounds += int(blk.starts[-1])
            yield blk


def import_window(max_context_tokens: int | None, model: str | None, profile_files: tuple[Path, ...] = ()) -> int | None:
    """The context window an import cuts sessions at (``convert`` rule 6): ``--max-context-tokens``, or ``--model``'s
    ``context_window_tokens`` (not both); None: no cut."""
    from dualpath_plan.model.flags import check_flag
    from dualpath_plan.model.profiles import catalog

    if max_context_tokens is not None and model is not None:
        raise PlanError(f"--max-context-tokens {max_context_tokens} and --model {model} are not allowed together; give one window", 2)
    if max_context_tokens is not None:
        check_flag("--max-context-tokens", max_context_tokens)
        return int(max_context_tokens)
    if model is None:
        return None
    window = catalog(tuple(profile_files)).get("model", model).context_window_tokens
    if window is None:
        raise PlanError(f"--model {model}: its profile has no context_window_tokens; give --max-context-tokens N", 2)
    return window


def import_trace(fmt: str, paths: list[Path], out: Path, opts: ImportOptions = ImportOptions(),
                 progress: Callable[[int], None] | None = None) -> Report:
    """Convert ``paths`` (format ``fmt``) into a schema v2 file ``out``, written whole or not at all. This project's own
    format (``jsonl``) is read and written again, cut at a context window (:func:`_read_cut`)."""
    paths = expand(paths)
    input_bytes(paths)
    if Path(out).resolve() in {Path(p).resolve() for p in paths}:
        raise PlanError(f"-o {out} is one of the inputs; write the import elsewhere", 2)
    report = Report(check_format(fmt), output=str(out))
    if fmt == NATIVE:
        if opts.max_context_tokens is None:
            raise PlanError("--format jsonl is this project's own format: importing it only cuts its sessions at a context "
                            "window; give --max-context-tokens N or --model M (a public format: "
                            f"{', '.join(formats.NAMES)})", 2)
        _own_sources(report)
        sessions = formats.emitted(NATIVE, _read_cut, paths, opts, report, progress)
    else:
        sessions = formats.sessions(fmt, paths, opts, report, progress)
    native.write(_at_least_one(sessions, paths, report), out)
    return report


def _read_cut(path: Path, opts: ImportOptions, report: Report, progress: Callable[[int], None] | None) -> Iterator[tuple[Session, int]]:
    """This project's own sessions of ``path`` cut at ``opts.max_context_tokens`` (``convert`` rule 6), with their lines
    (``formats.emitted`` then keeps the rules that name another session: a fork whose parent was cut before its round
    is dropped; several files' ids get their file's place, ``f0/``, ``f1/``, as every command reads each file's own)."""
    for s, line in native.read(path, None, progress):
        report.records += 1
        cut = cut_at_window(s, opts.max_context_tokens, report)
        if cut is not None:
            report.wrote(cut)
            yield cut, line


def _at_least_one(sessions: Iterator[Session], paths: list[Path], report: Report) -> Iterator[Session]:
    """``sessions``, refusing (inside the write, so that nothing replaces ``-o``) when there is none."""
    count = 0
    for s in sessions:
        count += 1
        yield s
    if count == 0:
        why = (f"; {report.sessions_over_window:,} of them start past the context window, their first round longer than it: "
               "raise --max-context-tokens or choose a --model with a longer window" if report.sessions_over_window else "")
        raise PlanError(f"{', '.join(map(str, paths))}: no session left to write ({report.records:,} records read{why})", 1)


@dataclass(frozen=True)
class TraceSummary:
    """A trace's statistics and how it was read.

    What :func:`dualpath_plan.trace_stats` returns.

    Attributes:
        stats: The counts and distributions (:class:`~dualpath_plan.model.trace.stats.TraceStats`).
        report: How the files were read (:class:`~dualpath_plan.model.trace.convert.Report`: format, files, records).
        model: The model whose KV a turn's reads are counted in (``--model``), or ``None``.
        kv_bytes_per_token: That model's KV bytes per token, or ``None`` without a model.
    """

    stats: TraceStats
    report: Report
    model: str | None
    kv_bytes_per_token: float | None

    def as_dict(self) -> dict:
        return {"source": self.report.format, "files": self.report.files, "model": self.model,
                **self.stats.as_dict(self.kv_bytes_per_token)}


def trace_stats(paths: list[Path], fmt: str | None = None, model: str | None = None, kv_bytes_per_token: float | None = None,
                progress: Callable[[int], None] | None = None) -> TraceSummary:
    """The statistics of ``paths`` read as ``fmt`` (streamed), with the KV bytes per turn of ``model`` if given."""
    paths = expand(paths)
    input_bytes(paths)
    report = Report(check_format(fmt))
    if check_format(fmt) == NATIVE:  # read and counted a block at a time (native.read_blocks)
        stats = collect_blocks(_native_blocks(paths, report, progress))
    else:
        stats = collect(sessions_of(paths, fmt, report, progress=progress))
    if stats.sessions == 0:
        raise PlanError(f"{', '.join(map(str, paths))}: no session in the trace", 1)
    return TraceSummary(stats, report, model, kv_bytes_per_token)


def workload_toml(summary: TraceSummary, trace: Path, fmt: str | None, description: str | None = None) -> str:
    """A workload profile (TOML) standing for the trace: Table 2's columns and the mean tool time computed on it,
    each cited. The synthetic rule (``model.table2``) then draws trajectories with these statistics."""
    d = summary.stats.as_dict()
    t2 = d["table2"]
    n = min(max(summary.stats.sessions, MIN_TRAJECTORIES), 100_000)
    where = f"{trace} ({check_format(fmt)})"
    values = {"trajectories": n, "turns": t2["turns"], "append_tokens": t2["append_tokens"], "gen_tokens": t2["gen_tokens"],
              "total_tokens": t2["total_tokens"], "context_tokens": t2["context_tokens"], "max_len_tokens": float(summary.stats.held_max),
              "tool_time_s": d["mean_tool_s"]}
    if any(not math.isfinite(float(v)) for v in values.values()):
        raise PlanError(f"{where}: the trace's statistics are not all finite; it cannot stand as a workload profile", 1)
    text = description or f"from the trace {Path(trace).name}: {summary.stats.sessions:,} sessions, {summary.stats.rounds:,} rounds"
    lines = ["# A workload profile computed from a trace by `dualpath-plan profiles workload-from-trace`.", 'kind = "workload"',
             f"description = {_quote(text)}"]
    lines += [f"{k} = {int(v)}" if k == "trajectories" else f"{k} = {float(v)!r}" for k, v in values.items()]
    sources = {"trajectories": f"the synthetic data set's size: the {summary.stats.sessions:,} sessions of {where}, at least the paper's "
                               f"{MIN_TRAJECTORIES} (so that the six columns can all be met) and at most 100,000",
               "turns": f"mean rounds per session of {where}",
               "append_tokens": f"mean over sessions of each one's mean append per round, {where}",
               "gen_tokens": f"mean over sessions of each one's mean generated tokens per round, {where}",
               "total_tokens": f"mean tokens a session holds at its end, {where}",
               "context_tokens": f"mean cached (hit) tokens per round, {where}",
               "max_len_tokens": f"most tokens a session holds, {where}",
               "tool_time_s": f"mean tool time between rounds, {where} (drawn exponential per round by the synthetic rule)"}
    lines += ["", "[sources]"] + [f"{k} = {_quote(v)}" for k, v in sources.items()]
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def drawable_workload_toml(summary: TraceSummary, trace: Path, fmt: str | None, stem: str, description: str | None = None) -> str:
    """:func:`workload_toml`, checked as every command will read it: the profile loads and the synthetic rule draws its
    data set (``model.table2``). A trace whose shape that rule cannot draw (long shared prefixes, compaction, very
    few rounds) is refused in one line that points to ``--trace``, which replays the trace itself."""
    import tempfile

    from dualpath_plan.model.profiles import load_file
    from dualpath_plan.model.workload import dataset

    text = workload_toml(summary, trace, fmt, description)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{stem}.toml"
        path.write_text(text, encoding="utf-8")
        try:
            profile = load_file(path)
        except PlanError as exc:  # a column outside a workload profile's range: said as the loader says it
            raise PlanError(f"{trace}: {str(exc).split(': ', 1)[-1]}", exc.exit_code) from None
        try:
            dataset(profile)
        except PlanError as exc:
            why = str(exc).split(": ", 1)[-1]
            raise PlanError(f"{trace}: no synthetic data set has this trace's Table 2 columns ({why}); replay the trace itself with "
                            f"--trace {trace}" + ("" if check_format(fmt) == NATIVE else f" --trace-format {fmt}"), 1) from None
    return text
