"""Benchmark for issue 4's workload module: time to draw synthetic trajectory sets, and their statistics.

Sizes: 2,048 agents (the DS 660B 2P4D offline run) and 48K agents (the paper's 48P96D run, paper notes 6.4),
for each Table 2 workload; plus the fit alone (it runs once per synthesize call). Median of RUNS runs.
The achieved statistics are printed next to Table 2's, so the README can show what is matched and what is not.

Run: python benchmarks/bench_workload.py   (prints Markdown tables for the README)
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.workload import fit_synthetic, synthesize

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
    print("| workload | fit | " + " | ".join(f"synthesize {n} agents" for n in SIZES) + " |")
    print("|---|---|" + "---|" * len(SIZES))
    for name in WORKLOADS:
        workload = cat.get("workload", name)
        cells = [fmt(median_s(lambda: fit_synthetic(workload)), "s")]
        cells += [fmt(median_s(lambda n=n: synthesize(workload, n, np.random.default_rng(0))), "s") for n in SIZES]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print("| workload | prefix A_1 | turns (Table 2) | append | gen | context | total (Table 2) |")
    print("|---|---|---|---|---|---|---|")
    for name in WORKLOADS:
        workload = cat.get("workload", name)
        stats = synthesize(workload, 48 * 1024, np.random.default_rng(0)).summary()
        pair = lambda ours, paper: f"{fmt(ours, '', digits=5)} ({fmt(paper, '', digits=5)})"  # noqa: E731
        print(f"| {name} | {fmt(fit_synthetic(workload).prefix_tokens, 'tokens', digits=6)} "
              f"| {pair(stats.mean_turns, workload.turns)} | {pair(stats.mean_later_append_tokens, workload.append_tokens)} "
              f"| {pair(stats.mean_later_gen_tokens, workload.gen_tokens)} | {pair(stats.mean_context_tokens, workload.context_tokens)} "
              f"| {pair(stats.mean_total_tokens, workload.total_tokens)} |")


if __name__ == "__main__":
    main()
