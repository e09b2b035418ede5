"""``dualpath-plan formulas``: the symbolic model, its inequalities and the derived P/D range."""

from __future__ import annotations

from typing import Annotated

import typer

from dualpath_plan.cli.app import AccountingOpt, JsonOpt, app, out_console, print_json
from dualpath_plan.model.errors import PlanError


@app.command()
def formulas(
    latex: Annotated[bool, typer.Option("--latex", help="Print LaTeX instead of plain formulas.")] = False,
    accounting: AccountingOpt = "exact",
    json_: JsonOpt = False,
) -> None:
    """Print the symbolic link loads, the P/D bounds of equations (1)-(8) and the range (9)."""
    if accounting not in ("paper", "exact"):
        raise PlanError(f"--accounting {accounting!r} is not allowed; must be one of exact, paper", 2)
    from dualpath_plan.bounds.symbolic import formula_sheet
    from dualpath_plan.report import formulas as report  # sympy only for this command

    sheet = formula_sheet(accounting)
    if json_:
        print_json(report.to_json(sheet, latex))
    else:
        report.render(sheet, out_console(), latex)
