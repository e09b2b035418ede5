"""Benchmark for issue 4: wall time, simulated seconds per wall second and peak memory of the fluid runner
on the paper's two offline configurations (DS 660B = DeepSeek-V3.2, agentic-64k, policy dualpath):

* 2P4D with 2K agents (paper 7.6: the small unit; goal <= 10 s wall on a 2-core machine);
* 48P96D (1,152 GPUs) with 48K agents (paper 7.6: the largest run; goal <= 120 s wall, <= 2 GiB peak).

Each case runs in a fresh Python process so that its peak resident memory (``ru_maxrss``) is its own.
"K" is read as 1024, as the workload profiles read MaxLen 64K (2K = 2,048 and 48K = 49,152 agents).

Run: python benchmarks/bench_fluid.py [--case 2P4D|48P96D]   (prints a Markdown table)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASES = {"2P4D": (2, 4, 2 * 1024, 10.0, None), "48P96D": (48, 96, 48 * 1024, 120.0, 2.0)}

CHILD = """
import json, resource, sys, time
import numpy as np
from dualpath_plan import fluid
from dualpath_plan.scenario import build_scenario
from dualpath_plan.workload import synthesize
P, D, agents = (int(x) for x in sys.argv[1:4])
start = time.perf_counter()
scenario = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=P, D=D)
traj = synthesize(scenario.workload, agents, np.random.default_rng(0))
r = fluid.run(scenario, traj, "dualpath")
print(json.dumps({"turns": r.turns, "jct_s": r.jct_s, "wall_s": r.wall_s, "total_s": time.perf_counter() - start,
                  "sim_s_per_wall_s": r.sim_s_per_wall_s, "steps": r.steps, "achieved_over_bound": r.achieved_over_bound,
                  "steady_over_bound": r.steady_over_bound, "peak_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""


def measure(name: str) -> dict:
    """Run one case in a child process and return what it printed."""
    P, D, agents, _, _ = CASES[name]
    done = subprocess.run([sys.executable, "-c", CHILD, str(P), str(D), str(agents)], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="run only these cases (default: all)")
    names = parser.parse_args().case or list(CASES)
    print("| case | agents | turns | JCT (simulated) | runner wall | with set-up | simulated s / wall s | peak memory | goal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in names:
        P, D, agents, goal_s, goal_gib = CASES[name]
        m = measure(name)
        goal = f"<= {goal_s:g} s" + (f", <= {goal_gib:g} GiB" if goal_gib else "")
        print(f"| {name} dualpath | {agents} | {m['turns']} | {m['jct_s']:.1f} s | {m['wall_s']:.1f} s | {m['total_s']:.1f} s "
              f"| {m['sim_s_per_wall_s']:.1f} | {m['peak_GiB']:.2f} GiB | {goal} |", flush=True)


if __name__ == "__main__":
    main()
