"""Rendering of ``sweep``: a table of the best split per hardware profile, CSV, JSON and a plot."""

from __future__ import annotations

import csv
from pathlib import Path

from rich.console import Console
from rich.table import Table

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.fmt import fmt
from dualpath_plan.planning.sweep import SweepPoint, SweepResult
from dualpath_plan.report.files import write_atomic

CSV_FIELDS = ("profile", "P", "D", "gpus", "mode", "turns_per_s", "agents_per_s", "turns_per_s_per_gpu", "kv_at_bound_Bps", "de_read_fraction", "binding",
              "serves_nothing_because")


def point_row(p: SweepPoint) -> dict:
    """One point as SI numbers under unit-suffixed keys."""
    b = p.bound
    return {
        "profile": p.profile, "P": p.P, "D": p.D, "gpus": p.gpus, "mode": p.mode,
        "turns_per_s": b.turns_per_s, "agents_per_s": b.agents_per_s, "turns_per_s_per_gpu": p.turns_per_s_per_gpu,
        "kv_at_bound_Bps": b.kv_Bps, "de_read_fraction": b.de_read_fraction, "binding": list(b.binding),  # as bottleneck names it
        "serves_nothing_because": list(p.serves_nothing_because),
    }


def to_json(result: SweepResult) -> dict:
    return {
        "gpus_budget": result.gpus_budget,
        "best": {prof: {mode: point_row(p) for mode, p in modes.items()} for prof, modes in result.best.items()},
        "points": [point_row(p) for p in result.points],
    }


def render(result: SweepResult, console: Console) -> None:
    title = f"Best P/D split per hardware profile within {result.gpus_budget} GPUs (throughput bounds; ties: most oracle headroom, then fewest prefill nodes)"
    table = Table(title=title, title_justify="left")
    for col in ("profile", "dualpath best", "basic best", "gain", "oracle", "binding (dualpath)"):
        table.add_column(col, justify="left" if col in ("profile", "binding (dualpath)") else "right", overflow="fold")  # fold long names, never cut them
    for prof, modes in result.best.items():
        d, b, o = modes["dualpath"], modes["basic"], modes["oracle"]
        table.add_row(
            f"{prof} ({d.gpus} GPUs)",
            _split(d),
            _split(b),
            fmt(d.bound.turns_per_s / b.bound.turns_per_s, "x") if b.bound.turns_per_s > 0 else "n/a",
            fmt(o.bound.turns_per_s, "turns/s"),
            ", ".join(d.bound.binding) if d.bound.turns_per_s > 0 else "serves nothing: " + "; ".join(w.replace("_", " ") for w in d.serves_nothing_because),
        )
    console.print(table)


def _split(p: SweepPoint) -> str:
    """The best split and its bound, or "none" when no split of the budget serves anything."""
    return f"{p.P}P{p.D}D {fmt(p.bound.turns_per_s, 'turns/s')}" if p.bound.turns_per_s > 0 else "none"


def write_csv(result: SweepResult, path: Path, flag: str = "--csv") -> None:
    def write(tmp: Path) -> None:
        with tmp.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
            writer.writeheader()
            for p in result.points:
                row = point_row(p)
                writer.writerow({**row, **{key: " ".join(row[key]) for key in ("binding", "serves_nothing_because")}})

    write_atomic(path, write, flag)


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend, or a one-line error naming the extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlanError("--plot needs matplotlib: pip install 'dualpath-plan[plot]'", 1) from None
    return plt


def write_plot(result: SweepResult, path: Path, flag: str = "--plot") -> None:
    """Turns/s against the prefill share P/(P+D), one colour per profile, solid dualpath, dashed basic."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, prof in enumerate(result.best):
        color = f"C{i % 10}"
        for mode, style in (("dualpath", "-"), ("basic", "--")):
            pts = [p for p in result.points if p.profile == prof and p.mode == mode]
            ax.plot([p.P / (p.P + p.D) for p in pts], [p.bound.turns_per_s for p in pts], style, color=color, label=f"{prof} {mode}")
    ax.set_xlabel("prefill share of nodes, P/(P+D)")
    ax.set_ylabel("throughput bound [turns/s]")
    ax.set_title(f"Throughput bound per P/D split within {result.gpus_budget} GPUs")
    ax.legend(fontsize="small", ncol=2)
    ax.grid(alpha=0.3)
    write_atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120), flag)
    plt.close(fig)
