"""Sweep hardware generations and P/D splits: the throughput bound of every split of a GPU budget.

For each hardware profile the budget of GPUs becomes ``n = floor(gpus / g)`` nodes, and every split
``P + D = n`` (``P, D >= 1``) is bounded in every mode by the closed-form solution of the ``lp``
model (``closed_bound``). The result names, per profile, the split with the most turns/s for each
mode, so generations compare at an equal GPU count (the paper's 2P4D Hopper cluster is 48 GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

from dualpath_plan.closed_bound import solve_closed
from dualpath_plan.errors import PlanError
from dualpath_plan.lp import MODES, Bound, BoundOptions, limits_of
from dualpath_plan.scenario import Scenario

DEFAULT_GPUS = 48


@dataclass(frozen=True)
class SweepPoint:
    """One (profile, P, D, mode) bound."""

    profile: str
    P: int
    D: int
    gpus: int
    mode: str
    bound: Bound

    @property
    def turns_per_s_per_gpu(self) -> float:
        return self.bound.turns_per_s / self.gpus


@dataclass(frozen=True)
class SweepResult:
    """Every point, and per profile and mode the best split (ties: the fewest prefill nodes)."""

    gpus_budget: int
    points: tuple[SweepPoint, ...]
    best: dict[str, dict[str, SweepPoint]]


def nodes_for(scenario: Scenario, gpus: int) -> int:
    """Whole nodes of the scenario's hardware within ``gpus`` GPUs; at least 2 (one per side)."""
    nodes = gpus // scenario.pe_hw.g
    if nodes < 2:
        raise PlanError(f"--gpus {gpus} GPUs is not allowed for profile {scenario.pe_hw.name!r}: needs >= {2 * scenario.pe_hw.g} (two nodes of {scenario.pe_hw.g} GPUs)", 1)
    return nodes


def _points(scenario: Scenario, gpus: int, options: BoundOptions) -> list[SweepPoint]:
    n = nodes_for(scenario, gpus)
    out = []
    for P in range(1, n):
        lim = limits_of(scenario.with_nodes(P, n - P), options)
        out += [SweepPoint(scenario.pe_hw.name, P, n - P, n * scenario.pe_hw.g, mode, solve_closed(lim, mode)) for mode in MODES]
    return out


def sweep(scenarios: list[Scenario], gpus: int = DEFAULT_GPUS, options: BoundOptions = BoundOptions()) -> SweepResult:
    """Bound every split of ``gpus`` GPUs for each scenario's (homogeneous) hardware."""
    if gpus < 1:
        raise PlanError(f"--gpus {gpus} GPUs is not allowed; must be a whole number >= 1", 2)
    points = [p for sc in scenarios for p in _points(sc, gpus, options)]
    best: dict[str, dict[str, SweepPoint]] = {}
    for p in points:
        current = best.setdefault(p.profile, {}).get(p.mode)
        if current is None or p.bound.turns_per_s > current.bound.turns_per_s * (1 + 1e-12):
            best[p.profile][p.mode] = p
    return SweepResult(gpus, tuple(points), best)
