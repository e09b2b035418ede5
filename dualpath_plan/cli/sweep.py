"""``dualpath-plan sweep``: compare hardware generations and P/D splits at an equal GPU budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dualpath_plan.bounds.decode import DEFAULT_TPOT_SLO_MS
from dualpath_plan.cli.app import (
    AccountingOpt,
    CheckOpt,
    CheckSeedsOpt,
    DecodeInstanceOpt,
    DtypeOpt,
    JsonOpt,
    ModelOpt,
    ProfileFileOpt,
    SetOpt,
    TpotOpt,
    WorkloadOpt,
    app,
    out_console,
    print_json,
    check_json,
    run_check,
    show_check,
)
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import DEFAULT_MODEL, DEFAULT_WORKLOAD, build_scenario
from dualpath_plan.planning.sweep import DEFAULT_GPUS


@app.command()
def sweep(
    profile: Annotated[Optional[list[str]], typer.Option("--profile", metavar="NAME", help="Hardware profile to compare (repeatable; default: every known one).")] = None,
    gpus: Annotated[Optional[int], typer.Option("--gpus", metavar="GPUS", help=f"GPU budget per cluster; each profile gets floor(gpus/g) nodes "
                                                 f"(default {DEFAULT_GPUS}).")] = None,
    budget_usd: Annotated[Optional[float], typer.Option("--budget-usd", metavar="USD", help="Money budget instead: each profile gets the "
                                                         "nodes it buys at its price (--node-cost or the profile's).")] = None,
    budget_usd_per_hour: Annotated[Optional[float], typer.Option("--budget-usd-per-hour", metavar="USD/h", help="Rent budget instead: each "
                                                                  "profile gets the nodes it rents at its rent (--rent or the profile's).")] = None,
    node_cost: Annotated[Optional[list[str]], typer.Option("--node-cost", "--price", metavar="NAME=USD", help="USD per node, as USD (every profile; --price is the same) "
                                                            "or NAME=USD. Repeatable.")] = None,
    rent: Annotated[Optional[list[str]], typer.Option("--rent", metavar="NAME=USD/h", help="Rent per node-hour, as USD (every profile) or NAME=USD. "
                                                       "Repeatable.")] = None,
    model: ModelOpt = DEFAULT_MODEL,
    workload: WorkloadOpt = DEFAULT_WORKLOAD,
    accounting: AccountingOpt = "exact",
    set_: SetOpt = None,
    profile_file: ProfileFileOpt = None,
    dtype: DtypeOpt = None,
    tpot_slo_ms: TpotOpt = DEFAULT_TPOT_SLO_MS,
    decode_instance_nodes: DecodeInstanceOpt = None,
    csv_path: Annotated[Optional[Path], typer.Option("--csv", metavar="FILE", help="Write every point to this CSV file.")] = None,
    plot_path: Annotated[Optional[Path], typer.Option("--plot", metavar="FILE", help="Write the bounds against P/D as a PNG or SVG picture (needs the 'plot' extra).")] = None,
    check: CheckOpt = None,
    seeds: CheckSeedsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Bound every P/D split of a GPU budget for each hardware profile; show the best per profile."""
    from dualpath_plan.bounds.lp import BoundOptions
    from dualpath_plan.model.profiles import catalog
    from dualpath_plan.model.money import PURCHASE, RENT
    from dualpath_plan.planning.request import parse_node_costs
    from dualpath_plan.planning.sweep import priced_sweep
    from dualpath_plan.report import plots
    from dualpath_plan.report import sweep as report
    from dualpath_plan.report.files import check_output

    if csv_path is not None:
        check_output(csv_path, "--csv")
    if plot_path is not None:
        check_output(plot_path, "--plot", plots.FORMATS)
        if csv_path is not None and Path(csv_path).resolve() == Path(plot_path).resolve():
            raise PlanError(f"--csv and --plot are both {plot_path}; give two files", 2)
        plots.pyplot()  # fail before any work or file if matplotlib is missing
    files = tuple(profile_file or ())
    names = profile or catalog(files).names("hardware")
    scenarios = [
        build_scenario(name, model=model, workload=workload, accounting=accounting, profile_files=files, sets=tuple(set_ or ()))
        for name in names
    ]
    options = BoundOptions.parse(dtype, tpot_slo_ms, decode_instance_nodes)
    result = priced_sweep(scenarios, gpus, options, budget_usd=budget_usd, budget_usd_per_hour=budget_usd_per_hour,
                          prices_usd=parse_node_costs(node_cost or (), names, PURCHASE), rents_usd_per_hour=parse_node_costs(rent or (), names, RENT))
    checks = {sc.profile_label: run_check(result.optimal[sc.profile_label]["dualpath"], {(sc.pe_hw.name, sc.de_hw.name): sc}, check, options,
                                          seeds) for sc in scenarios}
    checks = {name: c for name, c in checks.items() if c is not None}
    if csv_path is not None:
        report.write_csv(result, csv_path)
    if plot_path is not None:
        plots.write(plots.sweep_figure(result), plot_path, "--plot")
    if json_:
        print_json(report.to_json(result) | check_json(checks))
        return
    report.render(result, out_console())
    for name, c in checks.items():
        show_check(c, f" ({name})")
