"""The steady window of an offline run (``sim.steady``): past the cold first turns, before the population halves."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.sim import steady


def _records(turns: list[list[tuple[float, float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(arrive, done, offsets) of agents given as their turns' (arrive, done)."""
    offsets = np.concatenate(([0], np.cumsum([len(a) for a in turns]))).astype(np.int64)
    flat = [t for agent in turns for t in agent]
    return np.array([a for a, _ in flat]), np.array([d for _, d in flat]), offsets


# four agents start at 0; a fifth (a fork, say) starts at 50 and is not part of the cold start
AGENTS = [[(0.0, 30.0), (31.0, 100.0)], [(0.0, 40.0), (41.0, 200.0)], [(0.0, 10.0), (11.0, 300.0)],
          [(0.0, 20.0), (21.0, 400.0)], [(50.0, 90.0), (91.0, 120.0)]]


def test_the_cold_start_ends_when_the_last_agent_that_started_with_the_run_finishes_its_first_turn():
    assert steady.cold_start_end(*_records(AGENTS)) == 40.0  # the fork's first turn (done at 90) is not cold


def test_the_population_halves_when_fewer_than_half_its_peak_remain():
    # in the cluster: 4 from 0, 5 from 50, 4 after 100, 3 after 120 (half of 5 is 2.5), 2 after 200
    assert steady.population_halved(*_records(AGENTS), end=400.0) == 200.0


def test_the_window_is_the_middle_half_cut_to_the_steady_span_and_says_what_set_each_end():
    arrive, done, offsets = _records(AGENTS)
    # middle half (100, 300), cut where the population halves; then (30, 90), cut where the cold start ends
    assert steady.offline_window(arrive, done, offsets, 400.0) == steady.SteadyWindow(100.0, 200.0, "jct_quarter", "population_halved")
    assert steady.offline_window(arrive, done, offsets, 120.0) == steady.SteadyWindow(40.0, 90.0, "cold_start", "jct_three_quarters")


def test_a_population_that_halves_before_a_quarter_of_the_jct_keeps_its_standing_span():
    """A lightly loaded run: three of four agents done by 50 s (two remain after 45 s, half the peak; one after 50 s),
    one running to 1,000 s. The middle half is that one agent's drain; the window is the span from the cold start to
    the halving."""
    light = [[(0.0, 5.0), (6.0, 40.0)], [(0.0, 4.0), (5.0, 50.0)], [(0.0, 3.0), (4.0, 45.0)], [(0.0, 2.0), (3.0, 1_000.0)]]
    arrive, done, offsets = _records(light)
    assert steady.offline_window(arrive, done, offsets, 1_000.0) == steady.SteadyWindow(5.0, 50.0, "cold_start", "population_halved")


def test_a_cut_that_leaves_nothing_falls_back_to_the_middle_half():
    late = [[(0.0, 390.0)], [(0.0, 10.0)], [(0.0, 11.0)]]  # two of three gone at 11: halved before the cold start ends
    arrive, done, offsets = _records(late)
    assert steady.offline_window(arrive, done, offsets, 400.0) == steady.SteadyWindow(100.0, 300.0, "jct_quarter", "jct_three_quarters")


def test_agents_not_finished_never_leave():
    arrive, done, offsets = _records([[(0.0, 5.0), (6.0, np.nan)], [(0.0, 8.0)]])
    assert steady.population_halved(arrive, done, offsets, end=50.0) == 50.0


def test_a_first_turn_that_never_arrived_does_not_hide_the_others_cold_start():
    arrive, done, offsets = _records([[(0.0, 30.0)], [(0.0, 40.0)], [(np.nan, np.nan)]])
    assert steady.cold_start_end(arrive, done, offsets) == 40.0


def test_a_fork_that_starts_as_its_parent_ends_is_not_a_peak():
    # the parent leaves at 60 s as its fork starts: never 3 in the cluster at once; the peak is 2, halved when one remains
    arrive, done, offsets = _records([[(0.0, 60.0)], [(0.0, 100.0)], [(60.0, 130.0)]])
    assert steady.population_halved(arrive, done, offsets, end=130.0) == 130.0


@st.composite
def offline_runs(draw):
    """Agents on a coarse clock (so starts and ends tie), some starting at 0, some later (forks, say), some never
    reached (NaN) or not finished (NaN done), each turn arriving at or after the last one finished."""
    agents = []
    for _ in range(draw(st.integers(1, 12))):
        t = 0.0 if draw(st.booleans()) or not agents else float(draw(st.integers(0, 20)))
        turns = []
        for _ in range(draw(st.integers(1, 4))):
            end = t + draw(st.integers(1, 10))
            turns.append((t, end))
            t = end + draw(st.integers(0, 3))
        if draw(st.integers(0, 9)) == 0:
            turns[-1] = (turns[-1][0], np.nan)  # not finished
        agents.append(turns)
    return _records(agents)


def _halved_by_counting(arrive: np.ndarray, done: np.ndarray, offsets: np.ndarray, end: float) -> float:
    """The same answer by counting the cluster at every instant something happens (after everything at it)."""
    start, stop = arrive[offsets[:-1]], done[offsets[1:] - 1]
    stop = np.where(np.isfinite(stop), stop, np.inf)
    times = np.unique(np.concatenate((start, stop[np.isfinite(stop)])))
    count = np.array([(start <= t).sum() - (stop <= t).sum() for t in times])
    at_least = times[count >= count.max() / 2]
    later = times[times > at_least.max()]
    return float(min(later.min(), end)) if later.size else end


@given(offline_runs())
def test_the_population_halves_where_counting_the_cluster_says(run):
    arrive, done, offsets = run
    end = 1_000.0  # after every event of the clock above
    assert steady.population_halved(arrive, done, offsets, end) == _halved_by_counting(arrive, done, offsets, end)


@given(offline_runs())
def test_every_window_lies_in_the_run_and_has_a_length(run):
    arrive, done, offsets = run
    jct = float(np.nanmax(np.concatenate((done, [1.0]))))
    w = steady.offline_window(arrive, done, offsets, jct)
    assert 0.0 <= w.start_s < w.stop_s <= jct and w.start_by in steady.ENDS and w.stop_by in steady.ENDS
