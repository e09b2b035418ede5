"""Benchmark for the traces issue: whole commands under ``/usr/bin/time -v`` (wall clock and peak resident memory).

* ``trace import --format weka`` of the WEKA kv-cache-tester set (goal: the whole set, about 640 conversations and
  460 MB, in at most 60 s and 500 MB). The set is not downloaded: give the folder of ``trace_NNNN.json`` files
  (``--weka DIR``, a clone of github ``callanjfox/kv-cache-tester``'s ``traces/``).
* ``trace stats`` on a large schema v2 file (goal: at least 50 MB/s): the import above written again and again,
  each copy's sessions renamed, until the file holds at least ``--stats-mb`` MB.
* ``simulate`` with tool time (goal: 2P4D with 2K agents under 3 s, 48P96D with 48K agents under 30 s): the cases of
  ``bench_fluid.py`` with ``--set tool_time_s=10`` (10 s between turns, about the WEKA set's median), compiled engine.

Run: python benchmarks/bench_traces.py --weka DIR [--stats-mb 200] [--skip-runner]   (prints Markdown)
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
from pathlib import Path

TIME = "/usr/bin/time"
RUNNER = {"2P4D": (2, 4, 2 * 1024, 3.0), "48P96D": (48, 96, 48 * 1024, 30.0)}


def exe() -> str:
    return shutil.which("dualpath-plan") or sys.exit("dualpath-plan is not on PATH: pip install . first")


def timed(args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak MB and stdout of one whole command."""
    done = subprocess.run([TIME, "-v", exe(), *args], check=True, capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    hours, minutes, seconds = (float(g) if g else 0.0 for g in wall.groups())
    peak_kib = float(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    return hours * 3600 + minutes * 60 + seconds, peak_kib / 1024, done.stdout


def replicate(source: Path, out: Path, target_mb: float) -> int:
    """``source`` written again and again into ``out``, each copy's ids prefixed, up to ``target_mb``; the bytes."""
    lines = source.read_text().splitlines()
    size, copy = 0, 0
    with open(out, "w") as f:
        while size < target_mb * 1e6:
            for text in lines:
                d = json.loads(text)
                d["id"] = f"{copy}:{d['id']}"
                if "fork" in d:
                    d["fork"]["parent"] = f"{copy}:{d['fork']['parent']}"
                line = json.dumps(d, separators=(",", ":")) + "\n"
                f.write(line)
                size += len(line)
            copy += 1
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weka", type=Path, required=True, help="folder of the WEKA set's trace_NNNN.json files")
    parser.add_argument("--stats-mb", type=float, default=200.0, help="size of the file trace stats reads")
    parser.add_argument("--skip-runner", action="store_true", help="leave out the simulate cases")
    args = parser.parse_args()
    if not os.path.exists(TIME):
        sys.exit(f"{TIME} is missing (Debian: apt-get install time)")
    files = sorted(args.weka.glob("trace_*.json"))
    in_mb = sum(f.stat().st_size for f in files) / 1e6
    print("| command | input | wall | peak memory | rate | goal |\n|---|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "weka.jsonl"
        wall, peak, _ = timed(["trace", "import", "--format", "weka", "-o", str(out), str(args.weka)])
        print(f"| trace import --format weka | {len(files)} files, {in_mb:.0f} MB | {wall:.1f} s | {peak:.0f} MB | {in_mb / wall:.1f} MB/s "
              f"| <= 60 s, <= 500 MB |", flush=True)
        big = Path(tmp) / "big.jsonl"
        size_mb = replicate(out, big, args.stats_mb) / 1e6
        wall, peak, _ = timed(["trace", "stats", str(big), "--json"])
        print(f"| trace stats (schema v2) | {size_mb:.0f} MB | {wall:.1f} s | {peak:.0f} MB | {size_mb / wall:.1f} MB/s | >= 50 MB/s |", flush=True)
    if args.skip_runner:
        return
    timed(["simulate", "--profile", "hopper", "-P", "2", "-D", "4", "--agents", "16", "--engine", "compiled", "--json"])  # compile once
    for name, (P, D, agents, goal) in RUNNER.items():
        wall, peak, text = timed(["simulate", "--profile", "hopper", "--model", "ds-v3.2", "--workload", "agentic-64k", "-P", str(P),
                                  "-D", str(D), "--agents", str(agents), "--set", "tool_time_s=10", "--engine", "compiled", "--json"])
        run = json.loads(text)
        print(f"| simulate {name} dualpath, tool time 10 s | {agents:,} agents, {run['turns']:,} turns, {run['sim_s']:,.0f} s simulated "
              f"| {wall:.1f} s | {peak:.0f} MB | {run['sim_s_per_wall_s']:,.0f} simulated s / s | <= {goal:g} s |", flush=True)


if __name__ == "__main__":
    main()
