"""``dualpath-plan compare``: hardware generations side by side, storage and host I/O per FLOP and the bounds they allow."""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path
from typing import Annotated, Optional

import typer

from dualpath_plan.bounds.decode import DEFAULT_TPOT_SLO_MS
from dualpath_plan.cli.app import (
    AccountingOpt,
    AddressOpt,
    CheckOpt,
    CheckSeedsOpt,
    EngineOpt,
    ExecutorOpt,
    JobsOpt,
    OnlineCheckOpt,
    TtftCheckOpt,
    DecodeInstanceOpt,
    PrefillInstanceOpt,
    DramTierOpt,
    DtypeOpt,
    JsonOpt,
    ModelOpt,
    ProfileFileOpt,
    SetOpt,
    MtpAcceptedOpt,
    MtpOpt,
    TpotOpt,
    WorkloadOpt,
    TraceOpt,
    TraceFormatOpt,
    TimeScaleOpt,
    ToolScaleOpt,
    workload_name,
    app,
    check_flags,
    check_json,
    err_console,
    out_console,
    print_json,
    run_check,
    show_check,
)
from dualpath_plan.model.scenario import DEFAULT_MODEL
from dualpath_plan.planning.sweep import DEFAULT_GPUS


@app.command()
def compare(
    profile: Annotated[Optional[list[str]], typer.Option("--profile", metavar="NAME", help="Hardware profile, in the order to show "
                                                         "(repeatable; default: every known one).")] = None,
    gpus: Annotated[Optional[int], typer.Option("--gpus", metavar="GPUS", help=f"GPU budget every profile gets (default {DEFAULT_GPUS}).")] = None,
    model: ModelOpt = DEFAULT_MODEL,
    workload: WorkloadOpt = None,
    trace: TraceOpt = None,
    trace_format: TraceFormatOpt = None,
    time_scale: TimeScaleOpt = 1.0,
    tool_scale: ToolScaleOpt = 1.0,
    accounting: AccountingOpt = "exact",
    set_: SetOpt = None,
    profile_file: ProfileFileOpt = None,
    dtype: DtypeOpt = None,
    tpot_slo_ms: TpotOpt = DEFAULT_TPOT_SLO_MS,
    decode_instance_nodes: DecodeInstanceOpt = None,
    prefill_instance_nodes: PrefillInstanceOpt = None,
    mtp: MtpOpt = 0,
    mtp_accepted: MtpAcceptedOpt = None,
    dram_tier: DramTierOpt = None,
    plot_path: Annotated[Optional[Path], typer.Option("--plot", metavar="FILE", help="Draw the generation trend as a PNG or SVG picture, "
                                                      "with the runner's checks (needs the 'plot' extra).")] = None,
    check: CheckOpt = None,
    seeds: CheckSeedsOpt = None,
    online: OnlineCheckOpt = False,
    ttft_slo_s: TtftCheckOpt = None,
    executor: ExecutorOpt = "local",
    jobs: JobsOpt = None,
    address: AddressOpt = None,
    engine: EngineOpt = "auto",
    json_: JsonOpt = False,
) -> None:
    """Compare hardware generations: storage and host I/O per dense FLOP beside the workload's need, and the bounds."""
    from dualpath_plan.api import compare as run_compare
    from dualpath_plan.bounds.lp import BoundOptions
    from dualpath_plan.report import compare as report
    from dualpath_plan.report import plots
    from dualpath_plan.report.files import check_output

    check_flags(check, seeds, online, ttft_slo_s, engine, executor, jobs, address)  # before any work
    if dram_tier is not None:
        from dualpath_plan.model.flags import check_flag

        check_flag("--dram-tier", dram_tier)  # before any work
    if plot_path is not None:
        check_output(plot_path, "--plot", plots.FORMATS)
        plots.pyplot()  # fail before any work or file if matplotlib is missing
    options = BoundOptions.parse(dtype, tpot_slo_ms, decode_instance_nodes, mtp, mtp_accepted, prefill_instance_nodes)
    result = run_compare(profile, gpus=gpus, model=model, workload=workload_name(workload, trace, trace_format, time_scale, tool_scale), accounting=accounting, profile_files=tuple(profile_file or ()),
                         sets=tuple(set_ or ()), options=options, dram_tier_GB=dram_tier)
    checks = {} if check is None else _checks(result, check, options, seeds, online, ttft_slo_s, engine, executor, jobs, address)
    if plot_path is not None:
        plots.write(plots.compare_figure(result, checks), plot_path, "--plot")
    verdicts = _tier_verdicts(result, checks)
    if json_:
        print_json(report.to_json(result) | check_json(checks) | ({"runner_tier_verdicts": verdicts} if verdicts else {}))
        return
    report.render(result, out_console())
    for k, (name, one) in enumerate(checks.items()):
        show_check(one, f" ({name})", note=k == len(checks) - 1)
    for profile, verdict in verdicts.items():  # the runner's answer on buying the tier, per generation played both ways
        out_console().print(f"{profile}: {verdict}", highlight=False)


def _tier_verdicts(result, checks: dict) -> dict[str, str]:
    """``--check`` with ``--dram-tier``: per generation checked with the tier and without, the runner's answer on buying it."""
    if result.dram_tier_GB is None:
        return {}
    from dualpath_plan.report.check import tier_verdict

    out = {}
    for g in result.generations:
        tiered = checks.get(f"{g.profile} with the {result.dram_tier_GB:g} GB tier")
        if tiered is not None and (verdict := tier_verdict(tiered, checks.get(g.profile), result.dram_tier_GB)) is not None:
            out[g.profile] = verdict
    return out


def _checks(result, count, options, seeds, online, ttft_slo_s, engine, executor, jobs, address) -> dict:
    """``--check K``: each generation's check of both modes, by profile. A generation none of whose splits serves anything
    at the budget is left out with a note (its table row says why); when none has anything to play, one line says so."""
    from dualpath_plan.planning.check import candidates_of, nothing_to_play

    sets = {g.profile: {mode: result.sweep.optimal[g.profile][mode] for mode in ("dualpath", "basic")} for g in result.generations}
    playable = [g for g in result.generations if any(candidates_of(s, count) for s in sets[g.profile].values())]
    if not playable:
        raise nothing_to_play()
    out = {}
    for g in result.generations:
        if g not in playable:
            err_console.print(f"note: {g.profile}: --check has nothing to play, no split serves anything at {result.gpus} GPUs "
                              "(see why in the table)", highlight=False)
            continue
        out[g.profile] = run_check(sets[g.profile], {(g.scenario.pe_hw.name, g.scenario.de_hw.name): g.scenario}, count, options, seeds,
                                   online, ttft_slo_s, engine, executor, jobs, address)
    for g in _tiered(result, count):  # --dram-tier: the tier's picks too, played with the tier (sim.tier)
        tiered = replace(g.scenario, dram_tier_GB=float(result.dram_tier_GB))
        picks = {mode: result.tier_sweep.optimal[g.profile][mode] for mode in ("dualpath", "basic")}
        out[f"{g.profile} with the {result.dram_tier_GB:g} GB tier"] = run_check(
            picks, {(tiered.pe_hw.name, tiered.de_hw.name): tiered}, count, options, seeds, online, ttft_slo_s, engine, executor, jobs, address)
    return out


def _tiered(result, count) -> list:
    """The generations whose nodes hold ``compare --dram-tier``'s tier and whose picks with it have something to play."""
    from dualpath_plan.planning.check import candidates_of

    if result.tier_sweep is None:
        return []
    held = [g for g in result.generations if g.tier_refused is None and g.profile in result.tier_sweep.optimal]
    return [g for g in held if any(candidates_of(result.tier_sweep.optimal[g.profile][m], count) for m in ("dualpath", "basic"))]
