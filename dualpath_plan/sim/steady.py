"""The steady window of an offline run: the span in which the runner's throughput is set against the bound.

An offline run starts every agent at once and ends when the last one finishes. Neither end is steady state:

- **the cold start**: every agent's first turn carries its whole initial prompt with no hit, so while first turns
  run, prefill binds instead of the storage path, and the turns that finish are not the mix the run settles into;
- **the drain**: agents leave as their trajectories end, and a closed population that has shrunk no longer loads
  the cluster (Little's law: the agents in flight are the throughput times a turn's time in the cluster).

The window is therefore the middle half of the JCT, cut to the span after the last of the agents that started
with the run (whose first turn arrived at the run's first arrival) has finished its first turn, and before the
agents in the cluster (started, not finished) fall below half their peak. Measured on DS-V3.2, agentic-64k, Hopper,
seed 1, 2,048 agents per 6 nodes (``benchmarks/bench_scale.py``): at 2P4D the storage NICs, which bind, ran at
98-100 % of their line rate from 960 s to 1,938 s; the last first turn finished at 753 s, the population halved at
1,634 s and fell to a quarter at 2,152 s, and the middle half [821 s, 2,463 s] held 139 s before the NICs saturated
and 525 s of drain in which the decode nodes' fell to 30 %. At 12P24D: saturated from 1,104 s to 2,166 s, last first
turn 879 s, halved at 1,725 s. So the drain's cut falls inside the saturated span, and the cold start's cut before
it: the queues the cold start leaves behind (225 s of them at 12P24D) stay in the window.

A trace whose sessions start over the run has few agents at its first arrival, so its cold-start cut is theirs; the
halving is of the population's peak, wherever it falls. When the cut middle half is empty, the population halved before
a quarter of the JCT: a lightly loaded cluster, whose few longest agents set the JCT, so the middle half is their
drain. The window is then the span from the cold start to the halving alone (a middle half would report the drain as
steady state: at 256 agents on 2P4D it gave half the whole run's rate), and the middle half only when that is empty too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIDDLE = (0.25, 0.75)  # the middle half of the JCT, as fractions
HALF = 0.5  # the window ends when the population falls below this share of its peak


def cold_start_end(arrive: np.ndarray, done: np.ndarray, offsets: np.ndarray) -> float:
    """When the last of the agents whose first turn arrived with the run's first turn has finished that turn (s);
    0 when no turn arrived or none of those finished."""
    firsts = offsets[:-1][np.diff(offsets) > 0]
    firsts = firsts[np.isfinite(arrive[firsts])]  # agents whose first turn never arrived do not start the run
    if not firsts.size:
        return 0.0
    t0 = np.min(arrive[firsts])
    first_done = done[firsts][arrive[firsts] == t0]
    first_done = first_done[np.isfinite(first_done)]
    return float(first_done.max()) if first_done.size else 0.0


def population_halved(arrive: np.ndarray, done: np.ndarray, offsets: np.ndarray, end: float) -> float:
    """When the agents in the cluster (first turn arrived, last turn not done) fall below half their peak for the
    last time (s); ``end`` when they never do before it."""
    rounds = np.diff(offsets) > 0
    starts, stops = arrive[offsets[:-1][rounds]], done[offsets[1:][rounds] - 1]
    started = np.isfinite(starts)  # an agent whose first turn never arrived was never in the cluster
    starts, stops = starts[started], np.where(np.isfinite(stops[started]), stops[started], np.inf)  # unfinished: never leaves
    times = np.concatenate((starts, stops))
    steps = np.concatenate((np.ones(starts.size), -np.ones(stops.size)))
    order = np.lexsort((steps, times))  # by time; at one time the stops first, so a fork that starts as its parent
    inside = np.cumsum(steps[order])  # ends never counts both (a peak no instant had)
    if not inside.size or not inside.max() > 0:
        return end
    last = int(np.flatnonzero(inside >= HALF * inside.max())[-1])
    return float(min(times[order][last + 1], end)) if last + 1 < times.size else end


@dataclass(frozen=True)
class SteadyWindow:
    """An offline run's steady window, seconds, and what set each end (:data:`ENDS` names them)."""

    start_s: float
    stop_s: float
    start_by: str
    stop_by: str


ENDS = {"jct_quarter": "a quarter of the JCT", "cold_start": "the last cold first turn done",
        "population_halved": "the agents in the cluster fell below half their peak", "jct_three_quarters": "three quarters of the JCT"}


def offline_window(arrive: np.ndarray, done: np.ndarray, offsets: np.ndarray, jct: float) -> SteadyWindow:
    """The steady window of an offline run of JCT ``jct`` from its turn records (module docstring): the middle half cut
    to the span after the cold start and before the population halves; when that leaves nothing (a population that
    halves before a quarter of the JCT: a lightly loaded cluster, whose longest agents set the JCT), that span alone;
    when it is empty too, the middle half."""
    lo, hi = MIDDLE[0] * jct, MIDDLE[1] * jct
    cold, halved = cold_start_end(arrive, done, offsets), population_halved(arrive, done, offsets, jct)
    start, start_by = (cold, "cold_start") if cold > lo else (lo, "jct_quarter")
    stop, stop_by = (halved, "population_halved") if halved < hi else (hi, "jct_three_quarters")
    if stop > start:
        return SteadyWindow(start, stop, start_by, stop_by)
    if halved > cold:
        return SteadyWindow(cold, halved, "cold_start", "population_halved")
    return SteadyWindow(lo, hi, "jct_quarter", "jct_three_quarters")
