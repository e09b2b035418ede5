"""Rendering of ``dualpath-plan calibrate``: each fitted table with its rows, errors and worst row, and the values."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dualpath_plan.calibration.calibrate import Calibration


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def to_json(c: Calibration, output: str | None = None) -> dict:
    """The fit as ``calibrate --json`` prints it: the base, the output file, the values (file units) and one
    entry per fitted table (errors as fractions)."""
    return {
        "base": c.base.name,
        "output": output,
        "values": c.fit.values,
        "tables": [{"table": r.table, "keys": list(c.fit.keys_of.get(r.table, ())), "origin": c.origins[r.table], "rows_fit": r.rows_fit,
                    "rows_held_out": r.rows_held_out, "mape_fit": r.mape_fit, "mape_held_out": r.mape_held_out, "worst_row": r.worst_where,
                    "worst_error": r.worst_error, "rows_dropped_implausible": r.dropped, "note": r.note} for r in c.reports],
        "rows_not_asked": c.fit.not_asked,
    }


def render(c: Calibration, output: str | None, console: Console) -> None:
    table = Table(title=f"Step-time tables fitted onto {c.base.name} (every fifth row held out of the fit)", title_justify="left")
    for name in ("table", "rows fit", "held out", "error fit", "error held out", "worst row", "worst error"):
        table.add_column(name, justify="left" if name in ("table", "worst row") else "right")
    for r in c.reports:
        table.add_row(r.table, f"{r.rows_fit:,}", f"{r.rows_held_out:,}", _pct(r.mape_fit), _pct(r.mape_held_out), r.worst_where.rsplit("/", 1)[-1],
                      f"{100 * r.worst_error:+.0f} %")
    console.print(table)
    console.print("Columns: error, the mean absolute percentage error of the step-time model's time for each row; worst, the row it "
                  "misses most (signed: + means the model is slower)", highlight=False)
    console.print("fitted values (file units):", highlight=False)
    for key, value in c.fit.values.items():
        console.print(f"  {key} = {value}", highlight=False, markup=False)
    dropped = sum(r.dropped for r in c.reports)
    if dropped:
        console.print(f"{dropped} rows faster than {c.base.gpu}'s datasheet were left out (--drop-implausible)", highlight=False)
    if c.fit.not_asked:
        rows = ", ".join(f"{n:,} {family}" for family, n in c.fit.not_asked.items())
        console.print(f"rows of families --ops did not name, left out (their tables keep {c.base.name}'s): {rows}", highlight=False)
    console.print(f"wrote {output}" if output else "no file written (give -o FILE)", highlight=False, markup=False)
