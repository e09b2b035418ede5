"""Rendering of ``--check K``: the runner's turns/s and JCT next to each candidate's bound, and its verdict."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.planning.check import ModesCheck, RunnerCheck
from dualpath_plan.planning.pick import TOLERANCE_FRAC
from dualpath_plan.report.pick import split_name


def _key(c) -> tuple:
    return (c.split.pe_profile, c.split.de_profile, c.split.P, c.split.D)


def check_json(result: RunnerCheck) -> dict:
    order = [_key(c) for c in result.runner_order]
    return {
        "policy": result.policy, "agents": result.agents, "seeds": list(result.seeds), "mode": "offline",
        "candidates": [{"pe_profile": c.split.pe_profile, "de_profile": c.split.de_profile, "P": c.split.P, "D": c.split.D,
                        "bound_turns_per_s": c.split.turns_per_s, "sim_steady_turns_per_s": c.steady,
                        "sim_steady_ci95_low": c.spread.low, "sim_steady_ci95_high": c.spread.high, "sim_turns_per_s": c.whole_run_turns_per_s,
                        "jct_s": c.jct_s,
                        "achieved_over_bound": c.achieved_over_bound, "runner_rank": order.index(_key(c)) + 1}
                       for c in result.checked],
        "agrees": result.agrees, "lead_frac": result.lead_frac,
        "recommended": {"pe_profile": result.recommended.pe_profile, "de_profile": result.recommended.de_profile,
                        "P": result.recommended.P, "D": result.recommended.D},
    }


def verdict(result: RunnerCheck) -> str:
    pick, top = result.checked[0], result.runner_order[0]
    name, rival = split_name(pick.split), split_name(top.split)
    if result.agrees:
        again = "also ranks it first" if top is pick else f"ranks {rival} first, within {_tolerance()} of it"
        return f"Runner check: the pick {name} stands; the runner {again} ({fmt(pick.steady, 'turns/s')} steady)."
    ahead = "the pick finished no turn in its window" if math.isinf(result.lead_frac) else f"{fmt(result.lead_frac, '%')} ahead"
    lead = f"{rival} first ({fmt(top.steady, 'turns/s')} steady against {fmt(pick.steady, 'turns/s')}, {ahead})"
    if result.recommended is not pick.split:
        return (f"Runner check: the runner ranks {lead}, its 95 % interval wholly above the pick's; recommended: "
                f"{split_name(result.recommended)}, as the runner plays the scheduler the bound idealises.")
    if len(result.seeds) == 1:
        return (f"Runner check: the runner ranks {lead} on one seed; the pick {name} stands, as one seed cannot tell that from the "
                "draw (several per cent here): add --seeds 3 to settle it.")
    return f"Runner check: the runner ranks {lead}, within the seeds' spread of the pick; the pick {name} stands."


def _tolerance() -> str:
    return fmt(TOLERANCE_FRAC, "%").replace(".0 %", " %")


def render_check(result: RunnerCheck, console: Console, label: str = "") -> None:
    seeds = f"seed {result.seeds[0]}" if len(result.seeds) == 1 else f"seeds {result.seeds[0]}..{result.seeds[-1]}: means, +- half the 95 % interval"
    title = (f"Runner check{label}: {len(result.checked)} best splits, {result.policy} policy, the same {result.agents:,} agents "
             f"(offline, {seeds})")
    table = Table(title=title, title_justify="left")
    for col in ("split", "bound", "steady", "steady / bound", "whole run", "JCT", "runner rank"):
        table.add_column(col, justify="left" if col == "split" else "right")
    order = [id(c) for c in result.runner_order]
    for c in result.checked:
        steady = fmt(c.steady, "turns/s") + ("" if c.spread.half_width is None else f" +- {fmt(c.spread.half_width, 'turns/s')}")
        table.add_row(split_name(c.split), fmt(c.split.turns_per_s, "turns/s"), steady, fmt(c.achieved_over_bound, "%"),
                      fmt(c.whole_run_turns_per_s, "turns/s"), fmt(c.jct_s, "s"), str(order.index(id(c)) + 1))
    console.print(table)
    console.print(verdict(result), highlight=False)


def modes_json(result: ModesCheck) -> dict:
    """Every mode's check by mode, and ``modes``: the bounds' and the runner's order of the modes' recommended splits."""
    best = {mode: result.best(mode) for mode in result.checks}
    return {mode: check_json(c) for mode, c in result.checks.items()} | {"modes": {
        "bound_order": list(result.bound_order), "runner_order": list(result.runner_order), "confirms": result.confirms,
        "best": {mode: {"pe_profile": c.split.pe_profile, "de_profile": c.split.de_profile, "P": c.split.P, "D": c.split.D,
                        "bound_turns_per_s": c.split.turns_per_s, "sim_steady_turns_per_s": c.steady,
                        "sim_steady_ci95_low": c.spread.low, "sim_steady_ci95_high": c.spread.high, "jct_s": c.jct_s}
                 for mode, c in best.items()}}}


def modes_verdict(result: ModesCheck) -> str:
    """One line: whether the runner ranks the modes (best split with best split) as the bounds do."""
    (first, second), runner_first = result.bound_order[:2], result.runner_order[0]
    a, b = result.best(first), result.best(second)
    bound_gain = fmt(a.split.turns_per_s / b.split.turns_per_s, "x") if b.split.turns_per_s > 0 else "all"
    runner_gain = fmt(a.steady / b.steady, "x") if b.steady > 0 else "all"
    pair = f"{first} {split_name(a.split)} over {second} {split_name(b.split)}"
    if result.confirms:
        return f"Modes: the runner confirms the bounds' ranking, {pair}: {runner_gain} steady (bounds: {bound_gain})."
    return (f"Modes: the runner contradicts the bounds' ranking: the bounds put {pair} ({bound_gain}), the runner puts "
            f"{runner_first} first ({fmt(result.best(runner_first).steady, 'turns/s')} steady against "
            f"{fmt(a.steady, 'turns/s')}); trust the runner for the scheduler it plays, the bound for the hardware's limit.")


def render_modes(result: ModesCheck, console: Console, label: str = "") -> None:
    """One table of every mode's candidates, each mode's verdict, then the modes' verdict."""
    first = next(iter(result.checks.values()))
    seeds = f"seed {first.seeds[0]}" if len(first.seeds) == 1 else f"seeds {first.seeds[0]}..{first.seeds[-1]}: means, +- half the 95 % interval"
    table = Table(title=f"Runner check{label}: each mode's best splits, the same {first.agents:,} agents (offline, {seeds})",
                  title_justify="left")
    for col in ("mode", "split", "bound", "steady", "steady / bound", "whole run", "JCT", "rank in mode"):
        table.add_column(col, justify="left" if col in ("mode", "split") else "right")
    for mode, check in result.checks.items():
        order = [id(c) for c in check.runner_order]
        for c in check.checked:
            steady = fmt(c.steady, "turns/s") + ("" if c.spread.half_width is None else f" +- {fmt(c.spread.half_width, 'turns/s')}")
            table.add_row(mode, split_name(c.split), fmt(c.split.turns_per_s, "turns/s"), steady, fmt(c.achieved_over_bound, "%"),
                          fmt(c.whole_run_turns_per_s, "turns/s"), fmt(c.jct_s, "s"), str(order.index(id(c)) + 1))
    console.print(table)
    for mode, check in result.checks.items():
        console.print(f"{mode}: {verdict(check)}", highlight=False)
    console.print(modes_verdict(result), highlight=False)
