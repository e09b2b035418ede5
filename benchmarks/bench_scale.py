"""Benchmark for issue 22: does the runner reach its bound at the cluster sizes people order?

DS-V3.2 (``ds-v3.2``) on ``agentic-64k``, Hopper nodes, seed 1, offline, agents at 2,048 per 6 nodes (the paper's
"2K agents" on 2P4D, the same load per node at every size), compiled engine:

* ``dualpath`` at 2P4D, 4P8D, 12P24D, 24P48D and 48P96D (the paper's P/D of 1/2 at five sizes);
* ``basic`` at ``plan``'s own pick for basic at 6, 36 and 144 nodes, and ``dualpath`` at its pick for 144 nodes.

Per run: the bound of the turns that finished in the steady window (``SimResult.steady_window_s``, ``sim.steady``: the
middle half of the JCT cut to after the cold first turns and before the population halves), the steady turns/s (that
window), their ratio, the storage NICs' balance in the window (busiest node over the mean node, ``SimResult.steady_snic_max_over_avg``),
the JCT, and the runner's own wall time. Targets (issue 22): steady / bound >= 0.90, SNIC max / mean <= 1.3 for
``dualpath``, and the JCT of 48P96D within 5 % of 2P4D's.

The largest run, 48P96D with 49,152 agents, is also measured as a whole command under ``/usr/bin/time -v`` (wall clock
and peak resident memory; goal <= 30 s and <= 1.5 GiB). Before the runs a small run fills numba's cache, so the
figures measure running, not compiling (``benchmarks/bench_fluid.py`` measures the one-time compile).

Run: python benchmarks/bench_scale.py [--quick]   (prints Markdown; --quick skips 24P48D, 48P96D and 144 nodes)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys

from dualpath_plan import api as dp

SEED = 1
AGENTS_PER_6_NODES = 2048
DUALPATH_SIZES = ((2, 4), (4, 8), (12, 24), (24, 48), (48, 96))
PLAN_NODES = (6, 36, 144)
TIME = "/usr/bin/time"


def agents(P: int, D: int) -> int:
    return round(AGENTS_PER_6_NODES * (P + D) / 6)


def picks(nodes: int) -> dict[str, tuple[int, int]]:
    """``plan``'s pick of each mode for a budget of ``nodes`` Hopper nodes: mode -> (P, D)."""
    answers = dp.plan(("hopper",), nodes=nodes).answers
    return {mode: (a.best.P, a.best.D) for mode, a in answers.items()}


def run(P: int, D: int, policy: str) -> dict:
    sim = dp.simulate(dp.scenario("hopper", P=P, D=D), policy, agents=agents(P, D), seed=SEED, engine="compiled")
    r = sim.runs[policy]
    return {"P": P, "D": D, "policy": policy, "agents": r.agents, "bound": r.steady_bound_turns_per_s, "steady": r.steady_turns_per_s,
            "ratio": r.steady_over_window_bound, "snic": r.steady_snic_max_over_avg, "jct": r.jct_s, "wall": r.wall_s}


def whole_command(P: int, D: int) -> tuple[float, float]:
    """Wall seconds and peak GiB of ``dualpath-plan simulate`` for (P, D) under /usr/bin/time -v."""
    exe = shutil.which("dualpath-plan") or sys.exit("dualpath-plan is not on PATH: pip install . first")
    cmd = [TIME, "-v", exe, "simulate", "--profile", "hopper", "-P", str(P), "-D", str(D), "--agents", str(agents(P, D)),
           "--seed", str(SEED), "--engine", "compiled", "--json"]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    json.loads(done.stdout)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    hours, minutes, seconds = (float(g) if g else 0.0 for g in wall.groups())
    peak_kib = float(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    return hours * 3600 + minutes * 60 + seconds, peak_kib / 2**20


def row(m: dict, label: str) -> str:
    snic = "n/a" if m["snic"] is None else f"{m['snic']:.2f}"
    return (f"| {label} | {m['P']}P{m['D']}D | {m['agents']:,} | {m['policy']} | {m['bound']:,.1f} | {m['steady']:,.1f} | {m['ratio']:.3f} "
            f"| {snic} | {m['jct']:,.0f} s | {m['wall']:.1f} s |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the clusters up to 36 nodes")
    args = parser.parse_args()
    dp.simulate(dp.scenario("hopper"), "dualpath", agents=16, engine="compiled")  # fill numba's cache
    print("| case | cluster | agents | policy | bound, steady window [turns/s] | steady [turns/s] | steady / bound "
          "| SNIC max / mean (steady window) | JCT | runner wall |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    sizes = [s for s in DUALPATH_SIZES if not args.quick or sum(s) <= 36]
    jct = {}
    for P, D in sizes:
        m = run(P, D, "dualpath")
        jct[(P, D)] = m["jct"]
        print(row(m, "dualpath, P/D 1/2"), flush=True)
    for nodes in [n for n in PLAN_NODES if not args.quick or n <= 36]:
        chosen = picks(nodes)
        print(row(run(*chosen["basic"], "basic"), f"basic at plan's basic pick for {nodes} nodes"), flush=True)
        if nodes == 144:
            print(row(run(*chosen["dualpath"], "dualpath"), f"dualpath at plan's dualpath pick for {nodes} nodes"), flush=True)
    if (48, 96) in jct and (2, 4) in jct:
        print(f"\nJCT of 48P96D over 2P4D: {jct[(48, 96)] / jct[(2, 4)]:.3f} (target within 5 %)")
        wall, peak = whole_command(48, 96)
        print(f"48P96D whole command (/usr/bin/time -v): {wall:.1f} s wall, {peak:.2f} GiB peak (goal <= 30 s, <= 1.5 GiB)")


if __name__ == "__main__":
    main()
