"""Properties of the fluid runner: never above the LP bound; conservation; the sharing rule is max-min fair."""

from __future__ import annotations

import pytest
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.sim import runner
from dualpath_plan.sim.python.share import allocate, make_incidence
from dualpath_plan.sim.rules import PolicyName
from tests.sim.fluid_cases import tiny_traj, v2_traj

REL_BOUND = 1e-9  # the runner may touch the bound only up to float rounding
REL_CONSERVATION = 1e-9
REL_MAXMIN = 1e-9


@st.composite
def small_runs(draw):
    """A small cluster (Hopper cut to 2-4 GPUs per node, 1-2 prefill and 1-3 decode nodes, SNIC 25-400 Gb/s),
    DS 27B or Qwen2.5-32B (both fit these nodes), a policy, an accounting, and 4-24 agents of 2-8 rounds."""
    g = draw(st.sampled_from([2, 4]))
    snic = draw(st.sampled_from([25, 50, 100, 400]))
    model = draw(st.sampled_from(["ds-27b", "qwen2.5-32b"]))
    sc = build_scenario("hopper", model=model, workload="agentic-32k", P=draw(st.integers(1, 2)), D=draw(st.integers(1, 3)),
                        accounting=draw(st.sampled_from(["exact", "paper"])), sets=(f"gpus_per_node={g}", f"snic_Gbps={snic}"))
    traj = tiny_traj(draw(st.integers(4, 24)), draw(st.integers(2, 8)), prefix=draw(st.integers(500, 8000)), seed=draw(st.integers(0, 99)))
    return sc, traj, draw(st.sampled_from([p.value for p in PolicyName]))


@pytest.mark.slow
@settings(max_examples=25)
@given(small_runs())
def test_a_run_never_beats_the_lp_bound_of_its_mode(case):
    """Achieved turns/s (turns over JCT) <= the LP bound of the policy's mode, for the same turns."""
    sc, traj, policy = case
    r = runner.run(sc, traj, policy)
    assert r.turns_per_s <= r.bound_turns_per_s * (1 + REL_BOUND)


@st.composite
def v2_runs(draw):
    """``small_runs`` with a schema v2 trace: tool time (mean 0-20 s), recorded start times over 0-10 s, compaction and
    forks, built by ``v2_traj`` from drawn sizes."""
    sc, _, policy = draw(small_runs())
    traj = v2_traj(draw(st.integers(2, 16)), draw(st.integers(2, 6)), tool_mean_s=draw(st.floats(0.0, 20.0)),
                   seed=draw(st.integers(0, 99)), start_spread_s=draw(st.floats(0.0, 10.0)))
    return sc, traj, policy


@pytest.mark.slow
@settings(max_examples=20)
@given(v2_runs())
def test_a_v2_trace_never_beats_the_lp_bound_of_its_mode(case):
    """Tool time, start times, compaction and forks only add idle time and change the turns: still <= the bound."""
    sc, traj, policy = case
    r = runner.run(sc, traj, policy)
    assert r.turns == traj.n_rounds and r.turns_per_s <= r.bound_turns_per_s * (1 + REL_BOUND)


@pytest.mark.slow
@settings(max_examples=10)
@given(v2_runs())
def test_a_v2_trace_delivers_exactly_what_its_turns_demand(case):
    sc, traj, policy = case
    r = runner.run(sc, traj, policy)
    for kind, demand in r.demanded.items():
        assert abs(r.delivered[kind] - demand) <= REL_CONSERVATION * max(demand, 1.0)
    assert max(r.leftover.values()) <= 1e-3


@st.composite
def larger_runs(draw):
    """A cluster of 16 to 48 nodes (Hopper cut to 2 GPUs per node, 50 Gb/s SNICs, DS 27B), dualpath or basic, and 2-6
    agents per node of 3 rounds: the sizes where the runner's fetch rules and read windows meet many groups."""
    nodes = draw(st.integers(16, 48))
    P = draw(st.integers(4, nodes // 2))
    sc = build_scenario("hopper", model="ds-27b", workload="agentic-32k", P=P, D=nodes - P, sets=("gpus_per_node=2", "snic_Gbps=50"))
    traj = tiny_traj(nodes * draw(st.integers(2, 6)), 3, prefix=draw(st.integers(500, 8000)), seed=draw(st.integers(0, 99)))
    return sc, traj, draw(st.sampled_from(["dualpath", "basic"]))


@settings(max_examples=6)
@given(larger_runs())
def test_a_run_on_16_to_48_nodes_never_beats_the_lp_bound_of_its_mode(case):
    sc, traj, policy = case
    r = runner.run(sc, traj, policy, options=runner.SimOptions(engine="compiled"))
    assert r.turns_per_s <= r.bound_turns_per_s * (1 + REL_BOUND)


@pytest.mark.slow
@settings(max_examples=15)
@given(small_runs())
def test_every_resource_delivers_exactly_what_the_turns_demand(case):
    """Units delivered per resource kind == units the completed turns' routes demand; nothing is left over."""
    sc, traj, policy = case
    r = runner.run(sc, traj, policy)
    for kind, demand in r.demanded.items():
        assert abs(r.delivered[kind] - demand) <= REL_CONSERVATION * max(demand, 1.0)
    assert max(r.leftover.values()) <= 1e-3


@st.composite
def sharing_problems(draw):
    """1-8 resources with budgets 1-10; 1-12 flows crossing 1-3 distinct resources with coefficients 0.5-2,
    weights 0.5-2 and work 0-8 (some flows idle)."""
    n_res = draw(st.integers(1, 8))
    n_flows = draw(st.integers(1, 12))
    res = [draw(st.lists(st.integers(0, n_res - 1), min_size=1, max_size=min(3, n_res), unique=True)) for _ in range(n_flows)]
    coef = [draw(st.lists(st.floats(0.5, 2.0), min_size=len(r), max_size=len(r))) for r in res]
    budget = np.array(draw(st.lists(st.floats(1.0, 10.0), min_size=n_res, max_size=n_res)))
    work = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(0.01, 8.0)), min_size=n_flows, max_size=n_flows)))
    weight = np.array(draw(st.lists(st.floats(0.5, 2.0), min_size=n_flows, max_size=n_flows)))
    inc = make_incidence(np.array([len(r) for r in res]), np.concatenate(res), np.concatenate(coef), weight)
    return inc, budget, work


def _progressive_filling(inc, budget, work):
    """Reference: raise every unfrozen flow's level by the globally smallest step; freeze flows at their work
    or on a full resource; repeat."""
    x, used, rising = np.zeros(inc.n_flows), np.zeros(budget.size), work > 0
    aw = inc.coef * inc.weight[inc.flow]
    while rising.any():
        share = np.bincount(inc.res, weights=aw * rising[inc.flow], minlength=budget.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(share > 0, (budget - used) / share, np.inf)
        step = min(room.min(), np.where(rising, (work - x) / inc.weight, np.inf).min())
        dx = inc.weight * step * rising
        x += dx
        used += np.bincount(inc.res, weights=inc.coef * dx[inc.flow], minlength=budget.size)
        full = budget - used <= 1e-12 * budget
        rising &= ~np.logical_or.reduceat(full[inc.res], inc.starts) & (x < work * (1 - 1e-12))
    return x


@pytest.mark.slow
@given(sharing_problems())
def test_the_allocation_is_the_max_min_fair_one(problem):
    """The engine's allocation equals progressive filling, the definition of weighted max-min fairness."""
    inc, budget, work = problem
    x, _, _ = allocate(inc, budget, work)
    reference = _progressive_filling(inc, budget, work)
    assert np.allclose(x / inc.weight, reference / inc.weight, rtol=REL_MAXMIN, atol=1e-12)


@pytest.mark.slow
@given(sharing_problems())
def test_the_allocation_is_feasible_and_wastes_nothing(problem):
    """No resource over budget, no flow past its work, and a flow short of its work crosses a full resource."""
    inc, budget, work = problem
    x, used, active = allocate(inc, budget, work)
    assert (used <= budget * (1 + 1e-12)).all() and (x <= work * (1 + 1e-12)).all() and ((0 <= active) & (active <= 1)).all()
    full = budget - used <= 1e-9 * budget
    short = x < work * (1 - 1e-9)
    assert (~short | np.logical_or.reduceat(full[inc.res], inc.starts)).all()
