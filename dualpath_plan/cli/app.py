"""The typer application and the options every scenario command shares."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from dualpath_plan.model.errors import PlanError
from dualpath_plan.report.jsonable import jsonable

app = typer.Typer(
    name="dualpath-plan",
    help="Size prefill/decode-disaggregated LLM clusters that load KV-Cache from storage (DualPath model).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
MIN_WIDTH = 60  # columns: the floor on the console width (narrower, the tables could not be read; a terminal
# narrower than this wraps the lines instead, and COLUMNS=0 or 1 no longer empties or cuts every line)


PIPE_WIDTH = 100  # columns when neither COLUMNS nor a terminal says: the width the documentation's examples are printed at


def console_width() -> int:
    """The width the consoles lay out for: the terminal's (or COLUMNS, or :data:`PIPE_WIDTH` when neither says, as
    when the output goes to a file or a pipe), at least :data:`MIN_WIDTH`."""
    return max(shutil.get_terminal_size(fallback=(PIPE_WIDTH, 24)).columns, MIN_WIDTH)


err_console = Console(stderr=True, soft_wrap=True, width=console_width(), emoji=False)  # user text (:smile:) stays text


class ClosedPipe(Exception):
    """Stdout's reader went away. Not an ``OSError``, so that click, which would turn a broken pipe inside a
    command into exit 1, lets it reach ``cli.main``."""


CLOSED_PIPE = 128 + 13  # 128 + SIGPIPE: the status a shell reports for a writer whose reader went away


def closed_pipe() -> int:
    """A reader closed stdout early (``... | head -1``): end quietly, as ``cat`` or ``yes`` do there, with no
    traceback and no message. Stdout is pointed at the null device, so that the interpreter's last flush
    has nowhere to fail, and the status is 141."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # a stdout without a file descriptor (a caller's capture) has no last flush to fail
        pass
    return CLOSED_PIPE


def _print_version(value: bool) -> None:
    if value:
        from dualpath_plan import __version__

        sys.stdout.write(f"dualpath-plan {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)] = False,
) -> None:
    pass  # the options every command shares; the help text is the app's

ProfileOpt = Annotated[Optional[str], typer.Option("--profile", metavar="NAME", help="Hardware profile of every node (see `profiles list`).")]
ModelOpt = Annotated[str, typer.Option("--model", metavar="NAME", help="Model profile.")]
WorkloadOpt = Annotated[Optional[str], typer.Option("--workload", metavar="NAME", help="Workload profile (default agentic-64k; not with --trace).")]
TraceOpt = Annotated[Optional[Path], typer.Option("--trace", metavar="FILE", help="A trace as the workload: this project's JSONL (schema v2 "
                                                   "or v1) or, with --trace-format, a public trace (a file or a directory of its files) read without an import.")]
TraceFormatOpt = Annotated[Optional[str], typer.Option("--trace-format", metavar="jsonl|weka|tracelab|copilot|bailian|mooncake|dynamo",
                                                       help="Format of --trace (default jsonl: this project's).")]
TimeScaleOpt = Annotated[float, typer.Option("--time-scale", metavar="X", help="With --trace: recorded start times times X (< 1 "
                                             "compresses the timeline; 0 starts every session at once).")]
ToolScaleOpt = Annotated[float, typer.Option("--tool-scale", metavar="X", help="With --trace: tool times and fork delays times X (0: "
                                             "none, the paper's method).")]


def workload_name(workload: str | None, trace: Path | None, trace_format: str | None, time_scale: float = 1.0,
                  tool_scale: float = 1.0) -> str:
    """The workload a command runs: a profile name, or a trace (``--trace``), never both; trace options need a trace."""
    from dualpath_plan.model.scenario import DEFAULT_WORKLOAD
    from dualpath_plan.model.workload import trace_name

    if trace is None:
        for flag, value, default in (("--trace-format", trace_format, None), ("--time-scale", time_scale, 1.0), ("--tool-scale", tool_scale, 1.0)):
            if value != default:
                raise PlanError(f"{flag} = {value} is not allowed without --trace; it reads or rescales a trace", 2)
        return workload or DEFAULT_WORKLOAD
    if workload is not None:
        raise PlanError(f"--workload {workload} and --trace {trace} are not allowed together; the trace is the workload", 2)
    from dualpath_plan.model.trace.ops import check_format

    check_format(trace_format, "--trace-format")
    return trace_name(trace, trace_format, time_scale, tool_scale)
POpt = Annotated[int, typer.Option("-P", metavar="NODES", help="Prefill nodes.")]
DOpt = Annotated[int, typer.Option("-D", metavar="NODES", help="Decode nodes.")]
AccountingOpt = Annotated[str, typer.Option("--accounting", metavar="exact|paper", help="exact (adds miss KV and write-back) or paper (hit KV only).")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Override one profile field, KEY=VALUE (pe.KEY / de.KEY for one side). Repeatable.")]


def _note_shadowing(files: list[Path] | None) -> list[Path] | None:
    """Say on stderr when a ``--profile-file`` replaces a shipped profile of its name (a file is named by its stem)."""
    from dualpath_plan.model.profiles import shadowed

    for kind, name in shadowed(tuple(files or ())):
        err_console.print(f"note: --profile-file {name}.toml replaces the shipped {kind} profile {name!r} (a profile is named by its "
                          "file's stem)", markup=False, highlight=False)
    return files


ProfileFileOpt = Annotated[
    Optional[list[Path]],
    typer.Option("--profile-file", metavar="FILE", help="Extra profile TOML file (its name is the file stem). Repeatable.", exists=True, dir_okay=False,
                 resolve_path=True, callback=_note_shadowing),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (SI units) instead of tables.")]
CheckOpt = Annotated[
    Optional[int],
    typer.Option("--check", metavar="K", help="Run the fluid runner on the K best splits (same agents, offline) and compare its ranking."),
]
CheckSeedsOpt = Annotated[
    Optional[int],
    typer.Option("--seeds", metavar="N", help="With --check: each candidate over N seeds (0..N-1); means and 95 % intervals."),
]
OnlineCheckOpt = Annotated[bool, typer.Option("--online", help="With --check: each candidate's capacity within the SLO (Poisson "
                                              "arrivals, the search of simulate --find-capacity) instead of an offline run.")]
TtftCheckOpt = Annotated[Optional[float], typer.Option("--ttft-slo-s", metavar="S", help="With --check --online: the mean TTFT SLO in "
                                                       "seconds (default 4; the TPOT SLO is --tpot-slo-ms).")]
ExecutorOpt = Annotated[str, typer.Option("--executor", metavar="local|ray", help="Where --check runs: local worker processes, or an "
                                          "existing Ray cluster (the 'ray' extra).")]
JobsOpt = Annotated[Optional[int], typer.Option("--jobs", metavar="N", help="With --executor local: worker processes (default 1: this process).")]
AddressOpt = Annotated[Optional[str], typer.Option("--address", metavar="auto|HOST:PORT|ray://HOST:PORT", help="With --executor ray: the "
                                                   "cluster (default auto).")]
EngineOpt = Annotated[str, typer.Option("--engine", metavar="auto|compiled|python", help="The runner's engine for --check (auto: compiled "
                                        "when numba is there).")]
PeProfileOpt = Annotated[Optional[str], typer.Option("--pe-profile", metavar="NAME", help="Hardware profile of the prefill nodes (overrides --profile for them).")]
DeProfileOpt = Annotated[Optional[str], typer.Option("--de-profile", metavar="NAME", help="Hardware profile of the decode nodes (overrides --profile for them).")]
DtypeOpt = Annotated[Optional[str], typer.Option("--dtype", metavar="fp8|bf16|fp4", help="Prefill GEMM dtype, fp8, bf16 or fp4 (FP4 GPUs "
                                                 "only; default: the model's own).")]
DramTierOpt = Annotated[Optional[float], typer.Option("--dram-tier", metavar="GB", help="Host DRAM of every compute node pooled as an "
                                                     "LRU cache of KV, served over the compute NICs (Mooncake-style); default: none.")]
StorageOpt = Annotated[Optional[str], typer.Option("--storage", metavar="NAME", help="Storage profile of the nodes behind the storage "
                                                 "NICs (see `profiles list`); default: unlimited storage, the paper's model.")]
StorageNodesOpt = Annotated[Optional[int], typer.Option("--storage-nodes", metavar="N", help="Storage nodes of --storage; default: as many "
                                                       "as the bound needs (planned).")]
StorageRetentionOpt = Annotated[float, typer.Option("--storage-retention-s", metavar="S", help="Seconds an agent's KV stays in storage "
                                                    "after its last turn (with --storage; default 0).")]
TpotOpt = Annotated[float, typer.Option("--tpot-slo-ms", metavar="MS", help="Decode TPOT SLO in ms (the paper's 50).")]
MtpOpt = Annotated[int, typer.Option("--mtp", metavar="N", help="Multi-token prediction: N draft tokens verified per decode "
                                     "step with the model's MTP module (0: off).")]
MtpAcceptedOpt = Annotated[Optional[float], typer.Option("--mtp-accepted", metavar="TOKENS", help="Tokens kept per decode step with "
                                                         "--mtp (default: 1 + 0.85 + ... + 0.85^N, DeepSeek-V3's measured acceptance).")]
DecodeInstanceOpt = Annotated[
    Optional[int],
    typer.Option("--decode-instance-nodes", metavar="NODES", help="Decode nodes one model instance spans (weights sharded over its GPUs); default: all D."),
]
PrefillInstanceOpt = Annotated[
    Optional[int],
    typer.Option("--prefill-instance-nodes", metavar="NODES", help="Prefill nodes one expert-parallel instance spans (its EP size over g); "
                 "default: the fewest that hold the weights."),
]


class _Stdout(Console):
    """The stdout console: a closed pipe is the command's to end (:class:`ClosedPipe`, :func:`closed_pipe`), not
    rich's (which exits with 1)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise ClosedPipe

    def print(self, *objects, **kwargs) -> None:
        tables = [obj for obj in objects if isinstance(obj, Table)]
        before = [[c.width for c in t.columns] for t in tables]
        for table in tables:
            keep_words_whole(table, self.width)
        try:
            super().print(*objects, **kwargs)
        finally:  # the caller's tables as they were: printed again with more rows, they are laid out afresh
            for table, widths in zip(tables, before):
                for column, width in zip(table.columns, widths):
                    column.width = width


def _plain(cell) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


def _words(text: str) -> list[str]:
    """The words of a cell, a number and its short unit (``3075 s``, ``93.9 %``) as one: a unit alone on a line reads
    as a cut."""
    out: list[str] = []
    for word in text.split():
        if out and len(word) <= 2 and not word[0].isdigit() and out[-1][-1:].isdigit():
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def keep_words_whole(table: Table, width: int) -> None:
    """Lay out a table too wide for ``width`` so that cells wrap between words and never cut a number or a name in two
    (``190.`` over ``6``), where every column's longest word fits: rich narrows the widest columns past their longest
    word. The widest column is narrowed one character at a time, none below its longest word (a ``no_wrap`` column not
    at all), and the widths are set on the columns (``_Stdout.print`` restores them once printed); a table that fits,
    or that cannot fit even so, is left to rich."""
    columns = table.columns
    if not columns or any(c.width is not None for c in columns):
        return
    cells = [[_plain(c.header), *(_plain(cell) for cell in c.cells)] for c in columns]
    most = [max((len(line) for text in texts for line in text.splitlines() or [""]), default=1) for texts in cells]
    least = [m if c.no_wrap else max((len(w) for text in texts for w in _words(text)), default=1)  # a no_wrap column keeps its width
             for c, m, texts in zip(columns, most, cells)]
    left, right = (table.padding[3], table.padding[1]) if len(table.padding) == 4 else (0, 0)
    edges = (len(columns) + 1 if table.show_edge else len(columns) - 1) if table.box else 0
    pads = len(columns) * (left + right) - (0 if table.pad_edge else left + right)  # no padding at the outer edges
    room = width - edges - pads
    if sum(most) <= room or sum(least) > room:
        return
    widths = list(most)
    while sum(widths) > room:
        i = max((j for j in range(len(widths)) if widths[j] > least[j]), key=lambda j: widths[j])
        widths[i] -= 1
    for column, w in zip(columns, widths):
        column.width = w


def out_console() -> Console:
    """The stdout console for human output: plain text, no markup (a source's ``[derived]`` or a file named ``[x].jsonl`` is
    printed as written)."""
    return _Stdout(soft_wrap=False, width=console_width(), emoji=False, markup=False)  # user text ([derived], [red]) stays text


def print_json(payload: dict) -> None:
    """Write ``payload`` as JSON to stdout (non-finite numbers become null)."""
    try:
        sys.stdout.write(json.dumps(jsonable(payload), indent=2) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise ClosedPipe from None


def compile_note() -> None:
    """Said on stderr before the compiled engine's one-time compile."""
    err_console.print("note: compiling the fluid engine for this machine; once after installation, about 40 s on 2 cores "
                      "(use --engine python to skip it)", highlight=False)


def check_flags(count: int | None, seeds: int | None, online: bool = False, ttft_slo_s: float | None = None, engine: str = "auto",
                executor: str = "local", jobs: int | None = None, address: str | None = None, tpot_slo_s: float | None = None):
    """The ``--check`` flags, refused in one line naming both flags when one means nothing without another (before any
    work); where the runs play (``planning.check.Where``), or None without ``--check``. ``tpot_slo_s``: the bound's TPOT
    SLO (``--tpot-slo-ms``), which an offline check cannot hold its runs to."""
    given = {"--seeds": seeds, "--online": online or None, "--ttft-slo-s": ttft_slo_s, "--jobs": jobs, "--address": address,
             "--executor": None if executor == "local" else executor, "--engine": None if engine == "auto" else engine}
    if count is None:
        if (flag := next((f for f, v in given.items() if v is not None), None)) is not None:
            raise PlanError(f"{flag} {_shown(given[flag])}is not allowed without --check; it says how the runner check runs", 2)
        return None
    if ttft_slo_s is not None and not online:
        raise PlanError(f"--ttft-slo-s = {ttft_slo_s!r} s is not allowed without --online; an offline check runs every agent at "
                        "t = 0, with no SLO", 2)
    from dualpath_plan.model.flags import check_flag
    from dualpath_plan.planning.check import Where, refuse_offline_slo
    from dualpath_plan.planning.executor import ENGINES, check_executor

    if tpot_slo_s is not None:
        refuse_offline_slo(tpot_slo_s, online)
    check_flag("--check", count)
    if seeds is not None:
        check_flag("--seeds", seeds)
    if ttft_slo_s is not None:
        check_flag("--ttft-slo-s", ttft_slo_s)
    check_executor(executor, jobs, address)
    if engine not in ENGINES:
        raise PlanError(f"--engine {engine!r} is not allowed; must be one of {', '.join(ENGINES)}", 2)
    return Where(engine, executor, jobs, address)


def run_check(optimal, scenarios, count: int | None, options, seeds: int | None, online: bool = False, ttft_slo_s: float | None = None,
              engine: str = "auto", executor: str = "local", jobs: int | None = None, address: str | None = None):
    """``--check K [--seeds N] [--online]``: the runner on the K best splits of ``optimal`` (planning.check; imported only
    when asked), or of every mode's when ``optimal`` is a dict of sets by mode (``planning.check.check_modes``); online,
    each one's capacity within the SLO (``planning.online``); None without ``--check``. The flags as :func:`check_flags`
    takes them."""
    where = check_flags(count, seeds, online, ttft_slo_s, engine, executor, jobs, address, options.decode.tpot_slo_s)
    if where is None:
        return None
    from dualpath_plan.planning.check import check, check_modes

    seeds = 1 if seeds is None else seeds
    if online:
        return _online_check(optimal if isinstance(optimal, dict) else {optimal.mode: optimal}, scenarios, count, options, seeds,
                             ttft_slo_s, where)
    if isinstance(optimal, dict):
        return check_modes(optimal, scenarios, count, options, seeds=seeds, on_compile=compile_note, where=where)
    return check(optimal, scenarios, count, options, seeds=seeds, on_compile=compile_note, where=where)


def _shown(value) -> str:
    return "" if value is True else f"= {value} " if isinstance(value, (int, float)) else f"{value} "


def _online_check(optimals, scenarios, count, options, seeds, ttft_slo_s, where):
    """``--check K --online``: each candidate's capacity within the SLO (TTFT ``--ttft-slo-s``, TPOT the bound's own)."""
    from dualpath_plan.planning.online import check_online, slo_of

    return check_online(optimals, scenarios, count, slo_of(options, ttft_slo_s), options, seeds=seeds, where=where, on_compile=compile_note,
                        on_round=round_note)


def round_note(round_: int, probes: int) -> None:
    """Each round of the online check's probes, on a terminal's stderr (a large cluster's round takes minutes)."""
    if err_console.is_terminal:
        err_console.print(f"runner check, online: round {round_}, {probes} probe(s)", highlight=False)


def check_json(result) -> dict:
    """A runner check (``run_check``'s result, or a dict of them by label) as the ``runner_check`` key of ``--json``;
    nothing without one."""
    if not result:
        return {}
    from dualpath_plan.planning.check import ModesCheck
    from dualpath_plan.planning.online import OnlineCheck
    from dualpath_plan.report.check import check_json as one, modes_json, online_json

    def of(c) -> dict:
        return online_json(c) if isinstance(c, OnlineCheck) else modes_json(c) if isinstance(c, ModesCheck) else one(c)

    return {"runner_check": {name: of(c) for name, c in result.items()} if isinstance(result, dict) else of(result)}


def tier_verdict_of(with_tier, without, gb: float) -> str | None:
    """``--check`` with ``--dram-tier`` (``bottleneck``, ``plan``): the runner's answer on buying the tier
    (``report.check.tier_verdict``, imported only then)."""
    from dualpath_plan.report.check import tier_verdict

    return tier_verdict(with_tier, without, gb)


def show_check(result, label: str = "", note: bool = True) -> None:
    """Print a runner check after the command's tables (nothing without one); ``note``: an offline check's note on its
    two ratios after it (a command that shows several checks says it once, after the last)."""
    if result is not None:
        from dualpath_plan.planning.check import ModesCheck
        from dualpath_plan.planning.online import OnlineCheck
        from dualpath_plan.report.check import WINDOW_NOTE, render_check, render_modes, render_online

        render = render_online if isinstance(result, OnlineCheck) else render_modes if isinstance(result, ModesCheck) else render_check
        console = out_console()
        render(result, console, label)
        if note and not isinstance(result, OnlineCheck):
            console.print(WINDOW_NOTE, highlight=False)
