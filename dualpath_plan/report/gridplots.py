"""``sweep --plot`` of a grid (``planning.gridsweep``): the bounds and, when ``--check`` ran, the runner beside them.

* One budget per hardware family (``--nodes 144``, ``--gpus 288``, ...): the bound against P/D per family and mode,
  as ``report.plots.sweep_figure`` draws it (basic dashed, DualPath solid, the Oracle dotted; each mode's pick a
  star), with the runner's steady turns/s of every checked split as a filled marker of the mode's shape at its P/D,
  its 95 % interval as an error bar (several seeds).
* Several budgets (``--nodes 6..144``): the best bound of each mode against the budget per family, and the runner's
  steady turns/s at each group's checked pick, with its interval: whether the runner follows the bound as the
  cluster grows.

The runner's points are the group's checks in ``GridSweep.checks`` (:func:`runner_points`); a sweep without
``--check`` draws the bounds alone. A grid whose groups differ by model, workload or ``--set`` value has no single
axis to draw along and is refused in one line.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.planning.gridsweep import GridSweep
from dualpath_plan.report.grid import budget_text
from dualpath_plan.report.plots import STYLES, RunnerPoint, plain_log_ticks, pyplot, runner_markers, runner_note

BUDGET_AXIS = {"nodes": "nodes (P + D)", "gpus": "GPUs", "usd": "budget [USD]", "usd_per_hour": "budget [USD/h]"}


def runner_points(sweep: GridSweep) -> list[RunnerPoint]:
    """Every checked cell of the sweep, in the plan's order (none without ``--check``)."""
    g, out = sweep.grid, []
    for (r, mode), c in sweep.checks.items():
        group = g.groups[int(g.group[r])]
        per = float(g.turns_per_agent[r]) if c.online else 1.0  # online: the capacity in agents/s, drawn in turns/s
        low, high = (None if v is None else v * per for v in (c.ci95_low, c.ci95_high))
        out.append(RunnerPoint(group.family, g.families[group.family].scenario.profile_label, group.amount, mode, int(g.P[r]), int(g.D[r]),
                               c.measure * per, low, high, int(g.modes[mode].rank[r]) == 0))
    return out


def measured(sweep: GridSweep) -> str:
    """What the runner's points show, for their legend: steady turns/s, or the capacity within the SLO."""
    return "steady" if sweep.plan is None or sweep.plan.slo is None else "capacity within the SLO"


def plottable(sweep: GridSweep) -> None:
    """Refuse a grid with no single axis to draw along: its families differ by more than hardware."""
    fams = sweep.grid.families
    kinds = {(f.scenario.model.name, f.scenario.workload.name, tuple(f.sets)) for f in fams}
    if len(kinds) > 1:
        raise PlanError("--plot draws the bounds against P/D (one budget) or against the budget (several); this sweep's groups also "
                        "differ by model, workload or --set value: plot one of each", 2)


def grid_figure(sweep: GridSweep):
    """:func:`splits_figure` when each family has one budget, else :func:`budgets_figure`."""
    plottable(sweep)
    budgets = {g.amount for g in sweep.grid.groups}
    return splits_figure(sweep) if len(budgets) == 1 else budgets_figure(sweep)


def splits_figure(sweep: GridSweep):
    """The bound against P/D per family and mode at the one budget, each mode's pick, and the runner's checked splits."""
    plt = pyplot()
    g = sweep.grid
    fig, ax = plt.subplots(figsize=(9, max(5.5, 1.4 * len(g.families) + 2)))
    points = runner_points(sweep)
    family_of = np.array([grp.family for grp in g.groups])
    for f, fam in enumerate(g.families):
        color, rows = f"C{f % 10}", np.flatnonzero(family_of[g.group] == f)
        if not rows.size:
            continue
        name = fam.scenario.profile_label
        rows = rows[np.argsort(g.P[rows] / g.D[rows])]
        for mode, (line, width, z) in STYLES.items():
            X = g.modes[mode].turns_per_s[rows]
            ax.plot(g.P[rows] / g.D[rows], np.where(X > 0, X, np.nan), line, color=color, linewidth=width, zorder=z, label=f"{name} {mode}")
            if mode != "oracle" and (pick := rows[g.modes[mode].rank[rows] == 0]).size and X.max() > 0:
                r = int(pick[0])
                star = mode == "dualpath"  # DualPath's pick a star, basic's a diamond: two picks told apart
                ax.plot([g.P[r] / g.D[r]], [g.modes[mode].turns_per_s[r]], "*" if star else "D", color=color, markersize=13 if star else 8,
                        markeredgecolor="black", linestyle="none", zorder=5, label=f"{name} {mode} pick {g.P[r]}P{g.D[r]}D")
        for mode in ("dualpath", "basic"):
            mine = [p for p in points if p.family == f and p.mode == mode]
            runner_markers(ax, mine, lambda p: p.P / p.D, color, f"{name} {mode}: runner, {measured(sweep)}", mode)
    ax.set_xscale("log")
    plain_log_ticks(ax)
    ax.set_xlabel("P/D (prefill nodes over decode nodes)")
    ax.set_ylabel("throughput [turns/s]")
    ax.set_title(f"Bound per P/D split{' and the runner' if points else ''}, {budget_text(g.groups[0].kind, g.groups[0].amount)}")
    ax.grid(alpha=0.3, which="both")
    fig.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    runner_note(fig, points, measured(sweep))
    return fig


def budgets_figure(sweep: GridSweep):
    """Each mode's best bound against the budget per family, and the runner's steady turns/s at each checked pick."""
    plt = pyplot()
    g = sweep.grid
    kind = g.groups[0].kind
    fig, ax = plt.subplots(figsize=(9, max(5.5, 1.1 * len(g.families) + 2)))
    points = [p for p in runner_points(sweep) if p.pick]
    for f, fam in enumerate(g.families):
        color, name = f"C{f % 10}", fam.scenario.profile_label
        groups = sorted((k for k, grp in enumerate(g.groups) if grp.family == f), key=lambda k: g.groups[k].amount)
        for mode in ("basic", "dualpath"):
            line, width, z = STYLES[mode]
            best = [_best(g, mode, k) for k in groups]
            ax.plot([g.groups[k].amount for k in groups], [np.nan if b is None else b for b in best], line, color=color, linewidth=width,
                    zorder=z, label=f"{name} {mode} bound (best split)")
            mine = sorted((p for p in points if p.family == f and p.mode == mode), key=lambda p: p.budget)
            runner_markers(ax, mine, lambda p: p.budget, color, f"{name} {mode}: runner at the pick, {measured(sweep)}", mode)
    ax.set_xlabel(BUDGET_AXIS[kind])
    ax.set_ylabel("throughput [turns/s]")
    ax.set_title("Best bound per budget" + (" and the runner at each pick" if points else ""))
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", fontsize="small")  # the bounds rise to the right: the upper left is empty
    runner_note(fig, points, measured(sweep), under_legend=False)
    return fig


def _best(g, mode: str, group: int) -> float | None:
    """The group's best bound in ``mode`` (None when nothing there serves anything)."""
    rows = np.flatnonzero(g.group == group)
    X = g.modes[mode].turns_per_s[rows]
    return float(X.max()) if rows.size and X.max() > 0 else None
