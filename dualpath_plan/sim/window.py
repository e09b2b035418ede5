"""Which turn records can fall in the online stop rule's sliding window, so the rule reads those and not the run's.

The stop rule (``runner._stop_check``, paper §7 online) averages the TTFT of the turns that arrived in the last
150 s. A run holds a record per turn, agent after agent (``Trajectories.offsets``); scanning them all at every
check costs the whole run's records a check, more than the engine's own steps on a capacity probe. Two facts
bound the records that can be in the window ``(t - W, t]``:

- an agent's turns arrive in round order and never before it starts: a root at its start time, a fork not
  before its root does. Past the last agent that may have started by ``t`` (a suffix minimum of those earliest
  starts, so any agent order is right), no record has arrived;
- an agent whose last turn arrived at or before ``t - W`` has every turn out of this window and of every later
  one (checks come at rising ``t``). The leading run of such agents is skipped for good.

The records outside that span cannot be in the window, so the rule over the span equals the rule over the run.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.model.workload import Trajectories


def earliest_starts(traj: Trajectories, times: np.ndarray) -> np.ndarray:
    """Per agent, a time before which none of its turns arrives: a root's start time (``waits.start_times``), a
    fork's root's (forks start after a round of their parent, which comes earlier in agent order)."""
    first = np.array(times, dtype=float)
    for fork in np.flatnonzero(traj.fork_round >= 0):
        parent = int(np.searchsorted(traj.offsets, traj.fork_round[fork], side="right")) - 1
        first[fork] = first[parent]
    return first


class WindowSpan:
    """The records that may hold a turn arrived in ``(since, t]``, for checks at rising ``t`` (module docstring)."""

    def __init__(self, traj: Trajectories, times: np.ndarray) -> None:
        self._offsets = np.asarray(traj.offsets, dtype=np.int64)
        self._started_by = np.minimum.accumulate(earliest_starts(traj, times)[::-1])[::-1]  # non-decreasing
        self._lo = 0

    def span(self, arrive: np.ndarray, t: float, since: float) -> tuple[int, int]:
        """``(start, stop)``: every record with ``since < arrive <= t`` lies in ``arrive[start:stop]``."""
        hi = int(np.searchsorted(self._started_by, t, side="right"))
        offsets, lo = self._offsets, self._lo
        while lo < hi and (offsets[lo + 1] == offsets[lo] or arrive[offsets[lo + 1] - 1] <= since):
            lo += 1
        self._lo = lo
        return int(offsets[lo]), int(offsets[max(lo, hi)])
