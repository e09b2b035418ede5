"""Work that became ready inside a step: the correction that keeps a coarse step close to exact time.

Stages start at step boundaries, but work often becomes ready between them: a pipe that was idle is
given an item when a batch or a decode ends (or when a fetch is due) at time ``tau`` inside a step; a
prefill engine could start its next forward batch when its last one ended with work waiting, or, idle,
when its first request became ready. Such a flow really starts at ``tau``, not at the next step
``t``. So, in its first step:

* **capacity**: each resource it crosses gets the capacity it left unused in the previous step, up to
  ``C * (t - tau)``, added to this step's budget (the bonus is shared by every flow on the resource).
  The bonus never exceeds capacity that was actually idle, so over any two steps no resource delivers
  more than its capacity;
* **time**: the flow's step spans ``[tau, t + dt]`` rather than ``[t, t + dt]``, so what it finishes
  is stamped on that span (``t - b*dt + f*(1 + b)*dt`` for a completion at share ``f`` of its
  progress, ``b = (t - tau)/dt``).

Only flows that were idle get this (a busy pipe's new item just queues behind its work); ``tau`` is at
most one step back.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.fluid_layout import COMPUTE, Layout


class LateWork:
    """Pending late starts (flow key -> earliest ``tau``), turned into a budget bonus and time spans."""

    def __init__(self, layout: Layout, pipe_entries: tuple[np.ndarray, np.ndarray], layerwise: bool, dt: float) -> None:
        self.layout, self.dt = layout, dt
        self.entry_pipe, self.entry_res = pipe_entries  # every pipe's resources, one entry each
        self.pe_starts = np.array([layout.start[COMPUTE]] + ([layout.start["pe_cnic_read"], layout.start["pe_cnic_write"]] if layerwise else []))
        self.pending: dict[tuple[str, int], float] = {}
        self.span: dict[tuple[str, int], float] = {}  # this step's spans (share of a step before t), by flow
        self._prev: tuple[np.ndarray, np.ndarray] | None = None  # last step's (budget, used)
        self._pipe_b = np.zeros(int(self.entry_pipe.max()) + 1 if self.entry_pipe.size else 0)

    def pipe(self, pipe: int, tau: float) -> None:
        key = ("pipe", pipe)
        self.pending[key] = min(self.pending.get(key, tau), tau)

    def pe(self, pe: int, tau: float) -> None:
        key = ("pe", pe)
        self.pending[key] = min(self.pending.get(key, tau), tau)

    def bonus(self, t: float) -> np.ndarray | None:
        """At the start of the step at ``t``: this step's extra budget for the pending late starts (or None)."""
        pending, self.pending = self.pending, {}
        self.span = {key: min((t - tau) / self.dt, 1.0) for key, tau in pending.items() if tau < t}
        if not self.span or self._prev is None:
            return None
        share = np.zeros(self.layout.n_res)  # per resource: the largest late share of a flow on it
        pipes = [(unit, b) for (kind, unit), b in self.span.items() if kind == "pipe"]
        if pipes:
            self._pipe_b[:] = 0.0
            unit, b = zip(*pipes)
            self._pipe_b[list(unit)] = b
            np.maximum.at(share, self.entry_res, self._pipe_b[self.entry_pipe])
        pes = [(unit, b) for (kind, unit), b in self.span.items() if kind == "pe"]
        if pes:
            unit, b = (np.array(col) for col in zip(*pes))
            for start in self.pe_starts:
                np.maximum.at(share, start + unit, b)
        budget, used = self._prev
        return np.clip(np.minimum(budget - used, self.layout.capacity * self.dt * share), 0.0, None)

    def remember(self, budget: np.ndarray, used: np.ndarray) -> None:
        """The step's budget and use, whose idle part late starts of the next step may take."""
        self._prev = (budget, used)

    def time(self, kind: str, unit: int, t: float, frac: float) -> float:
        """When a flow that finished at share ``frac`` of its progress in the step at ``t`` finished."""
        b = self.span.get((kind, unit), 0.0)
        return t + (frac * (1.0 + b) - b) * self.dt
