"""Rendering of ``compare``: a table of the generations' I/O per FLOP beside the workload's need, and their bounds; with
``--dram-tier``, a second table of DualPath alone, the tier alone and both per generation.

JSON: ``dram_tier_GB`` at the top (``null`` without ``--dram-tier``), and per generation ``dram_tier`` (``basic`` and
``dualpath``: the picks with the tier, as ``sweep`` reports its points, with ``served_share``, the share of hit KV the
tier serves at the bound; ``null`` without a tier or where the nodes cannot hold it) and ``dram_tier_refused`` (why not,
or ``null``)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.planning.compare import Comparison, Generation
from dualpath_plan.planning.tier import served_share
from dualpath_plan.report.sweep import point_row, split_text

GB_PER_PFLOP = 1e6  # bytes per FLOP -> GB per PFLOP (1e9 B / 1e15 FLOP): Table 1's unit


def to_json(c: Comparison) -> dict:
    """SI numbers under unit-suffixed keys: bytes per FLOP, FLOP/s, the picks as ``sweep`` reports its points."""
    return {
        "gpus": c.gpus, "model": c.model, "workload": c.workload, "cache_compute_bytes_per_flop": c.cache_compute_bytes_per_flop,
        "generations": [_generation_json(g, c) for g in c.generations], "dram_tier_GB": c.dram_tier_GB,
    }


def _generation_json(g: Generation, c: Comparison) -> dict:
    rng = g.pd_range
    return {
        "profile": g.profile, "gpu": g.gpu, "dtype": g.dtype, "node_flops": g.node_flops,
        "snic_bytes_per_flop": g.snic_bytes_per_flop, "pcie_bytes_per_flop": g.pcie_bytes_per_flop,
        "snic_over_cache_compute": g.snic_bytes_per_flop / c.cache_compute_bytes_per_flop,
        "basic": point_row(g.basic, c.sweep), "dualpath": point_row(g.dualpath, c.sweep), "speedup": g.speedup,
        "pd_range": None if rng is None else {"lower": rng.lower, "upper": rng.upper, "lower_by": list(rng.lower_by), "upper_by": list(rng.upper_by)},
        "dram_tier": None if g.tier is None else {m: point_row(p, c.tier_sweep) | {"served_share": served_share(p.bound)} for m, p in g.tier.items()},
        "dram_tier_refused": g.tier_refused,
    }


def render(c: Comparison, console: Console) -> None:
    need = c.cache_compute_bytes_per_flop * GB_PER_PFLOP
    table = Table(title=f"Hardware generations at {c.gpus} GPUs, {c.model} on {c.workload}. SNIC: a node's storage NIC, PCIe: a "
                        f"GPU's host link, in GB/s per dense PFLOP/s of the node or GPU; need: the {fmt(need, '')} GB a turn loads per "
                        "PFLOP it prefills (Table 1's measure, over the data set's turns)", title_justify="left")
    for col in ("profile", "dense per node", "SNIC", "PCIe", "SNIC / need", "basic", "dualpath", "gain", "free P/D"):
        table.add_column(col, justify="left" if col == "profile" else "right", overflow="fold")
    for g in c.generations:
        table.add_row(g.profile, fmt(g.node_flops, "FLOP/s"), fmt(g.snic_bytes_per_flop * GB_PER_PFLOP, ""),
                      fmt(g.pcie_bytes_per_flop * GB_PER_PFLOP, ""), fmt(g.snic_bytes_per_flop / c.cache_compute_bytes_per_flop, "x"),
                      split_text(g.basic, why=True), split_text(g.dualpath, why=True), fmt(g.speedup, "x"), _range(g))
    console.print(table)
    console.print(_trend(c), highlight=False)
    for note in (_whole_nodes_note(c), _nothing_note(c), _empty_range_note(c)):
        if note is not None:
            console.print(note, highlight=False)
    if c.dram_tier_GB is not None:
        console.print(_tier_table(c))
        for g in c.generations:
            if g.tier_refused is not None:
                console.print(f"note: {g.profile} cannot hold the tier: {g.tier_refused}", highlight=False)


def _empty_range_note(c: Comparison) -> str | None:
    """Why a generation's free P/D is ``none``: eq. (9)'s lower end above its upper end, each named by the limit that sets it."""
    empty = [g for g in c.generations if g.pd_range is not None and not g.pd_range.lower < g.pd_range.upper]
    if not empty:
        return None
    ends = "; ".join(f"{g.profile}: lower end {fmt(g.pd_range.lower, '')} ({', '.join(g.pd_range.lower_by)}) above upper end "
                     f"{fmt(g.pd_range.upper, '')} ({', '.join(g.pd_range.upper_by)})" for g in empty)
    return f"note: free P/D none: eq. (9)'s range is empty, so no split is bottleneck-free ({ends})"


def _nothing_note(c: Comparison) -> str | None:
    """Which generations serve nothing within the budget, and where to find the smallest cluster that serves, or ``None``."""
    none = [g.profile for g in c.generations if g.dualpath.bound.turns_per_s <= 0]
    if not none:
        return None
    return (f"note: no split of {c.gpus:,} GPUs serves {c.model} on {', '.join(none)}; `dualpath-plan plan --profile NAME "
            "--target-turns-per-s 1`, with this command's other flags, finds the cheapest cluster of NAME that does (in nodes, "
            "or in money where the nodes are priced)")


def _whole_nodes_note(c: Comparison) -> str | None:
    """Which generations' picks spend fewer GPUs than the budget (whole nodes of their size), or ``None``."""
    short = [f"{g.profile} {g.dualpath.gpus:,}" for g in c.generations if g.dualpath.gpus < c.gpus]
    if not short:
        return None
    return f"note: DualPath's picks spend fewer GPUs than the {c.gpus:,} budgeted (whole nodes): {', '.join(short)}"


def _tier_table(c: Comparison) -> Table:
    """Per generation at the same GPU budget: neither, DualPath alone, the tier alone, both, and what the tier serves."""
    table = Table(title=f"A DRAM tier of {fmt(c.dram_tier_GB, 'GB')} on every node, at the same {c.gpus} GPUs (DRAM the nodes ship "
                        "with, in their price: the same nodes, so at equal cost)", title_justify="left")
    for col in ("profile", "neither", "DualPath alone", "tier alone", "both", "tier serves (both)"):
        table.add_column(col, justify="left" if col == "profile" else "right", overflow="fold")
    for g in c.generations:
        if g.tier is None:
            table.add_row(g.profile, split_text(g.basic), split_text(g.dualpath), "-", "-", "-")
            continue
        both = g.tier["dualpath"]
        table.add_row(g.profile, split_text(g.basic), split_text(g.dualpath), split_text(g.tier["basic"]), split_text(both),
                      fmt(served_share(both.bound), "%") if both.bound.turns_per_s > 0 else "-")
    return table


def _range(g: Generation) -> str:
    rng = g.pd_range
    if rng is None or not rng.lower < rng.upper:
        return "none"
    return f"{fmt(rng.lower, '')}..{'inf' if rng.upper == float('inf') else fmt(rng.upper, '')}"


def _trend(c: Comparison) -> str:
    """From the first generation to the last: how compute and storage I/O per node grew, and what that does to the ratio."""
    a, b = c.generations[0], c.generations[-1]
    if len(c.generations) < 2:
        return f"{a.profile}: its storage NIC carries {fmt(a.snic_bytes_per_flop / c.cache_compute_bytes_per_flop, 'x')} of what the turns need per FLOP"
    compute = b.node_flops / a.node_flops
    io = (b.snic_bytes_per_flop * b.node_flops) / (a.snic_bytes_per_flop * a.node_flops)
    sizes = {x.scenario.pe_hw.g for x in (a, b) if x.scenario is not None}
    node = "node" if len(sizes) < 2 else f"node (nodes of {a.scenario.pe_hw.g} and {b.scenario.pe_hw.g} GPUs)"
    return (f"From {a.profile} to {b.profile}: dense compute per {node} {fmt(compute, 'x')}, storage NIC bandwidth per node "
            f"{fmt(io, 'x')}, so storage bytes per FLOP {fmt(io / compute, 'x')}; DualPath's speed-up {fmt(a.speedup, 'x')} -> "
            f"{fmt(b.speedup, 'x')}")
