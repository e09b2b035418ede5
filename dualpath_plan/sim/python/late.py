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

from dualpath_plan.sim.layout import COMPUTE, Layout


class LateWork:
    """Pending late starts (``"pipe"`` or ``"pe"`` -> unit -> earliest ``tau``), turned into a budget bonus and time spans."""

    def __init__(self, layout: Layout, pipe_entries: tuple[np.ndarray, np.ndarray], layerwise: bool, dt: float) -> None:
        self.layout, self.dt = layout, dt
        self.entry_pipe, self.entry_res = pipe_entries  # every pipe's resources, one entry each
        self.pe_starts = np.array([layout.start[COMPUTE]] + ([layout.start["pe_cnic_read"], layout.start["pe_cnic_write"]] if layerwise else []))
        self.pending: dict[str, dict[int, float]] = {"pipe": {}, "pe": {}}  # kind -> unit -> earliest tau
        self.span: dict[str, dict[int, float]] = {"pipe": {}, "pe": {}}  # this step's spans (share of a step before t)
        self._any_span = False
        self._prev: tuple[np.ndarray, np.ndarray] | None = None  # last step's (budget, used)
        self._pipe_b = np.zeros(int(self.entry_pipe.max()) + 1 if self.entry_pipe.size else 0)

    def pipe(self, pipe: int, tau: float) -> None:
        pending = self.pending["pipe"]
        pending[pipe] = min(pending.get(pipe, tau), tau)

    def pe(self, pe: int, tau: float) -> None:
        pending = self.pending["pe"]
        pending[pe] = min(pending.get(pe, tau), tau)

    def bonus(self, t: float) -> np.ndarray | None:
        """At the start of the step at ``t``: this step's extra budget for the pending late starts (or None)."""
        dt = self.dt
        self.span = {kind: {u: min((t - tau) / dt, 1.0) for u, tau in units.items() if tau < t} for kind, units in self.pending.items()}
        self.pending = {"pipe": {}, "pe": {}}
        pipes, pes = self.span["pipe"], self.span["pe"]
        self._any_span = bool(pipes or pes)
        if not self._any_span or self._prev is None:
            return None
        share = np.zeros(self.layout.n_res)  # per resource: the largest late share of a flow on it
        if pipes:
            self._pipe_b[:] = 0.0
            self._pipe_b[list(pipes)] = list(pipes.values())
            np.maximum.at(share, self.entry_res, self._pipe_b[self.entry_pipe])
        if pes:
            unit, b = np.fromiter(pes, np.int64, len(pes)), np.fromiter(pes.values(), float, len(pes))
            for start in self.pe_starts:
                np.maximum.at(share, start + unit, b)
        budget, used = self._prev
        return np.maximum(np.minimum(budget - used, self.layout.capacity * dt * share), 0.0)

    def remember(self, budget: np.ndarray, used: np.ndarray) -> None:
        """The step's budget and use, whose idle part late starts of the next step may take."""
        self._prev = (budget, used)

    def time(self, kind: str, unit: int, t: float, frac: float) -> float:
        """When a flow that finished at share ``frac`` of its progress in the step at ``t`` finished."""
        if not self._any_span:
            return t + frac * self.dt
        b = self.span[kind].get(unit, 0.0)
        return t + (frac * (1.0 + b) - b) * self.dt
