"""Rendering of the ``bottleneck`` analysis: a rich report for people, a dict for ``--json``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dualpath_plan.bounds.bandwidth import Ceiling
from dualpath_plan.model.cluster import NodeSpec
from dualpath_plan.model.fmt import fmt
from dualpath_plan.planning.analysis import Analysis
from dualpath_plan.report import bounds as bounds_report
from dualpath_plan.report import steps as steps_report

MODE_WORDS = {"basic": "basic (PE path only)", "dualpath": "dualpath (best read split)"}


def to_json(analysis: Analysis) -> dict:
    """The stable ``--json`` schema of ``bottleneck`` (SI numbers under unit-suffixed keys)."""
    sc, node = analysis.scenario, analysis.pe_node
    out: dict = {
        "profile": sc.profile_label,
        "model": sc.model.name,
        "workload": sc.workload.name,
        "accounting": sc.accounting,
        "overrides": list(sc.overrides),
        "symbols": {"P": sc.P, "D": sc.D} | _symbols_json(node),
    }
    if not sc.homogeneous:
        out["profile_pe"], out["profile_de"] = sc.pe_hw.name, sc.de_hw.name
        out["symbols_de"] = _symbols_json(analysis.de_node)
    rng = analysis.pd_range
    out["pd_range"] = None if rng is None else {
        "lower": rng.lower,
        "upper": rng.upper if rng.upper != float("inf") else None,
        "inside": analysis.inside,
        "limits": rng.limits,  # both ends' (kept for readers of earlier output); by end:
        "lower_limits": rng.lower_limits,
        "upper_limits": rng.upper_limits,
        "lower_by": list(rng.lower_by),
        "upper_by": list(rng.upper_by),
        "violated": list(rng.violated),
    }
    out["modes"] = {mode: _ceiling_json(c) for mode, c in analysis.ceilings.items()}
    if analysis.steps is not None:
        out["step_time"] = steps_report.to_json(analysis.steps)
    return bounds_report.add_json(out, analysis)  # the LP keys (issue 3)


def _symbols_json(node: NodeSpec) -> dict:
    return {"g": node.g, "B_Bps": node.B, "s": node.s, "M_Bps": node.M}


def _ceiling_json(c: Ceiling) -> dict:
    return {
        "kv_Bps": c.kv_Bps,
        "R_p_Bps": c.R_p_Bps,
        "R_d_Bps": c.R_d_Bps,
        "de_read_fraction": c.de_read_fraction,
        "binding": list(c.binding),
        "utilization": c.utilization,
    }


def _symbols_table(analysis: Analysis) -> Table:
    sc = analysis.scenario
    title = "Cluster symbols (paper 4.2): g GPUs/node, B CNIC/GPU each way, s*B SNIC/node, M DRAM/node"
    table = Table(title=title, title_justify="left")
    for col in ("side", "nodes", "g", "B", "s", "s*B", "M"):
        table.add_column(col, justify="right" if col != "side" else "left")
    for side, hw, n, node in (("prefill", sc.pe_hw, sc.P, analysis.pe_node), ("decode", sc.de_hw, sc.D, analysis.de_node)):
        table.add_row(
            f"{side} ({hw.name})", f"{'P' if side == 'prefill' else 'D'} = {n}", str(node.g),
            fmt(node.B, "B/s"), fmt(node.s, ""), fmt(node.s * node.B, "B/s"), fmt(node.M, "B/s"),
        )
    return table


def _range_lines(analysis: Analysis) -> list[str]:
    rng, sc = analysis.pd_range, analysis.scenario
    if rng is None:
        return ["Bottleneck-free P/D range: not defined for a heterogeneous cluster (eq. (9) assumes one node type)."]
    if rng.violated:
        over = [name for name in rng.violated if name != "range"]  # "range": the ends cross
        why = [f"over capacity at every P/D: {', '.join(over)}"] if over else []
        if "range" in rng.violated:
            why.append(f"the lower end {fmt(rng.lower, '')} ({', '.join(rng.lower_by)}) is above the upper end "
                       f"{fmt(rng.upper, '')} ({', '.join(rng.upper_by)})")
        return [f"Bottleneck-free P/D range: empty; {'; '.join(why)}."]
    upper = fmt(rng.upper, "") if rng.upper != float("inf") else "unbounded"
    verdict = "inside" if analysis.inside else "OUTSIDE"
    lines = [
        f"Bottleneck-free P/D range ({sc.accounting} accounting): {fmt(rng.lower, '')} <= P/D <= {upper}",
        f"  lower end set by {', '.join(rng.lower_by) or 'nothing'}; upper end set by {', '.join(rng.upper_by) or 'nothing'}",
        f"  this cluster: P/D = {sc.P}/{sc.D} = {fmt(analysis.ratio, '')}: {verdict} the range",
    ]
    return lines


def _modes_table(analysis: Analysis) -> Table:
    table = Table(title="KV-load ceiling (I/O only)", title_justify="left")
    table.add_column("mode")
    table.add_column("KV ceiling", justify="right")
    table.add_column("DE-read fraction", justify="right")
    table.add_column("binding")
    for mode, c in analysis.ceilings.items():
        words = ", ".join(c.binding)
        table.add_row(MODE_WORDS[mode], fmt(c.kv_Bps, "B/s"), fmt(c.de_read_fraction, "%"), words)
    return table


def _util_table(analysis: Analysis) -> Table:
    table = Table(title="Utilisation at each KV ceiling", title_justify="left")
    table.add_column("resource")
    for mode in analysis.ceilings:
        table.add_column(mode, justify="right")
    first = next(iter(analysis.ceilings.values()))
    for name in first.utilization:
        table.add_row(name, *(fmt(c.utilization[name], "%") for c in analysis.ceilings.values()))
    return table


def render(analysis: Analysis, console: Console) -> None:
    """Print the analysis for a person."""
    sc = analysis.scenario
    changed = f", with --set {', '.join(sc.overrides)}" if sc.overrides else ""  # a key may change any profile: said after them all
    console.print(Text.assemble((sc.profile_label, "bold"), f" serving {sc.model.name} on {sc.workload.name}, {sc.accounting} accounting{changed}"))
    for line in bounds_report.verdict_lines(analysis):
        console.print(line, highlight=False)
    console.print(_symbols_table(analysis))
    for line in _range_lines(analysis):
        console.print(line)
    console.print(_modes_table(analysis))
    console.print(_util_table(analysis))
    bounds_report.render(analysis, console)
    if analysis.steps is not None:
        console.print(steps_report.table(analysis.steps))
