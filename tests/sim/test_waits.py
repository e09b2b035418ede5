"""Turns that do not follow back to back (``sim.waits``): tool time, recorded start times and forks, on both engines."""

from __future__ import annotations

import numpy as np
import pytest

from dualpath_plan.model.trace import native
from dualpath_plan.model.trace.schema import session
from dualpath_plan.model.workload import Trajectories, load_jsonl
from dualpath_plan.sim import runner
from dualpath_plan.sim.waits import fork_children, root_order, start_times
from tests.sim.core_cases import assert_same_run, run_both
from tests.sim.fluid_cases import tiny_scenario, tiny_traj, v2_traj

PY = runner.SimOptions(engine="python")


def test_fork_children_list_each_rounds_forks_in_agent_order():
    traj = v2_traj(6, 3)
    ptr, kids = fork_children(traj)
    assert ptr.size == traj.n_rounds + 1 and kids.tolist() == [6, 7, 8]
    for child in kids.tolist():
        r = traj.fork_round[child]
        assert child in kids[ptr[r]:ptr[r + 1]].tolist()


def test_start_times_put_forks_at_inf_and_roots_at_their_scaled_record_or_arrival():
    traj = v2_traj(4, 2)
    times = start_times(traj.rescaled(time_scale=2.0), None)
    assert np.isinf(times[traj.fork_round >= 0]).all() and np.allclose(times[:4], 2.0 * traj.start_s[:4])
    online = start_times(traj, np.array([0.0, 1.0, 2.0, 3.0]))
    assert online[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert root_order(np.array([3.0, np.inf, 1.0, 1.0])).tolist() == [2, 3, 0]


def test_every_next_turn_arrives_its_tool_time_after_the_last_one_ended_and_every_fork_its_delay_after_its_round():
    traj = v2_traj(12, 4)
    rec = runner.run(tiny_scenario(), traj, "dualpath", options=PY).records
    for a in range(traj.n_agents):
        lo, hi = traj.offsets[a], traj.offsets[a + 1]
        np.testing.assert_allclose(rec.arrive[lo + 1:hi], rec.done[lo:hi - 1] + traj.tool_s[lo:hi - 1], rtol=0, atol=1e-9)
        if traj.fork_round[a] >= 0:
            assert rec.arrive[lo] == pytest.approx(rec.done[traj.fork_round[a]] + traj.fork_delay_s[a], abs=1e-9)
        else:
            assert rec.arrive[lo] == pytest.approx(traj.start_s[a], abs=1e-12)


def test_tool_time_never_raises_an_agents_turn_rate_past_what_its_tools_allow():
    traj = v2_traj(10, 5, tool_mean_s=4.0)
    rec = runner.run(tiny_scenario(), traj, "basic", options=PY).records
    for a in range(traj.n_agents):
        lo, hi = traj.offsets[a], traj.offsets[a + 1]
        waiting = traj.tool_s[lo:hi - 1].sum()
        assert rec.done[hi - 1] - rec.arrive[lo] >= waiting - 1e-9  # an agent lives at least through its tool time


def test_a_v2_trace_with_none_of_v2_replays_exactly_as_its_v1_file_on_both_engines(tmp_path):
    base = tiny_traj(8, 3)
    v1, v2 = tmp_path / "v1.jsonl", tmp_path / "v2.jsonl"
    v1.write_text("\n".join(str([[int(x), int(y)] for x, y in zip(base.append_tokens[lo:hi], base.gen_tokens[lo:hi])])
                            for lo, hi in zip(base.offsets[:-1], base.offsets[1:])) + "\n")
    native.write([session(f"a{k}", base.append_tokens[lo:hi], base.gen_tokens[lo:hi])
                  for k, (lo, hi) in enumerate(zip(base.offsets[:-1], base.offsets[1:]))], v2)
    a, b = load_jsonl(v1), load_jsonl(v2)
    sc = tiny_scenario()
    for engine in ("python", "compiled"):
        ra = runner.run(sc, a, "dualpath", options=runner.SimOptions(engine=engine))
        rb = runner.run(sc, b, "dualpath", options=runner.SimOptions(engine=engine))
        for name in ("arrive", "first", "done"):
            assert np.array_equal(getattr(ra.records, name), getattr(rb.records, name)), (engine, name)
        assert (ra.steps, ra.jct_s) == (rb.steps, rb.jct_s)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["dualpath", "basic", "split"])
def test_the_compiled_engine_takes_the_python_engines_steps_with_tool_time_start_times_compaction_and_forks(policy):
    assert_same_run(*run_both(tiny_scenario(), v2_traj(40, 6), policy))


def test_the_engines_agree_online_with_tool_time_and_forks():
    spec = runner.OnlineSpec(aps=3.0)
    assert_same_run(*run_both(tiny_scenario(), v2_traj(30, 4, start_spread_s=0.0), "dualpath", online=spec))


def test_an_agent_whose_tools_outlast_the_stall_guard_is_not_a_stall():
    """Hours of tool time with nothing else to do: the clock jumps to the next arrival, it does not call it a stall."""
    base = tiny_traj(2, 2)
    traj = Trajectories(base.append_tokens, base.gen_tokens, base.offsets, "long tools", tool_s=np.array([5000.0, 0.0, 7200.0, 0.0]))
    r = runner.run(tiny_scenario(), traj, "dualpath", options=PY)
    assert r.turns == 4 and r.jct_s > 7200.0
