"""The optimal set and the one pick rule (pick.py), and the same pick in bottleneck, plan and sweep."""

from __future__ import annotations

import pytest

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning import pick
from dualpath_plan.planning.analysis import analyze
from dualpath_plan.planning.plan import plan
from dualpath_plan.planning.request import make_request
from dualpath_plan.planning.sweep import optimal_splits, split_points, sweep


def _set(profile: str, nodes: int, mode: str = "dualpath", **kw):
    return optimal_splits(split_points(build_scenario(profile, **kw), nodes), mode)


@pytest.mark.parametrize("profile, nodes, mode", [("hopper", 144, "dualpath"), ("hopper", 144, "basic"), ("blackwell", 24, "dualpath"),
                                                  ("gb200", 12, "dualpath"), ("h20", 10, "dualpath")])
@pytest.mark.slow
def test_the_set_holds_every_split_within_the_tolerance_and_only_those(profile, nodes, mode):
    points = [p for p in split_points(build_scenario(profile), nodes) if p.mode == mode]
    s = optimal_splits(points, mode)
    top = max(p.bound.turns_per_s for p in points)
    inside = {(p.P, p.D) for p in points if p.bound.turns_per_s >= top * (1 - pick.TOLERANCE_FRAC)}
    assert {(m.P, m.D) for m in s.members} == inside and s.contains(s.pick.P, s.pick.D)
    assert s.p_range == (min(P for P, _ in inside), max(P for P, _ in inside))


def _worst_by_brute_force(split, mode: str) -> float:
    """The bound under every single 10 % shortfall, each re-solved: the rule without its shortcut."""
    return min(solve_closed(split.limits.derated(name, 1 - pick.DERATE_FRAC), mode).turns_per_s for name in split.limits.capacities())


@pytest.mark.slow
@pytest.mark.parametrize("profile, nodes", [("hopper", 144), ("blackwell", 24), ("gb200", 12), ("mi300x", 16)])
def test_the_pick_is_the_split_of_the_set_that_loses_least_to_any_one_shortfall(profile, nodes):
    s = _set(profile, nodes)
    worst = {(m.P, m.D): _worst_by_brute_force(m, "dualpath") for m in s.members}
    assert worst[(s.pick.P, s.pick.D)] == pytest.approx(max(worst.values()), rel=1e-12)
    assert s.robustness.turns_per_s == pytest.approx(worst[(s.pick.P, s.pick.D)], rel=1e-12)


@pytest.mark.slow
def test_inside_the_range_the_pick_balances_the_two_storage_sides():
    """144 Hopper nodes: a wide set of splits ties on the storage NICs; the robust pick splits them evenly."""
    s = _set("hopper", 144)
    assert s.p_range[1] - s.p_range[0] > 50 and (s.pick.P, s.pick.D) == (72, 72)


CASES = [("hopper", 6), ("hopper", 144), ("blackwell", 12), ("gb200", 12), ("mi300x", 24)]


@pytest.mark.slow
@pytest.mark.parametrize("profile, nodes", CASES)
def test_bottleneck_plan_and_sweep_pick_the_same_split_for_the_same_nodes(profile, nodes):
    sc = build_scenario(profile)
    g = sc.pe_hw.g
    P = nodes // 2
    by_bottleneck = analyze(sc.with_nodes(P, nodes - P), BoundOptions()).optimal["dualpath"].pick
    by_sweep = sweep([sc], nodes * g).optimal[profile]["dualpath"].pick
    by_plan = plan(make_request([profile], nodes=nodes, modes=("dualpath",)))["dualpath"]
    assert (by_bottleneck.P, by_bottleneck.D) == (by_sweep.P, by_sweep.D) == (by_plan.best.P, by_plan.best.D)
    assert by_plan.optimal.contains(by_plan.best.P, by_plan.best.D) and by_plan.best.P + by_plan.best.D == nodes


def test_a_target_set_holds_the_splits_within_the_tolerance_of_the_cheapest_each_reaching_the_target():
    answer = plan(make_request(["hopper"], target_turns_per_s=1000.0, modes=("dualpath",)))["dualpath"]
    s = answer.optimal
    cheapest = min(m.cost for m in s.members)
    assert s.objective == "min_cost" and all(m.cost <= cheapest * (1 + pick.TOLERANCE_FRAC) for m in s.members)
    assert all(m.turns_per_s >= 1000.0 * (1 - 1e-9) for m in s.members) and s.contains(answer.best.P, answer.best.D)
    assert answer.best.nodes == cheapest


@pytest.mark.slow
def test_plan_with_several_node_types_lists_the_pick_of_each():
    answer = plan(make_request(["hopper", "blackwell"], nodes=12, modes=("dualpath",)))["dualpath"]
    pairs = {(s.pick.pe_profile, s.pick.de_profile) for s in answer.per_type}
    assert pairs == {("hopper", "hopper"), ("hopper", "blackwell"), ("blackwell", "hopper"), ("blackwell", "blackwell")}
    for s in answer.per_type:
        own = [m for m in answer.optimal.members if (m.pe_profile, m.de_profile) == (s.pick.pe_profile, s.pick.de_profile)]
        assert s.pick.P + s.pick.D == 12 and (not own or s.pick.turns_per_s >= max(m.turns_per_s for m in own) * (1 - pick.TOLERANCE_FRAC))
    single = plan(make_request(["hopper"], nodes=12, modes=("dualpath",)))["dualpath"]
    assert single.per_type == ()


@pytest.mark.parametrize("profile, model", [("hopper", "ds-v3.2"), ("blackwell", "kimi-k2"), ("mi300x", "qwen3-235b-a22b"),
                                            ("h20", "llama-3.1-70b")])
def test_decode_capacity_never_falls_as_decode_nodes_are_added(profile, model):
    """What the target frontier's bisection and the budget frontier assume (frontier.py): more decode nodes never
    lower a bound, although each GPU's rate falls as the expert-parallel side grows."""
    from dualpath_plan.bounds.decode import DecodeOptions, decode_capacity

    sc = build_scenario(profile, model=model)
    caps = [decode_capacity(sc.model, sc.turn, sc.de_hw, d, DecodeOptions()) for d in range(1, 65)]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(caps, caps[1:]))


def _shortfalls_by_brute_force(split, mode: str) -> list[float]:
    """The bound under every single 10 % shortfall, each re-solved, from the worst up (no shortcut, no padding)."""
    return sorted(min(split.turns_per_s, solve_closed(split.limits.derated(name, 1 - pick.DERATE_FRAC), mode).turns_per_s)
                  for name in split.limits.capacities())


def test_a_shortfall_every_split_shares_leaves_the_pick_to_the_next_worst():
    """40 Blackwell nodes behind the 43 3fs storage nodes their bound needs: the storage's read side 10 % short cuts every
    split of the set to one bound, so the worst shortfall ties; the next worst (a storage-NIC side) decides, and the
    pick is the one the planned storage gives (before the leximin order, the tie went to the fewest prefill nodes, 5P35D)."""
    s = _set("blackwell", 40, storage="3fs", storage_nodes=43)
    falls = {(m.P, m.D): [round(v / (pick.SAME_FRAC * s.pick.turns_per_s)) for v in _shortfalls_by_brute_force(m, "dualpath")]
             for m in s.members}
    assert len({f[0] for f in falls.values()}) == 1  # the worst ties across the whole set
    assert falls[(s.pick.P, s.pick.D)] == max(falls.values())  # the pick is the leximin best
    assert (s.pick.P, s.pick.D) == (_set("blackwell", 40, storage="3fs").pick.P, _set("blackwell", 40, storage="3fs").pick.D) == (20, 20)
    assert s.robustness.resource == "storage_read" and s.robustness.decided_by[0] == "pe_snic"
    assert _set("blackwell", 40).robustness.decided_by is None  # a worst shortfall that does not tie decides alone
