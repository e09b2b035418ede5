"""The ``bottleneck`` analysis: one scenario through the bandwidth model, as one frozen record.

It gathers the node symbols, the bottleneck-free P/D range (eq. (9), homogeneous clusters only)
and, for each mode, the I/O-only KV ceiling with its split, binding resources and utilisations.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualpath_plan.bandwidth import MODES, Ceiling, NodeSpec, PdRange, ceiling, pd_range
from dualpath_plan.scenario import Scenario


@dataclass(frozen=True)
class Analysis:
    """What ``bottleneck`` reports for one scenario."""

    scenario: Scenario
    pe_node: NodeSpec
    de_node: NodeSpec
    pd_range: PdRange | None
    ceilings: dict[str, Ceiling]

    @property
    def ratio(self) -> float:
        return self.scenario.P / self.scenario.D

    @property
    def inside(self) -> bool | None:
        return None if self.pd_range is None else self.pd_range.contains(self.ratio)


def analyze(scenario: Scenario) -> Analysis:
    """Evaluate ``scenario``: range (if homogeneous) and the KV ceiling of every mode."""
    cluster, traffic = scenario.cluster, scenario.traffic
    rng = pd_range(cluster.pe, traffic) if scenario.homogeneous else None
    return Analysis(
        scenario=scenario,
        pe_node=cluster.pe,
        de_node=cluster.de,
        pd_range=rng,
        ceilings={mode: ceiling(cluster, traffic, mode) for mode in MODES},
    )
