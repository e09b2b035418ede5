"""``dualpath-plan profiles list|show|workload-from-trace``: the hardware, model and workload profiles."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dualpath_plan.cli.app import JsonOpt, ProfileFileOpt, app, out_console, print_json
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import KINDS, catalog, did_you_mean

profiles_app = typer.Typer(help="List or show hardware, model and workload profiles.", no_args_is_help=True)
app.add_typer(profiles_app, name="profiles")


@profiles_app.command("list")
def list_(profile_file: ProfileFileOpt = None, json_: JsonOpt = False) -> None:
    """List every known profile, by kind."""
    from dualpath_plan.report import profiles as report

    cat = catalog(tuple(profile_file or ()))
    if json_:
        print_json(report.list_json(cat))
    else:
        report.render_list(cat, out_console())


@profiles_app.command("show")
def show(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Profile name.")],
    kind: Annotated[Optional[str], typer.Option("--kind", metavar="hardware|model|workload|storage", help="hardware, model, workload or storage (when a name is in several).")] = None,
    profile_file: ProfileFileOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Show one profile's values (in the file's units) and the source of each."""
    from dualpath_plan.report import profiles as report

    cat = catalog(tuple(profile_file or ()))
    if kind is not None and kind not in KINDS:
        raise PlanError(f"--kind {kind!r} is not allowed; must be one of {', '.join(KINDS)}", 2)
    kinds = [k for k in (KINDS if kind is None else (kind,)) if name in cat.files[k]]
    if not kinds:
        known = "; ".join(f"{k}: {', '.join(cat.names(k))}" for k in KINDS)
        every = [n for k in KINDS for n in cat.names(k)]
        raise PlanError(f"unknown profile {name!r}{did_you_mean(name, every)}; known profiles: {known}", 2)
    if len(kinds) > 1:
        raise PlanError(f"profile {name!r} is a {' and a '.join(kinds)} profile; pass --kind", 2)
    profile = cat.get(kinds[0], name)
    if json_:
        print_json(report.show_json(kinds[0], profile))
    else:
        report.render_show(kinds[0], profile, out_console())


@profiles_app.command("workload-from-trace")
def workload_from_trace(
    trace: Annotated[Path, typer.Argument(metavar="FILE", help="The trace.", dir_okay=False)],
    out: Annotated[Path, typer.Option("-o", "--output", metavar="OUT.toml", help="The workload profile to write (its name is the file stem).",
                                      dir_okay=False)],
    format_: Annotated[Optional[str], typer.Option("--format", metavar="jsonl|weka|tracelab|copilot|bailian|mooncake|dynamo",
                                                   help="The trace's format (default jsonl, this project's own).")] = None,
    description: Annotated[Optional[str], typer.Option("--description", metavar="TEXT", help="The profile's one-line description.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Write a workload profile standing for a trace: Table 2's columns and the mean tool time computed on it, cited."""
    from dualpath_plan.model.profiles import load_file
    from dualpath_plan.model.trace.ops import drawable_workload_toml, trace_stats
    from dualpath_plan.report import profiles as report
    from dualpath_plan.report.files import check_output, write_atomic

    check_output(out, "-o", ".toml")
    text = drawable_workload_toml(trace_stats([trace], format_), trace, format_, out.stem, description)
    write_atomic(out, lambda tmp: tmp.write_text(text, encoding="utf-8"), "-o")
    profile = load_file(out)  # the file it wrote loads as every workload profile does
    if json_:
        print_json(report.show_json("workload", profile))
    else:
        out_console().print(f"wrote {out}; use it with --profile-file {out} --workload {out.stem}", highlight=False)
        report.render_show("workload", profile, out_console())
