"""Benchmark for issue 23: ``calibrate`` of one system from AIConfigurator's database (goal: at most 30 s), and the
regeneration of every shipped profile (``tools/regen_profiles.py --check``).

Each command runs whole under ``/usr/bin/time -v`` (wall clock and peak resident memory), three times after one
warm-up run (the first reads the parquet files from disk); the median is printed. Needs the 'calibrate' extra.

Run: python benchmarks/bench_calibrate.py   (prints Markdown)
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall s, peak GiB) of one run of ``cmd`` under /usr/bin/time -v."""
    done = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-500:]}")
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr).group(1)
    parts = [float(p) for p in clock.split(":")]
    wall = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1)) / 2**20
    return wall, peak


def median_of(cmd: list[str]) -> tuple[float, float]:
    timed(cmd)  # warm-up: the parquet files into the page cache
    runs = [timed(cmd) for _ in range(RUNS)]
    return statistics.median(w for w, _ in runs), max(p for _, p in runs)


def main() -> int:
    exe = shutil.which("dualpath-plan") or sys.exit("dualpath-plan is not on PATH: pip install -e '.[test]'")
    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "h200-fit.toml")
        rows = [
            ("`calibrate --from aiconfigurator --system h200_sxm --drop-implausible -o F` (every family)",
             [exe, "calibrate", "--from", "aiconfigurator", "--system", "h200_sxm", "--drop-implausible", "-o", out]),
            ("`calibrate --from examples/calibration.csv --base h100-dgx -o F` (1,429 rows)",
             [exe, "calibrate", "--from", "examples/calibration.csv", "--base", "h100-dgx", "-o", out]),
            ("`python tools/regen_profiles.py --check` (8 profiles, 15 fits)", [sys.executable, "tools/regen_profiles.py", "--check"]),
        ]
        print("| command (whole, `/usr/bin/time -v`) | wall, median of 3 | peak memory |")
        print("|---|---:|---:|")
        for label, cmd in rows:
            wall, peak = median_of(cmd)
            print(f"| {label} | {wall:.2f} s | {peak:.2f} GiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
