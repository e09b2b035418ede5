"""Rendering of ``--check K``: the runner's turns/s and JCT next to each candidate's bound, and its verdict."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.units import GB
from dualpath_plan.planning.check import ModesCheck, RunnerCheck
from dualpath_plan.planning.online import ModeSearch, OnlineCheck, Searched
from dualpath_plan.planning.pick import TOLERANCE_FRAC
from dualpath_plan.report.pick import split_name
from dualpath_plan.sim.tier import ESTIMATE_WORDS as TIER_ESTIMATE_WORDS


def _key(c) -> tuple:
    return (c.split.pe_profile, c.split.de_profile, c.split.P, c.split.D)


def _served(result: RunnerCheck) -> int | None:
    """The agents the first run served: ``result.agents`` unless a trace's forks brought sub-agents along."""
    return result.checked[0].run.agents if result.checked else None


def agents_text(result: RunnerCheck) -> str:
    """``2,048 agents``, or with a forking trace ``2,048 root sessions (2,731 agents with their sub-agents)``."""
    served = _served(result)
    if served is None or served == result.agents:
        return f"{result.agents:,} agents"
    draw = "" if len(result.seeds) == 1 else f" in seed {result.seeds[0]}'s draw"  # each seed draws its own families
    return f"{result.agents:,} root sessions ({served:,} agents with their sub-agents{draw})"


def check_json(result: RunnerCheck) -> dict:
    order = [_key(c) for c in result.runner_order]
    return {
        "policy": result.policy, "agents": result.agents, "agents_served": _served(result), "seeds": list(result.seeds), "mode": "offline",
        "candidates": [{"pe_profile": c.split.pe_profile, "de_profile": c.split.de_profile, "P": c.split.P, "D": c.split.D,
                        "bound_turns_per_s": c.split.turns_per_s, "sim_steady_turns_per_s": c.steady,
                        "sim_steady_ci95_low": c.spread.low, "sim_steady_ci95_high": c.spread.high, "sim_turns_per_s": c.whole_run_turns_per_s,
                        "jct_s": c.jct_s,
                        "steady_over_workload_bound": c.steady_over_workload_bound, "steady_over_window_bound": c.over_window_bound,
                        "steady_tier_share": c.tier_share, "bound_tier_share": c.run.bound_tier_share,
                        "runner_rank": order.index(_key(c)) + 1}
                       for c in result.checked],
        "agrees": result.agrees, "lead_frac": result.lead_frac,
        "recommended": {"pe_profile": result.recommended.pe_profile, "de_profile": result.recommended.de_profile,
                        "P": result.recommended.P, "D": result.recommended.D},
        "notes": check_notes([(split_name(c.split), c) for c in result.checked]),
    }


def verdict(result: RunnerCheck) -> str:
    """The offline check's line: whether the pick has the best steady turns/s (within the tolerance), and what it recommends."""
    if len(result.checked) == 1:
        only = result.checked[0]
        return (f"Runner check: the runner played the pick {split_name(only.split)} alone ({fmt(only.steady, 'turns/s')} steady): "
                "nothing to rank it against.")
    return "Runner check: " + _ranked(result.checked[0], result.runner_order[0], result.agrees, result.lead_frac, result.recommended,
                                      len(result.seeds), lambda c: f"{fmt(c.steady, 'turns/s')} steady", "the pick finished no turn in its window")


def _ranked(pick, top, agrees: bool, lead: float, recommended, seeds: int, shown, nothing: str) -> str:
    """A check's verdict in words, offline or online: ``pick`` and ``top`` the bound's and the runner's first candidates,
    ``shown(candidate)`` the runner's number for one, ``nothing`` what an infinite lead means."""
    name, rival = split_name(pick.split), split_name(top.split)
    if agrees:
        again = "also ranks it first" if top is pick else f"ranks {rival} first, within {_tolerance()} of it"
        return f"the pick {name} stands; the runner {again} ({shown(pick)})."
    ahead = nothing if math.isinf(lead) else f"{fmt(lead, '%')} ahead"
    first = f"{rival} first ({shown(top)} against {shown(pick)}, {ahead})"
    if recommended is not pick.split:
        return (f"the runner ranks {first}, its 95 % interval wholly above the pick's; recommended: {split_name(recommended)}, as "
                "the runner plays the scheduler the bound idealises.")
    if seeds == 1:
        return (f"the runner ranks {first} on one seed; the pick {name} stands, as one seed cannot tell that from the draw "
                "(several per cent here): add --seeds 3 to settle it.")
    return f"the runner ranks {first}, within the seeds' spread of the pick; the pick {name} stands."


LIGHT_LOAD_FRAC = 0.5  # a check whose runs all reach less of their window's bound than this barely loaded the cluster


def light_load_note(ratios) -> str | None:
    """A note when every checked run reached less than :data:`LIGHT_LOAD_FRAC` of its window's own bound (``ratios``:
    steady / window bound, ``None`` where a window finished nothing): the agents drawn did not load the cluster, so the
    runner's ranking says little about the bounds'; ``None`` otherwise."""
    known = [r for r in ratios if r is not None]
    if not known or max(known) >= LIGHT_LOAD_FRAC:
        return None
    return (f"note: every run reached at most {fmt(max(known), '%')} of its steady window's bound: the agents drawn did not load "
            "the cluster (too few, or too short a trace), so the runner's order says little about the bounds'")


SHORT_OF_BOUND_FRAC = 0.9  # the runner-at-scale target (concepts/runner.md): steady turns/s at least this share of the window's bound


def short_of_bound_note(named) -> str | None:
    """A note naming the checked splits (``named``: (label, steady / window bound) pairs) whose runs reached less than
    :data:`SHORT_OF_BOUND_FRAC` of their steady window's bound: the scheduler leaves capacity the bound counts unused
    there, so a buyer should weigh them by the runner's rate. ``None`` when every run reached it, when none is known, or
    when every run stayed under :data:`LIGHT_LOAD_FRAC` (too few agents: :func:`light_load_note` says so instead)."""
    known = [(label, r) for label, r in named if r is not None]
    short = [f"{label} ({fmt(r, '%')})" for label, r in known if r < SHORT_OF_BOUND_FRAC]
    if not short or light_load_note(r for _, r in known) is not None:
        return None
    return (f"note: the runner reached under {fmt(SHORT_OF_BOUND_FRAC, '%')} of its steady window's bound on {', '.join(short)}: the "
            "paper's scheduler leaves capacity the bound counts unused there (`simulate`'s gap table says where the turns waited), "
            "so weigh those splits by the runner's steady rate, not the bound; without a DRAM tier, on the paper's Hopper clusters "
            "it reaches 99.7 % or more")


def check_notes(named: list) -> list[str]:
    """The notes under an offline check's table, for its checked splits (``named``: (label, Checked) pairs): too light a
    load, splits short of their bound, what a DRAM tier's LRU served; the same lines its ``--json`` carries as ``notes``."""
    notes = (light_load_note(c.over_window_bound for _, c in named), short_of_bound_note((label, c.over_window_bound) for label, c in named),
             tier_note(named))
    return [note for note in notes if note is not None]


def tier_note(named) -> str | None:
    """With a DRAM tier, a note on what its LRU served against the bound's estimate, per checked split (``named``: (label,
    :class:`~dualpath_plan.planning.check.Checked`) pairs); ``None`` without a tier."""
    parts = [f"{label} {fmt(c.tier_share, '%')} (the bound of its run's turns: {fmt(c.run.bound_tier_share, '%')})" for label, c in named
             if c.tier_share is not None and c.run.bound_tier_share is not None]
    if not parts:
        return None
    return (f"note: the DRAM tier's LRU served this share of the steady window's hit KV: {', '.join(parts)}; "
            f"{TIER_ESTIMATE_WORDS} (docs: the DRAM tier)")


def _best_runs(result) -> list[tuple[str, object]]:
    """Each mode's runner-recommended candidate of an offline check, as (mode, Checked)."""
    checks = result.checks.values() if isinstance(result, ModesCheck) else [result]
    return [(c.policy, next(x for x in c.checked if x.split is c.recommended)) for c in checks]


def tier_verdict(with_tier, without, gb: float) -> str | None:
    """``--check`` with ``--dram-tier``: the runner's best with the tier against its best on the same question without it
    (each the best over the checked modes, by steady turns/s), beside the bounds' answer; ``None`` for online checks."""
    if with_tier is None or without is None or isinstance(with_tier, OnlineCheck) or isinstance(without, OnlineCheck):
        return None
    (m1, a), (m2, b) = (max(_best_runs(r), key=lambda mc: mc[1].steady) for r in (with_tier, without))
    if b.steady <= 0:
        return None
    ratio = a.steady / b.steady
    word = "raises" if ratio > 1 + TOLERANCE_FRAC else "lowers" if ratio < 1 - TOLERANCE_FRAC else "leaves level (within " + _tolerance() + ")"
    return (f"Runner, with the {fmt(gb * GB, 'B')} tier and without: {m1} {split_name(a.split)} {fmt(a.steady, 'turns/s')} steady "
            f"with it against {m2} {split_name(b.split)} {fmt(b.steady, 'turns/s')} without ({fmt(ratio, 'x')}): the tier {word} the "
            f"runner's throughput here (bounds: {fmt(a.split.turns_per_s, 'turns/s')} against {fmt(b.split.turns_per_s, 'turns/s')})")


def _tolerance() -> str:
    return _tolerance_of(TOLERANCE_FRAC)


def seeds_text(seeds: tuple[int, ...]) -> str:
    """A check's seeds as its table titles say them."""
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}..{seeds[-1]}: means, +- half the 95 % interval"


def with_half(value: float, spread, unit: str) -> str:
    """A mean over seeds with half its 95 % interval (the mean alone for one seed)."""
    return fmt(value, unit) + ("" if spread.half_width is None else f" +- {fmt(spread.half_width, unit)}")


def _columns(table: Table, names: tuple[str, ...]) -> None:
    """The columns of a check's table: names and splits to the left, numbers to the right."""
    for col in names:
        table.add_column(col, justify="left" if col in ("mode", "split") else "right")


def render_check(result: RunnerCheck, console: Console, label: str = "") -> None:
    seeds = seeds_text(result.seeds)
    title = (f"Runner check{label}: {len(result.checked)} best split{'' if len(result.checked) == 1 else 's'}, {result.policy} policy, the same {agents_text(result)} "
             f"(offline, {seeds})")
    table = Table(title=title, title_justify="left")
    _columns(table, ("split", *OFFLINE_HEADS, "runner rank"))
    order = [id(c) for c in result.runner_order]
    for c in result.checked:
        table.add_row(split_name(c.split), *_offline_cells(c), str(order.index(id(c)) + 1))
    console.print(table)
    console.print(verdict(result), highlight=False)
    for note in check_notes([(split_name(c.split), c) for c in result.checked]):
        console.print(note, highlight=False)


# The offline check's number columns, and what its last ratio means
OFFLINE_HEADS = ("bound", "steady", "steady / bound", "steady / window bound", "whole run", "JCT")
WINDOW_NOTE = ("note: steady / bound divides by the bound of the workload's turns, and passes 100 % when the turns the steady window "
               "finished cost less than the workload's mean turn; steady / window bound divides by the bound of those turns: how near "
               "the runner came to the hardware's limit for the turns it ran")


def _offline_cells(c) -> tuple[str, ...]:
    return (fmt(c.split.turns_per_s, "turns/s"), with_half(c.steady, c.spread, "turns/s"), fmt(c.steady_over_workload_bound, "%"),
            fmt(c.over_window_bound, "%"), fmt(c.whole_run_turns_per_s, "turns/s"), fmt(c.jct_s, "s"))


def modes_json(result: ModesCheck) -> dict:
    """Every mode's check by mode, and ``modes``: the bounds' and the runner's order of the modes' recommended splits."""
    best = {mode: result.best(mode) for mode in result.checks}
    return {mode: check_json(c) for mode, c in result.checks.items()} | {"modes": {
        "bound_order": list(result.bound_order), "runner_order": list(result.runner_order), "confirms": result.confirms,
        "bounds_tie": result.bounds_tie,
        "notes": check_notes([(f"{mode} {split_name(c.split)}", c) for mode, check in result.checks.items() for c in check.checked]),
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
    if result.bounds_tie:
        pa, pb = (result.checks[m].checked[0].split for m in (first, second))  # the picks, whose bounds tie
        top, other = result.best(runner_first), result.best(result.runner_order[1])
        gain = fmt(top.steady / other.steady, "x") if other.steady > 0 else "all"
        return (f"Modes: the bounds tie the picks {first} {split_name(pa)} and {second} {split_name(pb)} ({fmt(pa.turns_per_s, 'turns/s')} "
                f"each), so neither order contradicts them; the runner puts {runner_first} first ({gain} steady).")
    if result.confirms:
        return f"Modes: the runner confirms the bounds' ranking, {pair}: {runner_gain} steady (bounds: {bound_gain})."
    return (f"Modes: the runner contradicts the bounds' ranking: the bounds put {pair} ({bound_gain}), the runner puts "
            f"{runner_first} first ({fmt(result.best(runner_first).steady, 'turns/s')} steady against "
            f"{fmt(a.steady, 'turns/s')}); trust the runner for the scheduler it plays, the bound for the hardware's limit.")


def render_modes(result: ModesCheck, console: Console, label: str = "") -> None:
    """One table of every mode's candidates, each mode's verdict, then the modes' verdict."""
    first = next(iter(result.checks.values()))
    seeds = seeds_text(first.seeds)
    table = Table(title=f"Runner check{label}: each mode's best splits, the same {agents_text(first)} (offline, {seeds})",
                  title_justify="left")
    _columns(table, ("mode", "split", *OFFLINE_HEADS, "rank in mode"))
    for mode, check in result.checks.items():
        order = [id(c) for c in check.runner_order]
        for c in check.checked:
            table.add_row(mode, split_name(c.split), *_offline_cells(c), str(order.index(id(c)) + 1))
    console.print(table)
    for mode, check in result.checks.items():
        console.print(f"{mode}: {verdict(check)}", highlight=False)
    console.print(modes_verdict(result), highlight=False)
    for note in check_notes([(f"{mode} {split_name(c.split)}", c) for mode, check in result.checks.items() for c in check.checked]):
        console.print(note, highlight=False)


# --- online: capacity at the SLO ------------------------------------------------------------------------------

def _split_json(split) -> dict:
    return {"pe_profile": split.pe_profile, "de_profile": split.de_profile, "P": split.P, "D": split.D}


def online_json(result: OnlineCheck) -> dict:
    """``--check K --online``: every mode's candidates with their capacities, each mode's recommendation, and the modes'
    order by the bounds and by capacity."""
    def candidate(c: Searched, rank: int) -> dict:
        return _split_json(c.split) | {
            "bound_turns_per_s": c.split.turns_per_s, "bound_aps": c.bound_aps, "capacity_aps": c.capacity_aps,
            "capacity_ci95_low": c.spread.low, "capacity_ci95_high": c.spread.high, "capacity_turns_per_s": c.capacity_turns_per_s,
            "capacity_over_bound": c.over_bound, "every_probe_met": c.every_probe_met, "agents_at_capacity": list(c.agents),
            "probes": [[{"aps": aps, "slo_met": ok} for aps, ok in b.probes] for b in c.brackets], "runner_rank": rank}

    modes = {mode: {"policy": m.policy, "candidates": [candidate(c, [id(o) for o in m.order].index(id(c)) + 1) for c in m.searched],
                    "agrees": m.agrees, "lead_frac": m.lead_frac, "recommended": _split_json(m.recommended)}
             for mode, m in result.modes.items()}
    return {"mode": "online", "ttft_slo_s": result.slo.ttft_slo_s, "tpot_slo_s": result.slo.tpot_slo_s, "seeds": list(result.seeds),
            "rel_tol": result.rel_tol, "rounds": result.rounds, "workers": result.workers} | modes | {"modes": {
                "bound_order": list(result.bound_order), "runner_order": list(result.runner_order), "confirms": result.confirms,
                "bounds_tie": result.bounds_tie}}


def online_verdict(mode: ModeSearch, seeds: int) -> str:
    """One mode's line: whether its pick has the highest capacity (within the tolerance), as :func:`verdict` says offline."""
    if len(mode.searched) == 1:
        only = mode.searched[0]
        return (f"the pick {split_name(only.split)} alone was searched ({fmt(only.capacity_aps, 'agents/s')} within the SLO): nothing "
                "to rank it against.")
    return _ranked(mode.searched[0], mode.order[0], mode.agrees, mode.lead_frac, mode.recommended, seeds,
                   lambda c: f"{fmt(c.capacity_aps, 'agents/s')} within the SLO", "the pick kept the SLO at no rate")


def online_modes_verdict(result: OnlineCheck) -> str:
    """One line: whether the capacities rank the modes (recommended split with recommended split) as the bounds do."""
    first, second = result.bound_order[:2]
    a, b = result.modes[first].best, result.modes[second].best
    bound_gain = fmt(a.split.turns_per_s / b.split.turns_per_s, "x") if b.split.turns_per_s > 0 else "all"
    gain = fmt(a.capacity_aps / b.capacity_aps, "x") if b.capacity_aps > 0 else "all"
    pair = f"{first} {split_name(a.split)} over {second} {split_name(b.split)}"
    if result.bounds_tie:
        pa, pb = (result.modes[m].searched[0].split for m in (first, second))  # the picks, whose bounds at the SLO tie
        top, other = (result.modes[m].best for m in result.runner_order[:2])
        ahead = fmt(top.capacity_aps / other.capacity_aps, "x") if other.capacity_aps > 0 else "all"
        return (f"Modes: the bounds tie the picks {first} {split_name(pa)} and {second} {split_name(pb)} at the SLO, so neither order "
                f"contradicts them; the capacities put {result.runner_order[0]} first ({ahead} the agents/s within the SLO).")
    if result.confirms:
        return f"Modes: the capacities confirm the bounds' ranking, {pair}: {gain} the agents/s within the SLO (bounds: {bound_gain})."
    top = result.modes[result.runner_order[0]].best
    return (f"Modes: the capacities contradict the bounds' ranking: the bounds put {pair} ({bound_gain}), the runner puts "
            f"{result.runner_order[0]} {split_name(top.split)} first ({fmt(top.capacity_aps, 'agents/s')} within the SLO against "
            f"{fmt(a.capacity_aps, 'agents/s')}).")


def render_online(result: OnlineCheck, console: Console, label: str = "") -> None:
    """One table of every mode's candidates with their capacities, each mode's verdict, then the modes' verdict."""
    seeds = seeds_text(result.seeds)
    slo = f"mean TTFT <= {fmt(result.slo.ttft_slo_s, 's')}, TPOT <= {fmt(result.slo.tpot_slo_s, 's')}"
    table = Table(title=f"Runner check{label}, online: capacity within the SLO ({slo}), {seeds}; {result.rounds} round(s) of probes "
                        f"on {result.workers} worker(s)", title_justify="left")
    _columns(table, ("mode", "split", "bound", "capacity", "capacity / bound", "turns/s at capacity", "probes", "rank in mode"))
    for mode, m in result.modes.items():
        order = [id(c) for c in m.order]
        for c in m.searched:
            cap = with_half(c.capacity_aps, c.spread, "agents/s")
            table.add_row(mode, split_name(c.split), fmt(c.bound_aps, "agents/s"), cap, fmt(c.over_bound, "%"),
                          fmt(c.capacity_turns_per_s, "turns/s"), str(c.probes), str(order.index(id(c)) + 1))
    console.print(table)
    console.print("turns/s at capacity: the capacity in agents/s times the workload's turns per agent (a rate, not a measurement)",
                  highlight=False)
    if all(c.every_probe_met for m in result.modes.values() for c in m.searched):
        console.print(f"note: every probe kept the SLO: each capacity is within the search's {_tolerance_of(result.rel_tol)} of its "
                      "bound (the search does not probe above the bound)", highlight=False)
    for mode, m in result.modes.items():
        console.print(f"{mode}: {online_verdict(m, len(result.seeds))}", highlight=False)
    if len(result.modes) > 1:
        console.print(online_modes_verdict(result), highlight=False)


def _tolerance_of(frac: float) -> str:
    return fmt(frac, "%").replace(".0 %", " %")


def runner_levels(result) -> dict[str, tuple[float, float | None, float | None]]:
    """Each mode's recommended split in turns/s as the runner found it, with its 95 % interval (None: one seed): steady
    turns/s offline, turns/s at the capacity online. ``result``: a :class:`RunnerCheck`, :class:`ModesCheck` or
    :class:`OnlineCheck`."""
    if isinstance(result, OnlineCheck):
        out = {}
        for mode, m in result.modes.items():
            b, k = m.best, m.best.turns_per_agent
            out[mode] = (b.capacity_turns_per_s, None if b.spread.low is None else b.spread.low * k, None if b.spread.high is None else b.spread.high * k)
        return out
    checks = result.checks if isinstance(result, ModesCheck) else {result.policy: result}
    out = {}
    for mode, check in checks.items():
        c = next(c for c in check.checked if c.split is check.recommended)
        out[mode] = (c.steady, c.spread.low, c.spread.high)
    return out
