"""DualPath, a DRAM tier and both, on one cluster and within one budget (planning/tier.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import BoundOptions, limits_of
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning.analysis import analyze
from dualpath_plan.planning.plan import plan
from dualpath_plan.planning.request import make_request
from dualpath_plan.planning.tier import OPTIONS, plan_tiers


def test_without_a_tier_there_is_no_report_and_with_one_the_plain_bounds_stand_beside():
    plain = analyze(build_scenario("hopper", P=2, D=4), BoundOptions())
    tiered = analyze(build_scenario("hopper", P=2, D=4, dram_tier_GB=20), BoundOptions())
    assert plain.tier is None
    assert {m: b.turns_per_s for m, b in tiered.tier.without.items()} == {m: plain.bounds[m].turns_per_s for m in ("basic", "dualpath")}
    assert tiered.bounds["dualpath"] == solve_closed(limits_of(build_scenario("hopper", P=2, D=4, dram_tier_GB=20)), "dualpath")


def test_a_small_tier_adds_the_hits_it_serves_to_what_the_storage_nics_read():
    """Hopper 2P4D, 20 GB a node: the storage NICs still bind, so each mode gains exactly the hit KV the tier serves,
    its LRU cap (120 GB over the working set the turns need)."""
    tiered = analyze(build_scenario("hopper", P=2, D=4, dram_tier_GB=20), BoundOptions())
    t, h = tiered.tier, tiered.limits.hit_bytes_per_turn
    for mode in ("basic", "dualpath"):
        assert tiered.bounds[mode].R_m_Bps == pytest.approx(t.served_cap_Bps)
        gained = tiered.bounds[mode].turns_per_s - t.without[mode].turns_per_s
        assert gained == pytest.approx(t.served_cap_Bps / h, rel=1e-6)


@pytest.mark.parametrize("profile,gb,needle", [
    ("hopper", 2000, "--dram-tier = 2000 GB is not allowed: a hopper node has dram_GB = 1580 GB of host DRAM, and the tier must stay below it"),
    ("h20", 100, "--dram-tier = 100 GB is not allowed: hardware profile 'h20' gives no dram_GB"),
    ("hopper", 0, "--dram-tier = 0 GB is not allowed"),
])
def test_a_tier_the_nodes_cannot_hold_is_refused(profile, gb, needle):
    with pytest.raises(PlanError, match=needle):
        build_scenario(profile, dram_tier_GB=gb)


def _best_of_all(request, mode: str, budget_nodes: int) -> float:
    """The most turns/s of any split of at most ``budget_nodes`` nodes, every split bounded."""
    sc = request.candidates[0]
    return max(solve_closed(limits_of(sc.with_nodes(P, D), request.options), mode).turns_per_s
               for P in range(1, budget_nodes) for D in range(1, budget_nodes - P + 1))


@pytest.mark.parametrize("gb", [20.0, 400.0])
def test_plan_with_a_tier_finds_the_best_split_of_every_split_in_the_budget(gb):
    """The search down the frontier (which assumes a node more never lowers a bound) against every split of 12 nodes."""
    request = make_request(["hopper"], nodes=12, dram_tier_GB=gb)
    answers = plan(request)
    for mode, answer in answers.items():
        best = max(s.turns_per_s for s in answer.optimal.members)
        assert best == pytest.approx(_best_of_all(request, mode, 12), rel=1e-12)
        assert answer.relaxation is None and answer.gap_frac is None


def test_the_plans_with_and_without_a_tier_are_the_four_options_at_equal_node_count():
    request = make_request(["hopper"], nodes=24, dram_tier_GB=100)
    tiers = plan_tiers(request, plan(request))
    options = tiers.options()
    assert list(options) == ["neither", "dualpath_alone", "tier_alone", "both"]
    assert {name: c.bound.mode for name, c in options.items()} == {n: m for n, (m, _) in OPTIONS.items()}
    assert all(c.nodes <= 24 for c in options.values())
    without = plan(make_request(["hopper"], nodes=24))
    assert options["dualpath_alone"] == without["dualpath"].best and options["neither"] == without["basic"].best
    for mode in ("basic", "dualpath"):  # on hopper the tier never lowers the optimum (the pick is within 1 % of it)
        top = lambda a: max(s.turns_per_s for s in a.optimal.members)  # noqa: E731
        assert top(tiers.with_tier[mode]) >= top(tiers.without[mode]) * (1 - 1e-12)


def test_the_tiers_dram_is_priced_into_every_node_so_both_plans_spend_the_same_budget():
    price, dram = 300_000.0, 10.0
    request = make_request(["hopper"], budget_usd=12e6, node_costs=[f"{price:g}"], dram_tier_GB=500, dram_price=dram)
    tiers = plan_tiers(request, plan(request))
    for name, c in tiers.options().items():
        per_node = price + (500 * dram if OPTIONS[name][1] else 0.0)
        assert c.cost == pytest.approx(c.nodes * per_node) and c.cost <= 12e6
    assert tiers.options()["both"].nodes < tiers.options()["dualpath_alone"].nodes  # 39 nodes with the tier, 40 without


def test_under_a_node_budget_the_tier_counts_nothing_and_its_price_is_optional():
    """Priced nodes under --nodes: no --dram-rent needed (the plans buy the same nodes); given, it prices the costs shown."""
    free = make_request(["blackwell"], nodes=12, dram_tier_GB=100)
    assert free.dram_price_per_GB is None and free.price(free.candidates[0].pe_hw) == pytest.approx(68.8)
    priced = make_request(["blackwell"], nodes=12, dram_tier_GB=100, dram_rent=0.01)
    assert priced.price(priced.candidates[0].pe_hw) == pytest.approx(68.8 + 1.0)
    assert {c.nodes for c in plan_tiers(free, plan(free)).options().values()} <= set(range(1, 13))


def test_on_the_rent_basis_the_tier_adds_its_rent_to_every_node_beside_the_power():
    request = make_request(["blackwell"], budget_usd_per_hour=1000, dram_tier_GB=100, dram_rent=0.01, electricity_usd_per_kwh=0.1)
    per_node = 68.8 + 14.3 * 0.1 + 100 * 0.01  # rent, power at full load, the tier's DRAM
    tiers = plan_tiers(request, plan(request))
    both, alone = tiers.options()["both"], tiers.options()["dualpath_alone"]
    assert both.cost == pytest.approx(both.nodes * per_node) and alone.cost == pytest.approx(alone.nodes * (per_node - 1.0))


@pytest.mark.parametrize("kwargs,needle", [
    (dict(budget_usd=12e6, node_costs=["300000"], dram_tier_GB=500), r"--dram-tier = 500 GB needs --dram-price with a budget in USD"),
    (dict(budget_usd=12e6, node_costs=["300000"], dram_tier_GB=500, dram_rent=0.01), r"--dram-rent = 0.01 USD/GB/h is not allowed on the purchase"),
    (dict(budget_usd_per_hour=500, rents=["40"], dram_tier_GB=500, dram_price=5), r"--dram-price = 5 USD/GB is not allowed on the rent"),
    (dict(nodes=12, dram_price=5), r"--dram-price = 5 USD/GB is not allowed without --dram-tier"),
    (dict(target_turns_per_s=100, dram_tier_GB=50), r"--dram-tier = 50 GB is not allowed with a target"),
    (dict(nodes=12, dram_tier_GB=50, dram_price=-1), r"--dram-price = -1 USD/GB is not allowed; must be"),
    (dict(nodes=12, dram_tier_GB=50, dram_price=5), r"--dram-price = 5 USD/GB is not allowed: this question's nodes have no price"),
    (dict(nodes=12, dram_tier_GB=50, dram_rent=0.01), r"--dram-rent = 0.01 USD/GB/h is not allowed: this question's nodes have no price"),
])
def test_a_tier_question_plan_cannot_answer_is_refused(kwargs, needle):
    with pytest.raises(PlanError, match=needle) as err:
        make_request(["hopper"], **kwargs)
    assert err.value.exit_code == 2


@pytest.mark.parametrize("profile,P,D,gb", [("hopper", 2, 4, 20), ("hopper", 48, 96, 100), ("blackwell", 3, 3, 50), ("gb200", 5, 7, 100)])
def test_the_break_even_tier_is_the_least_whole_gb_that_beats_dualpath_alone(profile, P, D, gb):
    """At the size reported the mode beats DualPath alone; a GB less, it does not (or the size is the 1 GB floor); ``None``:
    not even just below a node's DRAM."""
    sc = build_scenario(profile, P=P, D=D, dram_tier_GB=gb)
    analysis = analyze(sc, BoundOptions())
    lim, target = analysis.limits, analysis.tier.without["dualpath"].turns_per_s
    X = lambda size, mode: solve_closed(replace(lim, tier_bytes=size * 1e9 * (P + D)), mode).turns_per_s  # noqa: E731
    most = min(sc.pe_hw.dram_bytes, sc.de_hw.dram_bytes) / 1e9
    for name, mode in (("tier_alone", "basic"), ("both", "dualpath")):
        at = analysis.tier.beats_dualpath_from_GB[name]
        if at is None:
            assert X(most * (1 - 1e-9), mode) <= target * (1 + 1e-9)
            continue
        assert X(at, mode) > target and (at == 1.0 or X(at - 1.0, mode) <= target * (1 + 1e-9))
