"""Procurement by MILP: optimal against brute force, within the relaxation, clear refusals (plan.py)."""

from __future__ import annotations

import math

import pytest

from dualpath_plan.bounds import lp
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.workload import agent_turns
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning.analysis import analyze
from dualpath_plan.planning.plan import plan
from dualpath_plan.planning.request import make_request

REL_TOL = 1e-6  # relative; MILP gap 1e-9 plus the 1e-7 tie-break toward cheaper clusters


def brute_force_best(request, mode):
    """Every (pair, P, D) the budget allows, solved by the LP; the best turns/s."""
    best = 0.0
    for sc in request.candidates:
        limits = [lp.limits_of(sc.with_nodes(P, D), request.options) for P, D in _points(request, sc)]
        best = max([best, *(b.turns_per_s for b in lp.solve_many(limits, mode))])
    return best


def _points(request, sc):
    b = request.budget
    w = {"nodes": (1, 1), "gpus": (sc.pe_hw.g, sc.de_hw.g)}[b.kind]
    return [(P, D) for P in range(1, 200) for D in range(1, 200) if P * w[0] + D * w[1] <= b.amount]


@pytest.mark.parametrize("nodes", [4, 5, 8, 12])  # DeepSeek-V3.2 needs >= 2 prefill and >= 2 decode Hopper nodes
def test_budget_optimum_equals_brute_force_and_stays_under_the_relaxation(nodes):
    request = make_request(["hopper"], nodes=nodes, alternatives=2)
    for mode, answer in plan(request).items():
        assert math.isclose(answer.best.turns_per_s, brute_force_best(request, mode), rel_tol=REL_TOL)
        assert answer.best.turns_per_s <= answer.relaxation * (1 + REL_TOL)
        assert answer.best.P + answer.best.D <= nodes
        values = [answer.best.turns_per_s, *(c.turns_per_s for c in answer.alternatives)]
        assert all(later <= earlier * (1 + REL_TOL) for earlier, later in zip(values, values[1:]))
        assert len({(c.P, c.D) for c in (answer.best, *answer.alternatives)}) == 1 + len(answer.alternatives)


@pytest.mark.parametrize("instance", [4, 8])
def test_a_chosen_prefill_instance_is_planned_as_the_brute_force_finds(instance):
    """Prefill instances of 4 or 8 nodes (EP32, EP64): no P below one serves, and the MILP's P-independent prefill rate
    is the LP's on every split."""
    options = lp.BoundOptions.parse(prefill_instance_nodes=instance)
    request = make_request(["hopper"], nodes=14, alternatives=2, options=options)
    for mode, answer in plan(request).items():
        assert math.isclose(answer.best.turns_per_s, brute_force_best(request, mode), rel_tol=REL_TOL)
        assert all(c.P >= instance for c in (answer.best, *answer.alternatives))


@pytest.mark.slow
def test_gpu_budget_and_mixed_node_types_against_brute_force():
    request = make_request(["hopper", "h20"], model="qwen2.5-32b", gpus=48, alternatives=1)
    assert len(request.candidates) == 4  # hopper/hopper, hopper/h20, h20/hopper, h20/h20
    for mode, answer in plan(request).items():
        assert math.isclose(answer.best.turns_per_s, brute_force_best(request, mode), rel_tol=REL_TOL)
        assert answer.best.gpus <= 48


@pytest.mark.slow
def test_target_gives_the_cheapest_cluster_that_reaches_it():
    request = make_request(["hopper"], target_turns_per_s=150.0, alternatives=1)
    for mode, answer in plan(request).items():
        reach = [(P + D, P, D) for P in range(1, 12) for D in range(1, 12)
                 if lp.solve(lp.limits_of(request.candidates[0].with_nodes(P, D)), mode).turns_per_s >= 150.0 * (1 - 1e-9)]
        assert answer.best.nodes == min(reach)[0]
        assert answer.best.turns_per_s >= 150.0 * (1 - REL_TOL)
        assert answer.relaxation <= answer.best.cost * (1 + REL_TOL)


def test_agents_per_s_target_is_turns_per_trajectory_times_agents():
    request = make_request(["hopper"], target_agents_per_s=0.5)
    assert request.target_turns_per_s == pytest.approx(0.5 * agent_turns(request.candidates[0].workload))


@pytest.mark.slow
def test_prices_make_the_target_a_dollar_question():
    request = make_request(["hopper", "h20"], target_turns_per_s=100.0, node_costs=["hopper=300000", "h20=150000"], alternatives=0)
    assert request.cost_unit == "USD"
    answer = plan(request)["dualpath"]
    best = answer.best
    prices = {"hopper": 300000.0, "h20": 150000.0}
    assert best.cost == pytest.approx(best.P * prices[best.pe_profile] + best.D * prices[best.de_profile])


def test_unreachable_target_within_a_budget_says_so_with_the_best_value():
    request = make_request(["hopper"], nodes=6, target_turns_per_s=1e6)
    with pytest.raises(PlanError, match=r"not reachable within 6 nodes.*best reachable: basic .*dualpath") as info:
        plan(request)
    assert info.value.exit_code == 1


def test_a_budget_too_small_for_one_node_per_side_is_refused():
    with pytest.raises(PlanError, match="cannot buy the prefill nodes that hold ds-v3.2") as info:
        plan(make_request(["hopper"], nodes=1))
    assert info.value.exit_code == 1


def test_a_model_that_no_decode_side_in_budget_can_hold_is_refused():
    with pytest.raises(PlanError, match="weights do not fit") as info:
        plan(make_request(["hopper"], nodes=3))  # 2 prefill nodes hold the weights; one decode node cannot
    assert info.value.exit_code == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 0}, "--nodes = 0"),
        ({"gpus": -8}, "--gpus = -8"),
        ({"nodes": 4, "gpus": 32}, "--nodes and --gpus"),
        ({}, "give a budget"),
        ({"target_turns_per_s": float("nan")}, "--target-turns-per-s"),
        ({"target_turns_per_s": 5.0, "target_agents_per_s": 1.0}, "at most one target"),
        ({"budget_usd": 1e6}, "--budget-usd needs a purchase price"),
        ({"nodes": 4, "node_costs": ["gold=1"]}, "--node-cost names gold"),
        ({"nodes": 4, "node_costs": ["-3"]}, "--node-cost/--price = -3 USD is not allowed; must be a finite number >= 1"),
        ({"nodes": 4, "alternatives": -1}, "--alternatives"),
        ({"nodes": 4, "modes": ["oracle"]}, "--mode oracle"),
    ],
)
def test_bad_requests_name_the_flag(kwargs, message):
    with pytest.raises(PlanError, match=message) as info:
        make_request(["hopper"], **kwargs)
    assert info.value.exit_code == 2


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(PlanError, match="known hardware profiles: .*hopper"):
        make_request(["nope"], nodes=4)


def test_per_side_prices_cost_each_side_at_its_own_price():
    request = make_request(["hopper"], target_turns_per_s=500.0, modes=["dualpath"],
                           sets=("pe.price_per_node_usd=250000", "de.price_per_node_usd=100000"))
    best = plan(request)["dualpath"].best
    assert best.cost_unit == "USD" and best.cost == best.P * 250_000 + best.D * 100_000


def test_node_costs_that_leave_a_candidate_unpriced_are_refused_not_dropped():
    with pytest.raises(PlanError, match="--node-cost needs a purchase price per node for every candidate; blackwell has none"):
        make_request(["hopper", "blackwell"], target_turns_per_s=100.0, node_costs=["hopper=1"])


@pytest.mark.slow
def test_a_rent_budget_rents_the_pick_within_it_and_prices_its_turns():
    request = make_request(["h100-dgx", "blackwell"], budget_usd_per_hour=1000.0, modes=("dualpath",))
    answer = plan(request)["dualpath"]
    assert request.basis == "rent" and answer.best.cost_unit == "USD/h"
    rents = {"h100-dgx": 49.24, "blackwell": 68.80}
    for choice in (answer.best, *answer.alternatives):
        assert choice.cost == pytest.approx(choice.P * rents[choice.pe_profile] + choice.D * rents[choice.de_profile])
        assert choice.cost <= 1000.0 * (1 + 1e-9)


@pytest.mark.slow
def test_a_target_on_rented_types_is_the_cheapest_rent_not_the_fewest_nodes():
    request = make_request(["h100-dgx", "blackwell"], target_turns_per_s=500.0, modes=("dualpath",), alternatives=0)
    answer = plan(request)["dualpath"]
    assert request.cost_unit == "USD/h" and answer.objective == "min_usd_per_hour"
    assert all(s.pick.cost >= answer.optimal.pick.cost * (1 - 0.01) for s in answer.per_type)


@pytest.mark.slow
def test_equal_bounds_rank_the_cheaper_split_first_then_fewer_prefill_nodes():
    from dualpath_plan.planning.frontier import budget_ranked

    sc = make_request(["hopper"], nodes=144).candidates[0]
    top = lambda mode: [(s.P, s.D) for s in budget_ranked([(sc, (1.0, 1.0), 1)], 144.0, mode, lp.BoundOptions(), {}, 3, 0.0, 1.0)]  # noqa: E731
    # basic: 103P41D is best; 102P41D and 102P42D tie (the storage NICs of 102 prefill nodes bind both) and the one node fewer comes first
    assert top("basic") == [(103, 41), (102, 41), (102, 42)]
    # dualpath: every split from 18 to 87 prefill nodes ties at the same cost (144 nodes): fewer prefill nodes first
    assert top("dualpath") == [(18, 126), (19, 125), (20, 124)]


def test_a_power_budget_of_one_node_type_buys_what_the_same_nodes_would():
    """With every node at 14.3 kW, a budget of N x 14.3 kW is a budget of N nodes: the same pick, drawing at most the budget."""
    by_nodes = plan(make_request(["blackwell"], nodes=12))
    by_power = plan(make_request(["blackwell"], power_kw=12 * 14.3))
    for mode in ("basic", "dualpath"):
        assert (by_power[mode].best.P, by_power[mode].best.D) == (by_nodes[mode].best.P, by_nodes[mode].best.D)
        assert by_power[mode].best.energy.power_kw <= 12 * 14.3 * (1 + 1e-12)


@pytest.mark.parametrize("kw", [60.0, 150.0, 400.0])
def test_a_bigger_power_budget_never_lowers_the_bound(kw):
    small, big = plan(make_request(["blackwell"], power_kw=kw)), plan(make_request(["blackwell"], power_kw=kw * 1.5))
    best = lambda answer: max(s.turns_per_s for s in answer["dualpath"].optimal.members)  # noqa: E731  (the optimum, not the pick)
    assert best(big) >= best(small)


@pytest.mark.parametrize("kwargs,needle", [
    ({"profiles": ["h20"], "power_kw": 100.0}, "--power-kw needs node_power_W for every candidate; h20 has none"),
    ({"profiles": ["blackwell"], "power_kw": 20.0}, "--power-kw = 20 kW is not allowed; the smallest cluster that serves"),
    ({"profiles": ["blackwell"], "power_kw": 100.0, "nodes": 4}, "--nodes and --power-kw were both given"),
    ({"profiles": ["blackwell"], "budget_usd": 1e7, "electricity_usd_per_kwh": 0.1}, "not allowed on the purchase basis"),
])
def test_bad_power_input_is_refused_in_one_line(kwargs, needle):
    with pytest.raises(PlanError, match=needle.replace("(", r"\(")):
        make_request(kwargs.pop("profiles"), **kwargs)


def _storage_brute_force(request, mode, rent_s):
    """Every split whose compute nodes' rent plus its planned storage nodes' rent fits the budget, solved by HiGHS: the
    best turns/s."""
    from dualpath_plan.planning.storage import planned_nodes

    sc, best = request.candidates[0], 0.0
    rent = sc.pe_hw.rent_per_node_hour_usd
    for P in range(1, int(request.budget.amount // rent) + 1):
        for D in range(1, int((request.budget.amount - P * rent) // rent) + 1):
            lim = lp.limits_of(sc.with_nodes(P, D), request.options)
            bound = lp.solve(lim, mode)
            if P * rent + D * rent + planned_nodes(lim, bound) * rent_s <= request.budget.amount * (1 + 1e-9):
                best = max(best, bound.turns_per_s)
    return best


@pytest.mark.parametrize("budget,rent_s", [(700.0, 10.0), (900.0, 40.0)])
def test_storage_bought_within_a_rent_budget_is_the_brute_force_optimum(budget, rent_s):
    """With --storage, each split buys the storage its bound needs at the storage node's rent; the plan's best bound is
    the best of every split that fits the budget with its storage."""
    request = make_request(["blackwell"], budget_usd_per_hour=budget, storage="3fs", sets=(f"storage_node_rent_per_hour_usd={rent_s}",))
    answers = plan(request)
    for mode in ("basic", "dualpath"):
        best = max(s.turns_per_s for s in answers[mode].optimal.members)
        assert best == pytest.approx(_storage_brute_force(request, mode, rent_s), rel=REL_TOL)
        pick = answers[mode].best
        assert pick.cost <= budget * (1 + 1e-9) and pick.storage_nodes >= 1


def test_a_node_budget_counts_compute_nodes_and_reports_the_storage_bottleneck_plans():
    plain, stored = plan(make_request(["hopper"], nodes=12)), plan(make_request(["hopper"], nodes=12, storage="3fs"))
    for mode in ("basic", "dualpath"):
        a, b = plain[mode].best, stored[mode].best
        assert (a.P, a.D, a.cost) == (b.P, b.D, b.cost) and a.storage_nodes is None
        if mode == "dualpath":
            assert b.storage_nodes == analyze(build_scenario("hopper", P=b.P, D=b.D, storage="3fs")).storage.nodes


@pytest.mark.parametrize("kwargs,needle", [
    ({"target_turns_per_s": 100.0}, "--storage 3fs is not allowed with a target"),
    ({"budget_usd_per_hour": 900.0}, "--budget-usd-per-hour with --storage 3fs needs storage_node_rent_per_hour_usd"),
])
def test_storage_questions_plan_cannot_answer_are_refused(kwargs, needle):
    with pytest.raises(PlanError, match=needle):
        make_request(["blackwell"], storage="3fs", **kwargs)


def test_electricity_adds_each_side_s_own_power_to_its_own_rent():
    """--set pe.rent_per_node_hour_usd gives the prefill side its own rent; electricity adds each side's power to that
    side's rent (it once merged both sides by name, and the prefill side's 40 USD/h was lost)."""
    req = make_request(["blackwell"], budget_usd_per_hour=3000.0, electricity_usd_per_kwh=0.10, sets=("pe.rent_per_node_hour_usd=40",))
    sc = req.candidates[0]
    assert req.price(sc.pe_hw) == pytest.approx(40.0 + 14.3 * 0.10) and req.price(sc.de_hw) == pytest.approx(68.8 + 14.3 * 0.10)
    assert req.power_twice == ("blackwell",)  # the decode side's rent is the profile's, a cloud rent with power in it
    own = make_request(["blackwell"], budget_usd_per_hour=3000.0, electricity_usd_per_kwh=0.10, sets=("rent_per_node_hour_usd=40",))
    assert own.power_twice == () and own.price(own.candidates[0].pe_hw) == pytest.approx(40.0 + 1.43)


@pytest.mark.parametrize("budget, relaxed", [({"budget_usd_per_hour": 3000.0}, False), ({"nodes": 40}, True)])
def test_the_relaxation_is_dropped_where_the_budget_pays_for_storage(budget, relaxed):
    """Storage nodes bought from a money (or power) budget are not in the closed-form relaxation, so none is reported;
    under a node budget they are not paid from it, and the relaxation stands."""
    req = make_request(["blackwell"], storage="3fs", sets=("storage_node_rent_per_hour_usd=10",), modes=("dualpath",), **budget)
    answer = plan(req)["dualpath"]
    assert (answer.relaxation is not None) == relaxed and (answer.gap_frac is not None) == relaxed


@pytest.mark.parametrize(("nodes", "alternatives"), [(6, 1), (6, 3), (12, 1)])
def test_a_runner_check_plays_the_splits_the_table_lists_in_its_order(nodes, alternatives):
    for mode, answer in plan(make_request(["hopper"], nodes=nodes, alternatives=alternatives)).items():
        listed = [(c.P, c.D) for c in (answer.best, *answer.alternatives)]
        played = [(s.P, s.D) for s in answer.optimal.candidates(len(listed) + 2)]
        assert played[:len(listed)] == listed
        assert len(set(played)) == len(played)  # each split once, the set's own members after the listed ones
        assert set(played[len(listed):]) <= {(s.P, s.D) for s in (*answer.optimal.ranked, *answer.optimal.runners_up)}
        for split, choice in zip(answer.optimal.listed, (answer.best, *answer.alternatives)):  # the same clusters, bounded alike
            assert split.turns_per_s == pytest.approx(choice.turns_per_s, rel=1e-9) and split.cost == pytest.approx(choice.cost)
