"""Benchmark for issue 2: `bottleneck` wall time next to the import floor, and closed-form
evaluations per second over a vectorised grid of >= 10^6 (P, D, profile) points.

Run: python benchmarks/bench_bottleneck.py   (prints a Markdown table for docs/benchmarks.md)
"""

from __future__ import annotations

import shutil
import sys
import time

import numpy as np
from timing import wall_s

from dualpath_plan.bounds.bandwidth import kv_ceilings
from dualpath_plan.model.cluster import NodeSpec, Traffic
from dualpath_plan.model.profiles import catalog

RUNS = 7


def grid_rate(side: int = 317) -> tuple[int, float, float]:
    """Closed-form evaluations per second over P, D in 1..side for every shipped hardware profile."""
    cat = catalog()
    nodes = [NodeSpec.of(cat.get("hardware", n)) for n in cat.names("hardware")]
    P, D = (a.ravel() for a in np.meshgrid(np.arange(1, side + 1), np.arange(1, side + 1)))
    n = len(P) * len(nodes)
    arrays = {f: np.repeat([getattr(node, f) for node in nodes], len(P)) for f in ("g", "B", "s", "M")}
    node = NodeSpec(**arrays)
    P, D = np.tile(P, len(nodes)), np.tile(D, len(nodes))
    traffic = Traffic("exact", 429 / 32721, 605 / 32721)
    rates = []
    for mode in ("basic", "dualpath"):
        start = time.perf_counter()
        kv_ceilings(P, D, node, node, traffic, mode)
        rates.append(n / (time.perf_counter() - start))
    return n, rates[0], rates[1]


def main() -> None:
    exe = shutil.which("dualpath-plan")
    cli = [exe] if exe else [sys.executable, "-m", "dualpath_plan"]
    floor = wall_s([sys.executable, "-c", "import numpy, scipy"], RUNS)
    cmd = wall_s([*cli, "bottleneck", "--profile", "hopper"], RUNS)
    n, basic, dual = grid_rate()
    print("| measurement | value |\n|---|---|")
    print(f"| `python -c \"import numpy, scipy\"` (floor), median of {RUNS} | {floor:.3f} s |")
    print(f"| `dualpath-plan bottleneck --profile hopper`, median of {RUNS} | {cmd:.3f} s |")
    print(f"| closed-form KV ceilings, basic, {n:,} (P, D, profile) points | {basic:,.0f} evaluations/s |")
    print(f"| closed-form KV ceilings, dualpath (best split), {n:,} points | {dual:,.0f} evaluations/s |")


if __name__ == "__main__":
    main()
