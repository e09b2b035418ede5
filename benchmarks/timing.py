"""Shared timing helper for the benchmark scripts."""

from __future__ import annotations

import statistics
import subprocess
import time


def wall_s(cmd: list[str], runs: int) -> float:
    """Median wall time of ``cmd`` over ``runs`` runs, after one warm-up run."""
    subprocess.run(cmd, check=True, capture_output=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
