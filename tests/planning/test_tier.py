"""DualPath, a DRAM tier and both on one cluster (planning/tier.py)."""

from __future__ import annotations

import pytest

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import BoundOptions, limits_of
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning.analysis import analyze
from dualpath_plan.planning.tier import check_runner_tier


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


def test_the_runner_check_is_refused_with_a_tier():
    with pytest.raises(PlanError, match=r"--check = 1 is not allowed with --dram-tier = 20 GB"):
        check_runner_tier(build_scenario("hopper", dram_tier_GB=20), 1)


@pytest.mark.parametrize("profile,gb,needle", [
    ("hopper", 2000, "must be below a node's host DRAM, dram_GB = 1580 GB"),
    ("h20", 100, "hardware profile 'h20': it gives no dram_GB"),
    ("hopper", 0, "--dram-tier = 0 GB is not allowed"),
])
def test_a_tier_the_nodes_cannot_hold_is_refused(profile, gb, needle):
    with pytest.raises(PlanError, match=needle):
        build_scenario(profile, dram_tier_GB=gb)
