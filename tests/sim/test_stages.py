"""The stage meters (sim.stages): every turn in flight is in one stage, and the meters add up."""

from __future__ import annotations

import numpy as np
import pytest

from dualpath_plan.sim import runner
from dualpath_plan.sim.python.loop import Clock
from dualpath_plan.sim.stages import N_STAGES, NONE, SERVING, STAGES, WAITING, WAITS
from tests.sim.core_cases import assert_same_run, run_both
from tests.sim.fluid_cases import tiny_scenario, tiny_traj

PYTHON = runner.SimOptions(engine="python")


@pytest.fixture()
def checked_steps(monkeypatch):
    """Runs made in the test check, after every step of the Python engine, that the requests counted in the
    stages are the agents in flight (arrived, not finished) and the tokens their current turns' prompts."""
    seen = {"steps": 0}
    advance = Clock._advance

    def checked(self, t):
        out = advance(self, t)
        eng = self.eng
        in_flight = [a for a in range(eng.traj.n_agents) if eng.stage_of[a] != NONE]
        assert len(in_flight) == self.next_arrival - eng.finished
        load = np.asarray(eng.stage_load)
        counts = np.bincount([eng.stage_of[a] for a in in_flight], minlength=N_STAGES)
        assert np.array_equal(load[:N_STAGES], counts)
        assert load[N_STAGES:].sum() == sum(eng.view.length[a] for a in in_flight)
        seen["steps"] += 1
        return out

    monkeypatch.setattr(Clock, "_advance", checked)
    return seen


@pytest.mark.parametrize("policy", ["basic", "dualpath", "split"])
def test_the_stages_hold_every_turn_in_flight_at_every_step(checked_steps, policy):
    result = runner.run(tiny_scenario(), tiny_traj(12, 4), policy, options=PYTHON)
    assert checked_steps["steps"] > 0
    assert result.leftover["stage_load"] == 0.0


def test_the_stages_hold_every_turn_in_flight_online(checked_steps):
    runner.run(tiny_scenario(), tiny_traj(40, 3), "dualpath", online=runner.OnlineSpec(aps=4.0), options=PYTHON)
    assert checked_steps["steps"] > 0


def test_the_time_in_the_stages_is_the_time_turns_were_in_flight():
    """Summed over stages, the request-seconds are every turn's arrival-to-done time, to the step: the meter samples
    the stages at each step's end, so a turn is counted to within one step at each of its two ends."""
    traj = tiny_traj(10, 5)
    result = runner.run(tiny_scenario(), traj, "dualpath", options=PYTHON)
    total = float(result.stages_over_time.requests[-1].sum())
    lived = float(np.nansum(result.records.done - result.records.arrive))
    assert abs(total - lived) <= traj.n_rounds * result.dt_s


def test_basic_loads_its_kv_into_pe_hbm_and_dualpath_never_does():
    """basic loads the whole hit KV into PE HBM (its own stage); dualpath streams it layer by layer and never loads."""
    traj = tiny_traj(10, 4)
    basic = runner.run(tiny_scenario(), traj, "basic", options=PYTHON)
    dual = runner.run(tiny_scenario(), traj, "dualpath", options=PYTHON)
    assert basic.stages_over_time.requests[-1, STAGES.index("load")] > 0
    assert dual.stages_over_time.requests[-1, STAGES.index("load")] == 0.0
    assert dual.stages_over_time.requests[-1, STAGES.index("load_wait")] == 0.0


def test_the_steady_window_reports_every_stage_and_littles_law():
    traj = tiny_traj(30, 6)
    result = runner.run(tiny_scenario(), traj, "dualpath", options=PYTHON)
    assert set(result.steady_stages) == set(STAGES)
    decode = result.steady_stages["decode"]
    assert decode.requests > 0 and decode.seconds_per_turn == pytest.approx(decode.requests / result.steady_turns_per_s)


def test_both_engines_meter_the_stages_alike_with_split_reads():
    assert_same_run(*run_both(tiny_scenario(), tiny_traj(16, 3), "split"))


def test_every_pipe_tag_has_a_stage_and_the_waits_are_stages():
    assert set(WAITING.values()) | set(SERVING.values()) <= set(range(N_STAGES))
    assert set(WAITS) < set(STAGES)


@pytest.mark.parametrize("policy", ["basic", "dualpath"])
def test_quiet_jumps_take_the_run_the_steps_would(policy, monkeypatch):
    """Jumping over quiet steps gives the run that stepping through them gives (to rounding): the jump stops before
    a read window opens and before a prefill fetch first sees the head of its queue."""
    sc, traj = tiny_scenario(sets=("gpus_per_node=2", "snic_Gbps=25")), tiny_traj(6, 4, prefix=6000)
    online = runner.OnlineSpec(aps=0.5)
    jumped = runner.run(sc, traj, policy, online=online, options=PYTHON)
    monkeypatch.setattr(Clock, "_jump", lambda self, t: 0.0)
    stepped = runner.run(sc, traj, policy, online=online, options=PYTHON)
    assert jumped.steps == stepped.steps
    for name in ("arrive", "first", "done"):
        assert np.allclose(getattr(jumped.records, name), getattr(stepped.records, name), rtol=1e-9, atol=1e-9, equal_nan=True), name
