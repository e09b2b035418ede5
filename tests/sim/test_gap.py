"""Where the lost throughput went (gap.py): the parts of bound - achieved are measured in the run and add up."""

from __future__ import annotations

from dataclasses import replace

import pytest

import dualpath_plan as dp
from dualpath_plan.sim import gap
from dualpath_plan.sim.metrics import Use


def _tiny(**kw):
    sc = dp.scenario("hopper", model="ds-27b", P=1, D=1, workload="agentic-32k", sets=["gpus_per_node=2"])
    return dp.simulate(sc, ["basic", "dualpath"], agents=24, **kw)


@pytest.mark.parametrize("kw", [{}, {"online": True, "aps": 0.05}])
def test_the_parts_add_up_to_the_whole_gap(kw):
    for name, run in _tiny(**kw).runs.items():
        g = gap.gap(run)
        assert g is not None and set(g.parts) == set(gap.PARTS)
        assert sum(g.parts.values()) == pytest.approx(run.bound_turns_per_s - run.turns_per_s, rel=1e-9, abs=1e-9), name
        assert g.steady_state == pytest.approx(run.steady_bound_turns_per_s - run.steady_turns_per_s)
        assert g.parts["idle"] >= 0 and g.parts["uneven"] >= 0 and 0 <= g.binding_frac <= g.busiest_frac <= 1, name
        assert set(g.binding) <= set(run.steady_binding) and g.binding, name


def test_an_online_run_has_no_ramp_up_or_tail_and_an_offline_one_splits_the_time_around_its_window():
    online = _tiny(online=True, aps=0.05).runs["dualpath"]
    assert gap.gap(online).parts["ramp_up"] == 0.0 == gap.gap(online).parts["tail"]
    offline = _tiny().runs["dualpath"]
    g = gap.gap(offline)
    assert g.parts["ramp_up"] + g.parts["tail"] == pytest.approx(offline.steady_turns_per_s - offline.turns_per_s)
    a, b = offline.steady_window_s
    assert 0 <= a < b <= offline.jct_s and offline.steady_window_by is not None  # the parts split the run around this window


def test_the_json_of_a_run_carries_its_gap():
    data = _tiny().to_dict()["policies"]["dualpath"]["gap"]
    parts = [data[f"{p}_turns_per_s"] for p in gap.PARTS]
    assert sum(parts) == pytest.approx(data["total_turns_per_s"])


def test_the_steady_parts_are_the_binding_resources_idle_uneven_and_other_work():
    run = _tiny().runs["basic"]
    X_bw, X_s = run.steady_bound_turns_per_s, run.steady_turns_per_s
    made = replace(run, steady_binding=("pe_snic",), steady_use={"pe_snic": Use(50.0, 100.0, 0.8)})  # u = 0.5, u_max = 0.8
    g = gap.gap(made)
    assert g.parts["idle"] == pytest.approx(0.2 * X_bw) and g.parts["uneven"] == pytest.approx(0.3 * X_bw)
    assert g.parts["other_work"] == pytest.approx(0.5 * X_bw - X_s) and (g.binding, g.binding_frac, g.busiest_frac) == (("pe_snic",), 0.5, 0.8)


def test_the_group_the_run_drove_hardest_is_measured_and_links_pool_across_sides():
    run = _tiny().runs["dualpath"]
    uses = {"pe_snic": Use(30.0, 100.0, 0.4), "de_snic": Use(70.0, 100.0, 0.9), "prefill_compute": Use(40.0, 100.0, 0.6)}
    g = gap.gap(replace(run, steady_binding=("pe_snic", "de_snic", "prefill_compute"), steady_use=uses))
    assert g.binding == ("pe_snic", "de_snic") and g.binding_frac == pytest.approx(0.5) and g.busiest_frac == 0.9  # pooled 0.5 > 0.4
    hot = {**uses, "prefill_compute": Use(95.0, 100.0, 0.97)}
    g = gap.gap(replace(run, steady_binding=("pe_snic", "de_snic", "prefill_compute"), steady_use=hot))
    assert g.binding == ("prefill_compute",) and g.busiest_frac == 0.97


def test_a_measured_share_past_the_capacity_leaves_the_identity_and_no_negative_idle():
    run = _tiny().runs["basic"]
    g = gap.gap(replace(run, steady_binding=("pe_snic",), steady_use={"pe_snic": Use(101.0, 100.0, 1.02)}))
    assert g.parts["idle"] == 0.0 and g.parts["uneven"] == 0.0
    assert sum(g.parts.values()) == pytest.approx(g.total, rel=1e-9, abs=1e-9)


def test_the_idle_part_splits_over_the_waiting_stages_by_the_tokens_they_held():
    from dualpath_plan.sim.metrics import StageLoad
    from dualpath_plan.sim.stages import STAGES, WAITS

    run = _tiny().runs["dualpath"]
    made = replace(run, steady_binding=("pe_snic",), steady_use={"pe_snic": Use(50.0, 100.0, 0.6)},
                   steady_stages={s: StageLoad(1.0, {"read_queue": 300.0, "buffer_room": 100.0, "decode": 5000.0}.get(s, 0.0), None)
                                  for s in STAGES})
    g = gap.gap(made)
    held = sum(g.idle_by_stage.values())
    assert held + g.idle_short_of_agents == pytest.approx(g.parts["idle"]) and set(g.idle_by_stage) == set(WAITS)
    assert g.idle_by_stage["read_queue"] == pytest.approx(0.75 * held)  # decode is no wait: it takes no share
    assert g.idle_by_stage["pe_assign"] == 0.0
    idle = replace(made, steady_stages={s: StageLoad(0.0, 0.0, None) for s in STAGES})
    g = gap.gap(idle)
    assert g.idle_by_stage == {} and g.idle_short_of_agents == pytest.approx(g.parts["idle"])  # nothing waited: all short of agents


def test_held_work_explains_at_most_the_rate_its_waits_cost():
    """Little's law on the agents in flight: a turn that waits W for every S it is served would come W / S faster
    without the waits. One request waiting for every 99 served explains X_s / 99 of the idle part, the rest is the
    cluster short of agents; with nine waiting for each one served the waits explain all of it."""
    from dualpath_plan.sim.metrics import StageLoad
    from dualpath_plan.sim.stages import STAGES

    run = _tiny().runs["dualpath"]
    X_s = run.steady_turns_per_s

    def made(waiting: float, served: float):
        loads = {s: StageLoad(0.0, 0.0, None) for s in STAGES} | {"read_queue": StageLoad(waiting, 100.0, None), "decode": StageLoad(served, 1.0, None)}
        return gap.gap(replace(run, steady_binding=("pe_snic",), steady_use={"pe_snic": Use(10.0, 100.0, 0.1)}, steady_stages=loads))

    light = made(1.0, 99.0)
    assert light.idle_by_stage["read_queue"] == pytest.approx(X_s / 99.0)
    assert light.idle_short_of_agents == pytest.approx(light.parts["idle"] - X_s / 99.0)
    loaded = made(9.0 * light.parts["idle"] / X_s, 1.0)
    assert loaded.idle_by_stage["read_queue"] == pytest.approx(loaded.parts["idle"]) and loaded.idle_short_of_agents == pytest.approx(0.0, abs=1e-9)


def test_a_real_run_splits_its_idle_part_over_the_stages_that_held_work():
    for run in _tiny().runs.values():
        g = gap.gap(run)
        assert sum(g.idle_by_stage.values()) + g.idle_short_of_agents == pytest.approx(g.parts["idle"])
