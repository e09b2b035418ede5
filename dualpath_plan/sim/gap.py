"""Where the lost throughput went: the gap between a run's LP bound and what it achieved, in parts that add up.

For an offline run of JCT ``T`` with ``N`` turns, ``N1``, ``N2``, ``N3`` of them finishing in the first quarter,
the middle half and the last quarter of ``T``, the achieved rate is ``X = N / T`` and the middle half's is
``X_s = N2 / (T / 2)``. With ``X_b`` the run's bound (the LP for the mean of every turn the run serves) and
``X_bw`` the bound of the turns that finished in the middle half (their own mix):

    X_b - X = (X_b - X_bw)            turn mix: the window's turns cost more (or less) than the run's mean turn
            + (X_bw - X_s)            steady state: the scheduler below the bound while the cluster is loaded
            + (X_s / 4 - N1 / T)      ramp-up: the first quarter, while the agents' first turns start together
            + (X_s / 4 - N3 / T)      tail: the last quarter, while the longest agents finish on an emptying cluster

which is an identity (``N1 + N2 + N3 = N``): every part is measured in the run, and together they are the whole
gap. An online run's achieved rate is its steady window's, so its ramp-up and tail are zero. The steady-state
part is one number: splitting it further (idle storage NICs while requests wait elsewhere, imbalance across
nodes, admission waits) needs per-step meters in both engines, which they do not keep.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualpath_plan.sim.runner import SimResult

PARTS = ("turn_mix", "steady_state", "ramp_up", "tail")
WORDS = {"turn_mix": "turn mix", "steady_state": "steady state", "ramp_up": "ramp-up (1st quarter)", "tail": "tail (last quarter)"}


@dataclass(frozen=True)
class Gap:
    """The bound, the achieved rate and the parts of the difference, turns/s (they add up to it)."""

    bound_turns_per_s: float
    achieved_turns_per_s: float
    parts: dict[str, float]

    @property
    def total(self) -> float:
        return self.bound_turns_per_s - self.achieved_turns_per_s

    def share(self, part: str) -> float:
        """A part as a fraction of the bound."""
        return self.parts[part] / self.bound_turns_per_s if self.bound_turns_per_s > 0 else 0.0


def gap(run: SimResult) -> Gap | None:
    """The parts of ``run``'s gap, or None when a rate it needs does not exist (no turn in the window)."""
    if run.turns_per_s is None or run.steady_turns_per_s is None or run.steady_bound_turns_per_s is None:
        return None
    X_b, X_bw, X_s, X = run.bound_turns_per_s, run.steady_bound_turns_per_s, run.steady_turns_per_s, run.turns_per_s
    ramp = tail = 0.0
    if run.jct_s is not None:  # offline: the quarters around the middle half
        done = run.records.done[np.isfinite(run.records.done)]
        T = run.jct_s
        ramp = X_s / 4 - float((done < T / 4).sum()) / T
        tail = X_s / 4 - float((done > 3 * T / 4).sum()) / T
    return Gap(X_b, X, {"turn_mix": X_b - X_bw, "steady_state": X_bw - X_s, "ramp_up": ramp, "tail": tail})
