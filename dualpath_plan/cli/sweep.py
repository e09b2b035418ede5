"""``dualpath-plan sweep``: bound every P/D split over any axes (hardware, model, workload, budget, profile fields),
write one row per configuration and mode, and check each group's best with the runner on an executor."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer

from dualpath_plan.bounds.decode import DEFAULT_TPOT_SLO_MS
from dualpath_plan.cli.app import (
    AddressOpt,
    TraceFormatOpt,
    TimeScaleOpt,
    ToolScaleOpt,
    workload_name,
    CheckOpt,
    CheckSeedsOpt,
    DecodeInstanceOpt,
    PrefillInstanceOpt,
    DtypeOpt,
    EngineOpt,
    ExecutorOpt,
    JobsOpt,
    JsonOpt,
    OnlineCheckOpt,
    ProfileFileOpt,
    StorageOpt,
    StorageRetentionOpt,
    MtpAcceptedOpt,
    MtpOpt,
    TpotOpt,
    TtftCheckOpt,
    app,
    check_flags,
    compile_note,
    err_console,
    out_console,
    print_json,
)
from dualpath_plan.model.errors import PlanError
from dualpath_plan.planning.sweep import DEFAULT_GPUS

_AXIS = "a value, a list a,b,c or a range a..b (whole numbers) or a..b:n (n values)"


@app.command()
def sweep(
    ctx: typer.Context,
    profile: Annotated[Optional[list[str]], typer.Option("--profile", metavar="NAME", help="Hardware profile to compare (repeatable; default: every known one).")] = None,
    pe_profile: Annotated[Optional[list[str]], typer.Option("--pe-profile", metavar="NAME", help="Prefill-node profile of a mixed pair; repeatable, "
                                                             "paired in order with --de-profile.")] = None,
    de_profile: Annotated[Optional[list[str]], typer.Option("--de-profile", metavar="NAME", help="Decode-node profile of a mixed pair (see --pe-profile).")] = None,
    nodes: Annotated[Optional[str], typer.Option("--nodes", metavar="N|LIST|RANGE", help=f"Node budgets: every split P + D = N; {_AXIS}.")] = None,
    gpus: Annotated[Optional[str], typer.Option("--gpus", metavar="GPUS|LIST|RANGE", help=f"GPU budgets; each profile gets floor(gpus/g) nodes "
                                                 f"(default {DEFAULT_GPUS}); {_AXIS}.")] = None,
    budget_usd: Annotated[Optional[str], typer.Option("--budget-usd", metavar="USD|LIST|RANGE", help="Money budgets instead: each profile gets the "
                                                       "nodes it buys at its price (--node-cost or the profile's).")] = None,
    budget_usd_per_hour: Annotated[Optional[str], typer.Option("--budget-usd-per-hour", metavar="USD/h|LIST|RANGE", help="Rent budgets instead: each "
                                                                "profile gets the nodes it rents at its rent (--rent or the profile's).")] = None,
    node_cost: Annotated[Optional[list[str]], typer.Option("--node-cost", "--price", metavar="NAME=USD", help="USD per node, as USD (every profile; --price is the same) "
                                                            "or NAME=USD. Repeatable.")] = None,
    rent: Annotated[Optional[list[str]], typer.Option("--rent", metavar="NAME=USD/h", help="Rent per node-hour, as USD (every profile) or NAME=USD. "
                                                       "Repeatable.")] = None,
    storage: StorageOpt = None,
    storage_nodes: Annotated[Optional[str], typer.Option("--storage-nodes", metavar="N|LIST|RANGE", help="Storage nodes of --storage: "
                                                          + _AXIS + " (an axis); default: each split's planned count.")] = None,
    storage_retention_s: StorageRetentionOpt = 0.0,
    model: Annotated[Optional[list[str]], typer.Option("--model", metavar="NAME", help="Model profile (repeatable; default ds-v3.2).")] = None,
    workload: Annotated[Optional[list[str]], typer.Option("--workload", metavar="NAME", help="Workload profile (repeatable; default agentic-64k).")] = None,
    trace: Annotated[Optional[list[Path]], typer.Option("--trace", metavar="FILE", help="A trace as a workload (repeatable; joins the --workload axis); "
                                                        "see --trace-format (a public trace: a file or a directory of its files).")] = None,
    trace_format: TraceFormatOpt = None, time_scale: TimeScaleOpt = 1.0, tool_scale: ToolScaleOpt = 1.0,
    accounting: Annotated[str, typer.Option("--accounting", metavar="exact|paper", help="exact (adds miss KV and write-back) or paper (hit KV only; "
                                            "a --scenario file may set it instead).")] = "exact",
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE|LIST|RANGE", help="Override a profile field (pe.KEY / de.KEY for one side); "
                                                       "a list a,b or a range a..b:n makes it an axis. Repeatable.")] = None,
    scenario: Annotated[Optional[Path], typer.Option("--scenario", metavar="FILE", help="TOML file holding the axes (profiles, models, workloads, "
                                                     "nodes/gpus/budget_usd, [set]); see docs/commands/sweep.md.", dir_okay=False)] = None,
    profile_file: ProfileFileOpt = None,
    dtype: DtypeOpt = None,
    tpot_slo_ms: TpotOpt = DEFAULT_TPOT_SLO_MS,
    decode_instance_nodes: DecodeInstanceOpt = None,
    prefill_instance_nodes: PrefillInstanceOpt = None,
    mtp: MtpOpt = 0,
    mtp_accepted: MtpAcceptedOpt = None,
    csv_path: Annotated[Optional[Path], typer.Option("--csv", metavar="FILE", help="Write one row per configuration and mode to this CSV file.")] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json-file", metavar="FILE", help="Write the same rows to this JSON file (an array of objects).")] = None,
    plot_path: Annotated[Optional[Path], typer.Option("--plot", metavar="FILE", help="Write a PNG or SVG picture: the bounds against P/D (one "
                                                      "budget) or the best bounds against the budget (several), with the runner's "
                                                      "checks; needs the 'plot' extra.")] = None,
    lp_sample: Annotated[Optional[float], typer.Option("--lp-sample", metavar="SHARE", help="Solve this share of the configurations again with "
                                                       "HiGHS and report the largest difference (e.g. 0.01).")] = None,
    check: CheckOpt = None,
    seeds: CheckSeedsOpt = None,
    online: OnlineCheckOpt = False,
    ttft_slo_s: TtftCheckOpt = None,
    executor: ExecutorOpt = "local",
    jobs: JobsOpt = None,
    address: AddressOpt = None,
    engine: EngineOpt = "auto",
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Show every group in the table (default: the first 40; every row "
                                             "is in the --csv and --json-file outputs).")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted sweep: keep the runs its journal (FILE.partial) and "
                                         "outputs hold, run the rest.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Bound every P/D split of every budget over any axes; show each group's best; check the best with the runner."""
    from dualpath_plan.bounds.lp import BoundOptions
    from dualpath_plan.model.flags import check_flag
    from dualpath_plan.model.money import PURCHASE, RENT
    from dualpath_plan.planning import gridsweep
    from dualpath_plan.planning.request import parse_node_costs

    outputs = _check_outputs({"--csv": csv_path, "--json-file": json_path, "--plot": plot_path}, resume, check)
    if lp_sample is not None:
        check_flag("--lp-sample", lp_sample)
    if len(pe_profile or ()) != len(de_profile or ()):
        raise PlanError(f"--pe-profile is given {len(pe_profile or ())} time(s) and --de-profile {len(de_profile or ())}; they pair in "
                        "order, one --de-profile per --pe-profile", 2)
    if seeds is not None and check is None:
        raise PlanError(f"--seeds = {seeds} is not allowed without --check; it repeats the runner check over seeds", 2)
    check_flags(check, None, online, ttft_slo_s, tpot_slo_s=tpot_slo_ms * 1e-3)  # --online needs --check, ... (app's one rule)
    files = tuple(profile_file or ())
    traces = tuple(workload_name(None, path, trace_format, time_scale, tool_scale) for path in trace or ())
    if not trace:
        workload_name(None, None, trace_format, time_scale, tool_scale)  # trace options without a trace are refused
    axes = gridsweep.make_axes(profile or (), tuple(zip(pe_profile or (), de_profile or ())), model or (), tuple(workload or ()) + traces,
                               {"nodes": nodes, "gpus": gpus, "usd": budget_usd, "usd_per_hour": budget_usd_per_hour}, set_ or (), scenario,
                               _given(ctx, "accounting", accounting), files, storage, storage_nodes, storage_retention_s)  # the default leaves it to a scenario file
    single = gridsweep.is_single(axes)
    if check is not None:
        from dualpath_plan.planning.executor import check_executor, resolve_engine

        check_executor(executor, jobs, address)
        resolve_engine(engine)
    elif given := [f"{flag} {value}" for flag, value, default in (("--executor", executor, "local"), ("--jobs", jobs, None),
                   ("--address", address, None), ("--engine", engine, "auto")) if value != default]:
        raise PlanError(f"{given[0]} is not allowed without --check; it says where and how the runner checks run", 2)
    options = BoundOptions.parse(dtype, tpot_slo_ms, decode_instance_nodes, mtp, mtp_accepted, prefill_instance_nodes)
    names = list(axes.profiles) + [n for pair in axes.pairs for n in pair]
    prices, rents = parse_node_costs(node_cost or (), names, PURCHASE), parse_node_costs(rent or (), names, RENT)
    result = gridsweep.single_sweep(axes, options, files, prices, rents) if single else None
    if result is not None and not ({"--csv", "--json-file"} & set(outputs)) and check is None and lp_sample is None:
        _show(None, result, outputs, json_)  # one budget, nothing but its table: no grid to build
        if "--plot" in outputs:
            _write(None, result, outputs)
        return
    grid = gridsweep.build(axes, options, files, prices_usd=prices, rents_usd_per_hour=rents, lp_sample=lp_sample)
    if "--plot" in outputs:
        from dualpath_plan.report.gridplots import plottable

        plottable(grid)  # before any runner check: a picture that cannot be drawn fails first
    if check is not None:
        grid = _run_checks(grid, check, 1 if seeds is None else seeds, engine, executor, jobs, address, outputs, resume, online, ttft_slo_s)
    _write(grid, result, outputs)
    _show(grid, result, outputs, json_, all_groups)


def _given(ctx: typer.Context, name: str, value):
    """``value`` when typed on the command line, else None (a default gives way to a scenario file's value)."""
    source = ctx.get_parameter_source(name)  # by name: typer bundles its own click, whose enum is not click's
    return value if getattr(source, "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP") else None


def _check_outputs(paths: dict[str, Path | None], resume: bool, check: int | None) -> dict[str, Path]:
    from dualpath_plan.report import plots
    from dualpath_plan.report.files import check_distinct, check_output

    outputs = {flag: path for flag, path in paths.items() if path is not None}
    for flag, path in outputs.items():
        check_output(path, flag, plots.FORMATS if flag == "--plot" else None)
    check_distinct(outputs)
    if "--plot" in outputs:
        plots.pyplot()  # fail before any work or file if matplotlib is missing
    if resume and not ({"--csv", "--json-file"} & set(outputs)):
        raise PlanError("--resume continues a sweep's --csv or --json-file output; give the file the sweep writes", 2)
    if resume and check is None:
        raise PlanError("--resume is not allowed without --check; only the runner's results take long enough to keep", 2)
    return outputs


def _run_checks(grid, count, seeds, engine, executor, jobs, address, outputs, resume, online=False, ttft_slo_s=None):
    """The runner on every group's best (``report.grid.checked_with_journal``; ``online``: each one's capacity within the
    SLO, round after round of probes); Ctrl-C says what the journal keeps."""
    from dualpath_plan.cli.app import round_note
    from dualpath_plan.planning.executor import Interrupted
    from dualpath_plan.report import grid as rows

    note = executor == "ray" and engine != "python"

    def started(count: int) -> None:  # once connected and submitted: a failed connection stays one line
        if note and count:
            err_console.print("note: each Ray worker loads the compiled engine from its machine's numba cache, or compiles it there "
                              "once (about 40 s on 2 cores) before its first run", highlight=False)
        if bar is not None:
            bar.start(count)

    files = [path for _, path in _row_files(outputs)]
    if resume and not any(rows.present(Path(p)) for p in [*files, *rows.journal_paths(files)]):  # a dangling link: refused below
        err_console.print(f"note: --resume found no journal and no earlier {' or '.join(map(str, files)) or 'row file'}: every check runs",
                          highlight=False, markup=False)
    with _progress(err_console.is_terminal and not online) as bar:  # online: a note per round (the probes are not known ahead)
        try:
            return rows.checked_with_journal(grid, count, seeds, _row_files(outputs), resume, engine=engine, executor=executor, jobs=jobs,
                                             address=address, on_done=None if online else lambda o: bar.advance() if bar else None,
                                             on_compile=compile_note, on_start=started, online=online, ttft_slo_s=ttft_slo_s,
                                             on_round=round_note)
        except Interrupted as stop:
            kept = f"; {stop.journal} keeps them: run the same command with --resume to run only the rest" if stop.journal else \
                "" if _row_files(outputs) else "; give --csv or --json-file to keep finished runs for --resume"
            raise PlanError(f"interrupted: {stop.done} of {stop.total} runner checks finished{kept}", 130) from None


def _row_files(outputs: dict[str, Path]) -> list[tuple[str, Path]]:
    return [(flag, path) for flag, path in outputs.items() if flag in ("--csv", "--json-file")]


class _Bar:
    """Runner checks done out of those to run, with the time left, on stderr. It starts (and its refresh thread with
    it) only when the workers are up: forked workers start with no thread running (``planning.executor``)."""

    def __init__(self, progress) -> None:
        self.progress, self.task = progress, None

    def start(self, total: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task("runner checks", total=max(total, 1))

    def advance(self) -> None:
        if self.task is not None:
            self.progress.advance(self.task)


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator:
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("left"),
                        TimeRemainingColumn(), console=err_console, transient=True)
    try:
        yield _Bar(progress)
    finally:
        progress.stop()


def _write(grid, result, outputs: dict[str, Path]) -> None:
    from dualpath_plan.report import grid as rows
    from dualpath_plan.report import plots

    if grid is not None:
        rows.finish(grid, _row_files(outputs))
    if "--plot" in outputs:
        from dualpath_plan.report.gridplots import grid_figure, measured, runner_points

        figure = grid_figure(grid) if result is None else \
            plots.sweep_figure(result, runner_points(grid) if grid is not None else (), measured(grid) if grid is not None else "steady")
        plots.write(figure, outputs["--plot"], "--plot")


def _show(grid, result, outputs: dict[str, Path], json_: bool, every: bool = False) -> None:
    from dualpath_plan.report import gridview
    from dualpath_plan.report import sweep as report

    if json_:
        if result is None:
            print_json(gridview.full_json(grid))
            return
        extra = {} if grid is None else ({"lp_check": gridview.lp_json(grid)} if grid.lp is not None else {}) | gridview.checks_json(grid)
        print_json(report.to_json(result) | extra)
        return
    console = out_console()
    if result is not None:
        report.render(result, console)
        if grid is not None and grid.lp is not None:
            console.print(gridview.lp_line(grid), highlight=False)
    else:
        gridview.render(grid, console, [str(p) for f, p in outputs.items() if f != "--plot"], every)
    if grid is not None:
        gridview.render_checks(grid, console)
