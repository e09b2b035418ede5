"""Rendering of the LP throughput bounds inside ``bottleneck``: JSON keys and rich tables.

JSON keys added to the ``bottleneck`` schema (existing keys keep their meaning):
``modes.<mode>.turns_per_s``, ``agents_per_s``, ``kv_at_bound_Bps``, ``de_read_fraction_at_bound``,
``binding_at_bound``, ``utilization_at_bound`` and ``shadow_prices`` (resource ->
``{"turns_per_s_per_unit", "unit", "per", "elasticity"}``: turns/s per extra ``unit`` of capacity
on every ``per`` (node or GPU) of that resource's side); ``speedup_vs_basic`` (mode -> ratio);
``limits`` (the per-turn demands and per-GPU rates the LP used); ``next_purchase``.
The ``oracle`` mode has no I/O ceiling, so its ``kv_Bps`` and split are null.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dualpath_plan.bounds.compute import MAX_PREFILL_NODES, min_prefill_nodes
from dualpath_plan.bounds.lp import WORDS, Bound, Limits, ShadowPrice, next_purchase
from dualpath_plan.bounds.storage import COPIES
from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.units import GB, KB, TB, TERA
from dualpath_plan.planning.analysis import Analysis
from dualpath_plan.planning.pick import TOLERANCE_FRAC, bounds_tie
from dualpath_plan.planning.tier import TierReport
from dualpath_plan.report.pick import members_text, optimal_json, pick_text, within_text

MODE_WORDS = {"basic": "basic (PE path only)", "dualpath": "dualpath (best split)", "oracle": "oracle (I/O free)"}
# Display scale for a price: (factor from SI, words) -> "per GB/s added to every prefill node".
_PRICE_SCALE = {"B/s": (GB, "GB/s"), "FLOP/s": (TERA, "TFLOP/s"), "tokens/s": (KB, "k tokens/s"), "B": (TB, "TB")}
_NO_CEILING = {"kv_Bps": None, "R_p_Bps": None, "R_d_Bps": None, "de_read_fraction": None, "binding": [], "utilization": {}}


def price_json(price: ShadowPrice) -> dict:
    return {"turns_per_s_per_unit": price.turns_per_s_per_unit, "unit": price.unit, "per": price.per, "elasticity": price.elasticity}


def bound_json(bound: Bound) -> dict:
    """The LP keys of one mode."""
    return {
        "turns_per_s": bound.turns_per_s,
        "agents_per_s": bound.agents_per_s,
        "kv_at_bound_Bps": bound.kv_Bps,
        "de_read_fraction_at_bound": bound.de_read_fraction,
        "binding_at_bound": list(bound.binding),
        "utilization_at_bound": bound.utilization,
        "shadow_prices": {name: price_json(p) for name, p in bound.shadow_prices.items()},
        "tier_Bps_at_bound": bound.R_m_Bps,
    }


def limits_json(lim: Limits) -> dict:
    rate = lim.decode
    return {
        "hit_bytes_per_turn": lim.hit_bytes_per_turn,
        "flops_per_turn": lim.flops_per_turn,
        "gen_tokens_per_turn": lim.gen_tokens_per_turn,
        "turns_per_trajectory": lim.turns_per_trajectory,
        "dtype": lim.dtype,
        "prefill_flops_per_gpu_s": lim.prefill_flops_per_gpu,  # FLOP/s per GPU, as decode_tokens_per_gpu_s
        "prefill_instance_gpus": lim.prefill_instance[0],  # GPUs of one prefill instance: its EP size
        "prefill_all_to_all_path": lim.prefill_instance[1],  # nvlink, rdma or none (a dense model)
        "decode_tokens_per_gpu_s": lim.decode_tokens_per_gpu_s,
        "decode_limited_by": rate.limited_by if rate else None,
        "decode_batch_per_gpu": rate.batch_per_gpu if rate else None,
        "decode_step_s": rate.step_s if rate else None,
        "decode_weight_share_bytes": rate.weight_share_bytes if rate else None,
    }


def speedups(bounds: dict[str, Bound]) -> dict[str, float | None]:
    base = bounds["basic"].turns_per_s
    return {mode: (b.turns_per_s / base if base > 0 else None) for mode, b in bounds.items() if mode != "basic"}


def add_json(out: dict, analysis: Analysis) -> dict:
    """Add the LP keys to a ``bottleneck`` JSON dict (in place) and return it."""
    if not analysis.bounds:
        return out
    nothing = bool(analysis.limits.serves_nothing_because)
    for mode, bound in analysis.bounds.items():
        out["modes"].setdefault(mode, dict(_NO_CEILING)).update(bound_json(bound))
        if nothing and not bound.turns_per_s > 0:  # nothing served: no limit binds, serves_nothing_because says why
            out["modes"][mode]["binding_at_bound"] = []
    out["serves_nothing_because"] = list(analysis.limits.serves_nothing_because)
    out["speedup_vs_basic"] = speedups(analysis.bounds)  # each mode on this split
    out["gain_vs_basic_best_split"] = best_split_gain(analysis)
    out["limits"] = limits_json(analysis.limits)
    buy = next_purchase(analysis.bounds["dualpath"])
    out["next_purchase"] = None if buy is None else {"resource": buy.resource, "mode": "dualpath"} | price_json(buy)
    out["best_split"] = {
        mode: {"P": p.P, "D": p.D, "turns_per_s": p.bound.turns_per_s, "binding_at_bound": list(p.bound.binding)}
        for mode, p in analysis.best_splits.items()
    }
    out["optimal_set"] = {mode: optimal_json(s) for mode, s in analysis.optimal.items()}
    out["tool_time"] = tool_json(analysis)
    out.update(storage_json(analysis))
    out.update(energy_json(analysis.energy))
    out["dram_tier"] = tier_json(analysis)
    return out


def _zero_reasons(analysis: Analysis) -> str:
    sc, reasons = analysis.scenario, []
    for why in analysis.limits.serves_nothing_because:
        if why == "prefill_weights_do_not_fit":
            need = min_prefill_nodes(sc.model, sc.pe_hw)
            reasons.append(f"its weights do not fit in {sc.P} prefill node(s) (needs >= {need})" if need < MAX_PREFILL_NODES else
                           "its non-routed weights alone fill a prefill GPU's HBM, so no number of prefill nodes holds them")
        elif why.startswith("prefill_"):
            reasons.append(f"prefill makes no pass ({why.removeprefix('prefill_').replace('_', ' ')})")
        else:
            reasons.append(f"decode makes no tokens ({why.removeprefix('decode_').replace('_', ' ')})")
    return "; ".join(reasons) or "a limit has zero capacity"


def binds_text(bound: Bound) -> str:
    """``bound by X + Y``: the limits at capacity that price the bound; a limit also at capacity whose price is zero (a
    degenerate optimum: another limit sets the bound and more of it alone gains nothing) is named apart."""
    priced = [n for n in bound.binding if n in bound.shadow_prices and bound.shadow_prices[n].turns_per_s_per_unit > 0]
    full = [n for n in bound.binding if n not in priced]
    if not priced:
        return "bound by " + (" + ".join(WORDS[n] for n in bound.binding) or "nothing")
    text = "bound by " + " + ".join(WORDS[n] for n in priced)
    if full:
        text += f"; {' and '.join(WORDS[n] for n in full)} also at capacity, but more of {'it' if len(full) == 1 else 'them'} alone gains nothing"
    return text


def verdict_lines(analysis: Analysis) -> list[str]:
    """Three lines first: what DualPath reaches and what binds, the split to order, what to buy next."""
    sc, dual = analysis.scenario, analysis.bounds["dualpath"]
    best, best_basic = analysis.best_splits["dualpath"], analysis.best_splits["basic"]
    if dual.turns_per_s > 0:
        gain = _gain_text(analysis)
        head = f"Verdict: with DualPath {sc.P}P{sc.D}D reaches {fmt(dual.turns_per_s, 'turns/s')} ({fmt(dual.agents_per_s, 'agents/s')}), {gain}; {binds_text(dual)}."
        if dual.turns_per_s < best.bound.turns_per_s * (1 - TOLERANCE_FRAC):  # a buyer compares best with best: say where DualPath's is
            head += (f" This split is not DualPath's best here: {best.P}P{best.D}D reaches {fmt(best.bound.turns_per_s, 'turns/s')} "
                     "(Order below).")
    else:
        head = f"Verdict: {sc.P}P{sc.D}D cannot serve {sc.model.name}: {_zero_reasons(analysis)}."
    if best.bound.turns_per_s > 0:
        dual_set = analysis.optimal["dualpath"]
        order = (f"Order: of these {sc.P + sc.D} nodes, {best.P}P{best.D}D with DualPath ({fmt(best.bound.turns_per_s, 'turns/s')}); "
                 f"without DualPath, {best_basic.P}P{best_basic.D}D ({fmt(best_basic.bound.turns_per_s, 'turns/s')}). "
                 f"Splits {within_text(dual_set)} with DualPath: {members_text(dual_set)}; the pick is the most robust "
                 f"({pick_text(dual_set)}).")
    else:
        order = f"Order: no split of these {sc.P + sc.D} nodes serves {sc.model.name}; `dualpath-plan plan --target-turns-per-s 1`, with the same profiles and flags, finds the cheapest cluster that does (in nodes, or in money where the nodes are priced)."
    lines = [head, order]
    buy = next_purchase(dual)
    if buy is not None and dual.turns_per_s > 0:
        lines.append(f"Next purchase: more {WORDS[buy.resource]} ({price_text(buy)}).")
    if analysis.storage is not None:
        lines.append(storage_line(analysis))
    if analysis.tier is not None:
        lines.append(tier_line(analysis))
    if (power := power_line(analysis)) is not None:
        lines.append(power)
    tool, basic = tool_json(analysis), analysis.bounds["basic"]
    if tool is not None and dual.turns_per_s > 0:
        lines.append(f"Tool time: agents wait {fmt(tool['mean_tool_s'], 's')} between turns on average, so this bound needs at least "
                     f"{tool['agents_in_flight_min']:,.0f} agents in flight (Little's law); with fewer the cluster idles"
                     + (" and DualPath gains less." if dual.turns_per_s > basic.turns_per_s and not bounds_tie(dual.turns_per_s, basic.turns_per_s)
                        else "."))
    return lines


def storage_line(analysis: Analysis) -> str:
    """``Storage: ...``: the storage nodes planned or given, what each of their limits needs, and whether they bind."""
    st = analysis.storage
    sides = {"storage_read": "read side", "storage_write": "write side", "storage_capacity": "capacity", COPIES: "copies"}
    needs = ", ".join(f"{sides[name]} {count:,}" for name, count in st.needed.items())
    loads = (f"at its DualPath bound with unlimited storage the cluster reads {fmt(st.read_Bps, 'B/s')}, writes back "
             f"{fmt(st.write_Bps, 'B/s')} and keeps {fmt(st.kept_bytes, 'B')} of KV for live agents (each storage node: "
             f"{fmt(st.node_read_Bps, 'B/s')} read, {fmt(st.node_write_Bps, 'B/s')} written over its copies, {fmt(st.node_usable_bytes, 'B')} usable)")
    if st.planned:
        return f"Storage: {st.nodes:,} {st.profile} storage nodes keep the storage NICs fed (needed by the {needs}); {loads}."
    enough = max(st.needed.values())
    verdict = f"bind the DualPath bound ({enough:,} would not" if st.binding else f"do not bind ({enough:,} suffice"
    return f"Storage: {st.nodes:,} {st.profile} storage nodes {verdict}; needed by the {needs}); {loads}."


def tier_line(analysis: Analysis) -> str:
    """``DRAM tier: ...``: DualPath alone, the tier alone (basic with it), both, on the same nodes."""
    t, b = analysis.tier, analysis.bounds
    X = lambda bound: fmt(bound.turns_per_s, "turns/s")  # noqa: E731
    return (f"DRAM tier: {t.gb_per_node:g} GB on each node ({fmt(t.tier_bytes, 'B')}, an LRU cache serving at most "
            f"{fmt(t.served_cap_Bps, 'B/s')} of hit KV) serves {fmt(t.served_share['dualpath'], '%')} of it with DualPath. Both reach "
            f"{X(b['dualpath'])}; the tier alone (no DE read path) {X(b['basic'])}, serving {fmt(t.served_share['basic'], '%')}; "
            f"DualPath alone {X(t.without['dualpath'])}; neither {X(t.without['basic'])}." + _tier_cost_text(t, b) + _break_even_text(t))


def _break_even_text(t: TierReport) -> str:
    """From how much DRAM a node the tier alone, and both, beat DualPath alone on these nodes."""
    beats = t.beats_dualpath_from_GB
    parts = [f"{who} from about {fmt(gb, 'GB')} a node" if gb is not None else f"{who} at no size below a node's DRAM"
             for who, gb in (("the tier alone wins", beats["tier_alone"]), ("both win", beats["both"]))]
    return " On these nodes, against DualPath alone: " + "; ".join(parts) + "."


def _tier_cost_text(t: TierReport, b: dict[str, Bound]) -> str:
    """A warning when the tier lowers a mode's bound: its inserts load the compute NICs whatever it serves."""
    lower = [m for m in ("dualpath", "basic") if b[m].turns_per_s < t.without[m].turns_per_s * (1 - 1e-9)]
    if not lower:
        return ""
    mode = lower[0]
    return (f" The tier lowers the bound {'with DualPath' if mode == 'dualpath' else 'without DualPath'} by "
            f"{fmt(1 - b[mode].turns_per_s / t.without[mode].turns_per_s, '%')}: an LRU inserts every storage read and all new KV "
            "over the compute NICs into the pool, whatever it serves; without the tier these nodes do better.")


def tier_json(analysis: Analysis) -> dict | None:
    """``dram_tier``: the tier's size, its serving cap, what it serves in each mode and the bounds without it."""
    t = analysis.tier
    if t is None:
        return None
    return {"gb_per_node": t.gb_per_node, "tier_bytes": t.tier_bytes, "served_cap_Bps": t.served_cap_Bps,
            "working_bytes_s_per_turn": t.working_bytes_s_per_turn, "served_Bps": t.served_Bps, "served_share": t.served_share,
            "beats_dualpath_from_GB": t.beats_dualpath_from_GB,
            "without_tier": {mode: bound_json(bound) for mode, bound in t.without.items()}}


def power_line(analysis: Analysis) -> str | None:
    """``Power: ...`` where the profiles give power; where only the storage profile lacks it, the compute nodes' power
    and what is missing; nothing where no compute profile gives power."""
    e, sc = analysis.energy, analysis.scenario
    if e is None:
        return None
    if e.joules_per_turn is not None:
        return (f"Power: at most {fmt(e.power_W, 'W')} at full load{' with its storage nodes' if analysis.storage else ''}; at the "
                f"DualPath bound {fmt(e.joules_per_turn, 'J')} per turn, {fmt(e.joules_per_output_token, 'J')} per output token.")
    compute = [hw for hw in (sc.pe_hw, sc.de_hw) if hw.node_power_W is not None]
    if sc.storage is not None and len(compute) == 2 and e.unknown == (sc.storage.name,):
        watts = sc.P * sc.pe_hw.node_power_W + sc.D * sc.de_hw.node_power_W
        return (f"Power: the compute nodes draw at most {fmt(watts, 'W')} at full load; storage profile {sc.storage.name} gives no "
                "storage_node_power_W, so the whole installation's is not known (--set storage_node_power_W=W).")
    return None


def storage_json(analysis: Analysis) -> dict:
    """The ``bottleneck --json`` storage keys: ``storage_nodes`` (given or planned; null without ``--storage``),
    ``storage_binding`` and ``storage`` (the profile, the nodes each limit needs, the loads and one node's capacities)."""
    st = analysis.storage
    if st is None:
        return {"storage_nodes": None, "storage_binding": False, "storage": None}
    return {"storage_nodes": st.nodes, "storage_binding": st.binding, "storage": {
        "profile": st.profile, "planned": st.planned, "nodes_needed": st.needed, "read_Bps": st.read_Bps, "write_Bps": st.write_Bps,
        "kept_bytes": st.kept_bytes, "kept_bytes_s_per_turn": st.kept_bytes_s_per_turn, "node_read_Bps": st.node_read_Bps,
        "node_write_Bps": st.node_write_Bps, "node_usable_bytes": st.node_usable_bytes, "retention_s": st.retention_s}}


def energy_json(e) -> dict:
    """``power_kw``, ``joules_per_turn``, ``joules_per_output_token`` (null where a profile gives no power) and
    ``power_unknown_for`` (those profiles)."""
    if e is None:
        return {"power_kw": None, "joules_per_turn": None, "joules_per_output_token": None, "power_unknown_for": []}
    return {"power_kw": e.power_kw, "joules_per_turn": e.joules_per_turn, "joules_per_output_token": e.joules_per_output_token,
            "power_unknown_for": list(e.unknown)}


def tool_json(analysis: Analysis) -> dict | None:
    """The agents in flight that DualPath's bound needs when agents wait for tools between turns (None without tool
    time): by Little's law, agents in flight = agent arrivals x lifetime >= (X / T) x (T - 1) x t_tool, with X the
    bound in turns/s, T the turns per agent and t_tool the mean tool time between turns (a lower bound: the turns'
    own time comes on top)."""
    sc = analysis.scenario
    t_tool = sc.workload.tool_s or 0.0
    if not t_tool > 0 or "dualpath" not in analysis.bounds:
        return None
    turns = sc.turn.turns
    x = analysis.bounds["dualpath"].turns_per_s
    return {"mean_tool_s": t_tool, "turns_per_agent": turns, "agents_in_flight_min": x * t_tool * max(turns - 1.0, 0.0) / turns}


def best_split_gain(analysis: Analysis) -> float | None:
    """DualPath on this split over basic at basic's own best split of the same nodes: what a buyer compares, best
    with best (None when basic serves nothing on any split)."""
    basic = analysis.best_splits["basic"].bound.turns_per_s
    return analysis.bounds["dualpath"].turns_per_s / basic if basic > 0 else None


def _gain_text(analysis: Analysis) -> str:
    """DualPath's gain against basic at basic's best split of these nodes, then on this same split."""
    sc, dual, basic, best_basic = analysis.scenario, analysis.bounds["dualpath"], analysis.bounds["basic"], analysis.best_splits["basic"]
    if not best_basic.bound.turns_per_s > 0:
        return f"basic serves nothing on any split of these {sc.P + sc.D} nodes"
    same = (f"{fmt(dual.turns_per_s / basic.turns_per_s, 'x')} on this same split" if basic.turns_per_s > 0 else
            "basic serves nothing on this same split")
    return (f"{fmt(best_split_gain(analysis), 'x')} basic at its own best split of these {sc.P + sc.D} nodes "
            f"({best_basic.P}P{best_basic.D}D, {fmt(best_basic.bound.turns_per_s, 'turns/s')}; {same})")


def price_text(price: ShadowPrice) -> str:
    """``+2.5 turns/s per GB/s added to every prefill node`` (the price scaled to a readable unit: the gain when
    every node or GPU of that side gets that much more, as the LP's dual says)."""
    factor, words = _PRICE_SCALE[price.unit]
    return f"+{fmt(price.turns_per_s_per_unit * factor, 'turns/s')} per {words} added to every {_side_word(price.resource)}{price.per}"


def _side_word(resource: str) -> str:
    """``prefill `` or ``decode `` for a limit of one side; nothing for the storage cluster's nodes and for the DRAM tier,
    which sits on every node of both sides (its price is per byte added to each of the ``P + D`` nodes)."""
    if resource.startswith(("pe_", "prefill")):
        return "prefill "
    return "decode " if resource.startswith(("de_", "decode")) else ""


def _bounds_table(analysis: Analysis) -> Table:
    table = Table(title="Throughput bound (LP: links + prefill compute + decode)", title_justify="left")
    for col in ("mode", "bound", "agents", "KV", "DE read", "vs basic", "binding"):
        table.add_column(col, justify="left" if col in ("mode", "binding") else "right", overflow="fold")  # fold long names, never cut them
    ups = speedups(analysis.bounds)
    nothing = analysis.limits.serves_nothing_because
    for mode, b in analysis.bounds.items():
        words = ", ".join(b.binding) or "nothing"  # names as in the JSON; the verdict spells them out
        if nothing and not b.turns_per_s > 0:
            words = "nothing served"
        up = "n/a" if not analysis.bounds["basic"].turns_per_s > 0 else fmt(ups.get(mode), "x") if mode != "basic" else "1x"
        table.add_row(
            mode, fmt(b.turns_per_s, "turns/s"), fmt(b.agents_per_s, "agents/s"), fmt(b.kv_Bps, "B/s"),
            fmt(b.de_read_fraction, "%"), up, words,
        )
    table.caption = (f"agents = turns/s over {fmt(analysis.limits.turns_per_trajectory, '')} turns per agent (the mean of the "
                     f"workload's replay data set, as simulate's agents)")
    if nothing:
        table.caption += f"; nothing served: {why_words(nothing)}"
    table.caption_justify = "left"
    return table


def _prices_table(analysis: Analysis) -> Table:
    table = Table(title="Shadow prices (LP duals); elasticity = (dX/X) / (dC/C)", title_justify="left")
    for col in ("mode", "resource", "gain per extra unit", "elasticity"):
        table.add_column(col, justify="left" if col in ("mode", "resource") else "right")
    for mode, b in analysis.bounds.items():
        for name, p in b.shadow_prices.items():
            table.add_row(mode, name, price_text(p), fmt(p.elasticity, ""))
    return table


def _instance_text(lim: Limits) -> str:
    """``, instances of EP16 over RDMA``: the prefill instance the rate is for (nothing for a dense model)."""
    gpus, path = lim.prefill_instance
    return f", instances of EP{gpus} over {'NVLink' if path == 'nvlink' else 'RDMA'}" if path in ("nvlink", "rdma") else ""


def why_words(why: tuple[str, ...]) -> str:
    """``Limits.serves_nothing_because`` in words, as sweep's ``none: ...``; weights that fit neither side are said once."""
    both = ("prefill_weights_do_not_fit", "decode_weights_do_not_fit")
    if all(w in why for w in both):
        why = ("weights_fit_neither_side", *(w for w in why if w not in both))
    return "; ".join(w.replace("_", " ") for w in why)


def _limits_lines(lim: Limits) -> list[str]:
    rate = lim.decode
    prefill_why = [w for w in lim.serves_nothing_because if w.startswith("prefill_")]
    prefill = (f"prefill none ({why_words(tuple(prefill_why))})" if prefill_why else
               f"prefill {fmt(lim.prefill_flops_per_gpu, 'FLOP/s')} per GPU (effective, {lim.dtype}: a turn's FLOP over its saturated pass "
               f"time{_instance_text(lim)})")
    line = (
        f"Per turn: {fmt(lim.hit_bytes_per_turn, 'B')} of hit KV, {fmt(lim.flops_per_turn, 'FLOP')} of prefill, "
        f"{fmt(lim.gen_tokens_per_turn, 'tokens')} generated; {prefill}; decode "
        f"{fmt(lim.decode_tokens_per_gpu_s, 'tokens/s')} per GPU"
    )
    if rate is not None and rate.limited_by != "calibrated":
        line += f" (batch {fmt(rate.batch_per_gpu, '')}, step {fmt(rate.step_s, 's')}, limited by {rate.limited_by})"
    return [line, *_remainder_lines(lim)]


def _remainder_lines(lim: Limits) -> list[str]:
    """A note when the prefill nodes are no whole number of prefill instances: the remainder is charged as if it made
    instances of the same size (``compute.prefill_instance_nodes``), which leans fast."""
    gpus, path = lim.prefill_instance
    P, g = lim.cluster.P, lim.cluster.pe.g
    nodes = gpus // g if g else 0
    if path not in ("nvlink", "rdma") or nodes <= 1 or P < nodes or P % nodes == 0:
        return []
    return [f"note: P = {P} prefill nodes make {P // nodes} whole prefill instance(s) of {nodes} nodes; the other {P % nodes} node(s) are charged as "
            "if they formed instances of that size too (joined to one, they would make it larger and slower per token: leans fast)"]


def render(analysis: Analysis, console: Console) -> None:
    """Print the bounds, their prices and the next purchase."""
    if not analysis.bounds:
        return
    for line in _limits_lines(analysis.limits):
        console.print(line, highlight=False)
    console.print(_bounds_table(analysis))
    buy = next_purchase(analysis.bounds["dualpath"])
    if not any(b.shadow_prices for b in analysis.bounds.values()) and analysis.limits.serves_nothing_because:
        console.print(f"Shadow prices: none; no added unit of a resource helps a split that serves nothing ({_zero_reasons(analysis)}).",
                      highlight=False)
        return
    console.print(_prices_table(analysis))
    if buy is None:
        console.print("What to buy next: nothing binds with a positive price.")
    else:
        console.print(
            f"What to buy next (dualpath): more {WORDS[buy.resource]} ({buy.resource}): {price_text(buy)}, "
            f"i.e. 1 % more of it gives {fmt(buy.elasticity, '')} % more turns/s.",
            highlight=False,
        )
