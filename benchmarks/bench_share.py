"""Benchmark of the sharing kernel alone, on allocations a real run asks for: microseconds per allocation, warm.

Whole runner commands on a shared 2-core host drift by 1.6x within an hour, which hides a kernel change worth
5 % of a run. This script takes the kernel's inputs from a compiled run (the incidence, budgets and work of the
engine's last step at each progress report: one every 10 s of simulated time), then times
``sim.compiled.share.allocate_into`` on each as the engine calls it, with its inputs in cache (one call to warm,
then three timed), and checks every answer bit for bit against the numpy rule (``sim.python.share.allocate``).
With ``--against FILE`` it times a second version of the kernel module (for instance
``git show REV:dualpath_plan/sim/compiled/share.py > /tmp/old_share.py``) on the same allocations, interleaved
allocation by allocation so that drift falls on both alike, and prints the ratio.

Run: python benchmarks/bench_share.py [-P 48 -D 96] [--agents N] [--reps 7] [--against FILE]
(the run takes about as long as the ``simulate`` command of the same size)
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dualpath_plan import api as dp
from dualpath_plan.sim.compiled import run as compiled_run
from dualpath_plan.sim.compiled import share
from dualpath_plan.sim.compiled.state import MI_N_ENTRIES, MI_N_FLOWS, MI_STEP_BONUS, view
from dualpath_plan.sim.python.share import Incidence, allocate

INPUTS = ("flow", "res", "coef", "aw", "starts", "lengths", "weight", "budget", "work", "sure")


def capture(P: int, D: int, agents: int) -> list[dict[str, np.ndarray]]:
    """The kernel's inputs at each progress report of a compiled ``dualpath`` run (CompiledRun.run wrapped for it)."""
    samples: list[dict[str, np.ndarray]] = []
    plain = compiled_run.CompiledRun.run

    def run(self, on_progress, stop_check):  # noqa: ANN001, ANN202
        def report(t: float) -> None:
            nf, ne = int(self._mi[MI_N_FLOWS]), int(self._mi[MI_N_ENTRIES])
            field = lambda name, n=None: view(self.core, name)[:n].copy()  # noqa: E731
            samples.append({"flow": field("inc_flow", ne), "res": field("inc_res", ne), "coef": field("inc_coef", ne),
                            "aw": field("inc_aw", ne), "starts": field("inc_starts", nf), "lengths": field("inc_lengths", nf),
                            "weight": field("inc_weight", nf), "budget": field("step_budget" if self._mi[MI_STEP_BONUS] else "budget"),
                            "work": field("work", nf), "sure": field("sure", nf)})
            if on_progress is not None:
                on_progress(t)
        return plain(self, report, stop_check)

    compiled_run.CompiledRun.run = run
    try:
        dp.simulate(dp.scenario("hopper", P=P, D=D), "dualpath", agents=agents, seed=1, engine="compiled")
    finally:
        compiled_run.CompiledRun.run = plain
    return [s for s in samples if s["work"].size]


def load_copy(path: Path):  # noqa: ANN201
    """Another version of the kernel module, compiled fresh (numba cannot cache a module loaded from a file path)."""
    source = path.read_text().replace("cache=True", "cache=False")
    copy = Path(tempfile.mkdtemp()) / "share_against.py"
    copy.write_text(source)
    spec = importlib.util.spec_from_file_location("share_against", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def arguments(s: dict[str, np.ndarray]) -> tuple:
    """``allocate_into``'s arguments for sample ``s``, with fresh outputs and scratch."""
    nf, nr = s["work"].size, s["budget"].size
    return (*(s[k] for k in INPUTS), np.empty(nf), np.empty(nr), np.empty(nf), np.empty((4, nf)), np.empty((3, nr)),
            np.empty((4, nf), np.int64), np.empty((2, nr), np.int64))


def check(kernel, args: list[tuple], samples: list[dict[str, np.ndarray]]) -> int:  # noqa: ANN001
    """Run ``kernel`` on every sample; assert each answer is the numpy rule's bit for bit; return how many were contended."""
    contended = 0
    for a, s in zip(args, samples):
        kernel.allocate_into(*a)
        inc = Incidence(s["flow"], s["res"], s["coef"], s["starts"], s["weight"], s["aw"], s["lengths"], float(s["coef"].max()))
        for got, want in zip(a[10:13], allocate(inc, s["budget"], s["work"])):
            assert np.array_equal(got, want, equal_nan=True), "the kernel differs from the numpy rule"
        nf, nr = s["work"].size, s["budget"].size
        contended += not kernel.uncontended(s["res"], s["coef"], s["starts"], s["lengths"], s["budget"], s["work"], s["sure"],
                                            np.empty(nf), np.empty(nr), np.empty(nf))
    return contended


def timed(kernels: list, args: list[tuple], reps: int) -> list[list[float]]:  # noqa: ANN001
    """Per kernel, ``reps`` mean times per allocation (s), each kernel warmed on an allocation before its three timed calls."""
    out = [[] for _ in kernels]
    for _ in range(reps):
        total = [0.0] * len(kernels)
        for a in args:
            for k, kernel in enumerate(kernels):
                kernel.allocate_into(*a)
                start = time.perf_counter()
                kernel.allocate_into(*a)
                kernel.allocate_into(*a)
                kernel.allocate_into(*a)
                total[k] += (time.perf_counter() - start) / 3
        for k in range(len(kernels)):
            out[k].append(total[k] / len(args))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-P", type=int, default=48, help="prefill nodes (default 48)")
    parser.add_argument("-D", type=int, default=96, help="decode nodes (default 96)")
    parser.add_argument("--agents", type=int, help="agents (default: 2,048 per 6 nodes)")
    parser.add_argument("--reps", type=int, default=7, help="timed passes over the allocations (default 7)")
    parser.add_argument("--against", type=Path, help="another version of sim/compiled/share.py to time beside this one")
    args = parser.parse_args()
    agents = args.agents or round(2048 * (args.P + args.D) / 6)
    samples = capture(args.P, args.D, agents)
    calls = [arguments(s) for s in samples]
    kernels = [share] + ([load_copy(args.against)] if args.against else [])
    names = ["this kernel"] + ([str(args.against)] if args.against else [])
    for kernel in kernels:
        contended = check(kernel, calls, samples)
    times = timed(kernels, calls, args.reps)
    busy = statistics.mean(float((s["work"] > 0).sum()) for s in samples)
    entries = statistics.mean(float(s["lengths"][s["work"] > 0].sum()) for s in samples)
    print(f"{args.P}P{args.D}D, {agents:,} agents: {len(samples)} allocations ({contended} contended), on average "
          f"{busy:.0f} busy flows and {entries:.0f} of their entries; every answer equal to the numpy rule's bit for bit")
    for name, t in zip(names, times):
        print(f"{name}: {statistics.median(t) * 1e6:.1f} us per allocation (median of {args.reps}; least {min(t) * 1e6:.1f} us)")
    if args.against:
        ratios = [a / b for a, b in zip(times[0], times[1])]
        print(f"this kernel / {args.against}: {statistics.median(ratios):.3f} (median of {args.reps} interleaved passes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
