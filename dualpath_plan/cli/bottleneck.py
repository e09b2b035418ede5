"""``dualpath-plan bottleneck``: which resource binds, and what DualPath buys."""

from __future__ import annotations

from dataclasses import replace

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
    DeProfileOpt,
    DOpt,
    DtypeOpt,
    JsonOpt,
    ModelOpt,
    PeProfileOpt,
    POpt,
    ProfileFileOpt,
    ProfileOpt,
    SetOpt,
    StorageNodesOpt,
    DramTierOpt,
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
from dualpath_plan.model.scenario import DEFAULT_D, DEFAULT_MODEL, DEFAULT_P, build_scenario


@app.command()
def bottleneck(
    profile: ProfileOpt = None,
    model: ModelOpt = DEFAULT_MODEL,
    workload: WorkloadOpt = None,
    trace: TraceOpt = None,
    trace_format: TraceFormatOpt = None,
    time_scale: TimeScaleOpt = 1.0,
    tool_scale: ToolScaleOpt = 1.0,
    P: POpt = DEFAULT_P,
    D: DOpt = DEFAULT_D,
    accounting: AccountingOpt = "exact",
    set_: SetOpt = None,
    profile_file: ProfileFileOpt = None,
    json_: JsonOpt = False,
    pe_profile: PeProfileOpt = None,
    de_profile: DeProfileOpt = None,
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
    storage: StorageOpt = None,
    storage_nodes: StorageNodesOpt = None,
    storage_retention_s: StorageRetentionOpt = 0.0,
    dram_tier: DramTierOpt = None,
) -> None:
    """Show the P/D range, the KV ceilings and throughput bounds with and without DualPath, and what binds."""
    from dualpath_plan.bounds.lp import BoundOptions
    from dualpath_plan.planning.analysis import analyze  # scipy.optimize (the LP) only for the commands that solve
    from dualpath_plan.planning.storage import check_runner_storage
    from dualpath_plan.report import bottleneck as report

    options = BoundOptions.parse(dtype, tpot_slo_ms, decode_instance_nodes, mtp, mtp_accepted, prefill_instance_nodes)
    scenario = build_scenario(
        profile, model=model, workload=workload_name(workload, trace, trace_format, time_scale, tool_scale), P=P, D=D, accounting=accounting,
        pe_profile=pe_profile, de_profile=de_profile, profile_files=tuple(profile_file or ()), sets=tuple(set_ or ()),
        storage=storage, storage_nodes=storage_nodes, storage_retention_s=storage_retention_s, dram_tier_GB=dram_tier,
    )
    check_runner_storage(scenario, check)
    analysis = analyze(scenario, options)
    result = run_check(analysis.optimal["dualpath"], {(scenario.pe_hw.name, scenario.de_hw.name): scenario}, check, options, seeds, online, ttft_slo_s,
                       engine, executor, jobs, address)
    plain = None  # --dram-tier: the same nodes without the tier, played too, so the runner answers whether to buy it
    if result is not None and scenario.dram_tier_GB:
        bare = replace(scenario, dram_tier_GB=None)
        plain = run_check(analyze(bare, options).optimal["dualpath"], {(bare.pe_hw.name, bare.de_hw.name): bare}, check, options, seeds,
                          online, ttft_slo_s, engine, executor, jobs, address)
    if json_:
        extra = {} if plain is None else {"runner_check_without_tier": check_json(plain)["runner_check"],
                                          "runner_tier_verdict": tier_verdict_of(result, plain, dram_tier)}
        print_json(report.to_json(analysis) | check_json(result) | extra)
        return
    report.render(analysis, out_console())
    show_check(result, "" if plain is None else f" with the {dram_tier:g} GB tier", note=plain is None)
    if plain is not None:
        show_check(plain, " without the tier")
        if (verdict := tier_verdict_of(result, plain, dram_tier)) is not None:
            out_console().print(verdict, highlight=False)
