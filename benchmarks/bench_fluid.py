"""Benchmark for issue 4: wall time, simulated seconds per wall second and peak memory of the fluid runner
on the paper's two offline configurations (DS 660B = DeepSeek-V3.2, agentic-64k, policy dualpath):

* 2P4D with 2K agents (paper 7.6: the small unit; goal <= 10 s wall on a 2-core machine);
* 48P96D (1,152 GPUs) with 48K agents (paper 7.6: the largest run; goal <= 120 s wall, <= 2 GiB peak).

Each case runs in a fresh Python process so that its peak resident memory (``ru_maxrss``) is its own.
"K" is read as 1024, as the workload profiles read MaxLen 64K (2K = 2,048 and 48K = 49,152 agents).
The runs use ``--engine compiled`` (``--engine python`` measures the Python engine instead). Compiling
the compiled engine is a one-time cost after installation, measured apart: a small run with numba's
cache pointed at an empty folder. Before the cases, a small run fills the real cache, so that the
cases measure running, not compiling.

Run: python benchmarks/bench_fluid.py [--case 2P4D|48P96D] [--engine compiled|python]   (prints Markdown)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CASES = {"2P4D": (2, 4, 2 * 1024, 10.0, None), "48P96D": (48, 96, 48 * 1024, 120.0, 2.0)}

CHILD = """
import json, resource, sys, time
import numpy as np
from dualpath_plan.sim import runner
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.model.workload import synthesize
P, D, agents = (int(x) for x in sys.argv[1:4])
start = time.perf_counter()
scenario = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=P, D=D)
traj = synthesize(scenario.workload, agents, np.random.default_rng(0))
r = runner.run(scenario, traj, "dualpath", options=runner.SimOptions(engine=sys.argv[4]))
print(json.dumps({"turns": r.turns, "jct_s": r.jct_s, "wall_s": r.wall_s, "total_s": time.perf_counter() - start,
                  "sim_s_per_wall_s": r.sim_s_per_wall_s, "steps": r.steps, "achieved_over_bound": r.achieved_over_bound,
                  "steady_over_bound": r.steady_over_bound, "peak_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""


def measure(P: int, D: int, agents: int, engine: str, env: dict | None = None) -> dict:
    """Run one case in a child process and return what it printed."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(P), str(D), str(agents), engine], check=True, capture_output=True,
                          text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compile_once() -> float:
    """Seconds of a small compiled run with an empty numba cache (the first run after installation)."""
    with tempfile.TemporaryDirectory() as cache:
        return measure(2, 4, 16, "compiled", {**os.environ, "NUMBA_CACHE_DIR": cache})["total_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="run only these cases (default: all)")
    parser.add_argument("--engine", choices=("compiled", "python"), default="compiled", help="the engine to measure")
    args = parser.parse_args()
    names = args.case or list(CASES)
    if args.engine == "compiled":
        print(f"compiling the engine (first run after installation, 2P4D with 16 agents): {compile_once():.1f} s", flush=True)
        measure(2, 4, 16, "compiled")  # fill the real cache
    print(f"\n| case ({args.engine} engine) | agents | turns | JCT (simulated) | runner wall | with set-up | simulated s / wall s | peak memory | goal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in names:
        P, D, agents, goal_s, goal_gib = CASES[name]
        m = measure(P, D, agents, args.engine)
        goal = f"<= {goal_s:g} s" + (f", <= {goal_gib:g} GiB" if goal_gib else "")
        print(f"| {name} dualpath | {agents} | {m['turns']} | {m['jct_s']:.1f} s | {m['wall_s']:.1f} s | {m['total_s']:.1f} s "
              f"| {m['sim_s_per_wall_s']:.1f} | {m['peak_GiB']:.2f} GiB | {goal} |", flush=True)


if __name__ == "__main__":
    main()
