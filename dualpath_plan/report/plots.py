"""The pictures (the ``plot`` extra: matplotlib on its file-only Agg backend), PNG or SVG by the file's name.

* ``sweep --plot``: the throughput bound against P/D (log scale) for basic (dashed), DualPath (solid) and the
  Oracle (dotted), one colour per profile, over the P/D span of the splits drawn; each profile's range of P/D where
  no NIC or DRAM binds (eq. (9); compute or decode may still bind inside it) as a bar of its colour along the
  bottom, one bar per profile so equal ranges stay apart, its DualPath optimal set marked with rings and the pick with a star named by what binds it. DualPath is
  drawn widest and on top, the Oracle thinnest and below, so where curves coincide each stays visible; the
  legend sits outside the axes, so it covers no curve. After ``--check``, the runner's steady turns/s of each
  split it played, a filled circle (DualPath) or square (basic) with its 95 % interval. A sweep of node budgets
  or of several budgets is drawn from its grid (``report.gridplots``).
* ``compare --plot``: per profile in the order given, the storage-NIC and host-link bytes per dense FLOP beside
  the workload's cache-compute ratio (log scale), and the basic and DualPath bounds at the shared GPU budget.
* ``simulate --plot``: per policy (a column each), over simulated time, the utilisation of every resource kind
  that reached 1 % in some window, the running agents and the waiting turns, the mean requests in each stage where
  a turn waits (``sim.stages.WAITS``: for a PE, a DE, in a read queue, for buffer room, ...), and the TTFT p50 and p99 of the
  turns whose first token came in each window (log scale; ``report.timeseries``: the same windows and numbers as
  ``--timeseries``), every column on the same scales.

Each figure is built by a function that returns it, so the tests read the data it plots; :func:`write` saves it
under a temporary name and renames it (``report.files``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.workload import Trajectories
from dualpath_plan.planning.compare import Comparison
from dualpath_plan.planning.sweep import SweepPoint, SweepResult
from dualpath_plan.report.compare import GB_PER_PFLOP
from dualpath_plan.report.sweep import budget_text
from dualpath_plan.report.files import write_atomic
from dualpath_plan.report.timeseries import timeseries_rows
from dualpath_plan.sim.runner import SimResult
from dualpath_plan.sim.stages import WAITS, WORDS as STAGE_WORDS

FORMATS = (".png", ".svg")
STYLES = {"oracle": (":", 1.2, 1), "basic": ("--", 1.6, 2), "dualpath": ("-", 2.2, 3)}  # line, width, z-order (drawn order)
SHOWN_FRAC = 0.01  # a resource kind is drawn when some window used 1 % of it


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend, or a one-line error naming the extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlanError("--plot needs matplotlib: pip install 'dualpath-plan[plot]'", 1) from None
    return plt


@dataclass(frozen=True)
class RunnerPoint:
    """One configuration the runner checked in a mode: where it sits (family and its name, budget, P, D) and its
    turns/s with the 95 % interval of the mean over the seeds (None: one seed): steady turns/s offline, the capacity
    within the SLO in turns/s online."""

    family: int
    name: str
    budget: float
    mode: str
    P: int
    D: int
    turns_per_s: float
    ci95_low: float | None
    ci95_high: float | None
    pick: bool  # the mode's pick in its group (the bound's rank 0)


RUNNER_MARKERS = {"basic": "s", "dualpath": "o", "oracle": "^"}  # the runner's points, by mode


def runner_markers(ax, points, x, color: str, label: str, mode: str) -> None:
    """The runner's turns/s of ``points`` (at ``x(point)``), filled markers of the mode's shape with their 95 %
    intervals as error bars (when there are several seeds)."""
    if not points:
        return
    errors = None
    if any(p.ci95_low is not None for p in points):
        errors = np.array([[0.0 if p.ci95_low is None else p.turns_per_s - p.ci95_low for p in points],
                           [0.0 if p.ci95_high is None else p.ci95_high - p.turns_per_s for p in points]])
    ax.errorbar([x(p) for p in points], [p.turns_per_s for p in points], yerr=errors, fmt=RUNNER_MARKERS[mode], color=color,
                markeredgecolor="black", markersize=7, capsize=3, linestyle="none", zorder=6, label=label)


def sweep_figure(result: SweepResult, runner: Sequence[RunnerPoint] = (), measured: str = "steady"):
    """Throughput bound against P/D per profile and mode, with ranges, optimal sets and picks (module docstring), and the
    runner's turns/s at the splits ``--check`` played (``measured``: steady, or the capacity within the SLO)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, max(5.5, 1.4 * len(result.best) + 1.5)))  # room for the legend's rows per profile
    for i, prof in enumerate(result.best):
        color = f"C{i % 10}"
        for mode, (line, width, z) in STYLES.items():
            pts = sorted((p for p in result.points if p.profile == prof and p.mode == mode), key=lambda p: p.P / p.D)
            served = [p.bound.turns_per_s if p.bound.turns_per_s > 0 else np.nan for p in pts]  # a split serving nothing: a gap
            ax.plot([p.P / p.D for p in pts], served, line, color=color, linewidth=width, zorder=z, label=f"{prof} {mode}")
        _optimal_and_pick(ax, result, prof, color)
        for mode in ("dualpath", "basic"):
            mine = [p for p in runner if p.name == prof and p.mode == mode]
            runner_markers(ax, mine, lambda p: p.P / p.D, color, f"{prof} {mode}: runner, {measured}", mode)
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log")
    ratios = [p.P / p.D for p in result.points]
    low, high = min(ratios) / 1.25, max(ratios) * 1.25  # the splits drawn, not every P/D there is
    ax.set_xlim(low, high)
    step = min(0.035, 0.25 / len(result.best))  # the bars' strip, at most a quarter of the height however many profiles
    floor = 0.03 + step * len(result.best)  # zero turns/s stands above it, so no curve runs through a bar
    top = ax.get_ylim()[1]
    ax.set_ylim(-floor * top / (1 - floor), top)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "" if v < 0 else f"{v:g}"))  # no negative turns/s on the axis
    for i, prof in enumerate(result.best):  # each profile's eq. (9) range on a bar of its own along the bottom
        rng = result.pd_ranges.get(prof)
        if rng is not None and rng.lower < rng.upper and rng.lower < high and rng.upper > low:
            y = 0.02 + step * i
            ax.plot([max(rng.lower, low), min(rng.upper, high)], [y, y], color=f"C{i % 10}", linewidth=5, solid_capstyle="butt",
                    transform=ax.get_xaxis_transform(), zorder=1, label=f"{prof}: P/D where no NIC or DRAM binds (eq. (9))")
        else:  # no bar: the legend says why, so a missing bar is not read as a drawing fault
            why = "eq. (9)'s range is empty" if rng is None or not rng.lower < rng.upper else "eq. (9)'s range lies outside the splits drawn"
            ax.plot([], [], color=f"C{i % 10}", linewidth=5, alpha=0.35, label=f"{prof}: no bar: {why}")
    plain_log_ticks(ax)
    ax.set_xlabel("P/D (prefill nodes over decode nodes)")
    ax.set_ylabel("throughput bound [turns/s]" if not runner else "throughput [turns/s]")
    ax.set_title(f"Throughput bound per P/D split{' and the runner' if runner else ''}, {budget_text(result)}")
    ax.grid(alpha=0.3, which="both")
    fig.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    runner_note(fig, runner, measured)
    return fig


RUNNER_NOTE = ("runner, steady: the turns/s of the turns its steady window finished, whose mix can cost less (or more) than the "
               "workload's mean turn that the lines bound; the check's table gives each over its own window's bound")


def runner_note(fig, runner, measured: str, under_legend: bool = True) -> None:
    """What a steady runner point is measured on, so a point above its line reads right: under a legend drawn beside the
    axes, else under the axes."""
    if runner and measured == "steady":
        import textwrap

        if under_legend:
            fig.text(1.0, 0.02, "\n".join(textwrap.wrap(RUNNER_NOTE, 62)), fontsize="x-small", ha="left", va="bottom")
        else:
            fig.text(0.08, 0.0, "\n".join(textwrap.wrap(RUNNER_NOTE, 130)), fontsize="x-small", ha="left", va="top")


def plain_log_ticks(ax) -> None:
    """A log P/D axis labelled 0.2, 0.5, 1, 2, 5 (not 2 x 10^-1 and crowded minor labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _optimal_and_pick(ax, result: SweepResult, prof: str, color: str) -> None:
    optimal = [p for p in result.points if p.profile == prof and p.mode == "dualpath" and result.in_optimal_set(p)]
    ax.plot([p.P / p.D for p in optimal], [p.bound.turns_per_s for p in optimal], "o", markerfacecolor="none", markeredgecolor=color,
            markersize=6, linestyle="none", zorder=4, label=f"{prof} dualpath optimal set")
    pick: SweepPoint = result.best[prof]["dualpath"]
    binding = ", ".join(pick.bound.binding) or "nothing"
    ax.plot([pick.P / pick.D], [pick.bound.turns_per_s], "*", color=color, markersize=14, markeredgecolor="black", linestyle="none",
            zorder=5, label=f"{prof} pick {pick.P}P{pick.D}D ({binding})")
    basic: SweepPoint = result.best[prof]["basic"]  # the pick a buyer weighs DualPath's against, as the grid plots mark it
    if basic.bound.turns_per_s > 0:
        ax.plot([basic.P / basic.D], [basic.bound.turns_per_s], "D", color=color, markersize=7, markeredgecolor="black", linestyle="none",
                zorder=5, label=f"{prof} basic pick {basic.P}P{basic.D}D")


def compare_figure(c: Comparison, checks: dict | None = None):
    """The generation trend: storage-NIC and host-link bytes per dense FLOP beside the workload's cache-compute ratio
    (log scale), and the basic and DualPath bounds at the shared GPU budget, one point per profile in the order given;
    with ``checks`` (by profile, ``compare --check``), the runner's turns/s of each mode's recommended split beside them
    (``report.check.runner_levels``: steady offline, at the capacity online), with their 95 % intervals."""
    from dualpath_plan.planning.online import OnlineCheck
    from dualpath_plan.report.check import runner_levels

    plt = pyplot()
    fig, (io, bounds) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"wspace": 0.25})
    names = [g.profile for g in c.generations]
    x = np.arange(len(names))
    # colours of their own: the right panel's C0 and C1 are the modes
    io.plot(x, [g.snic_bytes_per_flop * GB_PER_PFLOP for g in c.generations], "o-", color="C2", label="storage NIC, per node")
    io.plot(x, [g.pcie_bytes_per_flop * GB_PER_PFLOP for g in c.generations], "s--", color="C4", label="PCIe, per GPU")
    io.axhline(c.cache_compute_bytes_per_flop * GB_PER_PFLOP, color="black", linestyle=":",
               label=f"{c.workload}: what a turn loads per FLOP (against the storage NIC)")
    io.set_yscale("log")
    io.yaxis.set_major_formatter(plt.matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    io.yaxis.set_minor_formatter(plt.matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "125" else ""))
    io.set_ylabel("GB/s per dense PFLOP/s")
    io.set_title("I/O per FLOP")
    levels = {name: runner_levels(check) for name, check in (checks or {}).items()}
    online = any(isinstance(check, OnlineCheck) for check in (checks or {}).values())
    for k, (mode, marker) in enumerate((("basic", "s--"), ("dualpath", "o-"))):
        bounds.plot(x, [getattr(g, mode).bound.turns_per_s for g in c.generations], marker, color=f"C{k}", label=f"{mode} bound")
        seen = [(i, levels[g.profile][mode]) for i, g in enumerate(c.generations) if mode in levels.get(g.profile, {})]
        if seen:
            low = [0.0 if lo is None else v - lo for _, (v, lo, _) in seen]
            high = [0.0 if hi is None else hi - v for _, (v, _, hi) in seen]
            bounds.errorbar([i for i, _ in seen], [v for _, (v, _, _) in seen], yerr=[low, high] if any(low) or any(high) else None,
                            fmt=RUNNER_MARKERS[mode], color=f"C{k}", markeredgecolor="black", markersize=8, capsize=3, linestyle="none",
                            zorder=5, label=f"{mode}: runner, {'at the capacity' if online else 'steady'}")
    bounds.set_ylabel("throughput [turns/s]" if levels else "throughput bound [turns/s]")
    bounds.set_ylim(bottom=0.0)  # from zero: a linear axis that starts at 95 reads a 5 % gap as a doubling
    bounds.set_title(f"Bounds at {c.gpus} GPUs")
    for ax in (io, bounds):
        ax.set_xticks(x, names, rotation=30, ha="right")
        ax.grid(alpha=0.3, which="both")
    fig.canvas.draw()  # the tick labels' extent, so each legend goes below its own panel's names, clear of the other panel
    below = min(t.get_window_extent().y0 for ax in (io, bounds) for t in ax.get_xticklabels())
    for ax in (io, bounds):
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, ax.transAxes.inverted().transform((0, below))[1] - 0.03))
    fig.suptitle(f"{c.model} on {c.workload}: hardware generations")
    return fig


def cluster_name(sc) -> str:
    """A simulated cluster in a title: hardware, split and model (``hopper 2P4D serving ds-v3.2``)."""
    return f"{sc.profile_label} {sc.P}P{sc.D}D serving {sc.model.name}"


def simulate_figure(runs: dict[str, SimResult], traj: Trajectories, cluster: str = ""):
    """Utilisation, agents and queues, and TTFT over time, a column per policy (module docstring); ``cluster`` names the
    hardware, split and model in the title (``hopper 2P4D serving ds-v3.2``)."""
    plt = pyplot()
    fig, axes = plt.subplots(4, len(runs), figsize=(min(5.5 * len(runs), 22), 12), sharex="all", sharey="row", squeeze=False)
    for col, (name, run) in enumerate(runs.items()):
        rows = timeseries_rows(name, run, traj)
        t = [r["end_s"] for r in rows]
        use, people, waits, ttft = axes[0][col], axes[1][col], axes[2][col], axes[3][col]
        for k, kind in enumerate(run.use_over_time.kinds):
            values = [r[f"{kind}_utilization_frac"] * 100 for r in rows]
            if max(values, default=0.0) >= SHOWN_FRAC * 100:
                use.step(t, values, where="pre", color=_kind_color(plt, k), linewidth=1.2, label=kind)
        people.step(t, [r["running_agents"] for r in rows], where="pre", label="running agents")
        people.step(t, [r["waiting_turns"] for r in rows], where="pre", label="waiting turns")
        for k, stage in enumerate(WAITS):
            values = [r[f"{stage}_requests"] for r in rows]
            if max(values, default=0.0) > 0:
                waits.step(t, values, where="pre", color=_kind_color(plt, k), linewidth=1.2, label=STAGE_WORDS[stage])
        for q, style in (("p50", "-"), ("p99", "--")):
            ttft.step(t, [np.nan if r[f"ttft_{q}_s"] is None else r[f"ttft_{q}_s"] for r in rows], style, where="pre", label=f"TTFT {q}")
        use.set_title(f"{name}: utilisation [%]")
        people.set_title(f"{name}: agents and queue")
        waits.set_title(f"{name}: requests waiting, by stage (mean)")
        ttft.set_title(f"{name}: TTFT [s]")
        ttft.set_yscale("log")  # the first turns' long waits would flatten the rest
        ttft.set_xlabel("simulated time [s]")
        for ax in (use, people, waits, ttft):
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    first = next(iter(runs.values()))
    fig.suptitle(f"{cluster + ': ' if cluster else ''}{traj.source}, {first.mode}, seed {first.seed} (the same scales in every column)")
    fig.tight_layout()
    return fig


def _kind_color(plt, k: int):
    """A colour of its own for each of the 11 kinds (the default cycle has 10): tab20's dark shades, then light ones."""
    return plt.get_cmap("tab20")((2 * k) % 20 + (2 * k) // 20)


def write(fig, path: Path, flag: str) -> None:
    """Save ``fig`` as PNG or SVG (by the name's suffix), whole or not at all."""
    plt = pyplot()
    kind = Path(path).suffix.lower().lstrip(".")
    write_atomic(path, lambda tmp: fig.savefig(tmp, format=kind, dpi=120, bbox_inches="tight"), flag)
    plt.close(fig)
