"""The records the online stop rule reads (``sim.window``): never one fewer than the whole run's scan would find."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from dualpath_plan.model.workload import Trajectories
from dualpath_plan.sim import runner
from dualpath_plan.sim.waits import start_times
from dualpath_plan.sim.window import WindowSpan, earliest_starts

WINDOW_S = 150.0


@st.composite
def runs(draw):
    """Agents in any start order, some forked from an earlier agent's round, with the arrival of every turn: a root's
    first turn at or after its start, a fork's after its parent's round, each next turn after the last one."""
    rounds = draw(st.lists(st.integers(1, 5), min_size=1, max_size=12))
    offsets = np.concatenate(([0], np.cumsum(rounds))).astype(np.int64)
    fork_round = np.full(len(rounds), -1, dtype=np.int64)
    for a in range(1, len(rounds)):
        if draw(st.booleans()):
            fork_round[a] = draw(st.integers(0, int(offsets[a]) - 1))  # a round of an earlier agent
    gap = st.floats(0.0, 400.0, allow_nan=False)
    start = np.array([draw(st.floats(0.0, 2_000.0, allow_nan=False)) for _ in rounds])
    arrive = np.full(int(offsets[-1]), np.nan)
    for a in range(len(rounds)):
        t = (arrive[fork_round[a]] if fork_round[a] >= 0 else start[a]) + draw(gap)
        for r in range(offsets[a], offsets[a + 1]):
            arrive[r], t = t, t + draw(gap)
    traj = Trajectories(np.ones(offsets[-1], dtype=np.int64), np.ones(offsets[-1], dtype=np.int64), offsets, "drawn",
                        fork_round=fork_round)
    return traj, start, arrive


@pytest.mark.slow
@given(runs(), st.lists(st.floats(0.0, 5_000.0, allow_nan=False), min_size=1, max_size=30))
def test_the_span_holds_every_record_that_arrived_inside_the_window(run, checks):
    traj, start, arrive = run
    span = WindowSpan(traj, start_times(traj, start[traj.fork_round < 0]))
    for t in sorted(checks):
        seen = np.where(arrive <= t, arrive, np.nan)  # what the engine has written by t
        lo, hi = span.span(seen, t, t - WINDOW_S)
        inside = np.flatnonzero((seen > t - WINDOW_S) & (seen <= t))
        assert ((inside >= lo) & (inside < hi)).all()


def test_a_fork_starts_no_earlier_than_its_root():
    traj = Trajectories(np.ones(4, dtype=np.int64), np.ones(4, dtype=np.int64), np.array([0, 2, 3, 4]), "forks",
                        fork_round=np.array([-1, 1, 2]))
    first = earliest_starts(traj, start_times(traj, np.array([7.0])))
    assert first.tolist() == [7.0, 7.0, 7.0]


@pytest.mark.slow
def test_a_probe_stops_where_the_whole_run_scan_would_stop(monkeypatch):
    """The stop rule over the span against the rule over every record, on an online run that breaks its SLO at its
    second check (every 10 simulated seconds, over a 1 s window); each check read less than the whole run."""
    from tests.sim.fluid_cases import tiny_scenario, tiny_traj

    seen = []

    class Recorded(WindowSpan):
        def span(self, arrive, t, since):
            lo, hi = super().span(arrive, t, since)
            seen.append((lo, hi, arrive.size))
            return lo, hi

    class Everything:
        def __init__(self, traj, times):
            self.n = int(traj.offsets[-1])

        def span(self, arrive, t, since):
            return 0, self.n

    monkeypatch.setattr(runner, "SLO_WINDOW_S", 1.0)  # a window the tiny run outlasts
    online = runner.OnlineSpec(aps=5.0, ttft_slo_s=0.3, horizon_s=400.0, stop_on_violation=True, warmup_frac=0.0)
    options = runner.SimOptions(engine="python")
    monkeypatch.setattr(runner, "WindowSpan", Recorded)
    narrow = runner.run(tiny_scenario(), tiny_traj(200, 12), "dualpath", online=online, options=options)
    monkeypatch.setattr(runner, "WindowSpan", Everything)
    whole = runner.run(tiny_scenario(), tiny_traj(200, 12), "dualpath", online=online, options=options)
    assert len(seen) >= 2 and all(hi - lo < n for lo, hi, n in seen) and any(lo > 0 for lo, _, _ in seen)
    assert narrow.stopped_early and (narrow.sim_s, narrow.turns, narrow.steps) == (whole.sim_s, whole.turns, whole.steps)
