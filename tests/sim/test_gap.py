"""Where the lost throughput went (gap.py): the parts of bound - achieved are measured in the run and add up."""

from __future__ import annotations

import pytest

import dualpath_plan as dp
from dualpath_plan.sim import gap


def _tiny(**kw):
    sc = dp.scenario("hopper", model="ds-27b", P=1, D=1, workload="agentic-32k", sets=["gpus_per_node=2"])
    return dp.simulate(sc, ["basic", "dualpath"], agents=24, **kw)


@pytest.mark.parametrize("kw", [{}, {"online": True, "aps": 0.05}])
def test_the_parts_add_up_to_the_whole_gap(kw):
    for name, run in _tiny(**kw).runs.items():
        g = gap.gap(run)
        assert g is not None and set(g.parts) == set(gap.PARTS)
        assert sum(g.parts.values()) == pytest.approx(run.bound_turns_per_s - run.turns_per_s, rel=1e-9, abs=1e-9), name
        assert g.parts["steady_state"] == pytest.approx(run.steady_bound_turns_per_s - run.steady_turns_per_s)


def test_an_online_run_has_no_ramp_up_or_tail_and_an_offline_one_splits_its_quarters():
    online = _tiny(online=True, aps=0.05).runs["dualpath"]
    assert gap.gap(online).parts["ramp_up"] == 0.0 == gap.gap(online).parts["tail"]
    offline = _tiny().runs["dualpath"]
    g = gap.gap(offline)
    assert g.parts["ramp_up"] + g.parts["tail"] == pytest.approx(offline.steady_turns_per_s - offline.turns_per_s)


def test_the_json_of_a_run_carries_its_gap():
    data = _tiny().to_dict()["policies"]["dualpath"]["gap"]
    parts = [data[f"{p}_turns_per_s"] for p in gap.PARTS]
    assert sum(parts) == pytest.approx(data["total_turns_per_s"])
