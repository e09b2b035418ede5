"""The optimal set and the shared pick in words and in JSON: the same text in ``bottleneck``, ``plan`` and ``sweep``."""

from __future__ import annotations

from itertools import groupby

from dualpath_plan.model.fmt import fmt
from dualpath_plan.planning.pick import OptimalSet, Split


def members_text(optimal: OptimalSet) -> str:
    """``P = 33..110 (78 splits, P/D 0.3143..3.333)``, per node-type pair when there are several."""
    parts = []
    for (pe, de), group in groupby(optimal.members, key=lambda s: (s.pe_profile, s.de_profile)):
        splits = list(group)
        ps = [s.P for s in splits]
        low, high = min(s.P / s.D for s in splits), max(s.P / s.D for s in splits)
        count = f"{len(splits)} split{'s' if len(splits) > 1 else ''}"
        span = f"P = {min(ps)}" if len(set(ps)) == 1 else f"P = {min(ps)}..{max(ps)}"
        gaps = "" if len(set(ps)) == 1 or len(set(ps)) == max(ps) - min(ps) + 1 else ", not every P between"
        ratio = f"P/D {fmt(low, '', 3)}" if low == high else f"P/D {fmt(low, '', 3)}..{fmt(high, '', 3)}"
        kind = "" if len({(s.pe_profile, s.de_profile) for s in optimal.members}) == 1 else f"{pe}/{de}: "
        parts.append(f"{kind}{span} ({count}{gaps}, {ratio})")
    return "; ".join(parts)


def within_text(optimal: OptimalSet, cost_unit: str = "") -> str:
    """What the set is within: ``1 % of 4.578 kturns/s`` or ``1 % of the cheapest, 144 nodes``."""
    tol = fmt(optimal.tolerance_frac, "%").replace(".0 %", " %")
    if optimal.objective == "max_turns_per_s":
        top = max(s.turns_per_s for s in optimal.members)
        return f"within {tol} of the best bound, {fmt(top, 'turns/s')}"
    low = min(s.cost for s in optimal.members)
    return f"within {tol} of the cheapest, {fmt(low, cost_unit, digits=10)}"


def pick_text(optimal: OptimalSet) -> str:
    """Why the pick: its bound with its worst single shortfall (and, where that ties, the shortfall that decided)."""
    r = optimal.robustness
    if r.resource is None:
        return "no single 10 % shortfall lowers its bound"
    if r.decided_by is None:
        return f"with {r.resource} 10 % short it keeps {fmt(r.turns_per_s, 'turns/s')}, the most of the set"
    name, value = r.decided_by
    return (f"with {r.resource} 10 % short it keeps {fmt(r.turns_per_s, 'turns/s')}, as the next best splits do; with {name} "
            f"10 % short it keeps {fmt(value, 'turns/s')}, the most of those")


def split_name(split: Split) -> str:
    return f"{split.P}P{split.D}D" + ("" if split.pe_profile == split.de_profile else f" ({split.pe_profile}/{split.de_profile})")


def optimal_json(optimal: OptimalSet) -> dict:
    """The set, the pick and the rule, in SI numbers."""
    p_low, p_high = optimal.p_range
    pd_low, pd_high = optimal.pd_range
    return {
        "objective": optimal.objective, "tolerance_frac": optimal.tolerance_frac, "rule": optimal.rule,
        "pick": {"pe_profile": optimal.pick.pe_profile, "de_profile": optimal.pick.de_profile, "P": optimal.pick.P, "D": optimal.pick.D,
                 "turns_per_s": optimal.pick.turns_per_s, "cost": optimal.pick.cost, "worst_shortfall_turns_per_s": optimal.robustness.turns_per_s,
                 "worst_shortfall_resource": optimal.robustness.resource,
                 "decided_by_resource": None if optimal.robustness.decided_by is None else optimal.robustness.decided_by[0],
                 "decided_by_turns_per_s": None if optimal.robustness.decided_by is None else optimal.robustness.decided_by[1]},
        "P_min": p_low, "P_max": p_high, "pd_min": pd_low, "pd_max": pd_high,
        "members": [{"pe_profile": s.pe_profile, "de_profile": s.de_profile, "P": s.P, "D": s.D, "turns_per_s": s.turns_per_s, "cost": s.cost}
                    for s in optimal.members],
    }
