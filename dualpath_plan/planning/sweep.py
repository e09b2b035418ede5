"""Sweep hardware generations and P/D splits: the throughput bound of every split of a GPU budget.

For each hardware profile the budget of GPUs becomes ``n = floor(gpus / g)`` nodes, and every split
``P + D = n`` (``P, D >= 1``) is bounded in every mode by the closed-form solution of the ``lp``
model (``closed_bound``). The result names, per profile, the split with the most turns/s for each
mode, so generations compare at an equal GPU count (the paper's 2P4D Hopper cluster is 48 GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import MODES, Bound, BoundOptions, limits_of
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import MAX_NODES, check_flag
from dualpath_plan.model.scenario import Scenario

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
    serves_nothing_because: tuple[str, ...] = ()  # Limits.serves_nothing_because: a zero bound's cause

    @property
    def turns_per_s_per_gpu(self) -> float:
        return self.bound.turns_per_s / self.gpus


@dataclass(frozen=True)
class SweepResult:
    """Every point, and per profile and mode the best split (ties as in :func:`best_split`)."""

    gpus_budget: int
    points: tuple[SweepPoint, ...]
    best: dict[str, dict[str, SweepPoint]]


def nodes_for(scenario: Scenario, gpus: int) -> int:
    """Whole nodes of the scenario's hardware within ``gpus`` GPUs; at least 2 (one per side)."""
    nodes = gpus // scenario.pe_hw.g
    if nodes < 2:
        raise PlanError(f"--gpus = {gpus} GPUs is not allowed for profile {scenario.pe_hw.name!r}: needs >= {2 * scenario.pe_hw.g} (two nodes of {scenario.pe_hw.g} GPUs)", 1)
    return nodes


def split_points(scenario: Scenario, nodes: int, options: BoundOptions = BoundOptions()) -> list[SweepPoint]:
    """Every split ``P + D = nodes`` (P, D >= 1) of the scenario's hardware, bounded in every mode."""
    out = []
    for P in range(1, nodes):
        sc = scenario.with_nodes(P, nodes - P)
        gpus = P * sc.pe_hw.g + (nodes - P) * sc.de_hw.g
        lim = limits_of(sc, options)
        out += [SweepPoint(sc.profile_label, P, nodes - P, gpus, mode, solve_closed(lim, mode), lim.serves_nothing_because) for mode in MODES]
    return out


def best_split(points: list[SweepPoint], mode: str) -> SweepPoint:
    """The split with the most turns/s in ``mode``. Splits often tie (inside the range (9) every split
    saturates both SNICs); ties go to the most oracle turns/s at that split (compute and decode
    headroom once I/O is relieved), then to the fewest prefill nodes."""
    oracle = {(p.profile, p.P): p.bound.turns_per_s for p in points if p.mode == "oracle"}
    own = [p for p in points if p.mode == mode]
    top = max(p.bound.turns_per_s for p in own)
    tied = [p for p in own if p.bound.turns_per_s >= top * (1 - 1e-9)]
    return min(tied, key=lambda p: (-oracle.get((p.profile, p.P), 0.0), p.P))


def sweep(scenarios: list[Scenario], gpus: int = DEFAULT_GPUS, options: BoundOptions = BoundOptions()) -> SweepResult:
    """Bound every split of ``gpus`` GPUs for each scenario's (homogeneous) hardware."""
    check_flag("--gpus", gpus)
    for sc in scenarios:
        if (nodes := nodes_for(sc, gpus)) > MAX_NODES:  # every profile at the cap: ~33 s and 0.3 GB here
            raise PlanError(f"--gpus = {gpus} GPUs is not allowed; it gives {sc.pe_hw.name} {nodes} nodes and a sweep "
                            f"takes at most {MAX_NODES} ({MAX_NODES * sc.pe_hw.g} GPUs of that profile)", 2)
    per_profile = {sc.pe_hw.name: split_points(sc, nodes_for(sc, gpus), options) for sc in scenarios}
    best = {name: {mode: best_split(pts, mode) for mode in MODES} for name, pts in per_profile.items()}
    return SweepResult(gpus, tuple(p for pts in per_profile.values() for p in pts), best)  # every bound guarded (lp.make_bound)
