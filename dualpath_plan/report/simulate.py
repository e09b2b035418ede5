"""Rendering of ``simulate`` results: rich tables for people, a stable dict for ``--json``.

JSON keeps SI numbers under unit-suffixed keys; the keys the issue names (``jct_s``, ``turns_per_s``,
``bound_turns_per_s``, ``achieved_over_bound``, ``utilization``, ``snic_max_over_avg``,
``de_read_share``, ``wall_s``) are at the top level of every run.
"""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dualpath_plan.bounds.lp import WORDS
from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.units import GB
from dualpath_plan.sim.metrics import Latency
from dualpath_plan.sim.gap import PARTS, Gap, gap
from dualpath_plan.sim.gap import WORDS as GAP_WORDS
from dualpath_plan.sim.spread import Repeated
from dualpath_plan.sim.runner import Capacity, SimResult
from dualpath_plan.model.workload import Trajectories
from dualpath_plan.sim.stages import STAGES, WAITS
from dualpath_plan.sim.steady import ENDS as STEADY_ENDS
from dualpath_plan.sim.tier import ESTIMATE_WORDS as TIER_ESTIMATE_WORDS
from dualpath_plan.sim.stages import WORDS as STAGE_WORDS

LATENCIES = ("ttft", "ttst", "tpot")
LATENCY_WORDS = {"ttft": "time to first token", "ttst": "time from the first to the second token", "tpot": "time per output token"}


def _latency_json(lat: Latency) -> dict:
    return {"count": lat.count, "mean_s": lat.mean_s, "p50_s": lat.p50_s, "p90_s": lat.p90_s, "p99_s": lat.p99_s}


def run_json(r: SimResult) -> dict:
    """One run as JSON."""
    return {
        "policy": r.policy, "mode": r.mode, "agents": r.agents, "turns": r.turns,
        "jct_s": r.jct_s, "sim_s": r.sim_s, "turns_per_s": r.turns_per_s, "steady_turns_per_s": r.steady_turns_per_s,
        "bound_turns_per_s": r.bound_turns_per_s, "steady_bound_turns_per_s": r.steady_bound_turns_per_s, "lp_mode": r.lp_mode,
        "achieved_over_bound": r.achieved_over_bound, "steady_over_window_bound": r.steady_over_window_bound,
        "steady_over_workload_bound": r.steady_over_workload_bound,
        "utilization": r.utilization, "snic_max_over_avg": r.snic_max_over_avg, "steady_snic_max_over_avg": r.steady_snic_max_over_avg,
        "steady_window_s": None if r.steady_window_s is None else list(r.steady_window_s),
        "steady_window_by": None if r.steady_window_by is None else list(r.steady_window_by),
        "de_read_share": r.de_read_share, "prefill_instance_gpus": r.prefill_instance_gpus,
        "tier_share": r.tier_share, "steady_tier_share": r.steady_tier_share, "bound_tier_share": r.bound_tier_share,
        "steady_stages": {name: {"requests": st.requests, "tokens": st.tokens, "seconds_per_turn": st.seconds_per_turn}
                          for name, st in r.steady_stages.items()},
        "latency": {name: _latency_json(getattr(r, name)) for name in LATENCIES},
        "aps": r.aps, "slo_met": r.slo_met, "stopped_early": r.stopped_early,
        "steady_state": None if r.slo is None else r.slo.horizon_s is not None,
        "ttft_slo_s": None if r.slo is None else r.slo.ttft_slo_s, "tpot_slo_s": None if r.slo is None else r.slo.tpot_slo_s,
        "wall_s": r.wall_s, "sim_s_per_wall_s": r.sim_s_per_wall_s, "steps": r.steps, "dt_s": r.dt_s, "seed": r.seed, "engine": r.engine,
        "gap": gap_json(r),
    }


def _roots(traj) -> int:
    """The agents that arrive on their own (a trace's sub-agents come with their parents)."""
    return int(traj.n_agents if traj.fork_round is None else np.count_nonzero(traj.fork_round < 0))


def _per_arrival(r: SimResult, roots: int | None) -> float:
    """Turns per arriving agent: the run's turns over its root sessions (each brings its sub-agents' turns)."""
    return r.turns / (roots or r.agents)


def fixed_agents_note(runs: dict[str, SimResult], roots: int | None = None) -> str | None:
    """Online with ``--agents``: the SLO verdict is of a run whose arrivals end with the count, not of the steady state;
    and a rate above the LP bound's (agents/s: the bound over the turns per arriving agent) has no steady state at all.
    ``roots``: the arriving agents (root sessions; None: every agent arrives)."""
    r = next(iter(runs.values()))
    if r.slo is None or r.slo.horizon_s is not None or not r.agents or not r.turns:
        return None
    arriving = roots or r.agents
    text = (f"note: with --agents the arrivals end after {arriving:,} agent{'s' if arriving != 1 else ''} (about "
            f"{fmt(arriving / r.aps, 's')} at {fmt(r.aps, 'agents/s')}), so the SLO verdict is of that run, not of the steady state "
            "the paper's method waits for (drop --agents for it, or use --find-capacity)")
    over = [name for name, x in runs.items() if x.aps > x.bound_turns_per_s / _per_arrival(x, roots)]
    if over:
        x = runs[over[0]]
        text += (f"; {fmt(x.aps, 'agents/s')} is above the LP bound's {fmt(x.bound_turns_per_s / _per_arrival(x, roots), 'agents/s')} "
                 f"({', '.join(over)}), a rate no steady state sustains")
    return text


OFFERED_SHORT = 0.95  # an online rate offering less than this share of the window's bound leaves the cluster unfilled


def offered_note(runs: dict[str, SimResult], roots: int | None = None) -> str | None:
    """Online below capacity: the turns/s the arrivals offer (rate x turns per arriving agent) against the window's bound,
    so a reader does not take the steady parts (idle, uneven) for the scheduler's doing when the cluster was simply not
    full. ``roots``: the arriving agents (root sessions; None: every agent arrives)."""
    parts = []
    for name, r in runs.items():
        if r.slo is None or not r.turns or not r.agents or not r.steady_bound_turns_per_s:
            continue
        offered = r.aps * _per_arrival(r, roots)
        if offered < OFFERED_SHORT * r.steady_bound_turns_per_s:
            parts.append(f"{name} {fmt(offered, 'turns/s')} ({fmt(offered / r.steady_bound_turns_per_s, '%')} of its window's bound)")
    if not parts:
        return None
    return (f"note: the arrivals offer {', '.join(parts)}: the cluster was not full, so the steady parts above (idle, uneven) "
            "measure the load offered, not the scheduler; --find-capacity measures the scheduler at the rate that fills it")


def gap_json(r: SimResult) -> dict | None:
    """The bound minus the achieved rate, in parts that add up (``sim.gap``), turns/s."""
    g = gap(r)
    if g is None:
        return None
    return {"total_turns_per_s": g.total, **{f"{name}_turns_per_s": value for name, value in g.parts.items()},
            "steady": {"sum_turns_per_s": g.steady_state, "window_bound_turns_per_s": r.steady_bound_turns_per_s,
                       "measured_on": list(g.binding), "used_frac": g.binding_frac, "busiest_frac": g.busiest_frac,
                       "idle_by_stage_turns_per_s": g.idle_by_stage, "idle_short_of_agents_turns_per_s": g.idle_short_of_agents}}


def _gap_table(runs: dict[str, SimResult]) -> Table | None:
    gaps = {name: gap(r) for name, r in runs.items()}
    if any(g is None for g in gaps.values()):
        return None
    table = Table(title="Where the lost throughput went: bound - achieved, in turns/s and % of the run's bound (the parts add up; the "
                        "steady ones are measured against the steady window's bound, on the resources that bind it; a part is signed, so "
                        "one can be negative, or pass 100 % when another is negative)",
                  title_justify="left")
    table.add_column("part", justify="left")
    for name in runs:
        table.add_column(name, justify="right")
    for part in PARTS:
        table.add_row(GAP_WORDS[part], *(f"{fmt(_shown(g.parts[part], g), 'turns/s')} ({fmt(_shown(g.share(part), g), '%')})" for g in gaps.values()))
        if part == "idle":
            for stage in WAITS:
                if any(abs(_shown(g.idle_by_stage.get(stage, 0.0), g)) > 0 for g in gaps.values()):
                    table.add_row(f"  idle, work held: {STAGE_WORDS[stage]}",
                                  *(f"{fmt(_shown(g.idle_by_stage.get(stage, 0.0), g), 'turns/s')}" for g in gaps.values()))
            if any(abs(_shown(g.idle_short_of_agents, g)) > 0 for g in gaps.values()):
                table.add_row("  idle, short of agents", *(f"{fmt(_shown(g.idle_short_of_agents, g), 'turns/s')}" for g in gaps.values()))
    table.add_row("total", *(f"{fmt(g.total, 'turns/s')} ({fmt(g.total / g.bound_turns_per_s if g.bound_turns_per_s > 0 else 0.0, '%')})"
                             for g in gaps.values()))
    table.add_row("steady: measured on", *(_measured_on(g) for g in gaps.values()))
    return table


def _shown(value: float, g: Gap) -> float:
    """A part as the table shows it: rounding noise (under a billionth of the bound) as 0."""
    return 0.0 if abs(value) < 1e-9 * max(g.bound_turns_per_s, 1.0) else value


def _measured_on(g: Gap) -> str:
    """Which binding resources the steady parts were measured on, their use and the busiest instance's."""
    if not g.binding:
        return "n/a"
    return f"{', '.join(g.binding)}: {fmt(g.binding_frac, '%').replace(' ', '')} used, busiest {fmt(g.busiest_frac, '%').replace(' ', '')}"


def scenario_json(sc: Scenario, traj: Trajectories) -> dict:
    """The inputs; ``workload`` is the profile the trajectories were drawn from (null for a trace); ``dram_tier_GB`` the
    DRAM tier on every node (null: none)."""
    return {"profile": sc.profile_label, "model": sc.model.name, "workload": traj.workload, "trajectories": traj.source,
            "P": sc.P, "D": sc.D, "accounting": sc.accounting, "dram_tier_GB": sc.dram_tier_GB}


def to_json(sc: Scenario, traj: Trajectories, runs: dict[str, SimResult], rep: Repeated | None = None, several: bool | None = None) -> dict:
    """One policy asked: its fields at the top level; several (``--compare``, ``several``; default: several runs): by
    policy, plus ratios to the first, also when Ctrl-C left only one of them finished (one shape per command). Over
    several seeds (``--seeds``): the first seed's runs, plus ``seeds`` and each policy's ``spread``."""
    extra = {} if rep is None or len(rep.seeds) < 2 else {"seeds": list(rep.seeds), "spread": spread_json(rep)}
    if not (len(runs) > 1 if several is None else several):
        return scenario_json(sc, traj) | run_json(next(iter(runs.values()))) | extra
    first = next(iter(runs))
    ratios = {name: _ratios(runs[first], r) for name, r in runs.items() if name != first}
    return scenario_json(sc, traj) | {"policies": {name: run_json(r) for name, r in runs.items()}, "ratios_to": first, "ratios": ratios} | extra


def spread_json(rep: Repeated) -> dict:
    return {name: {metric: {"mean": s.mean, "ci95_low": s.low, "ci95_high": s.high, "n": s.n, "values": list(s.values)}
                   for metric, s in metrics.items()} for name, metrics in rep.spreads.items()}


SPREAD_UNITS = {"jct_s": "s", "turns_per_s": "turns/s", "steady_turns_per_s": "turns/s"}  # the latencies are seconds too
SPREAD_LABELS = {"jct_s": "JCT", "turns_per_s": "turns/s, whole run", "steady_turns_per_s": "turns/s, steady",
                 "ttft_p50_s": "TTFT p50", "ttft_p90_s": "TTFT p90", "ttft_p99_s": "TTFT p99", "tpot_p50_s": "TPOT p50", "tpot_p99_s": "TPOT p99"}


def _spread_table(rep: Repeated) -> Table:
    first, last = rep.seeds[0], rep.seeds[-1]
    table = Table(title=f"Over {len(rep.seeds)} seeds ({first}..{last}): mean +- half the 95 % interval of the mean (Student's t)",
                  title_justify="left")
    table.add_column("metric", justify="left")
    for name in rep.spreads:
        table.add_column(name, justify="right")
    for metric in next(iter(rep.spreads.values())):
        unit = SPREAD_UNITS.get(metric, "s")
        cells = []
        for name in rep.spreads:
            s = rep.spreads[name].get(metric)
            cells.append("n/a" if s is None else f"{fmt(s.mean, unit)} +- {fmt(s.half_width, unit)}")
        table.add_row(SPREAD_LABELS[metric], *cells)
    return table


def _ratios(base: SimResult, r: SimResult) -> dict:
    jct = base.jct_s / r.jct_s if base.jct_s and r.jct_s else None
    tps = r.turns_per_s / base.turns_per_s if base.turns_per_s and r.turns_per_s is not None else None
    return {"speedup_jct": jct, "turns_per_s_ratio": tps}


def capacity_note(cap: Capacity) -> str | None:
    """Why the search ended where it did, when its answer alone would mislead: every probe within the
    SLO (the cluster keeps the SLO up to its throughput bound), or none (the SLO is below what the cluster
    does unloaded)."""
    if cap.probes and all(ok for _, ok in cap.probes):
        return ("every probe met the SLO: the cluster keeps it to within the search's tolerance of the LP bound's rate "
                "(the search does not probe above the bound)")
    if (miss := cap.lowest_miss) is not None:
        seen = (f"mean TTFT was {fmt(miss.ttft.mean_s, 's')} and TPOT {fmt(miss.tpot.mean_s, 's')}" if miss.ttft.mean_s is not None
                else f"no turn had its first token when the probe stopped at {fmt(miss.sim_s, 's')}")
        return (f"no rate met the SLO (mean TTFT <= {fmt(cap.slo.ttft_slo_s, 's')}, TPOT <= {fmt(cap.slo.tpot_slo_s, 's')}): "
                f"at {fmt(miss.aps, 'agents/s')}, the lowest rate probed, {seen}; relax the SLO or serve shorter turns")
    return None


def capacity_json(sc: Scenario, traj: Trajectories, cap: Capacity) -> dict:
    """``--find-capacity``: the highest APS within the SLO, the SLO, the probes, and the run at that APS."""
    return scenario_json(sc, traj) | {
        "policy": cap.policy, "capacity_aps": cap.aps, "bound_aps": cap.bound_aps, "turns_per_agent": cap.turns_per_agent,
        "ttft_slo_s": cap.slo.ttft_slo_s, "tpot_slo_s": cap.slo.tpot_slo_s,
        "probes": [{"aps": aps, "slo_met": ok} for aps, ok in cap.probes],
        "at_capacity": None if cap.result is None else run_json(cap.result),
        "note": capacity_note(cap),
    }


# --- people ----------------------------------------------------------------------------------------------

def _header(sc: Scenario, source: str, runs: dict[str, SimResult]) -> Text:
    r = next(iter(runs.values()))
    mode = "offline" if r.mode == "offline" else f"online at {fmt(r.aps, 'agents/s')}"
    tier = "" if not sc.dram_tier_GB else f"; a DRAM tier of {fmt(sc.dram_tier_GB * GB, 'B')} on every node"
    return Text.assemble((sc.profile_label, "bold"), f" {sc.P}P{sc.D}D serving {sc.model.name}: {source}; {mode}; "
                         f"{sc.accounting} accounting; step {fmt(r.dt_s, 's')}; seed {r.seed}{tier}")


def _num(value: float | None) -> float | None:
    """``None`` (printed n/a) for a missing or NaN number."""
    return None if value is None or value != value else value


def _summary_rows(r: SimResult) -> list[tuple[str, str]]:
    """Short labels (80 columns hold three policies); docs/commands/simulate.md spells them out."""
    offline = r.mode == "offline"
    rows = [("agents / turns", f"{r.agents} / {r.turns}")]
    if r.jct_s is not None:
        rows.append(("JCT (all done)", fmt(r.jct_s, "s")))
    if offline:  # online, the run's throughput is the window's: the whole-run rows would repeat it
        rows.append(("turns/s, whole run", fmt(r.turns_per_s, "turns/s")))
    if offline and r.steady_window_s is not None:
        rows += [("steady window from", fmt(r.steady_window_s[0], "s")), ("steady window to", fmt(r.steady_window_s[1], "s"))]
    rows.append(("turns/s, steady" if offline else "turns/s, window", fmt(r.steady_turns_per_s, "turns/s")))
    rows.append(("LP bound" if offline else "LP bound, all turns", fmt(r.bound_turns_per_s, "turns/s")))
    rows.append(("LP mode", r.lp_mode))
    if offline:
        rows.append(("achieved / bound", fmt(_num(r.achieved_over_bound), "%")))
    rows += [
        ("bound, steady window" if offline else "bound, window", fmt(_num(r.steady_bound_turns_per_s), "turns/s")),
        ("steady / window bound" if offline else "window / bound", fmt(_num(r.steady_over_window_bound), "%")),
        ("DE-path reads", fmt(r.de_read_share, "%")),
        ("SNIC max / mean", fmt(_num(r.snic_max_over_avg), "x")),
        ("SNIC max/mean, steady", fmt(_num(r.steady_snic_max_over_avg), "x")),
    ]
    if r.tier_share is not None:  # --dram-tier: what its LRU served against what the bound (Che's estimate) has it serve
        rows += [("hit KV from DRAM tier", fmt(_num(r.tier_share), "%")),
                 ("same, steady" if offline else "same, window", fmt(_num(r.steady_tier_share), "%")),
                 ("bound's tier share", fmt(_num(r.bound_tier_share), "%"))]
    if r.slo is not None:
        verdict = "met" if r.slo_met else ("missed (stopped early)" if r.stopped_early else "missed")
        if r.slo.horizon_s is None:  # --agents: arrivals end with the count, not at the steady state
            verdict += " (fixed --agents: not a steady state)"
        rows.append((f"mean TTFT <= {fmt(r.slo.ttft_slo_s, 's')}, TPOT <= {fmt(r.slo.tpot_slo_s, 's')}", verdict))
    rows += [("simulated", fmt(r.sim_s, "s")), ("wall", fmt(r.wall_s, "s")), ("simulated / wall", fmt(r.sim_s_per_wall_s, "x"))]
    return rows


def _per_policy(title: str, label: str, rows: list[tuple[str, list[str]]], names: list[str], width: int) -> list[Table]:
    """Tables with one row-label column and one column per policy: the fewest tables, of equal numbers
    of policies, that fit ``width`` columns (each repeats the labels; "(1/2)" and so on in the title)."""
    cell = 3  # rich's padding and border per column
    label_w = max(len(label), *(len(r[0]) for r in rows)) + cell + 1
    col_w = [max(len(name), *(len(r[1][i]) for r in rows)) + cell for i, name in enumerate(names)]
    for n_tables in range(1, len(names) + 1):
        per = -(-len(names) // n_tables)  # policies per table, as even as the count of tables allows
        groups = [range(i, min(i + per, len(names))) for i in range(0, len(names), per)]
        if per == 1 or all(label_w + sum(col_w[i] for i in g) <= width for g in groups):
            break
    tables = []
    for k, group in enumerate(groups):
        part = f" ({k + 1}/{len(groups)})" if len(groups) > 1 else ""
        table = Table(title=title + part, title_justify="left")
        table.add_column(label, no_wrap=True)
        for i in group:
            table.add_column(names[i], justify="right")
        for row_label, cells in rows:
            table.add_row(row_label, *(cells[i] for i in group))
        tables.append(table)
    return tables


def _results_tables(runs: dict[str, SimResult], width: int) -> list[Table]:
    first = next(iter(runs.values()))
    per_run = [dict(_summary_rows(r)) for r in runs.values()]
    rows = [(label, [cells.get(label, "n/a") for cells in per_run]) for label, _ in _summary_rows(first)]
    return _per_policy("Fluid run against the LP bound", "quantity", rows, list(runs), width)


def window_note(runs: dict[str, SimResult]) -> str | None:
    """What set each offline run's steady window, and what its bound is (None online)."""
    ends = [(name, r) for name, r in runs.items() if r.steady_window_by is not None and r.steady_window_s is not None]
    if not ends:
        return None
    parts = [f"{name} from {fmt(r.steady_window_s[0], 's')} ({STEADY_ENDS[r.steady_window_by[0]]}) to {fmt(r.steady_window_s[1], 's')} "
             f"({STEADY_ENDS[r.steady_window_by[1]]})" for name, r in ends]
    return ("steady window (past the agents' cold first turns, before they drain): " + "; ".join(parts) + ". Its bound is that "
            "of the turns it finished, which can cost less or more than the run's mean turn (the LP bound row)")


def window_turns(r: SimResult) -> float | None:
    """The turns an offline run finished in its steady window (its steady turns/s times its length); ``None`` online."""
    if r.mode != "offline" or r.steady_window_s is None or r.steady_turns_per_s is None:
        return None
    return r.steady_turns_per_s * (r.steady_window_s[1] - r.steady_window_s[0])


def short_window_note(runs: dict[str, SimResult]) -> str | None:
    """A note naming the offline runs whose steady window finished fewer turns than the run has agents: most agents
    finished no turn in it, so it holds no cycle of the population's turns (the population halved soon after the cold
    start: too few agents, or too short a trace, to load the cluster long), and the steady figures rest on a moment;
    ``None`` when there are none."""
    short = [f"{name} {n:,.0f} turns for {r.agents:,} agents" for name, r in runs.items()
             if (n := window_turns(r)) is not None and r.agents and n < r.agents]
    if not short:
        return None
    return (f"note: the steady window finished fewer turns than the run has agents ({'; '.join(short)}): most agents finished no "
            "turn in it, so the steady figures rest on a moment, not a steady state (too few agents, or too short a trace, "
            "to load the cluster long)")


TIER_ABOVE_FRAC = 1.02  # a run this far above its window's bound is above it, not at its edge (the window's turns' work before it)


def tier_note(runs: dict[str, SimResult]) -> str | None:
    """With a DRAM tier, a note on each run whose LRU served a share of the steady window's hits other than the bound's
    Che estimate, and what that does to the bound as a check; ``None`` without a tier or when they agree within 5 points."""
    parts, above = [], []
    for name, r in runs.items():
        if r.steady_tier_share is None or r.bound_tier_share is None or abs(r.steady_tier_share - r.bound_tier_share) < 0.05:
            continue
        parts.append(f"{name} {fmt(r.steady_tier_share, '%')} against {fmt(r.bound_tier_share, '%')}")
        if r.steady_over_window_bound is not None and r.steady_over_window_bound > TIER_ABOVE_FRAC:
            above.append(f"{name} reached {fmt(r.steady_over_window_bound, '%')}")
    if not parts:
        return None
    text = (f"note: the DRAM tier's LRU served a share of the steady window's hit KV other than the bound's estimate ("
            f"{'; '.join(parts)}): {TIER_ESTIMATE_WORDS}")
    if above:
        text += f"; so the bound is no ceiling here: {', '.join(above)} of its steady window's bound"
    return text


def _ratio_table(runs: dict[str, SimResult]) -> Table:
    names = list(runs)
    base = runs[names[0]]
    table = Table(title=f"Ratios to {names[0]}", title_justify="left")
    for col in ("policy", f"JCT {names[0]} / JCT policy", f"turns/s policy / {names[0]}"):
        table.add_column(col, justify="right" if col != "policy" else "left")
    for name in names[1:]:
        ratio = _ratios(base, runs[name])
        table.add_row(name, fmt(_num(ratio["speedup_jct"]), "x"), fmt(_num(ratio["turns_per_s_ratio"]), "x"))
    return table


def _util_tables(runs: dict[str, SimResult], width: int) -> list[Table]:
    keys = list(next(iter(runs.values())).utilization)
    rows = [(key, [fmt(_num(r.utilization[key]), "%") for r in runs.values()]) for key in keys]
    return _per_policy("Utilisation (delivered / capacity x time)", "resource", rows, list(runs), width)


def _util_legend(runs: dict[str, SimResult]) -> str:
    """What each resource row is, printed below the table at the console's full width."""
    return "; ".join(f"{key}: {WORDS.get(key, key)}" for key in next(iter(runs.values())).utilization)


def _stage_tables(runs: dict[str, SimResult], width: int) -> list[Table]:
    """Where turns were in the steady window: per stage, mean requests and the seconds per turn (Little's law)."""
    shown = [st for st in STAGES if any(r.steady_stages.get(st) is not None and r.steady_stages[st].requests > 0 for r in runs.values())]
    rows = [(STAGE_WORDS[st],
             [_stage_cell(r.steady_stages.get(st)) for r in runs.values()]) for st in shown]
    window = "steady window" if next(iter(runs.values())).mode == "offline" else "window"
    return _per_policy(f"Where turns were ({window}): mean requests, and seconds per turn", "stage", rows, list(runs), width) if rows else []


def _stage_cell(st) -> str:
    if st is None:
        return "n/a"
    if not st.requests > 0:
        return "-"
    per_turn = "" if st.seconds_per_turn is None else f", {fmt(st.seconds_per_turn, 's')}"
    return f"{st.requests:,.0f}{per_turn}" if st.requests >= 10 else f"{st.requests:.2g}{per_turn}"


def _latency_table(runs: dict[str, SimResult]) -> Table:
    window = "steady window" if next(iter(runs.values())).mode == "online" else "all turns"
    table = Table(title=f"Turn latency ({window})", title_justify="left")
    for col in ("policy", "latency", "mean", "p50", "p90", "p99"):
        table.add_column(col, justify="left" if col in ("policy", "latency") else "right")
    for name, r in runs.items():
        for key in LATENCIES:
            lat = getattr(r, key)
            table.add_row(name, key.upper(), *(fmt(_num(v), "s") for v in (lat.mean_s, lat.p50_s, lat.p90_s, lat.p99_s)))
    table.caption = "; ".join(f"{key.upper()}: {words}" for key, words in LATENCY_WORDS.items())
    table.caption_justify = "left"
    return table


def render(sc: Scenario, source: str, runs: dict[str, SimResult], console: Console, rep: Repeated | None = None) -> None:
    """Print one run or several side by side (the first seed's, with the spread over seeds after them)."""
    console.print(_header(sc, source, runs))
    console.print(*_results_tables(runs, console.width))
    for note in (window_note(runs), short_window_note(runs), tier_note(runs)):
        if note is not None:
            console.print(note, highlight=False)
    roots = None if rep is None else _roots(rep.trajectories)
    if (note := fixed_agents_note(runs, roots)) is not None:
        console.print(note, highlight=False)
    if len(runs) > 1:
        console.print(_ratio_table(runs))
    console.print(*_util_tables(runs, console.width))
    console.print(_util_legend(runs), highlight=False)
    console.print(_latency_table(runs))
    console.print(*_stage_tables(runs, console.width))
    if (table := _gap_table(runs)) is not None:
        console.print(table)
        if (note := offered_note(runs, roots)) is not None:
            console.print(note, highlight=False)
    if rep is not None and len(rep.seeds) > 1:
        console.print(_spread_table(rep))


def render_capacity(sc: Scenario, source: str, cap: Capacity, console: Console) -> None:
    """Print the capacity search: every probe, then the run at the capacity found."""
    console.print(Text.assemble((sc.profile_label, "bold"), f" {sc.P}P{sc.D}D serving {sc.model.name}: {source}; capacity search, policy {cap.policy}"))
    table = Table(title="Bisection on agent arrival rate (SLO: mean TTFT and TPOT in the steady window)", title_justify="left")
    table.add_column("probe", justify="right")
    table.add_column("APS", justify="right")
    table.add_column("SLO met")
    for i, (aps, ok) in enumerate(cap.probes, start=1):
        table.add_row(str(i), fmt(aps, "agents/s"), "yes" if ok else "no")
    console.print(table)
    console.print(f"capacity: {fmt(cap.aps, 'agents/s')} (LP bound {fmt(cap.bound_aps, 'agents/s')}; agents of "
                  f"{cap.turns_per_agent:.1f} turns, these trajectories' mean)")
    if (note := capacity_note(cap)) is not None:
        console.print(f"note: {note}", highlight=False)
    if cap.result is not None:
        render(sc, source, {cap.policy: cap.result}, console)
