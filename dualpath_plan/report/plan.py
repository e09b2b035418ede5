"""Rendering of ``plan`` answers: a rich table per mode for people, a dict for ``--json``.

JSON: ``electricity_usd_per_kwh`` is the price of power the rents include (``null`` without
``--electricity-usd-per-kwh``), ``electricity_counted_twice_for`` the node types whose own profile rent (a cloud's, with
power in it) got it added too. The primary mode (``dualpath`` when planned, else the first) at the top level under the
stable keys ``mode``, ``P``, ``D``, ``turns_per_s``, ``binding`` and ``alternatives`` (a list of
choices with the same keys); every planned mode in full under ``modes``. A choice also carries its
node types, node and GPU counts, cost (``cost`` in ``cost_unit``: ``nodes``, ``USD`` or ``USD/h`` on the
``basis`` ``rent``), agents/s,
the KV rate at the bound and the shadow prices. ``relaxation_turns_per_s`` (budget questions) or
``relaxation_cost`` (target questions) is the LP relaxation, ``gap_frac`` how far the whole-number
answer is from it (both ``null`` with a DRAM tier, and with storage nodes bought from a money or power budget).
``dram_tier`` is ``null`` without ``--dram-tier``; with it, the
modes are planned with the tier and ``dram_tier`` holds the comparison within the same budget: ``gb_per_node``,
``dram_price_per_GB`` (in ``dram_price_unit``, USD/GB or USD/GB/h; ``null`` where the tier's DRAM is not priced),
``options`` (``neither``, ``dualpath_alone``, ``tier_alone``, ``both``: each pick as a choice above, with ``tier`` and
``served_share``, the share of hit KV the tier serves at its bound) and ``without_tier`` (every mode planned without
it, in full).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dualpath_plan.bounds.compute import prefill_instance_gpus
from dualpath_plan.model.fmt import fmt, has
from dualpath_plan.model.money import BASES, Basis
from dualpath_plan.planning.plan import Choice, ModePlan
from dualpath_plan.planning.request import BUDGET_UNITS, PlanRequest
from dualpath_plan.planning.pick import bounds_tie
from dualpath_plan.planning.tier import OPTIONS, TierPlan, served_share
from dualpath_plan.report.pick import members_text, optimal_json, pick_text, within_text
from dualpath_plan.report.bounds import binds_text, energy_json, price_json

def choice_json(choice: Choice, money: Basis) -> dict:
    """One cluster; ``money.per_turn_key`` (USD per turn/s bought, USD per turn rented) when it is priced."""
    b = choice.bound
    return {
        "mode": b.mode,
        "pe_profile": choice.pe_profile,
        "de_profile": choice.de_profile,
        "P": choice.P,
        "D": choice.D,
        "nodes": choice.nodes,
        "gpus": choice.gpus,
        "cost": choice.cost,
        "cost_unit": choice.cost_unit,
        money.per_turn_key: money.per_turn(choice.cost, b.turns_per_s) if choice.cost_unit != "nodes" else None,
        "turns_per_s": b.turns_per_s,
        "agents_per_s": b.agents_per_s,
        "kv_at_bound_Bps": b.kv_Bps,
        "de_read_fraction": b.de_read_fraction,
        "binding": list(b.binding),
        "shadow_prices": {name: price_json(p) for name, p in b.shadow_prices.items()},
        "storage_nodes": choice.storage_nodes,
        **energy_json(choice.energy),
    }


def mode_json(answer: ModePlan, money: Basis) -> dict:
    relax_key = "relaxation_turns_per_s" if answer.objective == "max_turns_per_s" else "relaxation_cost"
    return choice_json(answer.best, money) | {
        "objective": answer.objective,
        relax_key: answer.relaxation,
        "gap_frac": answer.gap_frac,
        "alternatives": [choice_json(c, money) for c in answer.alternatives],
        "optimal_set": None if answer.optimal is None else optimal_json(answer.optimal),
        "per_node_type": [optimal_json(s) | {money.per_turn_key: money.per_turn(s.pick.cost, s.pick.turns_per_s) if _priced(answer) else None}
                          for s in answer.per_type],
    }


def _priced(answer: ModePlan) -> bool:
    return answer.best.cost_unit != "nodes"


def primary_mode(answers: dict[str, ModePlan]) -> str:
    return "dualpath" if "dualpath" in answers else next(iter(answers))


def to_json(request: PlanRequest, answers: dict[str, ModePlan], tiers: TierPlan | None = None) -> dict:
    """The ``--json`` schema of ``plan``."""
    first = request.candidates[0]
    budget = request.budget
    out = {
        "question": "budget" if request.target_turns_per_s is None else "target",
        "budget": None if budget is None else {"kind": budget.kind, "amount": budget.amount},
        "basis": request.basis,
        "electricity_usd_per_kwh": request.electricity_usd_per_kwh,  # in the rents (null: not given)
        "electricity_counted_twice_for": list(request.power_twice),  # node types whose profile rent (with power) got it too
        "target_turns_per_s": request.target_turns_per_s,
        "model": first.model.name,
        "workload": first.workload.name,
        "accounting": first.accounting,
        "candidates": [[sc.pe_hw.name, sc.de_hw.name] for sc in request.candidates],
        "prefill_instance_gpus": {sc.pe_hw.name: prefill_instance_gpus(sc.model, sc.pe_hw, request.options.prefill_instance_nodes)
                                  for sc in request.candidates},  # per prefill node type: one instance's GPUs, its EP size
    }
    main = mode_json(answers[primary_mode(answers)], request.money)
    out |= {key: main[key] for key in ("mode", "P", "D", "turns_per_s", "binding", "alternatives")}
    out["modes"] = {mode: mode_json(a, request.money) for mode, a in answers.items()}
    out["dram_tier"] = None if tiers is None else tier_json(tiers, request.money)
    return out


def tier_json(tiers: TierPlan, money: Basis) -> dict:
    """``dram_tier``: the four options within the same budget and the plan without the tier (module docstring)."""
    priced = tiers.dram_price_per_GB is not None
    return {
        "gb_per_node": tiers.gb_per_node,
        "dram_price_per_GB": tiers.dram_price_per_GB,
        "dram_price_unit": _price_unit(money) if priced else None,
        "options": {name: choice_json(c, money) | {"tier": OPTIONS[name][1], "served_share": served_share(c.bound)}
                    for name, c in tiers.options().items()},
        "without_tier": {mode: mode_json(a, money) for mode, a in tiers.without.items()},
    }


def _price_unit(money: Basis) -> str:
    """The unit of ``--dram-price`` (USD/GB) or ``--dram-rent`` (USD/GB/h)."""
    return "USD/GB" if money.unit == "USD" else "USD/GB/h"


_OPTION_WORDS = {"neither": "neither (basic)", "dualpath_alone": "DualPath alone", "tier_alone": "DRAM tier alone", "both": "both"}


def _tier_table(tiers: TierPlan, money: Basis) -> Table:
    """The four options' picks within the same budget, each with the best cluster it buys (node types beside the counts
    when the picks differ in them)."""
    options = tiers.options()
    priced = any(c.cost_unit != "nodes" for c in options.values())
    mixed = len({(c.pe_profile, c.de_profile) for c in options.values()}) > 1
    table = Table(title=f"Within the same budget: DualPath, a DRAM tier of {fmt(tiers.gb_per_node, 'GB')} a node, both", title_justify="left")
    for col in ("option", *(("prefill", "decode") if mixed else ("P", "D")), f"cost {money.unit}" if priced else "nodes", "turns/s",
                "tier serves", "vs neither"):
        table.add_column(col, justify="left" if col in ("option", "prefill", "decode") else "right", no_wrap=col != "option")
    base = options["neither"].turns_per_s if "neither" in options else 0.0
    for name, c in options.items():
        split = (f"{c.P} {c.pe_profile}", f"{c.D} {c.de_profile}") if mixed else (str(c.P), str(c.D))
        table.add_row(_OPTION_WORDS[name], *split, _money(c.cost, money) if priced else _plain(c.cost), _plain(c.turns_per_s),
                      fmt(served_share(c.bound), "%") if OPTIONS[name][1] else "-", fmt(c.turns_per_s / base, "x") if base > 0 else "-")
    return table


def _tier_verdict(tiers: TierPlan, money: Basis) -> str:
    """Which buys more within the budget, DualPath or the tier, and what both add (or cost)."""
    options = tiers.options()
    if tiers.dram_price_per_GB is None:
        cost = "the tier's DRAM counts nothing against a budget in nodes, GPUs or kW"
    else:
        per_node = tiers.gb_per_node * tiers.dram_price_per_GB
        cost = f"the tier's DRAM at {fmt(tiers.dram_price_per_GB, _price_unit(money))} adds {fmt(per_node, money.unit)} to every node"
    if "dualpath_alone" not in options or "tier_alone" not in options:
        return f"DRAM tier: {cost}."
    alone, tier, both = options["dualpath_alone"], options["tier_alone"], options["both"]
    if bounds_tie(alone.turns_per_s, tier.turns_per_s):
        verdict = "the same: neither buys more"
    else:
        verdict = ", so " + ("DualPath" if alone.turns_per_s > tier.turns_per_s else "the DRAM tier") + " buys more"
        verdict = f"{fmt(tier.turns_per_s, 'turns/s')}{verdict}"
    change = both.turns_per_s / alone.turns_per_s - 1 if alone.turns_per_s > 0 else 0.0
    than = ("as much as DualPath alone" if bounds_tie(both.turns_per_s, alone.turns_per_s) else
            f"{fmt(abs(change), '%')} {'more' if change >= 0 else 'less'} than DualPath alone")
    return (f"DRAM tier within the same budget ({cost}): DualPath alone buys {fmt(alone.turns_per_s, 'turns/s')}, the tier alone "
            f"{verdict}; both {fmt(both.turns_per_s, 'turns/s')} ({than}).")


def _question(request: PlanRequest) -> str:
    power = ("" if request.electricity_usd_per_kwh is None else
             f", rents with power at {fmt(request.electricity_usd_per_kwh, 'USD/kWh')}")
    if request.target_turns_per_s is None:
        b = request.budget
        tier = "" if not request.dram_tier_GB else f", with a DRAM tier of {fmt(request.dram_tier_GB, 'GB')} on every node"
        return f"the most turns/s within {fmt(b.amount, BUDGET_UNITS[b.kind])}{tier}{power}"
    within = "" if request.budget is None else f" within {fmt(request.budget.amount, BUDGET_UNITS[request.budget.kind])}"
    return f"the cheapest cluster (in {request.cost_unit}) reaching {fmt(request.target_turns_per_s, 'turns/s')}{within}{power}"


def _cost(value: float, unit: str) -> str:
    """Whole dollars, or nodes with up to 10 digits, rather than exponent notation."""
    return fmt(value, unit, digits=10)


def _money(value: float, money: Basis) -> str:
    """A cost under a header that names its unit: whole dollars, or dollars and cents an hour."""
    return f"{value:,.2f}" if money.unit == "USD/h" else _plain(value)


def _plain(value: float) -> str:
    """A number under a header that names its unit: 4 significant digits, whole from 10,000 up."""
    return fmt(round(value) if abs(value) >= 1e4 else value, "")


def _table(answer: ModePlan, money: Basis) -> Table:
    """Best and runner-up clusters; the node types go in the title when every row has the same ones,
    else next to the node counts ("38 hopper")."""
    rows = (answer.best, *answer.alternatives)
    mixed = len({(c.pe_profile, c.de_profile) for c in rows}) > 1
    same = rows[0].pe_profile if rows[0].pe_profile == rows[0].de_profile else f"{rows[0].pe_profile} prefill and {rows[0].de_profile} decode"
    title = f"{answer.mode}: " + ("" if mixed else f"{same} nodes, ") + "the pick first, then the next best"
    table = Table(title=title, title_justify="left")
    priced = _priced(answer)
    storage = rows[0].storage_nodes is not None
    power = all(c.energy is not None and c.energy.power_W is not None for c in rows)  # every row's power known
    columns = (*(("prefill", "decode") if mixed else ("P", "D")), *(("storage",) if storage else ()), "GPUs",
               *((f"cost {money.unit}", money.per_turn_label) if priced else ()), *(("kW", "J/turn") if power else ()),
               "turns/s", "agents/s", "binding")
    for col in columns:
        text = col in ("prefill", "decode", "binding")
        table.add_column(col, justify="left" if text else "right", overflow="fold", no_wrap=not text)
    for c in rows:
        cost = (_money(c.cost, money), fmt(money.per_turn_shown(c.cost, c.turns_per_s), "")) if priced else ()
        table.add_row(
            *((f"{c.P} {c.pe_profile}", f"{c.D} {c.de_profile}") if mixed else (str(c.P), str(c.D))),
            *((str(c.storage_nodes),) if storage else ()), fmt(c.gpus, ""), *cost, *(_energy_cells(c) if power else ()),
            _plain(c.turns_per_s), _plain(c.bound.agents_per_s), ", ".join(c.bound.binding) or "nothing",
        )
    return table


def _energy_cells(c: Choice) -> tuple[str, str]:
    """The most the cluster draws, kW, and its joules per turn at its bound (``-`` where it serves nothing)."""
    per_turn = c.energy.joules_per_turn
    return _plain(c.energy.power_kw), "-" if per_turn is None else _plain(per_turn)


def _storage_text(choice: Choice) -> str:
    """``, with 179 storage nodes`` when the plan buys storage (``--storage``)."""
    return "" if choice.storage_nodes is None else f", with {choice.storage_nodes:,} storage nodes"


def _summary(answer: ModePlan, request: PlanRequest) -> str:
    best = answer.best
    if answer.relaxation is None:
        relax = ("no LP relaxation (a DRAM tier's pool split makes it no LP in P and D)" if request.dram_tier_GB else
                 "no LP relaxation (the storage nodes bought from the budget are not in its closed form)")
    else:
        value = fmt(answer.relaxation, "turns/s") if answer.objective == "max_turns_per_s" else _cost(round(answer.relaxation, 1), best.cost_unit)
        relax = f"LP relaxation {value}, whole-number gap {fmt(answer.gap_frac, '%')}"
    return (
        f"{answer.mode}: P = {best.P} x {best.pe_profile}, D = {best.D} x {best.de_profile} "
        f"({fmt(best.nodes, 'nodes')}{_storage_text(best)}): {fmt(best.turns_per_s, 'turns/s')}, {binds_text(best.bound)}; {relax}"
        + ("" if answer.optimal is None else
           f". Splits {within_text(answer.optimal, best.cost_unit)}: {members_text(answer.optimal)}; the pick is the most robust ({pick_text(answer.optimal)})")
    )


def _types_table(answer: ModePlan, money: Basis) -> Table:
    """The pick of each node-type pair within the same budget or target, best first."""
    priced = _priced(answer)
    by_value = sorted(answer.per_type, key=lambda s: -s.pick.turns_per_s if answer.objective == "max_turns_per_s" else s.pick.cost)
    table = Table(title=f"{answer.mode}: the pick of each node type", title_justify="left")
    for col in ("prefill", "decode", "P", "D", *((f"cost {money.unit}", money.per_turn_label) if priced else ("nodes",)), "turns/s", "splits as good"):
        table.add_column(col, justify="left" if col in ("prefill", "decode", "splits as good") else "right", overflow="fold")
    for s in by_value:
        p = s.pick
        cost = (_money(p.cost, money), fmt(money.per_turn_shown(p.cost, p.turns_per_s), "")) if priced else (_plain(p.cost),)
        table.add_row(p.pe_profile, p.de_profile, str(p.P), str(p.D), *cost, _plain(p.turns_per_s), members_text(s))
    return table


def render(request: PlanRequest, answers: dict[str, ModePlan], console: Console, tiers: TierPlan | None = None) -> None:
    """Print the question, each mode's table and a one-line summary per mode (with a DRAM tier, the four options at equal
    cost after them)."""
    first = request.candidates[0]
    console.print(f"Plan: {_question(request)}; {first.model.name} on {first.workload.name}, {first.accounting} accounting", highlight=False)
    for answer in answers.values():
        console.print(_table(answer, request.money))
        if answer.per_type:
            console.print(_types_table(answer, request.money))
    for answer in answers.values():
        console.print(_summary(answer, request), highlight=False)
    if tiers is not None:
        console.print(_tier_table(tiers, request.money))
        console.print(_tier_verdict(tiers, request.money), highlight=False)
    for note in (_unpriced_note(request), _rack_note(request, answers)):
        if note is not None:
            console.print(note, highlight=False)
    if request.power_twice:
        names = ", ".join(request.power_twice)
        console.print(f"note: electricity is added to the profile rent of {names}; a cloud's on-demand rent, as the shipped profiles "
                      f"quote, includes power already, so it counts twice: give --rent {request.power_twice[0]}=USD/h for a rent "
                      "without power (a lease, a colocation)", highlight=False)


def _rack_note(request: PlanRequest, answers: dict[str, ModePlan]) -> str | None:
    """Where a pick's nodes are trays of an NVLink domain wider than one node (GB200/GB300 NVL72: 18 trays of 4 GPUs a
    rack), how many racks its trays fill: a buyer orders whole racks, and plan counts trays; ``None`` otherwise."""
    hardware = {hw.name: hw for sc in request.candidates for hw in (sc.pe_hw, sc.de_hw)}
    racked = {n: hw for n, hw in hardware.items() if hw.nvl_domain_gpus > hw.g and hw.nvl_domain_gpus % hw.g == 0}
    parts = []
    for mode, answer in answers.items():
        best = answer.best
        trays = {n: 0 for n in racked}
        for name, count in ((best.pe_profile, best.P), (best.de_profile, best.D)):
            if name in trays:
                trays[name] += count
        parts += [f"{mode} {count:,} {n} trays fill {fmt(count / (racked[n].nvl_domain_gpus // racked[n].g), '')} racks"
                  for n, count in trays.items() if count]
    if not parts:
        return None
    sizes = ", ".join(f"{n}: {hw.nvl_domain_gpus // hw.g} trays of {hw.g} GPUs" for n, hw in racked.items())
    return (f"note: plan counts nodes as compute trays of one NVLink domain a rack ({sizes}); {'; '.join(parts)}: racks come whole, "
            "so a --nodes budget of whole racks (a multiple of a rack's trays) plans within them")


def _unpriced_note(request: PlanRequest) -> str | None:
    """Why the costs are counted in nodes when some candidate types carry a price or a rent and others do not, and
    what to give to price them all; nothing under a power budget, whose question is kilowatts, not money."""
    if request.cost_unit != "nodes" or (request.budget is not None and request.budget.kind == "kw"):
        return None
    types = {hw.name: hw for sc in request.candidates for hw in (sc.pe_hw, sc.de_hw)}
    store, money = request.storage, request.money
    if store is not None and all(request.price(hw) is not None for hw in types.values()):  # only the storage nodes lack a price
        key = "storage_node_price_usd" if money.name == "purchase" else "storage_node_rent_per_hour_usd"
        return (f"note: costs are counted in nodes: storage profile {store.name} has no {money.noun}; give --set {key}={money.unit} to "
                "price the storage nodes with the compute nodes")
    lacking = {b: sorted(n for n, hw in types.items() if b.price(hw) is None) for b in BASES.values()}
    basis = min(BASES.values(), key=lambda b: len(lacking[b]))  # the basis fewest types lack
    if len(lacking[basis]) == len(types):
        return None  # nothing is priced: nodes are the only measure
    priced = [n for n in types if n not in lacking[basis]]
    return (f"note: costs are counted in nodes: {', '.join(priced)} {has(priced)} a {basis.noun} and {', '.join(lacking[basis])} "
            f"{has(lacking[basis])} none; give {basis.price_flag} {lacking[basis][0]}={basis.unit} to compare them in money")
