"""``dualpath-plan plan``: the P, D (and node types) a budget buys best, or the cheapest that reach a target."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from dualpath_plan.bounds.decode import DEFAULT_TPOT_SLO_MS
from dualpath_plan.cli.app import (
    AccountingOpt,
    CheckOpt,
    CheckSeedsOpt,
    tier_verdict_of,
    AddressOpt,
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
    StorageOpt,
    StorageRetentionOpt,
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
    out_console,
    print_json,
    check_json,
    run_check,
    show_check,
)
from dualpath_plan.model.scenario import DEFAULT_MODEL

Names = Optional[list[str]]


@app.command()
def plan(
    profile: Annotated[Names, typer.Option("--profile", metavar="NAME", help="Candidate node type for both sides. Repeatable: mixed pairs are offered too.")] = None,
    pe_profile: Annotated[Names, typer.Option("--pe-profile", metavar="NAME", help="Candidate prefill node type (default: the --profile list). Repeatable.")] = None,
    de_profile: Annotated[Names, typer.Option("--de-profile", metavar="NAME", help="Candidate decode node type (default: the --profile list). Repeatable.")] = None,
    nodes: Annotated[Optional[int], typer.Option("--nodes", metavar="NODES", help="Budget: at most this many nodes (P + D).")] = None,
    gpus: Annotated[Optional[int], typer.Option("--gpus", metavar="GPUS", help="Budget: at most this many GPUs.")] = None,
    budget_usd: Annotated[Optional[float], typer.Option("--budget-usd", metavar="USD", help="Budget: at most this many USD (needs node prices).")] = None,
    budget_usd_per_hour: Annotated[Optional[float], typer.Option("--budget-usd-per-hour", metavar="USD/h", help="Budget: at most this rent per hour "
                                                                  "(needs node rents).")] = None,
    power_kw: Annotated[Optional[float], typer.Option("--power-kw", metavar="KW", help="Budget: at most this many kW at full load "
                                                      "(needs node_power_W in every candidate profile).")] = None,
    storage: StorageOpt = None,
    storage_retention_s: StorageRetentionOpt = 0.0,
    dram_tier: DramTierOpt = None,
    dram_price: Annotated[Optional[float], typer.Option("--dram-price", metavar="USD/GB", help="With --dram-tier and node prices: USD a GB "
                                                        "of the tier's DRAM adds to a node (0: the price covers it).")] = None,
    dram_rent: Annotated[Optional[float], typer.Option("--dram-rent", metavar="USD/GB/h", help="With --dram-tier and node rents: USD an hour "
                                                       "a GB of the tier's DRAM adds to a node's rent.")] = None,
    electricity_usd_per_kwh: Annotated[Optional[float], typer.Option("--electricity-usd-per-kwh", metavar="USD/KWH", help="Add each node's "
                                                                     "power at full load at this price to its rent (rent basis; "
                                                                     "for rents without power).")] = None,
    target_turns_per_s: Annotated[Optional[float], typer.Option("--target-turns-per-s", metavar="TURNS/S", help="Target: the cheapest cluster reaching this many turns/s.")] = None,
    target_agents_per_s: Annotated[Optional[float], typer.Option("--target-agents-per-s", metavar="AGENTS/S", help="Target: agents/s (turns/s divided by turns per trajectory).")] = None,
    node_cost: Annotated[Names, typer.Option("--node-cost", "--price", metavar="NAME=USD", help="USD per node, as USD (every type) or NAME=USD; --price is the same. Repeatable.")] = None,
    rent: Annotated[Names, typer.Option("--rent", metavar="NAME=USD/h", help="Rent per node-hour, as USD (every type) or NAME=USD. Repeatable.")] = None,
    mode: Annotated[Names, typer.Option("--mode", metavar="basic|dualpath", help="basic or dualpath (default: both). Repeatable.")] = None,
    alternatives: Annotated[int, typer.Option("--alternatives", metavar="N", help="Runner-up clusters to list.")] = 3,
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
    """Choose integer P and D: the most turns/s for a budget, or the cheapest cluster for a target."""
    from dualpath_plan.bounds.lp import BoundOptions  # scipy.optimize only for the commands that solve
    from dualpath_plan.planning.plan import plan as solve_plan
    from dualpath_plan.planning.request import PLAN_MODES, make_request
    from dualpath_plan.planning.tier import plan_tiers
    from dualpath_plan.report import plan as report

    request = make_request(
        profile or (), pe_profile or (), de_profile or (),
        model=model, workload=workload_name(workload, trace, trace_format, time_scale, tool_scale), accounting=accounting, profile_files=tuple(profile_file or ()), sets=tuple(set_ or ()),
        nodes=nodes, gpus=gpus, budget_usd=budget_usd, budget_usd_per_hour=budget_usd_per_hour, power_kw=power_kw, electricity_usd_per_kwh=electricity_usd_per_kwh,
        storage=storage, storage_retention_s=storage_retention_s, dram_tier_GB=dram_tier, dram_price=dram_price, dram_rent=dram_rent,
        target_turns_per_s=target_turns_per_s, target_agents_per_s=target_agents_per_s,
        node_costs=node_cost or (), rents=rent or (), options=BoundOptions.parse(dtype, tpot_slo_ms, decode_instance_nodes, mtp, mtp_accepted, prefill_instance_nodes),
        alternatives=alternatives, modes=tuple(mode or PLAN_MODES),
    )
    answers = solve_plan(request)
    tiers = plan_tiers(request, answers)
    primary = answers[report.primary_mode(answers)]
    optimals = {mode: a.optimal for mode, a in answers.items() if a.optimal is not None}
    result = run_check(optimals if len(optimals) > 1 else primary.optimal, {(sc.pe_hw.name, sc.de_hw.name): sc for sc in request.candidates},
                       check, request.options, seeds, online, ttft_slo_s,
                       engine, executor, jobs, address)
    plain = None  # --dram-tier: the same question without the tier, played too, so the runner answers whether to buy it
    if result is not None and tiers is not None:
        bare = {mode: a.optimal for mode, a in tiers.without.items() if a.optimal is not None}
        plain = run_check(bare if len(bare) > 1 else next(iter(bare.values())), {(sc.pe_hw.name, sc.de_hw.name): sc for sc in
                          request.without_tier().candidates}, check, request.options, seeds, online, ttft_slo_s, engine, executor, jobs,
                          address) if bare else None
    if json_:
        extra = {} if plain is None else {"runner_check_without_tier": check_json(plain)["runner_check"],
                                          "runner_tier_verdict": tier_verdict_of(result, plain, dram_tier)}
        print_json(report.to_json(request, answers, tiers) | check_json(result) | extra)
        return
    report.render(request, answers, out_console(), tiers)
    label = "" if len(optimals) > 1 else f" ({primary.mode})"
    show_check(result, label + (f" with the {dram_tier:g} GB tier" if plain is not None else ""), note=plain is None)
    if plain is not None:
        show_check(plain, " without the tier")
        if (verdict := tier_verdict_of(result, plain, dram_tier)) is not None:
            out_console().print(verdict, highlight=False)
