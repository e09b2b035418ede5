"""Rendering of the symbolic model (``formulas``): plain text, LaTeX or JSON strings."""

from __future__ import annotations

import sympy as sp
from rich.console import Console
from rich.table import Table

from dualpath_plan.bounds.symbolic import FormulaSheet

EQ1_NOTE = (
    "Note: eq. (1) as printed says the PE CNIC read side is free when s <= g; the algebra "
    "2*s*B/g <= B gives s <= g/2, which dualpath-plan enforces."
)
PAPER_NUMBERS = {"pe_cnic_write": "(3)", "de_cnic_read": "(5)", "de_cnic_write": "(7)", "de_dram": "(8)", "pe_cnic_read": "(1)"}


def _text(expr: sp.Expr, latex: bool) -> str:
    return sp.latex(expr) if latex else sp.sstr(expr)


def _words(latex: bool) -> tuple[str, str, str]:
    """``(P/D, <=, >=)`` as plain text or as LaTeX, so that a whole printed relation pastes into either."""
    return (r"\frac{P}{D}", r"\leq", r"\geq") if latex else ("P/D", "<=", ">=")


def to_json(sheet: FormulaSheet, latex: bool = False) -> dict:
    """Strings of every formula (sympy syntax, or LaTeX with ``latex``)."""
    t = lambda e: _text(e, latex)  # noqa: E731
    return {
        "accounting": sheet.accounting,
        "loads_per_unit": {n: t(e) for n, e in sheet.per_unit_loads.items()},
        "capacity_per_unit": {n: t(e) for n, e in sheet.capacities.items()},
        "pd_bounds": {n: {"kind": kind, "bound": t(b), "paper_eq": PAPER_NUMBERS.get(n)} for n, (kind, b) in sheet.bounds.items()},
        "conditions_le_zero": {n: t(e) for n, e in sheet.conditions.items()},
        "pd_range": {"lower": t(sheet.lower), "upper": t(sheet.upper)},
        "storage_pd_bounds": {n: t(b) for n, b in sheet.storage_bounds.items()},
        "note": EQ1_NOTE,
    }


def render(sheet: FormulaSheet, console: Console, latex: bool = False) -> None:
    """Print the loads, the inequalities and the derived range."""
    t = lambda e: _text(e, latex)  # noqa: E731
    console.print(f"Symbolic model, {sheet.accounting} accounting (symbols: P, D nodes; g GPUs/node; B, s*B, M bytes/s; "
                  "R_p, R_d hit-KV bytes/s on the PE and DE paths; mu, omega miss and write-back bytes per hit byte)")
    loads = Table(title="Load per unit and capacity", title_justify="left")
    for col in ("resource", "load per unit", "capacity per unit"):
        loads.add_column(col)
    for name, expr in sheet.per_unit_loads.items():
        loads.add_row(name, t(expr), t(sheet.capacities[name]))
    console.print(loads)
    bounds = Table(title="P/D bounds with both SNICs saturated (R_p = P*s*B, R_d = D*s*B)", title_justify="left")
    for col in ("resource", "paper eq.", "bound"):
        bounds.add_column(col)
    pd, le, ge = _words(latex)
    for name, (kind, expr) in sheet.bounds.items():
        rel = ge if kind == "lower" else le
        bounds.add_row(name, PAPER_NUMBERS.get(name, "-"), f"{pd} {rel} {t(expr)}")
    console.print(bounds)
    for name, expr in sheet.conditions.items():
        console.print(" ".join(filter(None, ("condition from", name, PAPER_NUMBERS.get(name, "")))) + f": {t(expr)} {le} 0")
    console.print(f"Range (9): {t(sheet.lower)} {le} {pd} {le} {t(sheet.upper)}")
    for name, expr in sheet.storage_bounds.items():
        console.print(f"With a storage cluster (bottleneck --storage-nodes; n_s storage nodes per decode node of S_r read, S_w write bytes/s), {name} "
                      f"adds the upper end {pd} {le} {t(expr)}")
    console.print(EQ1_NOTE)
