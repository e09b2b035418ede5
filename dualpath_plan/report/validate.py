"""Rendering of ``validate``: the paper's figures next to ours, as a rich table or a ``--json`` dict."""

from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.units import GB, PETA
from dualpath_plan.validation import CONTEXT_16K_TOKENS, CONTEXT_64K_TOKENS, TRACE_CONTEXT_TOKENS, Comparison, Condition, Validation

# Units shown to people where the SI unit reads badly: SI unit -> (factor from SI, shown unit).
DISPLAY_UNITS = {"B/FLOP": (PETA / GB, "GB/PFLOP"), "tokens/s": (1e-3, "k/s")}
ASSUMPTIONS_PAGE = "docs/assumptions.md (in the source repository)"
TITLES = {
    "paper": "The paper's published figures next to ours",
    "deployment": "Deployments next to the step-time model: tokens/s per node (k/s = 1,000 tokens/s), each held within a factor of 2",
}


def _shown(value: float, unit: str) -> str:
    factor, shown = DISPLAY_UNITS.get(unit, (1.0, unit))
    return fmt(None if value is None or math.isnan(value) else value * factor, shown)


def _condition_text(condition: tuple[Condition, ...]) -> str:
    parts = []
    for label, value, unit in condition:
        shown = value if isinstance(value, str) else fmt(value, unit, digits=6)
        parts.append(f"{label} {shown}")
    return ", ".join(parts)


def _row_json(row: Comparison) -> dict:
    figure = row.figure
    return {
        "name": figure.name,
        "source_section": figure.source_section,
        "si_unit": figure.unit,
        "paper_si": figure.paper_value,
        "ours_si": row.ours,
        "rel_error_frac": row.rel_error,
        "condition": [{"label": label, "value": value, "si_unit": unit} for label, value, unit in figure.condition],
        "needs_sim": figure.needs_sim,
        "kind": figure.kind,
        "tolerance_factor": figure.tolerance,
    }


def to_json(result: Validation) -> dict:
    """``{"rows": [...], "skipped": [...], "kernel_fits": [...] or null, "assumptions": ...}``: SI values, their unit under
    ``si_unit``, errors as fractions."""
    kernels = None if result.kernels is None else [
        {"profile": k.profile, "table": k.table, "origin": k.origin, "rows_fit": k.rows_fit, "mape_fit": k.mape_fit,
         "rows_held_out": k.rows_held_out, "mape_held_out": k.mape_held_out, "worst_row": k.worst_where, "worst_error": k.worst_error}
        for k in result.kernels]
    return {"rows": [_row_json(row) for row in result.rows], "skipped": list(result.skipped), "kernel_fits": kernels,
            "assumptions": ASSUMPTIONS_PAGE}


def _kernel_table(result: Validation) -> Table:
    table = Table(title="Kernel tables of the shipped profiles, fitted to AIConfigurator's measurements (every fifth row held out)",
                  title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for header, justify in (("profile", "left"), ("table", "left"), ("rows", "right"), ("error", "right"), ("held out", "right"),
                            ("error", "right"), ("worst", "right")):
        table.add_column(header, justify=justify, no_wrap=header != "table", min_width=len(header))
    pct = lambda x: "-" if x is None else f"{100 * x:.1f} %"  # noqa: E731
    for k in result.kernels or ():
        table.add_row(k.profile, k.table, f"{k.rows_fit}", pct(k.mape_fit), f"{k.rows_held_out}", pct(k.mape_held_out), f"{100 * k.worst_error:+.0f} %")
    return table


def _condition_groups(rows: tuple[Comparison, ...]) -> list[tuple[int, int, str]]:
    """(first row number, last row number, condition text) for each run of rows with one condition."""
    groups: list[tuple[int, int, str]] = []
    for number, row in enumerate(rows, start=1):
        text = _condition_text(row.figure.condition)
        if groups and groups[-1][2] == text:
            groups[-1] = (groups[-1][0], number, text)
        else:
            groups.append((number, number, text))
    return groups


def _table(kind: str, numbered: list[tuple[int, Comparison]]) -> Table:
    table = Table(title=TITLES[kind], title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for header, justify in (("#", "right"), ("figure", "left"), ("source", "left"), ("paper" if kind == "paper" else "theirs", "right"),
                            ("ours", "right"), ("error", "right")):
        table.add_column(header, justify=justify, no_wrap=True, min_width=len(header) + 1)
    for number, row in numbered:
        figure = row.figure
        error = row.rel_error
        sign = "+" if error is not None and error > 0 else ""
        table.add_row(fmt(number, "", digits=3), figure.name, figure.source_section, _shown(figure.paper_value, figure.unit),
                      _shown(row.ours, figure.unit), sign + fmt(error, "%"))
    return table


def render(result: Validation, console: Console) -> None:
    """A numbered table per kind of row (published value, ours, relative error), then the conditions of each run of rows."""
    numbered = list(enumerate(result.rows, start=1))
    for kind in TITLES:
        rows = [(n, r) for n, r in numbered if r.figure.kind == kind]
        if rows:
            console.print(_table(kind, rows))
    contexts = ", ".join(f"{tag} = {fmt(tokens, 'tokens', digits=6)}" for tag, tokens in
                         (("16K", CONTEXT_16K_TOKENS), ("64K", CONTEXT_64K_TOKENS), ("32.7K", TRACE_CONTEXT_TOKENS)))
    console.print(f"\nerror = ours / published - 1; context {contexts}. Conditions:")
    for first, last, text in _condition_groups(result.rows):
        rows = fmt(first, "", digits=3) if first == last else f"{fmt(first, '', digits=3)}-{fmt(last, '', digits=3)}"
        console.print(f"  {rows}: {text}")
    for name in result.skipped:
        console.print(f"skipped (needs the fluid simulator; run without --skip-sim): {name}")
    if result.kernels is not None:
        console.print(_kernel_table(result))
        console.print("error: mean absolute percentage error of the step-time model's time for each measured row (the tables' sources "
                      "name the rows and the worst one)")
    console.print(f"Every modelling choice behind these values, with its source: {ASSUMPTIONS_PAGE}")
