"""Benchmark of the workload module: time to draw a workload's data set and synthetic sets, and their statistics.

Sizes: the 500-trajectory data set every command draws once (``dataset``), 2,048 agents and 48K agents drawn
directly by the synthetic rule, for each Table 2 workload. Median of RUNS runs. The achieved statistics of
the data set are printed next to Table 2's columns under the reading of ``model/table2.py``.

Run: python benchmarks/bench_workload.py   (prints Markdown tables for docs/benchmarks.md)
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.workload import dataset, synthesize

RUNS = 5
WORKLOADS = ("agentic-32k", "agentic-48k", "agentic-64k")
SIZES = (2048, 48 * 1024)


def median_s(call) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    cat = catalog()
    print("| workload | data set (500) | " + " | ".join(f"synthesize {n} agents" for n in SIZES) + " |")
    print("|---|---|" + "---|" * len(SIZES))
    for name in WORKLOADS:
        workload = cat.get("workload", name)
        cells = [fmt(median_s(lambda: synthesize(workload, workload.trajectories, np.random.default_rng(0))), "s")]
        cells += [fmt(median_s(lambda n=n: synthesize(workload, n, np.random.default_rng(0))), "s") for n in SIZES]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print("| workload | turns | append/turn | gen/turn | context | total | max total (MaxLen) |")
    print("|---|---|---|---|---|---|---|")
    for name in WORKLOADS:
        workload = cat.get("workload", name)
        stats = dataset(workload).summary()
        pair = lambda ours, paper: f"{fmt(ours, '', digits=5)} ({fmt(paper, '', digits=5)})"  # noqa: E731
        print(f"| {name} | {pair(stats.mean_turns, workload.turns)} | {pair(stats.mean_turn_append_tokens, workload.append_tokens)} "
              f"| {pair(stats.mean_turn_gen_tokens, workload.gen_tokens)} | {pair(stats.mean_context_tokens, workload.context_tokens)} "
              f"| {pair(stats.mean_total_tokens, workload.total_tokens)} | {pair(stats.max_total_tokens, workload.max_len_tokens)} |")


if __name__ == "__main__":
    main()
