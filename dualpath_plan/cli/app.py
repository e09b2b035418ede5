"""The typer application and the options every scenario command shares."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from dualpath_plan.report.jsonable import jsonable

app = typer.Typer(
    name="dualpath-plan",
    help="Size prefill/decode-disaggregated LLM clusters that load KV-Cache from storage (DualPath model).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
err_console = Console(stderr=True, soft_wrap=True)


def _print_version(value: bool) -> None:
    if value:
        from dualpath_plan import __version__

        sys.stdout.write(f"dualpath-plan {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)] = False,
) -> None:
    pass  # the options every command shares; the help text is the app's

ProfileOpt = Annotated[Optional[str], typer.Option("--profile", metavar="NAME", help="Hardware profile of every node (see `profiles list`).")]
ModelOpt = Annotated[str, typer.Option("--model", metavar="NAME", help="Model profile.")]
WorkloadOpt = Annotated[str, typer.Option("--workload", metavar="NAME", help="Workload profile.")]
POpt = Annotated[int, typer.Option("-P", metavar="NODES", help="Prefill nodes.")]
DOpt = Annotated[int, typer.Option("-D", metavar="NODES", help="Decode nodes.")]
AccountingOpt = Annotated[str, typer.Option("--accounting", metavar="exact|paper", help="exact (adds miss KV and write-back) or paper (hit KV only).")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Override one profile field, KEY=VALUE (pe.KEY / de.KEY for one side). Repeatable.")]
ProfileFileOpt = Annotated[
    Optional[list[Path]],
    typer.Option("--profile-file", metavar="FILE", help="Extra profile TOML file (its name is the file stem). Repeatable.", exists=True, dir_okay=False, resolve_path=True),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (SI units) instead of tables.")]
PeProfileOpt = Annotated[Optional[str], typer.Option("--pe-profile", metavar="NAME", help="Hardware profile of the prefill nodes (overrides --profile for them).")]
DeProfileOpt = Annotated[Optional[str], typer.Option("--de-profile", metavar="NAME", help="Hardware profile of the decode nodes (overrides --profile for them).")]
DtypeOpt = Annotated[Optional[str], typer.Option("--dtype", metavar="fp8|bf16", help="Prefill GEMM dtype, fp8 or bf16 (default: the model's own).")]
TpotOpt = Annotated[float, typer.Option("--tpot-slo-ms", metavar="MS", help="Decode TPOT SLO in ms (the paper's 50).")]
DecodeInstanceOpt = Annotated[
    Optional[int],
    typer.Option("--decode-instance-nodes", metavar="NODES", help="Decode nodes one model instance spans (weights sharded over its GPUs); default: all D."),
]


def out_console() -> Console:
    """The stdout console for human output."""
    return Console(soft_wrap=False)


def print_json(payload: dict) -> None:
    """Write ``payload`` as JSON to stdout (non-finite numbers become null)."""
    sys.stdout.write(json.dumps(jsonable(payload), indent=2) + "\n")
