"""``dualpath-plan simulate``: run a scheduling policy through the fluid engine, against the LP bound."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer

from dualpath_plan.cli.app import (
    AccountingOpt,
    TraceOpt,
    TraceFormatOpt,
    TimeScaleOpt,
    ToolScaleOpt,
    workload_name,
    DecodeInstanceOpt,
    PrefillInstanceOpt,
    DeProfileOpt,
    DOpt,
    DtypeOpt,
    JsonOpt,
    ModelOpt,
    PeProfileOpt,
    DramTierOpt,
    POpt,
    ProfileFileOpt,
    ProfileOpt,
    SetOpt,
    MtpAcceptedOpt,
    MtpOpt,
    TpotOpt,
    app,
    compile_note,
    err_console,
    out_console,
    print_json,
)
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.scenario import DEFAULT_D, DEFAULT_MODEL, DEFAULT_P, DEFAULT_WORKLOAD, build_scenario
from dualpath_plan.model.workload import DEFAULT_AGENTS
from dualpath_plan.sim.rules import DT_S, TPOT_SLO_S, TTFT_SLO_S  # the runner itself is imported when a run starts


def _policies(policy: str | None, compare: str | None) -> list[str]:
    from dualpath_plan.sim import runner

    if compare is None:
        return [runner.policy_name("dualpath" if policy is None else policy).value]
    if policy is not None:
        raise PlanError(f"--policy {policy} and --compare {compare} are not allowed together; --compare names every policy to run", 2)
    names = [runner.policy_name(p.strip(), "--compare").value if p.strip() else "" for p in compare.split(",")]
    if "" in names or len(set(names)) < len(names):
        raise PlanError(f"--compare {compare!r} is not allowed; must be distinct policy names separated by commas", 2)
    return names


@contextlib.contextmanager
def _progress(enabled: bool, names: list[str]) -> Iterator:
    """A progress bar per policy on stderr with the time left, when stderr is a terminal (with or without --json)."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TextColumn("{task.fields[sim]}"), TimeElapsedColumn(),
               TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        tasks = {name: bar.add_task(name, total=1.0, sim="") for name in names}

        def update(name: str, frac: float, sim_s: float) -> None:
            bar.update(tasks.get(name, tasks[names[0]]), completed=frac, sim=f"{sim_s:,.0f} s simulated")

        yield update


SLOW_PYTHON_S = 10.0  # a Python-engine run longer than this gets a note on the compiled engine
LONG_RUN_S = 20.0  # a command whose runs are expected to take longer than this says so before it starts


def _cost_note(cost, runs: int) -> None:
    """Before a long command (``runner.RunCost`` of its first run, ``runs`` runs in all): what it will cost, and how
    to follow or stop it."""
    total = cost.wall_s * runs
    if total <= LONG_RUN_S:
        return
    follow = "a bar below shows progress" if err_console.is_terminal else "nothing more is printed until it ends"
    each = f"{runs} runs of " if runs > 1 else ""
    about = fmt(round(total / 60.0), "min") if total >= 120.0 else fmt(round(total), "s")
    err_console.print(f"note: {each}{fmt(cost.turns, 'turns')} over about {fmt(round(cost.sim_s), 's')} simulated: about {about} "
                      f"on the {cost.engine} engine here; {follow}; Ctrl-C stops it and reports the runs that finished",
                      markup=False, highlight=False)


def _engine_note(engine: str, runs: dict) -> None:
    """Say so when ``--engine auto`` ran the Python engine for long: the compiled one (compiled once) is ~30x faster."""
    wall = sum(r.wall_s for r in runs.values() if r.engine == "python")
    if engine == "auto" and wall > SLOW_PYTHON_S:
        err_console.print(f"note: the Python engine ran this ({wall:.0f} s); --engine compiled compiles the fluid engine "
                          "once for this machine (about 40 s on 2 cores) and then runs this about 30x faster", highlight=False)


def _interrupted(scenario, stop, json_: bool, report) -> None:
    """Ctrl-C: show the runs that finished (the first seed's), as the command would have, then end with exit 130 (no
    file is written: each holds every run or none)."""
    if stop.runs:
        if json_:
            print_json(report.to_json(scenario, stop.trajectories, stop.runs, None, several=stop.policies > 1))
        else:
            report.render(scenario, stop.trajectories.source, stop.runs, out_console(), None)
    raise PlanError(f"interrupted: {len(stop.runs)} of {stop.policies} runs finished" + (" (shown above)" if stop.runs else ""), 130)


def _check_outputs(outputs: dict[str, Path], find_capacity: bool) -> None:
    """Refuse bad output files before any run: names, formats, two flags on one file, a capacity search, no matplotlib."""
    from dualpath_plan.report import plots
    from dualpath_plan.report.files import check_distinct, check_output

    for flag, path in outputs.items():
        check_output(path, flag, plots.FORMATS if flag == "--plot" else ".csv")
    check_distinct(outputs)
    if outputs and find_capacity:
        raise PlanError(f"{' and '.join(outputs)} not allowed with --find-capacity; they write one run, and the search runs many", 2)
    if "--plot" in outputs:
        plots.pyplot()  # fail before any run if matplotlib is missing


def _write_outputs(outputs: dict[str, Path], rep, scenario) -> None:
    """The first seed's runs into each file asked for (``report.timeseries``, ``report.plots``)."""
    from dualpath_plan.report import plots
    from dualpath_plan.report import timeseries as files

    writers = {"--timeseries": lambda path: files.write_timeseries(rep.runs, rep.trajectories, path),
               "--turns": lambda path: files.write_turns(rep.runs, rep.trajectories, path),
               "--plot": lambda path: plots.write(plots.simulate_figure(rep.runs, rep.trajectories, plots.cluster_name(scenario)), path,
                                                  "--plot")}
    for flag, path in outputs.items():
        writers[flag](path)


@app.command()
def simulate(
    profile: ProfileOpt = None, model: ModelOpt = DEFAULT_MODEL,
    workload: Annotated[Optional[str], typer.Option("--workload", metavar="NAME", help=f"Workload profile of synthetic trajectories (default {DEFAULT_WORKLOAD}; not with --trace).")] = None,
    P: POpt = DEFAULT_P, D: DOpt = DEFAULT_D, accounting: AccountingOpt = "exact",
    agents: Annotated[Optional[int], typer.Option("--agents", metavar="N", help=f"Agents (offline default {DEFAULT_AGENTS}, with --trace all its trajectories; online default: the Poisson arrivals before the steady-state horizon; not with --find-capacity).")] = None,
    policy: Annotated[Optional[str], typer.Option("--policy", metavar="POLICY", help="basic, layerwise, dualpath-rr, dualpath, oracle or split (default: dualpath).")] = None,
    compare: Annotated[Optional[str], typer.Option("--compare", metavar="POLICY,...", help="Several policies, comma-separated, on the same trajectories.")] = None,
    online: Annotated[bool, typer.Option("--online", help="Poisson agent arrivals at --aps instead of all agents at t = 0 (offline, a trace's sessions start at their recorded times).")] = False,
    aps: Annotated[Optional[float], typer.Option("--aps", metavar="AGENTS/S", help="Agent arrivals per second (online).")] = None,
    find_capacity: Annotated[bool, typer.Option("--find-capacity", help="Bisect the highest APS within the SLO.")] = False,
    ttft_slo_s: Annotated[float, typer.Option("--ttft-slo-s", metavar="S", help="TTFT SLO in seconds (the paper's 4).")] = TTFT_SLO_S,
    tpot_slo_ms: TpotOpt = TPOT_SLO_S * 1e3,
    trace: TraceOpt = None, trace_format: TraceFormatOpt = None, time_scale: TimeScaleOpt = 1.0, tool_scale: ToolScaleOpt = 1.0,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed of trajectories and arrivals.")] = 0,
    seeds: Annotated[int, typer.Option("--seeds", metavar="N", help="Repeat over N seeds (--seed, --seed + 1, ...) and report the "
                                       "mean and a 95 % interval of JCT, turns/s and latency percentiles.")] = 1,
    dt_ms: Annotated[float, typer.Option("--dt-ms", metavar="MS", help="Engine step in ms.")] = DT_S * 1e3,
    dtype: DtypeOpt = None, decode_instance_nodes: DecodeInstanceOpt = None, mtp: MtpOpt = 0, mtp_accepted: MtpAcceptedOpt = None,
    prefill_instance_nodes: PrefillInstanceOpt = None,
    engine: Annotated[str, typer.Option("--engine", metavar="ENGINE", help="compiled, python or auto (default: the compiled engine once "
                                        "it is compiled or when the run is long; both give the same results).")] = "auto",
    pe_profile: PeProfileOpt = None, de_profile: DeProfileOpt = None, set_: SetOpt = None, profile_file: ProfileFileOpt = None,
    dram_tier: DramTierOpt = None,
    timeseries: Annotated[Optional[Path], typer.Option("--timeseries", metavar="FILE", help="Write the run over time to this CSV file: per "
                                                       "window turns/s, every resource's utilisation, agents, queues, TTFT.")] = None,
    turns: Annotated[Optional[Path], typer.Option("--turns", metavar="FILE", help="Write every turn's tokens and times to this CSV file.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", metavar="FILE", help="Draw utilisation, agents and TTFT over time as a PNG or SVG "
                                                 "picture (needs the 'plot' extra).")] = None,
    json_: JsonOpt = False,
) -> None:
    """Run the fluid engine with a scheduling policy; report JCT or latencies, utilisation and the LP bound."""
    from dualpath_plan.report import simulate as report
    from dualpath_plan.sim import runner
    from dualpath_plan.sim.spread import repeat, seeds_of

    outputs = {flag: path for flag, path in (("--timeseries", timeseries), ("--turns", turns), ("--plot", plot)) if path is not None}
    _check_outputs(outputs, find_capacity)
    scenario = build_scenario(profile, model=model, workload=workload_name(workload, trace, trace_format, time_scale, tool_scale), P=P, D=D,
                              accounting=accounting, pe_profile=pe_profile,
                              de_profile=de_profile, profile_files=tuple(profile_file or ()), sets=tuple(set_ or ()), dram_tier_GB=dram_tier)
    names = _policies(policy, compare)
    options = runner.SimOptions(dt_s=dt_ms * 1e-3, seed=seed, dtype=dtype, decode_instance_nodes=decode_instance_nodes, engine=engine,
                                 mtp=mtp, mtp_accepted=mtp_accepted, prefill_instance_nodes=prefill_instance_nodes)
    spec = runner.online_spec(online or find_capacity, aps, ttft_slo_s, tpot_slo_ms * 1e-3, find_capacity, len(names))
    check_flag("--seeds", seeds)
    if find_capacity and seeds > 1:
        raise PlanError(f"--seeds = {seeds} is not allowed with --find-capacity; the search runs one seed (--seed)", 2)
    with _progress(err_console.is_terminal, names) as hook:  # on stderr, gone when done: never in the way of --json on stdout
        if find_capacity:
            traj = runner.capacity_source(scenario.workload, agents, None)
            cap = runner.find_capacity(scenario, traj, names[0], slo=spec, options=options, on_compile=compile_note,
                                      on_progress=None if hook is None else (lambda f, t: hook(names[0], f, t)))
            return print_json(report.capacity_json(scenario, traj, cap)) if json_ else report.render_capacity(scenario, traj.source, cap, out_console())
        try:
            rep = repeat(scenario, scenario.workload, agents, None, seeds_of(seed, seeds), names, spec, options, hook, compile_note, _cost_note)
        except runner.Interrupted as stop:
            rep = None
            finished = stop
    if rep is None:
        return _interrupted(scenario, finished, json_, report)
    _engine_note(engine, rep.runs)
    _write_outputs(outputs, rep, scenario)
    if json_:
        print_json(report.to_json(scenario, rep.trajectories, rep.runs, rep))
    else:
        report.render(scenario, rep.trajectories.source, rep.runs, out_console(), rep)
