"""The target frontier's staircase (frontier.target_frontier) against a brute force over every (P, D), and the
per-side limit every target question keeps (plan.py)."""

from __future__ import annotations

import pytest

from dualpath_plan.bounds import lp
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning.frontier import REACH_TOL, split_of, target_frontier
from dualpath_plan.planning.plan import plan
from dualpath_plan.planning.request import make_request


def brute_frontier(sc, weights, cap, p_min, target, mode, most):
    """For each P, the least D reaching the target within the cap, by trying every D from 1 up."""
    cache, out = {}, []
    for P in range(max(1, p_min), most + 1):
        for D in range(1, most + 1):
            if P * weights[0] + D * weights[1] > cap * (1 + 1e-12):
                break
            split = split_of(sc, P, D, weights, mode, lp.BoundOptions(), cache)
            if split.turns_per_s >= target * (1 - REACH_TOL):
                out.append((P, D))
                break
    return out


@pytest.mark.parametrize("profile, mode, weights, share, steps", [
    ("hopper", "dualpath", (1.0, 1.0), 0.5, 11),  # DualPath pools both sides' storage NICs: D*(P) falls a node per node
    ("hopper", "dualpath", (3.0, 1.0), 0.7, 10),
    ("blackwell", "dualpath", (1.0, 2.5), 0.5, 17),
    ("hopper", "basic", (1.0, 1.0), 0.5, 1),  # the decode side binds: one D for every P
    ("hopper", "basic", (3.0, 1.0), 0.3, 1),
])
@pytest.mark.slow
def test_the_staircase_finds_every_least_decode_count_a_brute_force_finds(profile, mode, weights, share, steps):
    sc, most = build_scenario(profile), 24
    top = split_of(sc, most, most, weights, mode, lp.BoundOptions(), {}).turns_per_s
    target, cap = share * top, 0.8 * most * (weights[0] + weights[1])
    found = target_frontier(sc, weights, cap, 2, target, mode, lp.BoundOptions(), {}, most)
    brute = brute_frontier(sc, weights, cap, 2, target, mode, most)
    assert len(brute) > 3 and len({D for _, D in brute}) == steps  # the case is what it is built to be
    assert [(s.P, s.D) for s in found] == brute


def test_a_least_decode_count_given_as_a_floor_changes_nothing():
    sc, weights, mode = build_scenario("hopper"), (1.0, 1.0), "dualpath"
    target = 0.5 * split_of(sc, 24, 24, weights, mode, lp.BoundOptions(), {}).turns_per_s
    free = target_frontier(sc, weights, 40.0, 2, target, mode, lp.BoundOptions(), {}, 24)
    floor = min(s.D for s in free)
    assert target_frontier(sc, weights, 40.0, 2, target, mode, lp.BoundOptions(), {}, 24, floor) == free


def test_a_target_beyond_the_per_side_limit_is_refused_at_once_with_the_most_that_limit_serves():
    """plan --profile blackwell --target-turns-per-s 1e7 ran for minutes at GB of memory; it needs more than
    4,096 nodes per side, the most plan searches (as for budgets)."""
    request = make_request(["blackwell"], target_turns_per_s=1e7, node_costs=("blackwell=250000",))
    with pytest.raises(PlanError, match=r"not reachable .* with at most 4,096 nodes per side.*basic blackwell .*turns/s; "
                                        r"dualpath blackwell .*replicate") as info:
        plan(request)
    assert "\n" not in str(info.value)
