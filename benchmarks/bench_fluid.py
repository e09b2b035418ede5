"""Benchmark for issue 11: whole `dualpath-plan simulate` commands on the paper's two offline configurations (DS 660B =
DeepSeek-V3.2, agentic-64k, policy dualpath, agents replayed from the workload's data set), measured with
``/usr/bin/time -v`` (wall clock and peak resident memory of the whole command), and the runner's own wall time
from its ``--json``:

* 2P4D with 2K agents (paper 7.6: the small unit; goal <= 3 s for the whole command);
* 48P96D (1,152 GPUs) with 48K agents (paper 7.6: the largest run; goal <= 30 s and <= 1.5 GiB peak).

"K" is read as 1024, as the workload profiles read MaxLen 64K (2K = 2,048 and 48K = 49,152 agents). The runs use
``--engine compiled`` (``--engine python`` measures the Python engine). Compiling the compiled engine is a one-time
cost after installation, measured apart: a small run with numba's cache pointed at an empty folder. Before the
cases, a small run fills the real cache, so that the cases measure running, not compiling.

Run: python benchmarks/bench_fluid.py [--case 2P4D|48P96D] [--engine compiled|python]   (prints Markdown)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CASES = {"2P4D": (2, 4, 2 * 1024, 3.0, None), "48P96D": (48, 96, 48 * 1024, 30.0, 1.5)}
TIME = "/usr/bin/time"


def command(P: int, D: int, agents: int, engine: str) -> list[str]:
    exe = shutil.which("dualpath-plan") or sys.exit("dualpath-plan is not on PATH: pip install . first")
    return [exe, "simulate", "--profile", "hopper", "--model", "ds-v3.2", "--workload", "agentic-64k", "-P", str(P), "-D", str(D),
            "--agents", str(agents), "--policy", "dualpath", "--engine", engine, "--json"]


def measure(P: int, D: int, agents: int, engine: str, env: dict | None = None) -> dict:
    """Run one whole command under /usr/bin/time -v; its wall clock, peak memory and the run's JSON."""
    done = subprocess.run([TIME, "-v", *command(P, D, agents, engine)], check=True, capture_output=True, text=True, env=env)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    hours, minutes, seconds = (float(g) if g else 0.0 for g in wall.groups())
    peak_kib = float(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    run = json.loads(done.stdout)  # one policy: its keys at the top level
    return {"total_s": hours * 3600 + minutes * 60 + seconds, "peak_GiB": peak_kib / 2**20, **run}


def compile_once() -> float:
    """Seconds of a small compiled run with an empty numba cache (the first run after installation)."""
    with tempfile.TemporaryDirectory() as cache:
        return measure(2, 4, 16, "compiled", {**os.environ, "NUMBA_CACHE_DIR": cache})["total_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="run only these cases (default: all)")
    parser.add_argument("--engine", choices=("compiled", "python"), default="compiled", help="the engine to measure")
    args = parser.parse_args()
    if not os.path.exists(TIME):
        sys.exit(f"{TIME} is missing (Debian: apt-get install time)")
    names = args.case or list(CASES)
    if args.engine == "compiled":
        print(f"compiling the engine (first run after installation, 2P4D with 16 agents, whole command): {compile_once():.1f} s", flush=True)
        measure(2, 4, 16, "compiled")  # fill the real cache
    print(f"\n| case ({args.engine} engine) | agents | turns | JCT (simulated) | runner wall | whole command | simulated s / wall s "
          "| peak memory | achieved / bound | goal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in names:
        P, D, agents, goal_s, goal_gib = CASES[name]
        m = measure(P, D, agents, args.engine)
        goal = f"<= {goal_s:g} s" + (f", <= {goal_gib:g} GiB" if goal_gib else "")
        print(f"| {name} dualpath | {agents:,} | {m['turns']:,} | {m['jct_s']:.1f} s | {m['wall_s']:.1f} s | {m['total_s']:.1f} s "
              f"| {m['sim_s_per_wall_s']:.1f} | {m['peak_GiB']:.2f} GiB | {_share(m['achieved_over_bound'])} | {goal} |", flush=True)


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


if __name__ == "__main__":
    main()
