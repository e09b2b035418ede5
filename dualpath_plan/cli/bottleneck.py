"""``dualpath-plan bottleneck``: which resource binds, and what DualPath buys."""

from __future__ import annotations

from dualpath_plan.analysis import analyze
from dualpath_plan.cli.app import AccountingOpt, DOpt, JsonOpt, ModelOpt, POpt, ProfileFileOpt, ProfileOpt, SetOpt, WorkloadOpt, app, out_console, print_json
from dualpath_plan.report import bottleneck as report
from dualpath_plan.scenario import DEFAULT_D, DEFAULT_MODEL, DEFAULT_P, DEFAULT_WORKLOAD, build_scenario


@app.command()
def bottleneck(
    profile: ProfileOpt = None,
    model: ModelOpt = DEFAULT_MODEL,
    workload: WorkloadOpt = DEFAULT_WORKLOAD,
    P: POpt = DEFAULT_P,
    D: DOpt = DEFAULT_D,
    accounting: AccountingOpt = "exact",
    set_: SetOpt = None,
    profile_file: ProfileFileOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Show the P/D range, the KV ceilings with and without DualPath, and what binds."""
    scenario = build_scenario(
        profile, model=model, workload=workload, P=P, D=D, accounting=accounting,
        profile_files=tuple(profile_file or ()), sets=tuple(set_ or ()),
    )
    analysis = analyze(scenario)
    if json_:
        print_json(report.to_json(analysis))
    else:
        report.render(analysis, out_console())
