"""``dualpath-plan calibrate``: fit a hardware profile's step-time tables to kernel measurements and write it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dualpath_plan.cli.app import JsonOpt, ProfileFileOpt, app, out_console, print_json

FromOpt = Annotated[str, typer.Option("--from", metavar="aiconfigurator|FILE.csv", help="The measurements: AIConfigurator's database "
                                      "(the 'calibrate' extra) or a CSV of your own (columns: op,dtype,shape,tokens,ep_size,path,context,latency_us).")]


@app.command()
def calibrate(
    source: FromOpt,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", metavar="FILE.toml", help="Write the calibrated hardware profile here.")] = None,
    base: Annotated[Optional[str], typer.Option("--base", metavar="NAME", help="The hardware profile whose other fields (NICs, DRAM, HBM, "
                                                "peaks, prices) the new one keeps (default with --system: that system's shipped profile).")] = None,
    system: Annotated[Optional[str], typer.Option("--system", metavar="NAME", help="With --from aiconfigurator: the system, e.g. h200_sxm.")] = None,
    backend: Annotated[Optional[str], typer.Option("--backend", metavar="sglang|trtllm|vllm", help="With --from aiconfigurator: whose "
                                                   "kernels (default sglang).")] = None,
    version: Annotated[Optional[str], typer.Option("--version", metavar="V", help="With --from aiconfigurator: the framework version (default: "
                                                   "the newest that has each table).")] = None,
    ops: Annotated[Optional[str], typer.Option("--ops", metavar="F1,F2", help="Table families to fit (gemm, grouped_gemm, mla_decode, "
                                               "mla_prefill, a2a_ll, a2a_normal; default all that are measured).")] = None,
    keep_implausible: Annotated[bool, typer.Option("--keep-implausible", help="Fit rows faster than the datasheet allows too.")] = False,
    drop_implausible: Annotated[bool, typer.Option("--drop-implausible", help="Leave rows faster than the datasheet allows out of the fit.")] = False,
    profile_file: ProfileFileOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Fit a hardware profile's step-time tables to measured kernel latencies and write the profile."""
    from dualpath_plan import api as dp
    from dualpath_plan.report import calibrate as report
    from dualpath_plan.report.files import check_output, write_atomic

    if output is not None:
        check_output(output, "-o", ".toml")
    result = dp.calibrate(source, base=base, system=system, backend=backend, version=version,
                          ops=None if ops is None else tuple(o.strip() for o in ops.split(",")),
                          keep_implausible=keep_implausible, drop_implausible=drop_implausible, profile_files=tuple(profile_file or ()))
    if output is not None:
        write_atomic(output, lambda tmp: Path(tmp).write_text(result.text), "-o")
    shown = None if output is None else str(output)
    if json_:
        print_json(report.to_json(result, shown))
    else:
        report.render(result, shown, out_console())
