"""Helpers shared by the compiled-engine tests: one run on either engine, and the comparison of two runs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dualpath_plan.sim import runner

REL_SUMMED = 1e-12  # results summed in another order (numpy's pairwise mean, BLAS's dot) may differ in the last bits


def run_both(scenario, traj, policy, online=None, options: runner.SimOptions = runner.SimOptions()) -> tuple:
    """The same run on the Python engine and on the compiled one."""
    return tuple(runner.run(scenario, traj, policy, online=online, options=replace(options, engine=e)) for e in ("python", "compiled"))


def assert_same_run(a: runner.SimResult, b: runner.SimResult) -> None:
    """Two runs took the same steps: every turn's times, the counts and the resource totals are equal; only the
    two metrics that numpy sums in its own order (decode utilisation, SNIC balance) may differ by rounding."""
    assert (a.engine, b.engine) == ("python", "compiled")
    for name in ("arrive", "first", "dec_start", "dec_end", "done", "de_frac"):
        assert np.array_equal(getattr(a.records, name), getattr(b.records, name), equal_nan=True), name
    if a.records.tier is None or b.records.tier is None:  # None: no DRAM tier
        assert a.records.tier is b.records.tier is None
    else:
        assert np.array_equal(a.records.tier, b.records.tier)
    assert (a.tier_share, a.steady_tier_share) == (b.tier_share, b.steady_tier_share)
    assert (a.steps, a.sim_s, a.jct_s, a.turns, a.de_read_share) == (b.steps, b.sim_s, b.jct_s, b.turns, b.de_read_share)
    assert a.delivered == b.delivered and a.leftover == b.leftover and a.stopped_early == b.stopped_early
    assert a.utilization.keys() == b.utilization.keys()
    for kind, value in a.utilization.items():
        assert np.isclose(value, b.utilization[kind], rtol=REL_SUMMED, atol=0.0, equal_nan=True), kind
    assert a.steady_binding == b.steady_binding and a.steady_use.keys() == b.steady_use.keys()
    for kind, use in a.steady_use.items():  # the use over time the steady window is measured from
        other = b.steady_use[kind]
        assert np.allclose((use.delivered, use.capacity, use.busiest_frac), (other.delivered, other.capacity, other.busiest_frac),
                           rtol=REL_SUMMED, atol=0.0), kind
    ca, cb = a.use_over_time, b.use_over_time
    assert np.array_equal(ca.times, cb.times) and np.allclose(ca.cumulative, cb.cumulative, rtol=REL_SUMMED, atol=0.0)
    if a.snic_max_over_avg is None or b.snic_max_over_avg is None:  # None: no storage NIC read anything
        assert a.snic_max_over_avg is b.snic_max_over_avg is None
    else:
        assert np.isclose(a.snic_max_over_avg, b.snic_max_over_avg, rtol=REL_SUMMED, atol=0.0)
    sa, sb = a.stages_over_time, b.stages_over_time  # the stage meters: the same counts, integrated the same way
    assert np.array_equal(sa.times, sb.times) and np.array_equal(sa.requests, sb.requests) and np.array_equal(sa.tokens, sb.tokens)
    assert a.steady_stages == b.steady_stages
    if a.steady_snic_max_over_avg is None or b.steady_snic_max_over_avg is None:
        assert a.steady_snic_max_over_avg is b.steady_snic_max_over_avg is None
    else:
        assert np.isclose(a.steady_snic_max_over_avg, b.steady_snic_max_over_avg, rtol=REL_SUMMED, atol=0.0)
