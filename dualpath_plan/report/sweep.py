"""Rendering of ``sweep`` over one budget: a table of the best split per hardware profile and JSON (its plot: ``report.plots``;
its rows, as every sweep's: ``report.grid``)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.planning.sweep import SweepPoint, SweepResult
from dualpath_plan.planning.pick import RULE_NAME, TOLERANCE_FRAC
from dualpath_plan.report.bounds import why_words
from dualpath_plan.report.pick import members_text, optimal_json

_COST_KEYS = {"purchase": ("cost_usd", "usd_per_turn_per_s"), "rent": ("cost_usd_per_hour", "usd_per_turn")}  # by money basis


def point_row(p: SweepPoint, result: SweepResult) -> dict:
    """One point as SI numbers under unit-suffixed keys, with its place in its optimal set."""
    b, pick = p.bound, result.best[p.profile][p.mode]
    return {
        "profile": p.profile, "P": p.P, "D": p.D, "gpus": p.gpus, "mode": p.mode,
        "turns_per_s": b.turns_per_s, "agents_per_s": b.agents_per_s, "turns_per_s_per_gpu": p.turns_per_s_per_gpu,
        "kv_at_bound_Bps": b.kv_Bps, "de_read_fraction": b.de_read_fraction, "binding": [] if p.serves_nothing_because and not b.turns_per_s > 0 else list(b.binding),  # nothing served: why says
        "serves_nothing_because": list(p.serves_nothing_because),
        "in_optimal_set": result.in_optimal_set(p), "picked": (p.P, p.D) == (pick.P, pick.D),
    } | _costs(p, result) | _energy(result.energy(p))


def _energy(e) -> dict:
    return {"power_kw": e.power_kw, "joules_per_turn": e.joules_per_turn, "joules_per_output_token": e.joules_per_output_token}


def _costs(p: SweepPoint, result: SweepResult) -> dict:
    """The point's cost and what its throughput costs, under the keys of the result's money basis (the others None)."""
    cost = result.cost(p)
    out = dict.fromkeys(key for keys in _COST_KEYS.values() for key in keys)
    cost_key, per_key = _COST_KEYS[result.basis]
    return out | {cost_key: cost, per_key: result.money.per_turn(cost, p.bound.turns_per_s)}


def budget_text(result: SweepResult) -> str:
    return f"{result.gpus_budget} GPUs" if result.money_budget is None else fmt(result.money_budget, result.money.unit)


def to_json(result: SweepResult) -> dict:
    return {
        "gpus_budget": result.gpus_budget,
        "basis": result.basis,
        **_money_keys(result),
        "best": {prof: {mode: point_row(p, result) for mode, p in modes.items()} for prof, modes in result.best.items()},
        "optimal_set": {prof: {mode: optimal_json(s) for mode, s in sets.items()} for prof, sets in result.optimal.items()},
        "points": [point_row(p, result) for p in result.points],
    }


def _money_keys(result: SweepResult) -> dict:
    """The money budget and prices per node under keys that name their unit; the other basis' keys null."""
    rented = result.basis == "rent"
    return {"budget_usd": None if rented else result.money_budget, "prices_usd": None if rented else result.prices,
            "budget_usd_per_hour": result.money_budget if rented else None, "rents_usd_per_hour": result.prices if rented else None}


def render(result: SweepResult, console: Console) -> None:
    title = (f"Best P/D split per hardware profile within {budget_text(result)} (throughput bounds; of the splits within "
             f"{fmt(TOLERANCE_FRAC, '%').replace('.0 %', ' %')} of the best, the {RULE_NAME}: the least loss when one capacity is 10 % short)")
    table = Table(title=title, title_justify="left")
    for col in ("profile", "dualpath best", "basic best", "gain", "oracle", "binding (dualpath)", "dualpath splits as good"):
        table.add_column(col, justify="left" if col in ("profile", "binding (dualpath)", "dualpath splits as good") else "right", overflow="fold")  # fold long names, never cut them
    for prof, modes in result.best.items():
        d, b, o = modes["dualpath"], modes["basic"], modes["oracle"]
        table.add_row(
            f"{prof} ({d.gpus} GPUs)" if result.money_budget is None else f"{prof} ({d.P + d.D} nodes)",
            split_text(d),
            split_text(b),
            fmt(d.bound.turns_per_s / b.bound.turns_per_s, "x") if b.bound.turns_per_s > 0 else "n/a",
            fmt(o.bound.turns_per_s, "turns/s"),
            ", ".join(d.bound.binding) if d.bound.turns_per_s > 0 else "serves nothing: " + why_nothing(d),
            members_text(result.optimal[prof]["dualpath"]) if d.bound.turns_per_s > 0 else "n/a",
        )
    console.print(table)
    if result.prices:
        console.print(_spend_table(result))
        if unpriced := [prof for prof in result.best if prof not in result.prices]:
            one = len(unpriced) == 1
            console.print(f"note: {', '.join(unpriced)} {'has' if one else 'have'} no {result.money.noun}, so the cost table leaves "
                          f"{'it' if one else 'them'} out; give {result.money.price_flag} {unpriced[0]}={result.money.unit}", highlight=False)


def _spend_table(result: SweepResult) -> Table:
    """Each priced profile's nodes, price and dualpath pick, and what its throughput costs: at equal spend under a money
    budget, else at the equal GPU count."""
    money = result.money
    spent = "Equal rent" if money.name == "rent" else "Equal spend"
    title = (f"{spent}, {budget_text(result)}: what each profile {'rents' if money.name == 'rent' else 'buys'} (dualpath)" if result.money_budget is not None
             else f"What each pick costs at {budget_text(result)}, {'rented' if money.name == 'rent' else 'bought'} (dualpath)")
    table = Table(title=title, title_justify="left")
    for col in ("profile", f"{money.unit} per node", "nodes", "cost", "dualpath best", money.per_turn_label):
        table.add_column(col, justify="left" if col == "profile" else "right", overflow="fold")
    ranked = sorted(((prof, modes) for prof, modes in result.best.items() if prof in result.prices), key=lambda item: -item[1]["dualpath"].bound.turns_per_s)
    for prof, modes in ranked:
        d = modes["dualpath"]
        cost = result.cost(d)
        table.add_row(prof, fmt(result.prices[prof], money.unit), str(d.P + d.D), fmt(cost, money.unit), split_text(d),
                      fmt(money.per_turn_shown(cost, d.bound.turns_per_s), ""))
    return table


def split_text(p: SweepPoint, why: bool = False) -> str:
    """The best split and its bound, or "none" when no split of the budget serves anything (with ``why``: and why)."""
    if p.bound.turns_per_s > 0:
        return f"{p.P}P{p.D}D {fmt(p.bound.turns_per_s, 'turns/s')}"
    return f"none: {why_nothing(p)}" if why and p.serves_nothing_because else "none"


def why_nothing(p: SweepPoint) -> str:
    """Why a split serves nothing, in words (its ``serves_nothing_because``)."""
    return why_words(p.serves_nothing_because)
