"""Where the lost throughput went: the gap between a run's LP bound and what it achieved, in parts that add up.

For an offline run of JCT ``T`` with ``N`` turns and steady window ``[a, b]`` (``SimResult.steady_window_s``,
``sim.steady``), ``N1``, ``N2``, ``N3`` of them finishing before, inside and after it, the achieved rate is
``X = N / T`` and the window's is ``X_s = N2 / (b - a)``. With ``X_b`` the run's bound (the LP for the mean of every
turn the run serves) and ``X_bw`` the bound of the turns that finished in the window (their own mix):

    X_b - X = (X_b - X_bw)                    turn mix: the window's turns cost more (or less) than the run's mean turn
            + (X_bw - X_s)                    steady state: the scheduler below the bound while the cluster is loaded
            + (X_s a / T - N1 / T)            ramp-up: before the window, while the agents' cold first turns run
            + (X_s (T - b) / T - N3 / T)      tail: after it, while the agents drain from the cluster

which is an identity (``N1 + N2 + N3 = N``): every part is measured in the run, and together they are the whole
gap. An online run's achieved rate is its steady window's, so its ramp-up and tail are zero. Every part is a
share of ``X_b`` in the tables; the steady ones are measured against ``X_bw``.

The steady state splits by what the window's binding resources did (``SimResult.steady_use``, measured in the
window from the run's use over time, ``sim.metrics``). Take the binding resources of ``X_bw`` (the LP's binding
set), grouped by unit (links in bytes, prefill compute in FLOP, decode in tokens), and of the groups the one the
run drove hardest: it delivered a share ``u`` of its capacity in the window, and its busiest instance a share
``u_max`` of its own. At the bound every binding instance is busy all the time, so

    X_bw - X_s = X_bw (1 - u_max)     idle: even the busiest binding instance waited, for requests held elsewhere
                                      (queues, buffer and HBM admission, the other side of the pipeline)
               + X_bw (u_max - u)     uneven: binding instances loaded unevenly, some idle while others are busy
               + (X_bw u - X_s)       other work: the rest. Positive when binding capacity went to turns that finish
                                      outside the window (in flight at its ends) or carried more bytes per turn than
                                      the bound's read split; negative when the window's turns took less of it than
                                      the bound charges them (a split that spares the binding side), or by the
                                      interpolation of use between records

again an identity (``u`` is held to at most 1 and ``u_max`` to ``[u, 1]``, so that the first two are never negative
when interpolation puts a share a hair past the capacity).

The idle part splits further by where the work was held (``Gap.idle_by_stage``): over the stages in which a turn
waits (``sim.stages.WAITS``: for a PE, for a DE, in a read queue, for buffer room, for PE HBM, for a forward batch,
for decode HBM), in proportion to the prompt tokens each held on average in the window (token-seconds from the
stage meters over the window's length). Tokens, not requests, because every binding resource's work per turn
grows with them (bytes read, streamed and sent, prefill FLOP).

Held work can explain only so much idle time. In the window the agents cycle through their turns, each turn waiting
``W`` seconds and being served ``S`` (every other stage); by Little's law the window's rate is the agents in flight
over ``S + W``, so turns that never waited would have come ``W / S`` faster, and the waits cost at most
``X_s W / S`` (``W / S`` is the requests waiting over the requests served, the stages' means in the window). What
idle time is left beyond that is the cluster **short of agents** (``Gap.idle_short_of_agents``): too few turns in
flight to keep the binding resource busy, however they were scheduled. Tool time between turns, when a trace has it,
is not in ``S``, so the waits' share is at most this. The stage shares and the short-of-agents part add up to the
idle part; with nothing waiting anywhere all of it is short of agents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dualpath_plan.bounds._generated import RESOURCES
from dualpath_plan.sim.layout import COMPUTE
from dualpath_plan.sim.runner import SimResult
from dualpath_plan.sim.stages import WAITS

PARTS = ("turn_mix", "idle", "uneven", "other_work", "ramp_up", "tail")
STEADY = ("idle", "uneven", "other_work")  # the steady state's parts
WORDS = {"turn_mix": "turn mix", "idle": "steady: binding resource idle", "uneven": "steady: binding instances uneven",
         "other_work": "steady: other work", "ramp_up": "ramp-up (before the window)", "tail": "tail (after the window)"}
GROUPS = {"links": frozenset(RESOURCES), "compute": frozenset({COMPUTE}), "decode": frozenset({"decode"})}  # by unit


@dataclass(frozen=True)
class Gap:
    """The bound, the achieved rate and the parts of the difference, turns/s (they add up to it)."""

    bound_turns_per_s: float
    achieved_turns_per_s: float
    parts: dict[str, float]
    binding: tuple[str, ...] = ()  # the binding resources the steady parts are measured on
    binding_frac: float = 0.0  # u: their delivered share of capacity in the window
    busiest_frac: float = 0.0  # u_max: the busiest binding instance's
    idle_by_stage: dict[str, float] = field(default_factory=dict)  # the idle part by the stage that held the work (module docstring)
    idle_short_of_agents: float = 0.0  # the idle part no held work explains: too few turns in flight (module docstring)

    @property
    def total(self) -> float:
        return self.bound_turns_per_s - self.achieved_turns_per_s

    @property
    def steady_state(self) -> float:
        return sum(self.parts[p] for p in STEADY)

    def share(self, part: str) -> float:
        """A part as a fraction of the bound."""
        return self.parts[part] / self.bound_turns_per_s if self.bound_turns_per_s > 0 else 0.0


def gap(run: SimResult) -> Gap | None:
    """The parts of ``run``'s gap, or None when a rate it needs does not exist (no turn in the window)."""
    if run.turns_per_s is None or run.steady_turns_per_s is None or run.steady_bound_turns_per_s is None:
        return None
    X_b, X_bw, X_s, X = run.bound_turns_per_s, run.steady_bound_turns_per_s, run.steady_turns_per_s, run.turns_per_s
    ramp = tail = 0.0
    if run.jct_s is not None and run.steady_window_s is not None:  # offline: before and after the steady window
        done = run.records.done[np.isfinite(run.records.done)]
        T, (a, b) = run.jct_s, run.steady_window_s
        ramp = X_s * a / T - float((done < a).sum()) / T
        tail = X_s * (T - b) / T - float((done > b).sum()) / T
    kinds, u, u_max = _binding_use(run)
    u = min(u, 1.0)
    u_max = min(max(u_max, u), 1.0)
    steady = {"idle": X_bw * (1.0 - u_max), "uneven": X_bw * (u_max - u), "other_work": X_bw * u - X_s}
    held = _held(steady["idle"], run)
    return Gap(X_b, X, {"turn_mix": X_b - X_bw, **steady, "ramp_up": ramp, "tail": tail}, kinds, u, u_max, held,
               steady["idle"] - sum(held.values()))


def _held(idle: float, run: SimResult) -> dict[str, float]:
    """The idle part the held work explains, over the waiting stages by the prompt tokens each held in the window; at
    most the rate the waits cost, ``X_s`` times the requests waiting over those served (module docstring)."""
    stages = run.steady_stages
    tokens = {stage: stages[stage].tokens for stage in WAITS if stage in stages}
    total = sum(tokens.values())
    if not total > 0:
        return {}
    waiting = sum(stages[stage].requests for stage in WAITS if stage in stages)
    served = sum(load.requests for stage, load in stages.items() if stage not in WAITS)
    held = idle if not served > 0 else min(idle, run.steady_turns_per_s * waiting / served)
    return {stage: held * share / total for stage, share in tokens.items()}


def _binding_use(run: SimResult) -> tuple[tuple[str, ...], float, float]:
    """The binding resources of the window's bound in the unit group the run drove hardest, their pooled share of
    capacity used in the window and the busiest instance's share (``((), 0, 0)`` with nothing measured)."""
    best: tuple[tuple[str, ...], float, float] = ((), 0.0, 0.0)
    for group in GROUPS.values():
        uses = {k: run.steady_use[k] for k in run.steady_binding if k in group and k in run.steady_use}
        capacity = sum(use.capacity for use in uses.values())
        if not capacity > 0:
            continue
        u = sum(use.delivered for use in uses.values()) / capacity
        if u > best[1] or not best[0]:
            best = (tuple(uses), u, max(use.busiest_frac for use in uses.values()))
    return best
