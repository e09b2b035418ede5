"""Benchmark for issue 14: the closed-form grid, its HiGHS reference sample, and --check throughput on local workers.

Goals: every P/D split of every budget from 2 to 144 nodes, for the 10 shipped hardware profiles and the 3 workloads
(about 300,000 configurations): the closed-form stage under 2 s wall on a 2-core machine, the LP reference on a 1 %
sample under 10 s; ``--check`` with 2 local workers at least 1.7x the throughput of 1 worker. With a storage axis (the
storage issue's goal): about 300,000 configurations, budgets of 2 to 100 nodes at 60 and 180 3fs storage nodes, under
2 s.

The closed-form stage is timed in-process (resolving the axes into families, then bounding every configuration in
every mode: ``gridsweep.build``), so Python's start-up and imports are not in it; the whole command (start-up,
imports, the grid and a CSV of every row) is timed beside it. The check throughput is runs finished per second of
wall time with the compiled engine already compiled (numba's disk cache), over the same tasks on 1 and 2 workers,
worker start-up included.

Run: python benchmarks/bench_grid.py   (prints a Markdown table for docs/benchmarks.md)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dualpath_plan.planning import executor
from dualpath_plan.planning.grid import lp_reference, sample_rows
from dualpath_plan.planning.gridcheck import plan_checks
from dualpath_plan.planning.gridsweep import build, make_axes, resolve_engine

RUNS = 5
WORKLOADS = ("agentic-32k", "agentic-48k", "agentic-64k")
CHECK_NODES = "24..27"  # ds-v3.2 on Hopper: the 2 best of 4 budgets, 8 runs of 4,096-4,608 agents (a few s each)


def median_s(fn, runs: int = RUNS) -> tuple[float, object]:
    fn()
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def whole_command_s(csv_path: Path) -> float:
    exe = shutil.which("dualpath-plan")
    cmd = [exe] if exe else [sys.executable, "-m", "dualpath_plan"]
    cmd += ["sweep", "--nodes", "2..144", *[a for w in WORKLOADS for a in ("--workload", w)], "--csv", str(csv_path)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    axes = make_axes(workloads=WORKLOADS, budgets={"nodes": "2..144"})
    grid_s, sweep = median_s(lambda: build(axes))
    stored = make_axes(workloads=WORKLOADS, budgets={"nodes": "2..100"}, storage="3fs", storage_nodes=(60, 180))
    storage_s, with_storage = median_s(lambda: build(stored))
    rows = sample_rows(sweep.grid, 0.01)
    lp_s, lp = median_s(lambda: lp_reference(sweep.grid, rows), 3)
    with tempfile.TemporaryDirectory() as tmp:
        command_s = whole_command_s(Path(tmp) / "grid.csv")
    engine = resolve_engine("auto")
    small = build(make_axes(("hopper",), budgets={"nodes": CHECK_NODES}))
    tasks = list(plan_checks(small.grid, 2, engine=engine).tasks)
    if engine == "compiled":
        from dualpath_plan.sim.compiled.run import compile_engine

        compile_engine()
    rates = {}
    for jobs in (1, 2):
        start = time.perf_counter()
        executor.run_tasks(tasks, jobs=jobs)
        rates[jobs] = len(tasks) / (time.perf_counter() - start)
    print("| measurement | result | goal |\n|---|---|---|")
    print(f"| closed-form stage, {sweep.grid.size:,} configurations x 3 modes ({len(sweep.grid.groups):,} groups), in process | "
          f"{grid_s:.2f} s (median of {RUNS}) | < 2 s |")
    print(f"| closed-form stage with a storage axis (3fs, 60 and 180 nodes), {with_storage.grid.size:,} configurations x 3 modes, in "
          f"process | {storage_s:.2f} s (median of {RUNS}) | < 2 s |")
    print(f"| HiGHS reference on a 1 % sample ({lp.samples:,} configurations x 3 modes) | {lp_s:.2f} s (median of 3); largest relative "
          f"difference {lp.max_rel_diff:.1e}, {lp.binding_mismatches} binding sets differ | < 10 s |")
    print(f"| whole command, `sweep --nodes 2..144` x 3 workloads `--csv` ({3 * sweep.grid.size:,} rows) | {command_s:.1f} s (one run) | |")
    print(f"| `--check` throughput, {len(tasks)} runs ({engine} engine), 1 worker | {rates[1]:.3f} runs/s | |")
    print(f"| `--check` throughput, 2 workers | {rates[2]:.3f} runs/s ({rates[2] / rates[1]:.2f}x) | >= 1.7x |")


if __name__ == "__main__":
    main()
