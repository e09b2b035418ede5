"""--seeds N (spread.py): the same run over seeds, each metric's mean and 95 % interval."""

from __future__ import annotations

import math
import statistics

import pytest

import dualpath_plan as dp
from dualpath_plan.sim import spread


def test_the_interval_is_students_t_around_the_mean():
    values = [10.0, 12.0, 11.0, 15.0]
    s = spread.spread(values)
    half = spread.t_quantile(3) * statistics.stdev(values) / math.sqrt(4)
    assert s.mean == pytest.approx(12.0) and s.low == pytest.approx(12.0 - half) and s.high == pytest.approx(12.0 + half)
    assert spread.t_quantile(1) == pytest.approx(12.706, abs=1e-3) and spread.t_quantile(10_000) == pytest.approx(1.960, abs=1e-3)


def test_one_value_has_a_mean_and_no_interval():
    s = spread.spread([3.0])
    assert (s.mean, s.low, s.high, s.half_width) == (3.0, None, None, None)


def _tiny(seeds: int):
    sc = dp.scenario("hopper", model="ds-27b", P=1, D=1, workload="agentic-32k", sets=["gpus_per_node=2"])
    return dp.simulate(sc, agents=12, seeds=seeds)


def test_each_seed_is_its_own_draw_and_the_first_is_what_the_tables_show():
    one, many = _tiny(1), _tiny(3)
    assert many.repeated.seeds == (0, 1, 2) and many.runs["dualpath"].jct_s == one.runs["dualpath"].jct_s
    values = many.repeated.spreads["dualpath"]["jct_s"].values
    assert values[0] == one.runs["dualpath"].jct_s and len(set(values)) == 3
    assert one.repeated.spreads == {} and "spread" not in one.to_dict() and many.to_dict()["seeds"] == [0, 1, 2]


def test_more_seeds_add_draws_to_the_same_first_ones_and_each_interval_is_the_t_interval_of_its_runs():
    """Seeds 0 and 1 are the same draws whatever --seeds says, and every interval is Student's t over the runs it
    has (whether 8 runs give a narrower interval than 2 is a matter of the draws: the t factor falls from 12.7 to
    2.4, the sample spread is itself random)."""
    few, more = _tiny(2).repeated.spreads["dualpath"], _tiny(8).repeated.spreads["dualpath"]
    for metric in ("jct_s", "turns_per_s", "ttft_p50_s"):
        assert more[metric].values[:2] == few[metric].values, metric
        for s in (few[metric], more[metric]):
            assert s.half_width == pytest.approx(spread.t_quantile(s.n - 1) * statistics.stdev(s.values) / math.sqrt(s.n)), metric
