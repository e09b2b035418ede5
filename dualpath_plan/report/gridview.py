"""A sweep over several axes on screen and under ``--json``: one line per group (its picks, the gain, what binds,
the optimal set and the runner's verdict); every configuration's row goes to ``--csv`` or ``--json-file``
(``report.grid``)."""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table

from dualpath_plan.bounds.lp import MODES
from dualpath_plan.model.fmt import fmt, has
from dualpath_plan.model.profiles import parse_override
from dualpath_plan.planning.gridcheck import ModesVerdict, RowCheck, Verdict, modes_verdicts, verdicts
from dualpath_plan.planning.check import POLICY
from dualpath_plan.planning.gridsweep import GridSweep
from dualpath_plan.planning.pick import TOLERANCE_FRAC
from dualpath_plan.report.bounds import why_words
from dualpath_plan.report.check import WINDOW_NOTE, light_load_note, seeds_text, short_of_bound_note
from dualpath_plan.report.grid import COST_COLUMNS, budget_text, columns, rows

MAX_SHOWN = 40  # groups in the table; the rest are in the output files


def picks(sweep: GridSweep) -> dict[str, np.ndarray]:
    """Per mode, each group's pick (its grid row; -1 for a group with no configuration)."""
    g = sweep.grid
    out = {}
    for mode in MODES:
        rows_ = np.full(len(g.groups), -1)
        at = np.flatnonzero(g.modes[mode].rank == 0)
        rows_[g.group[at]] = at
        out[mode] = rows_
    return out


def _split(sweep: GridSweep, mode: str, row: int) -> str:
    g = sweep.grid
    X = float(g.modes[mode].turns_per_s[row])
    nodes = int(g.modes[mode].storage_nodes[row])
    storage = f" +{nodes:,} storage" if nodes > 0 else ""
    return f"{g.P[row]}P{g.D[row]}D{storage} {fmt(X, 'turns/s')}" if X > 0 else "none: " + (why_words(g.nothing_names(row)) or "nothing served")


def _set_text(brief: dict | None) -> str:
    """A group's optimal set in words, from :func:`_sets_json`'s brief."""
    if brief is None:
        return "n/a"
    low, high = fmt(brief["pd_low"], "", 2), fmt(brief["pd_high"], "", 2)
    return f"{_count(brief['splits'], 'split')}, P/D {low}" + ("" if low == high else f"-{high}")


def _verdict(sweep: GridSweep, v: Verdict | None, mode: str) -> str | None:
    """A group's verdict in one mode (``gridcheck.verdicts``) in words."""
    if v is None:
        return None
    g = sweep.grid
    name = lambda r: f"{g.P[r]}P{g.D[r]}D"  # noqa: E731
    c = sweep.checks[(v.pick, mode)]
    over = f"{fmt(c.over_bound, '%')} of its bound" + ("" if c.over_window_bound is None else f" ({fmt(c.over_window_bound, '%')} of its "
                                                         "window's bound)")
    if v.alone:
        return f"the pick alone: {over}; --check 2 or more ranks splits"
    if v.agrees:
        first = "ranks it first" if v.best == v.pick else f"ranks {name(v.best)} first, within 1 %"
        return f"the pick stands: the runner {first} (the pick at {over})"
    ahead = "the pick finished nothing" if v.lead_frac == float("inf") else f"{fmt(v.lead_frac, '%')} ahead"
    if v.recommended != v.pick:
        return f"{name(v.best)} {ahead}, intervals apart: recommended {name(v.recommended)}"
    return f"{name(v.best)} {ahead}; the pick stands (" + ("one seed: add --seeds 3" if len(sweep.plan.seeds) == 1 else "within the seeds' spread") + ")"


def _modes_text(sweep: GridSweep, v: ModesVerdict | None) -> str | None:
    """A group's modes verdict (``gridcheck.modes_verdicts``) in words."""
    if v is None:
        return None
    g = sweep.grid
    first, second = v.bound_order[:2]
    a, b = (sweep.checks[(v.best[m], m)].measure for m in (first, second))
    gain = (fmt(a / b, "x") if b > 0 else "all") + (" the agents/s within the SLO" if sweep.plan.slo is not None else " steady")
    pair = f"{first} {g.P[v.best[first]]}P{g.D[v.best[first]]}D over {second} {g.P[v.best[second]]}P{g.D[v.best[second]]}D"
    if v.bounds_tie:
        top, other = (sweep.checks[(v.best[m], m)].measure for m in v.runner_order[:2])
        ahead = (fmt(top / other, "x") if other > 0 else "all") + (" the agents/s within the SLO" if sweep.plan.slo is not None else " steady")
        picks = " and ".join(f"{m} {g.P[v.picks[m]]}P{g.D[v.picks[m]]}D" for m in (first, second))
        return (f"the bounds tie the modes' picks ({picks}), so neither order contradicts them; the runner puts {v.runner_order[0]} "
                f"first ({ahead})")
    if v.confirms:
        return f"the runner confirms the bounds' ranking of the modes, {pair}: {gain}"
    return f"the runner contradicts the bounds' ranking of the modes: it puts {v.runner_order[0]} first ({pair}: {gain})"


def _runner_text(sweep: GridSweep, group: int, said: dict, modes_said: dict) -> str:
    """A group's runner verdicts: each mode's, then the modes'."""
    parts = [f"{mode}: {text}" for mode in sweep.plan.modes if (text := _verdict(sweep, said.get((group, mode)), mode))]
    if (text := _modes_text(sweep, modes_said.get(group))) is not None:
        parts.append(text)
    return "; ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _label(sweep: GridSweep, group: int) -> list[str]:
    """A group's key values, in :func:`_keys`' order: hardware, model, workload, each --set axis's value, the storage
    nodes of a storage axis (empty without one), budget."""
    g = sweep.grid
    grp = g.groups[group]
    fam = g.families[grp.family]
    sc = fam.scenario
    given = {key: str(value) for key, value in (parse_override(text) for text in fam.sets)}
    return [sc.profile_label, sc.model.name, sc.workload.name, *(given.get(key, "") for key, _ in sweep.axes.sets),
            "" if grp.storage_nodes is None else f"{grp.storage_nodes:,}", budget_text(grp.kind, grp.amount)]


def _keys(sweep: GridSweep) -> tuple[str, ...]:
    return ("hardware", "model", "workload", *(key for key, _ in sweep.axes.sets), "storage_nodes", "budget")


def _varying(sweep: GridSweep) -> list[int]:
    """The key columns whose value differs between groups: the others are said once in the title."""
    labels = [_label(sweep, k) for k in range(len(sweep.grid.groups))]
    return [i for i in range(len(labels[0])) if len({lab[i] for lab in labels}) > 1] or [0]


def render(sweep: GridSweep, console: Console, outputs: list[str], every: bool = False) -> None:
    """The group table (the first :data:`MAX_SHOWN` groups, or ``every`` one), its notes and the HiGHS sample's line."""
    g = sweep.grid
    chosen = picks(sweep)
    shown = [k for k in range(len(g.groups)) if chosen["dualpath"][k] >= 0]
    keys, names = _varying(sweep), _keys(sweep)
    same = [f"{names[i]}={v}" if 3 <= i < len(names) - 1 else v for i, v in enumerate(_label(sweep, 0)) if i not in keys and v]
    title = (f"Best P/D split per group ({', '.join(same)}): " if same else "Best P/D split per group: ") + \
        (f"{_count(len(g.groups), 'group')}, {_count(g.size, 'configuration')}; throughput bounds; of the splits within "
         f"{fmt(TOLERANCE_FRAC, '%').replace('.0 %', ' %')} of the best, the most robust")
    table = Table(title=title, title_justify="left")  # the runner's verdicts follow the check's own table (render_checks)
    cost = sweep.money_cost("dualpath")  # the pick's storage nodes included
    priced = g.groups[0].kind in ("usd", "usd_per_hour")  # a money budget: what the pick costs (else in the row files)
    money = [f"cost ({sweep.money.unit})", sweep.money.per_turn_label] if priced else []
    heads = [names[i] for i in keys] + ["dualpath best", "basic best", "gain", "binding (dualpath)", "dualpath set"] + money
    for col in heads:
        table.add_column(col, justify="right" if col == "gain" else "left", overflow="fold")
    limit = len(shown) if every else MAX_SHOWN
    sets = _sets_json(sweep, "dualpath")
    for k in shown[:limit]:
        d, b = int(chosen["dualpath"][k]), int(chosen["basic"][k])
        xd, xb = float(g.modes["dualpath"].turns_per_s[d]), float(g.modes["basic"].turns_per_s[b])
        label = _label(sweep, k)
        cells = [label[i] for i in keys] + [_split(sweep, "dualpath", d), _split(sweep, "basic", b), fmt(xd / xb, "x") if xb > 0 else "n/a",
                                            " ".join(g.binding_names("dualpath", d)) if xd > 0 else "n/a", _set_text(sets[k])]
        spent = [fmt(None if np.isnan(cost[d]) else float(cost[d]), sweep.money.unit),
                 fmt(sweep.money.per_turn_shown(None if np.isnan(cost[d]) else float(cost[d]), xd), "")] if priced else []
        table.add_row(*cells, *spent)
    console.print(table)
    if len(shown) > limit:
        where = " and ".join(outputs) if outputs else "--csv FILE or --json-file FILE"
        console.print(f"... {len(shown) - limit:,} more groups (--all-groups shows them): every configuration's row is in {where}",
                      highlight=False)
    for family, why in dict.fromkeys(sweep.grid.skipped):
        console.print(f"note: {g.families[family].scenario.profile_label}: {why}; no split, no row", highlight=False)
    if not priced and (note := _costs_note(sweep, cost)) is not None:
        console.print(note, highlight=False)
    if sweep.lp is not None:
        console.print(lp_line(sweep), highlight=False)


def _costs_note(sweep: GridSweep, cost: np.ndarray) -> str | None:
    """Where a grid under a node or GPU budget keeps what its configurations cost (the row files, not the table), and
    which profiles have no price on the sweep's basis; ``None`` when nothing is priced."""
    if not np.isfinite(cost).any():
        return None
    g, money = sweep.grid, sweep.money
    unpriced = sorted({g.families[int(grp.family)].scenario.profile_label for k, grp in enumerate(g.groups)
                       if not np.isfinite(cost[g.group == k]).any()})
    lacking = f"; {', '.join(unpriced)} {has(unpriced)} no {money.noun}" if unpriced else ""
    return (f"note: a budget in nodes or GPUs shows no costs here; what each configuration costs on the {money.name} basis is in "
            f"the row files (--csv FILE, --json-file FILE: {', '.join(COST_COLUMNS[money.name])}){lacking}")


def lp_line(sweep: GridSweep) -> str:
    lp = sweep.lp
    return (f"HiGHS reference on {lp.samples:,} sampled configurations x {len(MODES)} modes: largest relative difference of the bound "
            f"{lp.max_rel_diff:.1e}, {lp.binding_mismatches} binding sets differ")


def to_json(sweep: GridSweep) -> dict:
    """Every group with its keys and each mode's pick as a row object (``report.grid``'s columns), the check's tasks and
    the HiGHS sample check."""
    g = sweep.grid
    names = columns(sweep)
    chosen = picks(sweep)
    wanted = sorted({int(r) for mode in MODES for r in chosen[mode] if r >= 0})
    by_row = {(row, mode): dict(zip(names, values)) for row, values in zip((r for r in wanted for _ in MODES), rows(sweep, wanted))
              for mode in [values[names.index("mode")]]}
    groups, said, modes_said = [], verdicts(g, sweep.checks), modes_verdicts(g, sweep.checks)
    sizes = np.bincount(g.group, minlength=len(g.groups))
    sets = {mode: _sets_json(sweep, mode) for mode in MODES}
    for k, grp in enumerate(g.groups):
        label = _label(sweep, k)
        entry = {"profile": label[0], "model": label[1], "workload": label[2], "sets": list(g.families[grp.family].sets),
                 "budget_kind": grp.kind, "budget": grp.amount, "storage_nodes": grp.storage_nodes,
                 "configurations": int(sizes[k]),
                 "picks": {mode: by_row.get((int(chosen[mode][k]), mode)) for mode in MODES},
                 "optimal_sets": {mode: sets[mode][k] for mode in MODES}}
        if sweep.checks:
            entry["runner"] = _runner_text(sweep, k, said, modes_said) or None
        groups.append(entry)
    return {"configurations": g.size, "groups": groups, "columns": list(names), "lp_check": lp_json(sweep), "basis": sweep.basis,
            "runner_check": None if sweep.plan is None else {"per_group": sweep.plan.count, "seeds": list(sweep.plan.seeds),
                                                              "policies": list(sweep.plan.policies), "runs": len(sweep.plan.tasks)},
            "skipped": [{"profile": g.families[f].scenario.profile_label, "why": why} for f, why in g.skipped]}


def _sets_json(sweep: GridSweep, mode: str) -> list[dict | None]:
    """Each group's optimal set in brief: how many splits, their P and P/D ranges (None when the group serves nothing)."""
    g = sweep.grid
    n = len(g.groups)
    sel = np.flatnonzero(g.modes[mode].in_optimal_set & (g.modes[mode].turns_per_s > 0))
    grp, P, ratio = g.group[sel], g.P[sel], g.P[sel] / g.D[sel]
    count = np.bincount(grp, minlength=n)
    lows, highs = np.full((2, n), np.inf), np.full((2, n), -np.inf)
    for i, values in enumerate((P.astype(float), ratio)):
        np.minimum.at(lows[i], grp, values)
        np.maximum.at(highs[i], grp, values)
    return [None if not count[k] else {"splits": int(count[k]), "P_low": int(lows[0, k]), "P_high": int(highs[0, k]),
                                       "pd_low": float(lows[1, k]), "pd_high": float(highs[1, k])} for k in range(n)]


def lp_json(sweep: GridSweep) -> dict | None:
    lp = sweep.lp
    return None if lp is None else {"samples": lp.samples, "modes": list(MODES), "max_rel_diff": lp.max_rel_diff,
                                    "binding_mismatches": lp.binding_mismatches}


def render_checks(sweep: GridSweep, console: Console) -> None:
    """The runner's numbers beside each checked configuration's bound, group after group and mode after mode, and each
    group's verdicts."""
    if sweep.plan is None:
        return
    g, plan = sweep.grid, sweep.plan
    best = "best configuration" if plan.count == 1 else f"{plan.count} best configurations"
    how = "offline" if plan.slo is None else (f"online: capacity within the SLO (mean TTFT {fmt(plan.slo.ttft_slo_s, 's')}, "
                                                f"TPOT {fmt(plan.slo.tpot_slo_s, 's')})")
    table = Table(title=f"Runner check: the {best} of each group in each mode ({', '.join(plan.modes)}), each by its mode's policy, "
                        f"{how}, {seeds_text(plan.seeds)}", title_justify="left",
                  padding=(0, 1, 0, 0))  # one space a cell: eleven columns fit a 100-column pipe with every word whole
    keys = _varying(sweep)
    heads = (("agents", "bound, turns/s", "steady, turns/s", "steady / bound", "steady / window bound", "whole run, turns/s", "JCT")
             if plan.slo is None else
             ("bound at the SLO", "capacity", "capacity / bound", "probes", "every probe met"))
    for col in ("group", "mode", "split", *heads, "rank in mode"):
        table.add_column(col, justify="left" if col in ("group", "mode", "split") else "right", overflow="fold")
    groups: dict[int, None] = {}
    for r, mode in plan.rows:
        c = sweep.checks.get((r, mode))
        if c is None:
            continue
        group = int(g.group[r])
        first = group not in groups
        groups[group] = None
        table.add_row(_group_name(sweep, group, keys) if first else "", mode, f"{g.P[r]}P{g.D[r]}D",
                      *(_online_cells(c) if c.online else _offline_cells(c, float(g.modes[mode].turns_per_s[r]))), str(c.runner_rank + 1))
    console.print(table)
    said, modes_said = verdicts(g, sweep.checks), modes_verdicts(g, sweep.checks)
    for group in groups:
        console.print(f"Runner check, {_group_name(sweep, group, keys)}: {_runner_text(sweep, group, said, modes_said)}", highlight=False)
    if plan.slo is None:
        named = [(f"{_group_name(sweep, int(g.group[r]), keys)} {mode} {g.P[r]}P{g.D[r]}D".strip(), c.over_window_bound)
                 for (r, mode), c in sweep.checks.items()]
        for note in (light_load_note(c.over_window_bound for c in sweep.checks.values()), short_of_bound_note(named)):
            if note is not None:
                console.print(note, highlight=False)
        console.print(WINDOW_NOTE, highlight=False)


def _with_interval(c: RowCheck, value: float, unit: str) -> str:
    half = None if c.ci95_high is None else (c.ci95_high - c.ci95_low) / 2
    return fmt(value, unit) + ("" if half is None else f" +- {fmt(half, unit)}")


def _offline_cells(c: RowCheck, bound: float) -> tuple[str, ...]:
    # turns/s in the headers, not in every cell: a grid's check table has eleven columns, which must fit a 100-column pipe
    return (_agents_cell(c), fmt(bound, ""), _with_interval(c, c.steady_turns_per_s, ""), fmt(c.over_bound, "%"),
            fmt(c.over_window_bound, "%"), fmt(c.turns_per_s, ""), fmt(c.jct_s, "s"))


def _agents_cell(c: RowCheck) -> str:
    """``2,048``, or with a forking trace ``2,048 root sessions (3,030 with their sub-agents)``: the first seed's."""
    if c.agents_served is None or c.agents_served == c.agents:
        return f"{c.agents:,}"
    draw = "" if c.seeds == 1 else " in the first seed's draw"  # each seed draws its own families
    return f"{c.agents:,} root sessions ({c.agents_served:,} with their sub-agents{draw})"


def _online_cells(c: RowCheck) -> tuple[str, ...]:
    return (fmt(c.bound_aps, "agents/s"), _with_interval(c, c.capacity_aps, "agents/s"), fmt(c.over_bound, "%"), f"{c.probes:,}",
            "yes" if c.every_probe_met else "no")


def _group_name(sweep: GridSweep, group: int, keys: list[int]) -> str:
    label, names = _label(sweep, group), _keys(sweep)
    return " ".join(f"{names[i]}={label[i]}" if 3 <= i < len(names) - 1 else label[i] for i in keys if label[i])


def checks_json(sweep: GridSweep) -> dict:
    """The runner check per group: each mode's candidates (grid rows' keys and numbers) and verdict, and the modes'."""
    if sweep.plan is None:
        return {}
    g = sweep.grid
    out, said, modes_said, cells_of = [], verdicts(g, sweep.checks), modes_verdicts(g, sweep.checks), {}
    for r, mode in sweep.plan.rows:
        cells_of.setdefault(int(g.group[r]), []).append((r, mode))
    for group in sorted(cells_of):
        label = _label(sweep, group)
        modes = {}
        for mode in sweep.plan.modes:
            v = said.get((group, mode))
            cand = [_candidate_json(g, r, mode, c) for r, m in cells_of[group] if m == mode and (c := sweep.checks.get((r, m))) is not None]
            if cand:
                modes[mode] = {"policy": POLICY[mode], "candidates": cand, "agrees": None if v is None else v.agrees,
                               "lead_frac": None if v is None else v.lead_frac,
                               "recommended": None if v is None else {"P": int(g.P[v.recommended]), "D": int(g.D[v.recommended])}}
        mv = modes_said.get(group)
        out.append({"profile": label[0], "model": label[1], "workload": label[2], "sets": list(g.families[g.groups[group].family].sets),
                    "budget_kind": g.groups[group].kind, "budget": g.groups[group].amount, "agents": sweep.plan.agents.get(group),
                    "modes": modes, "bound_order": None if mv is None else list(mv.bound_order),
                    "runner_order": None if mv is None else list(mv.runner_order), "confirms": None if mv is None else mv.confirms,
                    "bounds_tie": None if mv is None else mv.bounds_tie})
    slo = sweep.plan.slo
    online = None if slo is None else {"ttft_slo_s": slo.ttft_slo_s, "tpot_slo_s": slo.tpot_slo_s}
    return {"runner_check": {"modes": list(sweep.plan.modes), "seeds": list(sweep.plan.seeds), "per_group": sweep.plan.count, "online": online,
                             "groups": out}}


def _candidate_json(g, r: int, mode: str, c: RowCheck) -> dict:
    """One checked configuration in ``--json``: its bound and the runner's numbers (offline or online)."""
    out = {"P": int(g.P[r]), "D": int(g.D[r]), "bound_turns_per_s": float(g.modes[mode].turns_per_s[r])}
    if c.online:
        out |= {"capacity_agents_per_s": c.capacity_aps, "capacity_ci95_low": c.ci95_low, "capacity_ci95_high": c.ci95_high,
                "bound_at_slo_agents_per_s": c.bound_aps, "probes": c.probes, "every_probe_met": c.every_probe_met}
    else:
        out |= {"sim_steady_turns_per_s": c.steady_turns_per_s, "sim_steady_ci95_low": c.ci95_low, "sim_steady_ci95_high": c.ci95_high,
                "sim_turns_per_s": c.turns_per_s, "jct_s": c.jct_s, "steady_over_window_bound": c.over_window_bound,
                "agents_served": c.agents_served}
    return out | {"capacity_over_bound" if c.online else "steady_over_workload_bound": c.over_bound, "runner_rank": c.runner_rank + 1}


def full_json(sweep: GridSweep) -> dict:
    """What ``sweep --json`` prints for a sweep of several groups: :func:`to_json` and :func:`checks_json`."""
    return to_json(sweep) | checks_json(sweep)
