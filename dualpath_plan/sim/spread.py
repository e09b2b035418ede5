"""``--seeds N``: the same run over N seeds, and the spread of what it measures.

A run's agents (a draw from the workload's data set) and, online, their arrivals come from its seed; the
cluster, the policy and the engine's rules do not. Repeating the run with seeds ``seed, seed + 1, ...,
seed + N - 1`` and reporting each metric's mean with a 95 % confidence interval of the mean (Student's t:
``mean +- t(0.975, N - 1) * s / sqrt(N)``, ``s`` the sample standard deviation) tells a buyer whether a
difference of a few per cent between two clusters or policies is more than the draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from dualpath_plan.model.profiles import Workload
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.workload import Trajectories
from dualpath_plan.sim.compiled import run as compiled_run
from dualpath_plan.sim.runner import Interrupted, OnlineSpec, SimOptions, SimResult, compare, run_agents

CONFIDENCE = 0.95
# What a spread is reported for: name -> the run's value (None when a run has none, e.g. no latencies).
METRICS: dict[str, Callable[[SimResult], float | None]] = {
    "jct_s": lambda r: r.jct_s,
    "turns_per_s": lambda r: r.turns_per_s,
    "steady_turns_per_s": lambda r: r.steady_turns_per_s,
    "ttft_p50_s": lambda r: r.ttft.p50_s,
    "ttft_p90_s": lambda r: r.ttft.p90_s,
    "ttft_p99_s": lambda r: r.ttft.p99_s,
    "tpot_p50_s": lambda r: r.tpot.p50_s,
    "tpot_p99_s": lambda r: r.tpot.p99_s,
}


@dataclass(frozen=True)
class Spread:
    """One metric over the seeds: its values, their mean and the 95 % interval of the mean.

    Attributes:
        values: The metric's value on each seed, in the metric's unit.
        mean: Their mean.
        low: The interval's lower end (Student's t, 95 %); ``None`` with one value.
        high: Its upper end; ``None`` with one value.
    """

    values: tuple[float, ...]
    mean: float
    low: float | None
    high: float | None

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def half_width(self) -> float | None:
        return None if self.high is None else (self.high - self.low) / 2


def t_quantile(df: int, p: float = 0.5 + CONFIDENCE / 2) -> float:
    """Student's t quantile (``scipy.special.stdtrit``: 12.71 for one degree of freedom, 1.96 as df grows)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def spread(values: Sequence[float]) -> Spread:
    """Mean and the 95 % t interval of the mean of ``values``."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return Spread(tuple(values), mean, None, None)
    s = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1) * s / math.sqrt(n)
    return Spread(tuple(values), mean, mean - half, mean + half)


def spreads(runs: Sequence[SimResult]) -> dict[str, Spread]:
    """Every metric of :data:`METRICS` that every run has, over ``runs`` (one per seed)."""
    out = {}
    for name, of in METRICS.items():
        values = [of(r) for r in runs]
        if all(v is not None for v in values):
            out[name] = spread([float(v) for v in values])
    return out


def seeds_of(seed: int, count: int) -> tuple[int, ...]:
    """The seeds of ``count`` repeats starting at ``seed``."""
    return tuple(range(seed, seed + count))


@dataclass(frozen=True)
class Repeated:
    """A simulate call over several seeds: the first seed's trajectories and runs (what the tables show), the
    seeds, and per policy the spread of each metric.

    Attributes:
        trajectories: The first seed's agents (:class:`~dualpath_plan.model.workload.Trajectories`).
        runs: Per policy, the first seed's run (:class:`~dualpath_plan.sim.runner.SimResult`).
        seeds: The seeds played, ``seed`` to ``seed + N - 1``.
        spreads: Per policy, per metric (``jct_s``, ``turns_per_s``, ``steady_turns_per_s``, ``ttft_p50_s``,
            ``ttft_p90_s``, ``ttft_p99_s``, ``tpot_p50_s``, ``tpot_p99_s``; seconds or turns/s as named): the
            :class:`Spread` over the seeds. Empty with one seed.
    """

    trajectories: Trajectories
    runs: dict[str, SimResult]
    seeds: tuple[int, ...]
    spreads: dict[str, dict[str, Spread]]


def repeat(scenario: Scenario, workload: Workload, agents: int | None, trace: Path | None, seeds: Sequence[int], policies: list[str],
           online: OnlineSpec | None, options: SimOptions, on_progress=None, on_compile=None, on_start=None) -> Repeated:
    """``runner.compare`` once per seed (its own agents and arrivals, ``runner.run_agents``), the same in all else.
    Ctrl-C raises ``runner.Interrupted`` with the first seed's finished runs (all of them once it is done).
    ``on_start(cost, runs)``: before the first run, its ``runner.RunCost`` and the number of runs (policies x seeds)."""
    per_seed = []
    if options.engine == "compiled":
        compiled_run.preload()  # the engine loads from numba's cache on the other core while the agents are drawn
    for seed in seeds:
        traj, spec = run_agents(workload, agents, trace, seed, online)
        try:
            first = None if on_start is None or per_seed else (lambda cost: on_start(cost, len(policies) * len(seeds)))
            runs = compare(scenario, traj, policies, online=spec, options=replace(options, seed=seed, runs=len(policies) * len(seeds)), on_progress=on_progress,
                           on_compile=on_compile, on_start=_once(first))
        except Interrupted as stop:
            raise (stop if not per_seed else Interrupted(per_seed[0][1], per_seed[0][0], len(policies))) from None
        per_seed.append((traj, runs))
    first_traj, first_runs = per_seed[0]
    return Repeated(first_traj, first_runs, tuple(seeds),
                    {name: spreads([runs[name] for _, runs in per_seed]) for name in first_runs} if len(per_seed) > 1 else {})


def _once(hook):
    """``hook`` for its first call only (None stays None)."""
    if hook is None:
        return None
    called = []

    def once(*args):
        if not called:
            called.append(True)
            hook(*args)
    return once
