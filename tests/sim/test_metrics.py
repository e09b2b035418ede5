"""What a run measures (metrics.py): the use over time the gap's steady parts come from."""

from __future__ import annotations

import numpy as np
import pytest

from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.sim import metrics
from dualpath_plan.sim.layout import build_layout
from dualpath_plan.sim.metrics import (MAX_SNAPSHOTS, MIN_SNAPSHOTS, SNAPSHOT_BYTES, Meter, record_width, snapshot_rows, window_snic_balance,
                                       window_stages, window_use)
from dualpath_plan.sim.stages import N_STAGES, STAGES


@pytest.fixture(scope="module")
def layout():
    return build_layout(build_scenario("hopper", P=2, D=2))


LOAD = [float(s + 1) for s in range(N_STAGES)] + [1000.0 * (s + 1) for s in range(N_STAGES)]  # requests, then tokens


def _steady(meter: Meter, steps: int, dt: float, used: np.ndarray, decode: float = 0.0, reads: np.ndarray | None = None) -> None:
    reads = np.zeros(meter.layout.P + meter.layout.D) if reads is None else reads
    for k in range(steps):
        meter.step((k + 1) * dt, dt, used, reads, decode, LOAD)


def test_a_constant_rate_is_measured_exactly_between_any_two_times(layout):
    meter, used = Meter(layout), np.linspace(1.0, 2.0, layout.n_res)
    _steady(meter, 400, 0.05, used, decode=3.0)  # 20 s
    units, tokens = meter.use_between(4.2, 13.7, 20.0)
    assert np.allclose(units, used / 0.05 * 9.5, rtol=1e-9) and tokens == pytest.approx(3.0 / 0.05 * 9.5)
    assert np.allclose(meter.stages_between(4.2, 13.7, 20.0), np.asarray(LOAD) * 9.5, rtol=1e-9)


def test_the_mean_occupancy_of_each_stage_and_its_seconds_per_turn(layout):
    meter = Meter(layout)
    _steady(meter, 400, 0.05, np.ones(layout.n_res))
    stages = window_stages(meter, 5.0, 15.0, 20.0, turns_per_s=4.0)
    assert list(stages) == list(STAGES)
    for s, name in enumerate(STAGES):
        assert stages[name].requests == pytest.approx(s + 1) and stages[name].tokens == pytest.approx(1000.0 * (s + 1))
        assert stages[name].seconds_per_turn == pytest.approx((s + 1) / 4.0)
    assert window_stages(meter, 5.0, 5.0, 20.0, 4.0) == {}
    assert window_stages(meter, 5.0, 15.0, 20.0, None)["decode"].seconds_per_turn is None


def test_the_steady_snic_balance_is_the_busiest_node_over_the_mean_node(layout):
    meter = Meter(layout)
    used = np.zeros(layout.n_res)
    used[layout.start["pe_snic"]] = 3.0  # one prefill node reads 3 units a step, the other 1, each decode node 2
    used[layout.start["pe_snic"] + 1] = 1.0
    used[layout.slice("de_snic")] = 2.0
    _steady(meter, 400, 0.05, used)
    assert window_snic_balance(meter, 2.0, 18.0, 20.0) == pytest.approx(1.5)
    assert window_snic_balance(Meter(layout), 2.0, 18.0, 20.0) is None


@pytest.mark.slow
def test_a_long_run_keeps_its_records_within_the_cap_across_the_whole_run(layout):
    meter, used = Meter(layout), np.ones(layout.n_res)
    rows = snapshot_rows(layout.n_res)
    _steady(meter, 40_000, 0.5, used)  # 20,000 s: ~6,700 windows of 3 s, far past the records
    times = meter.snap_times[: meter.n_snaps]
    assert rows == MAX_SNAPSHOTS and rows // 2 <= meter.n_snaps <= rows and np.all(np.diff(times) > 0)
    assert times[0] < 20_000 / rows * 2 and times[-1] > 20_000 * 0.9  # spread over all of the run
    units, _ = meter.use_between(5_000.0, 15_000.0, 20_000.0)
    assert np.allclose(units, 2.0 * 10_000.0, rtol=1e-9)


def test_a_quiet_span_is_a_constant_rate_and_the_window_use_names_every_kind(layout):
    meter, used = Meter(layout), np.full(layout.n_res, 2.0)
    reads = np.zeros(layout.P + layout.D)
    meter.span(0.0, 30.0, used, reads, 1.0, 600, LOAD)  # 600 steps of 0.05 s in one go
    units, tokens = meter.use_between(10.0, 20.0, 30.0)
    assert np.allclose(units, 2.0 * 600 / 30.0 * 10.0) and tokens == pytest.approx(200.0)
    use = window_use(meter, 10.0, 20.0, 30.0, decode_tokens_per_gpu_s=100.0)
    cut = layout.slice("pe_snic")
    assert use["pe_snic"].delivered == pytest.approx(400.0 * (cut.stop - cut.start))
    assert use["pe_snic"].busiest_frac == pytest.approx(400.0 / (layout.capacity[cut][0] * 10.0))
    assert use["decode"].frac == pytest.approx(200.0 / (layout.n_de * 100.0 * 10.0))


@pytest.mark.parametrize("n_res", [10, 3_240, 8_000, 184_320, 10_000_000])
def test_the_records_stay_within_their_memory_on_every_cluster(n_res):
    rows = snapshot_rows(n_res)
    assert rows % 2 == 0 and MIN_SNAPSHOTS <= rows <= MAX_SNAPSHOTS
    assert rows * (record_width(n_res) + 1) * 8 <= SNAPSHOT_BYTES or rows == MIN_SNAPSHOTS


def test_the_records_of_an_8192_node_cluster_fit_32_mb():
    assert snapshot_rows(184_320) * (184_320 + 2) * 8 <= SNAPSHOT_BYTES and snapshot_rows(3_240) == MAX_SNAPSHOTS


def _latencies_whole(rec: metrics.TurnRecords, gen: np.ndarray, mask: np.ndarray) -> tuple:
    """The latencies from whole arrays, the plain formulas (first token, second token a TPOT after decoding starts, and
    TPOT), each over the finite values of the turns in the mask."""
    tpot = (rec.dec_end - rec.dec_start) / np.maximum(gen, 1)
    second = rec.dec_start + tpot - rec.first
    return tuple(metrics.Latency.of(a[mask]) for a in (rec.first - rec.arrive, second, tpot))


@pytest.mark.parametrize("partial", [False, True])
def test_latencies_taken_in_slices_are_those_of_the_whole_arrays(partial, monkeypatch):
    """Slices of 7 turns (a run's are CHUNK_TURNS), with unfinished turns (NaN, inf) and, partial, a mask that leaves
    turns out: the same counts, means and percentiles as the formulas over the whole arrays."""
    monkeypatch.setattr(metrics, "CHUNK_TURNS", 7)
    rng = np.random.default_rng(3)
    n = 50
    arrive = rng.uniform(0, 10, n)
    first = arrive + rng.uniform(0.1, 2, n)
    dec_start = first + rng.uniform(0, 1, n)
    dec_end = dec_start + rng.uniform(0.5, 5, n)
    first[[4, 20]], dec_end[[9, 33]], dec_end[40] = np.nan, np.nan, np.inf
    rec = metrics.TurnRecords(arrive, first, dec_start, dec_end, dec_end + 0.1, np.zeros(n))
    gen = rng.integers(0, 300, n)
    mask = rng.random(n) < 0.6 if partial else np.ones(n, bool)
    assert rec.latencies(gen, mask) == _latencies_whole(rec, gen, mask)
