"""``dualpath-plan trace import|stats``: public agent traces into schema v2, and a trace's statistics."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Optional

import typer

from dualpath_plan.cli.app import JsonOpt, ProfileFileOpt, app, err_console, out_console, print_json

trace_app = typer.Typer(help="Import public agent traces into schema v2, or show a trace's statistics.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")

FormatOpt = Annotated[Optional[str], typer.Option("--format", metavar="jsonl|weka|tracelab|copilot|bailian|mooncake|dynamo",
                                                  help="The input's format (stats: default jsonl, this project's own).")]


@contextlib.contextmanager
def progress_bar(total_bytes: int, what: str) -> Iterator[Callable[[int], None] | None]:
    """A byte progress bar on stderr when it is a terminal (gone when done), else nothing."""
    if not err_console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    with Progress(TextColumn(what), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                  console=err_console, transient=True) as bar:
        task = bar.add_task(what, total=total_bytes)
        yield lambda n: bar.advance(task, n)


@trace_app.command("import")
def import_(
    inputs: Annotated[list[Path], typer.Argument(metavar="IN...", help="Input files of the named format (.gz read as is); a directory: "
                                                 "the files in it.")],
    format_: Annotated[str, typer.Option("--format", metavar="weka|tracelab|copilot|bailian|mooncake|dynamo|jsonl",
                                         help="The inputs' format (jsonl: this project's own, written again cut at a context window).")],
    out: Annotated[Path, typer.Option("-o", "--output", metavar="OUT.jsonl", help="The schema v2 file to write (whole or not at all).", dir_okay=False)],
    max_context_tokens: Annotated[Optional[int], typer.Option("--max-context-tokens", metavar="N", help="Cut sessions at this context window "
                                                              "(rule 6 of the import).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", metavar="NAME", help="Cut sessions at this model's context window.")] = None,
    profile_file: ProfileFileOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Convert a public trace into schema v2 (streamed) and say how hits, tool time and odd requests were treated; or cut
    this project's own trace at a context window."""
    from dualpath_plan.model.trace.formats import ImportOptions
    from dualpath_plan.model.trace.ops import expand, import_trace, import_window, input_bytes
    from dualpath_plan.report import trace as report

    from dualpath_plan.report.files import check_output

    check_output(out, "-o")
    opts = ImportOptions(import_window(max_context_tokens, model, tuple(profile_file or ())))
    with progress_bar(input_bytes(expand(list(inputs))), f"importing {format_}") as hook:
        rep = import_trace(format_, list(inputs), out, opts, hook)
    if json_:
        print_json(report.import_json(rep))
    else:
        report.render_import(rep, out_console())


@trace_app.command("stats")
def stats(
    inputs: Annotated[list[Path], typer.Argument(metavar="FILE...", help="Trace files (a directory: the files in it).")],
    format_: FormatOpt = None,
    model: Annotated[Optional[str], typer.Option("--model", metavar="NAME", help="Show the KV bytes a turn reads with this model.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", metavar="FILE", help="Draw the distributions as a PNG or SVG picture (the 'plot' extra).")] = None,
    profile_file: ProfileFileOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Sessions, rounds, context, append, generated tokens and tool time, hits within and across sessions, beside Table 2."""
    from dualpath_plan.model.profiles import catalog
    from dualpath_plan.model.trace.ops import expand, input_bytes, trace_stats
    from dualpath_plan.report import trace as report

    if plot is not None:
        from dualpath_plan.report.files import check_output
        from dualpath_plan.report.plots import FORMATS, pyplot

        check_output(plot, "--plot", FORMATS)  # a picture's name (.png or .svg), before the trace is read
        pyplot()  # the plot extra is there, before the trace is read
    cat = catalog(tuple(profile_file or ()))
    kv = None if model is None else cat.get("model", model).kv_bytes_per_token
    with progress_bar(input_bytes(expand(list(inputs))), "reading") as hook:
        summary = trace_stats(list(inputs), format_, model, kv, hook)
    table2 = [cat.get("workload", name) for name in report.TABLE2]
    if plot is not None:
        from dualpath_plan.report import plots
        plots.write(report.stats_figure(summary), plot, "--plot")
    if json_:
        print_json(report.stats_json(summary, table2))
    else:
        report.render_stats(summary, table2, out_console())
