"""The runner at scale: a cluster four times the paper's 2P4D, with four times its agents, reaches its bound as 2P4D does.

DS-V3.2 on agentic-64k, Hopper, seed 1, 2,048 agents per 6 nodes (benchmarks/bench_scale.py runs the sizes up to
48P96D; its table is in docs/concepts/runner.md). Measured on 8P16D against 2P4D over seeds 0-2, in the steady window
(sim.steady): steady turns/s over the bound 0.974-0.978 (2P4D 0.979-0.987), the storage NICs' balance 1.02 (1.01),
JCT 2.2-3.4 % below 2P4D's. The tolerances below leave room for the draw, not for a scheduler that loses throughput
with size: the rules this guards against gave 0.81 at 12P24D and 0.40 at 48P96D.
"""

from __future__ import annotations

import functools

import pytest

from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.model.workload import trajectories
from dualpath_plan.sim import runner

STEADY_OVER_BOUND = 0.90  # issue 22's target at every size
SNIC_BALANCE = 1.3  # busiest node's reads over the mean node's, steady window
JCT_REL = 0.05  # the scaled cluster's JCT within 5 % of 2P4D's


@functools.lru_cache(maxsize=None)  # 2P4D serves two tests: run once
def _run(P: int, D: int) -> runner.SimResult:
    sc = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=P, D=D)
    traj = trajectories(sc.workload, 2048 * (P + D) // 6, None, 1)
    return runner.run(sc, traj, "dualpath", options=runner.SimOptions(seed=1, engine="compiled"))


@pytest.mark.slow
def test_four_times_the_cluster_and_agents_reaches_the_bound_and_2p4d_s_jct():
    small, large = _run(2, 4), _run(8, 16)
    assert large.steady_over_window_bound >= STEADY_OVER_BOUND, (large.agents, large.steady_over_window_bound)
    for r in (small, large):
        assert r.steady_snic_max_over_avg <= SNIC_BALANCE, (r.agents, r.steady_snic_max_over_avg)
    assert abs(large.jct_s / small.jct_s - 1) <= JCT_REL
    waiting = sum(large.steady_stages[s].requests for s in ("read_queue", "buffer_room"))
    assert waiting > 0.2 * large.agents  # the cluster is loaded: the storage NICs, the binding resource, have work queued


@pytest.mark.slow
def test_2p4d_reaches_the_bound_as_issue_22_set_it():
    """With issue 23's step times the middle half of the JCT gave 0.875: it held 139 s of the cold start's wake and the
    drain after the population halved, when the decode nodes' storage NICs fell to 30 % for want of agents; the
    storage NICs ran at 98-100 % in between. The steady window (sim.steady) leaves both out."""
    r = _run(2, 4)
    assert r.steady_over_window_bound >= STEADY_OVER_BOUND
    assert r.steady_window_s[0] >= r.jct_s / 4 and r.steady_window_s[1] < 3 * r.jct_s / 4  # cut at the population's halving


@pytest.mark.slow
def test_basic_at_its_pick_for_six_nodes_finishes_and_reaches_its_bound():
    """basic on 3P3D with 2,048 agents stopped at t = 457 s before issue 22 (first rounds holding PE HBM waited for
    DE-buffer room held by reads queued behind them for that HBM); an empty read now reserves that room first."""
    sc = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=3, D=3)
    r = runner.run(sc, trajectories(sc.workload, 2048, None, 1), "basic", options=runner.SimOptions(seed=1, engine="compiled"))
    assert r.turns == r.records.done.size and r.leftover["stage_load"] == 0.0
    assert r.steady_over_window_bound >= STEADY_OVER_BOUND


@pytest.mark.slow
def test_basic_three_prefill_nodes_per_decode_node_reaches_its_bound():
    """basic's picks for 36 and 144 nodes have three prefill nodes per decode node (27P9D, 111P33D), where its decode
    side binds with the storage NICs. 12P4D at the same ratio gave 0.821 with round-robin decode placement and a flat
    80 GB buffer; with the framework's decode dispatch (fewest tokens) and the buffer sized to the decode nodes'
    inflow (sim.layout.default_buffer_bytes) it gives 0.919-0.927 over seeds 0-2."""
    sc = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=12, D=4)
    r = runner.run(sc, trajectories(sc.workload, 2048 * 16 // 6, None, 1), "basic", options=runner.SimOptions(seed=1, engine="compiled"))
    assert r.steady_over_window_bound >= STEADY_OVER_BOUND
