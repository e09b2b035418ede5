"""Benchmark for issue 3: LP solves per second over a sweep, and `plan --nodes 144` wall time.

Goals (issue 3): >= 1,000 LP solves per second on a 2-core machine; `plan` for 144 nodes (the
paper's largest cluster, 48P96D) under one second; issue 13: the whole `plan --nodes 144` command at most 1.5x
`python -c "import numpy, scipy.optimize"`. The CLI's wall time includes Python start-up and
importing scipy.optimize, so the floor `python -c "import scipy.optimize"` is printed beside it,
and the planning itself is timed in-process too.

Run: python benchmarks/bench_lp.py   (prints a Markdown table for docs/benchmarks.md)
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time

from timing import wall_s

from dualpath_plan.bounds import lp
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning.plan import plan
from dualpath_plan.planning.request import make_request

RUNS = 5
SIDE = 12  # P, D in 1..12 for every shipped hardware profile: 10 x 144 = 1,440 configurations


def sweep() -> list[lp.Limits]:
    """LP data of every (profile, P, D) in the sweep, with the small model so every cluster serves."""
    out = []
    for name in catalog().names("hardware"):
        sc = build_scenario(name, model="qwen3-32b")
        out += [lp.limits_of(sc.with_nodes(P, D)) for P in range(1, SIDE + 1) for D in range(1, SIDE + 1)]
    return out


def rate(fn, n: int) -> float:
    """Best of RUNS rates (configurations per second) of ``fn()`` handling ``n`` configurations."""
    best = 0.0
    for _ in range(RUNS):
        start = time.perf_counter()
        fn()
        best = max(best, n / (time.perf_counter() - start))
    return best


def in_process_plan_s() -> float:
    request = make_request(["hopper"], nodes=144)
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        plan(request)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    limits = sweep()
    n = len(limits)
    batched = {mode: rate(lambda m=mode: lp.solve_many(limits, m), n) for mode in lp.MODES}
    single = rate(lambda: [lp.solve(lim, "dualpath") for lim in limits[:200]], 200)
    exe = shutil.which("dualpath-plan")
    cli = [exe] if exe else [sys.executable, "-m", "dualpath_plan"]
    floor = wall_s([sys.executable, "-c", "import scipy.optimize"], RUNS)
    issue_floor = wall_s([sys.executable, "-c", "import numpy, scipy.optimize"], RUNS)  # issue 13's yardstick
    cmd = wall_s([*cli, "plan", "--profile", "hopper", "--nodes", "144"], RUNS)
    print("| measurement | value |\n|---|---|")
    for mode, r in batched.items():
        print(f"| LP solves/s, `solve_many` ({mode}), sweep of {n:,} configurations, best of {RUNS} | {r:,.0f} |")
    print(f"| LP solves/s, one `linprog` call each (dualpath), 200 configurations, best of {RUNS} | {single:,.0f} |")
    print(f"| `plan --nodes 144` planning in-process (both modes, 3 alternatives), median of {RUNS} | {in_process_plan_s():.3f} s |")
    print(f"| `python -c \"import scipy.optimize\"` (floor), median of {RUNS} | {floor:.3f} s |")
    print(f"| `python -c \"import numpy, scipy.optimize\"`, median of {RUNS} | {issue_floor:.3f} s |")
    print(f"| `dualpath-plan plan --profile hopper --nodes 144`, median of {RUNS} | {cmd:.3f} s ({cmd / issue_floor:.2f}x the line above) |")


if __name__ == "__main__":
    main()
