"""``--check K``: the fluid runner plays the K best splits of a recommendation, so the buyer sees whether the
scheduler reaches what the bound promises and whether it ranks the splits as the bound's rule does.

The candidates are the optimal set in the rule's order, then the best splits outside it
(``OptimalSet.candidates``). Every candidate serves the same agents (one draw of the workload's data set,
``seed``), all at t = 0 (offline), with the command's policy (``dualpath`` for a DualPath set). A trace's agents start
at t = 0 too, whatever ``--time-scale`` says (:func:`from_zero`): the bounds are capacities, and a recorded timeline
sparser than the cluster's capacity would measure the arrivals instead (``simulate`` replays the timeline). Tool time
between turns and a fork's delay stay. The number
of agents follows the cluster's size at :data:`DENSITY_AGENTS` per :data:`DENSITY_NODES` (the paper's 2,048 agents on
its 6-node 2P4D), so a 144-node candidate is as loaded as 2P4D.

The runner ranks the candidates by steady turns/s: the turns finished in the run's steady window, past the agents'
cold first turns and before they drain (``SimResult.steady_turns_per_s``, ``sim.steady``), which is what a cluster
serving a stream of agents sustains; the whole run's turns/s and JCT, set by the longest agents' tail, are
shown beside it. The pick stands unless a candidate beats it by more than ``pick.TOLERANCE_FRAC`` with 95 %
intervals of the mean that do not overlap, over several seeds (``--seeds``): the runner then recommends that
one, as it plays the scheduler the bound idealises. One seed shows the ranking but cannot move the pick: one
split's rate moves by several per cent from seed to seed (on 144 Hopper nodes 71P73D led 72P72D by 6 % on seed 0
and not over three seeds), far more than the tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from statistics import fmean
from typing import Callable, Mapping, Sequence

from dualpath_plan.bounds.decode import DEFAULT_TPOT_SLO_MS
from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import MAX_AGENTS, check_flag
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.workload import DEFAULT_AGENTS, served_turns
from dualpath_plan.planning.executor import Outcome, RunTask, check_executor, compile_once, resolve_engine, run_tasks
from dualpath_plan.planning.pick import TOLERANCE_FRAC, OptimalSet, Split, bounds_tie
from dualpath_plan.sim.runner import SimOptions
from dualpath_plan.sim.spread import Spread, seeds_of, spread

DENSITY_NODES = 6  # the paper's 2P4D
DENSITY_AGENTS = 2 * DEFAULT_AGENTS  # agents on DENSITY_NODES: the paper's "2K agents" on 2P4D
# (a 2P4D dualpath run of DEFAULT_AGENTS, 1,024, halves its population at 849 s: a steady window of 270 s; of 2,048, one of
# 813 s, three times the turns to measure; both reach 0.98-0.99 of their windows' bounds: sim.steady, benchmarks/bench_scale.py)
POLICY = {"dualpath": "dualpath", "basic": "basic", "oracle": "oracle"}  # a mode's set is played by its policy


@dataclass(frozen=True)
class Checked:
    """One candidate and what its runs gave, one per seed (``run``: the first seed's).

    Attributes:
        split: The candidate (:class:`~dualpath_plan.planning.pick.Split`).
        runs: Its runs, one per seed (``planning.executor.Outcome``: steady and whole-run turns/s, JCT in seconds, the
            window's bound).
    """

    split: Split
    runs: tuple[Outcome, ...] = field(repr=False)

    @property
    def run(self) -> Outcome:
        return self.runs[0]

    @property
    def spread(self) -> Spread:
        """Steady turns/s (the steady window; 0 when no turn finished in it) over the seeds."""
        return spread([r.steady_turns_per_s for r in self.runs])

    @property
    def steady(self) -> float:
        """The mean steady turns/s over the seeds."""
        return self.spread.mean

    @property
    def whole_run_turns_per_s(self) -> float:
        """The whole run's turns/s, the mean over the seeds."""
        return fmean(r.turns_per_s for r in self.runs)

    @property
    def jct_s(self) -> float | None:
        """The JCT, the mean over the seeds (None if a run has none)."""
        values = [r.jct_s for r in self.runs]
        return None if any(v is None for v in values) else fmean(values)

    @property
    def steady_over_workload_bound(self) -> float | None:
        """Steady turns/s over the candidate's bound (the bound of the workload's turns)."""
        return None if not self.split.turns_per_s > 0 else self.steady / self.split.turns_per_s

    @property
    def tier_share(self) -> float | None:
        """With a DRAM tier, the share of the steady window's hit KV its LRU served, the mean over the seeds (None without
        a tier or when a run has no turn in its window)."""
        values = [r.tier_share for r in self.runs]
        return None if any(v is None for v in values) else fmean(values)

    @property
    def over_window_bound(self) -> float | None:
        """Steady turns/s over the bound of the turns the steady window finished, the mean over the seeds (None if a
        run has none): how near the runner came to what the hardware allows for the turns it ran. The window's turns are not the
        workload's mean turn (``sim.steady``), so their bound can lie above or below the workload's."""
        return window_ratio(self.runs)


@dataclass(frozen=True)
class RunnerCheck:
    """The candidates in the bound's order with their runs, the runner's order, and the recommendation.

    What :func:`dualpath_plan.check` returns (``--check K``, one mode).

    Attributes:
        policy: The policy that played the candidates (the mode's: ``dualpath`` or ``basic``).
        agents: Agents every candidate served (2,048 per 6 nodes of the largest candidate, within the run's cap).
        seeds: The seeds played, each one draw of agents shared by every candidate.
        checked: Every candidate with its runs (:class:`Checked`), in the bound's order.
        recommended: The split the runner recommends: the pick, unless a rival leads it by more than 1 % with 95 %
            intervals apart.
        agrees: The runner's best is the pick (or within the tolerance of it).
        lead_frac: How far the runner's best is ahead of the pick, a fraction (0 when the pick is its best).
    """

    policy: str
    agents: int
    seeds: tuple[int, ...]
    checked: tuple[Checked, ...]
    recommended: Split
    agrees: bool  # the runner's best is the pick (or within the tolerance of it)
    lead_frac: float = 0.0  # how far the runner's best is ahead of the pick (0 when the pick is its best)

    @property
    def runner_order(self) -> tuple[Checked, ...]:
        return tuple(sorted(self.checked, key=lambda c: -c.steady))


def window_ratio(runs) -> float | None:
    """The mean over ``runs`` (outcomes) of each one's steady turns/s over its window's bound; None if a run has none."""
    ratios = [r.over_window_bound for r in runs]
    return None if not ratios or None in ratios else fmean(ratios)


def agents_for(nodes: int) -> int:
    """Agents for a cluster of ``nodes``: the default run's density, within the run's cap."""
    return max(1, min(MAX_AGENTS, round(DENSITY_AGENTS * nodes / DENSITY_NODES)))


def candidates_of(optimal: OptimalSet, count: int) -> tuple[Split, ...]:
    """The ``count`` best splits of ``optimal`` that serve anything (a split that serves nothing has nothing to play)."""
    if optimal.mode not in POLICY:
        raise PlanError(f"--check plays a {optimal.mode} set with no policy of that name", 2)
    return tuple(s for s in optimal.candidates(int(count)) if s.turns_per_s > 0)


def refuse_offline_slo(tpot_slo_s: float, online: bool) -> None:
    """Refuse a TPOT SLO other than the default on an offline check: an offline run keeps no SLO (``sim.runner``
    refuses one too), so its runs would be held to a bound the SLO changes (below it, the bound's decode batch is the
    SLO's)."""
    if not online and not math.isclose(tpot_slo_s * 1e3, DEFAULT_TPOT_SLO_MS):
        raise PlanError(f"--tpot-slo-ms = {tpot_slo_s * 1e3:g} ms is not allowed with an offline --check; an offline run keeps no SLO "
                        "(as simulate's), so its runs would be held to a bound the SLO changes: add --online (the SLO then judges "
                        "each split's capacity) or check at the default SLO", 2)


def nothing_to_play() -> PlanError:
    return PlanError("--check has nothing to play: no candidate split serves anything (see why in the table)", 1)


@dataclass(frozen=True)
class Where:
    """Where and how a check's runs play (``planning.executor``): the engine (``auto``: ``executor.resolve_engine``),
    and local worker processes (``jobs``; 1: this process) or a Ray cluster (``address``)."""

    engine: str = "auto"
    executor: str = "local"
    jobs: int | None = None
    address: str | None = None


def play(tasks: list[RunTask], where: Where, python_s: Callable[[], float], on_compile: Callable[[], None] | None = None) -> dict[str, Outcome]:
    """Run ``tasks`` where ``where`` says, on the engine it resolves to (compiled once here first, when local); outcomes by
    task key. ``python_s()`` is the Python engine's estimated wall time for them all (``auto``'s choice)."""
    check_executor(where.executor, where.jobs, where.address)
    engine = resolve_engine(where.engine, python_s)
    tasks = [replace(t, options=replace(t.options, engine=engine)) for t in tasks]
    if tasks and engine == "compiled" and where.executor == "local":  # a Ray worker loads or compiles it on its own machine
        compile_once(on_compile)
    return run_tasks(tasks, where.executor, where.jobs, where.address)


def check(optimal: OptimalSet, scenarios: Mapping[tuple[str, str], Scenario], count: int, options: BoundOptions = BoundOptions(),
          seed: int = 0, seeds: int = 1, on_compile: Callable[[], None] | None = None, where: Where = Where()) -> RunnerCheck:
    """Run the ``count`` best splits of ``optimal`` (``scenarios`` by (PE type, DE type)) on the same agents, with the
    command's prefill dtype and decode instances (``options``), once per seed of ``seeds_of(seed, seeds)``, each run a
    task of ``where``'s executor; the agents are the largest candidate's density (:func:`agents_for`)."""
    check_flag("--check", count)
    check_flag("--seeds", seeds)
    candidates = candidates_of(optimal, count)
    if not candidates:
        raise nothing_to_play()
    agents = agents_for(max(s.P + s.D for s in candidates))
    tasks = _tasks(optimal.mode, candidates, scenarios, agents, options, seeds_of(seed, seeds))
    rates = _rates(optimal.mode, candidates, seeds_of(seed, seeds))
    return _judged(optimal.mode, candidates, agents, seeds_of(seed, seeds), play(tasks, where, lambda: _python_s(tasks, rates), on_compile))


def from_zero(scenario: Scenario) -> Scenario:
    """``scenario`` with its trace's recorded start times at 0 (module docstring); a synthetic workload as it is."""
    trace = scenario.workload.trace
    if trace is None or trace[2] == 0.0:
        return scenario
    path, fmt, _time_scale, tool_scale = trace
    return replace(scenario, workload=replace(scenario.workload, trace=(path, fmt, 0.0, tool_scale)))


def _tasks(mode: str, candidates: tuple[Split, ...], scenarios: Mapping[tuple[str, str], Scenario], agents: int, options: BoundOptions,
           seed_list: tuple[int, ...]) -> list[RunTask]:
    """One task per candidate and seed (:func:`_key`); every candidate of a seed draws the same agents."""
    return [RunTask(_key(mode, i, each), from_zero(scenarios[(s.pe_profile, s.de_profile)].with_nodes(s.P, s.D)), agents, each, POLICY[mode],
                    SimOptions.of(options, seed=each))
            for each in seed_list for i, s in enumerate(candidates)]


def _judged(mode: str, candidates: tuple[Split, ...], agents: int, seed_list: tuple[int, ...], done: Mapping[str, Outcome]) -> RunnerCheck:
    """The mode's check from its tasks' outcomes: the runner's order, whether it agrees with the pick, the recommendation."""
    checked = tuple(Checked(s, tuple(done[_key(mode, i, each)] for each in seed_list)) for i, s in enumerate(candidates))
    r = ranking([c.steady for c in checked], [c.spread.low for c in checked], [c.spread.high for c in checked])
    return RunnerCheck(POLICY[mode], agents, seed_list, checked, checked[r.recommended].split, r.agrees, r.lead_frac)


def _key(mode: str, candidate: int, seed: int) -> str:
    return f"{mode}|{candidate}|seed={seed}"


def _rates(mode: str, candidates: tuple[Split, ...], seed_list: tuple[int, ...]) -> dict[str, float]:
    """Each task's bound in turns/s, by task key (what ``auto`` takes a run's simulated length from)."""
    return {_key(mode, i, each): s.turns_per_s for each in seed_list for i, s in enumerate(candidates)}


def _python_s(tasks: list[RunTask], rates: Mapping[str, float]) -> float:
    """The Python engine's estimated wall time for every offline task (``compiled_run.python_estimate_s``), each run
    as long as its turns take at its bound's rate."""
    from dualpath_plan.sim.compiled.run import python_estimate_s

    total = 0.0
    for task in tasks:
        turns = task.agents * served_turns(task.scenario.workload).turns_per_agent
        total += python_estimate_s(int(turns), turns / rates[task.key], task.options.dt_s)
    return total


@dataclass(frozen=True)
class ModesCheck:
    """The runner check of every mode's best splits on the same agents, and how the runner ranks the modes.

    What :func:`dualpath_plan.check_modes` returns with two modes (``plan --check K``). The modes are ranked each by
    its runner-recommended split (best with best); ``confirms`` says whether the runner ranks them as the bounds do.

    Attributes:
        checks: Per mode, in the order asked, its :class:`RunnerCheck`.
    """

    checks: dict[str, RunnerCheck]

    def best(self, mode: str) -> Checked:
        """The mode's candidate the runner recommends (its pick unless a rival clearly beat it)."""
        check = self.checks[mode]
        return next(c for c in check.checked if c.split is check.recommended)

    @property
    def bound_order(self) -> tuple[str, ...]:
        """The modes by their picks' bounds (the bounds' own ranking)."""
        return tuple(sorted(self.checks, key=lambda m: -self.checks[m].checked[0].split.turns_per_s))

    @property
    def runner_order(self) -> tuple[str, ...]:
        return tuple(sorted(self.checks, key=lambda m: -self.best(m).steady))

    @property
    def bounds_tie(self) -> bool:
        """The first two modes' picks have the same bound: the bounds rank neither first (False with one mode)."""
        if len(self.checks) < 2:
            return False
        first, second = self.bound_order[:2]
        return bounds_tie(self.checks[first].checked[0].split.turns_per_s, self.checks[second].checked[0].split.turns_per_s)

    @property
    def confirms(self) -> bool:
        """The runner ranks the modes as the bounds do (their recommended splits' steady turns/s in the bounds' order), or
        the bounds tie, which no order contradicts."""
        return self.bounds_tie or self.runner_order == self.bound_order


def check_modes(optimals: Mapping[str, OptimalSet], scenarios: Mapping[tuple[str, str], Scenario], count: int,
                options: BoundOptions = BoundOptions(), seed: int = 0, seeds: int = 1,
                on_compile: Callable[[], None] | None = None, where: Where = Where()) -> ModesCheck | RunnerCheck:
    """:func:`check` for every mode's optimal set, on the same agents (the density of the largest candidate of any mode).
    A mode none of whose splits serves anything has nothing to play and is left out; with one mode left, its
    :class:`RunnerCheck` is the answer (no ranking of modes to confirm)."""
    check_flag("--check", count)
    check_flag("--seeds", seeds)
    candidates = {mode: candidates_of(optimal, count) for mode, optimal in optimals.items()}
    playable = [mode for mode, splits in candidates.items() if splits]
    if not playable:
        raise nothing_to_play()
    agents = agents_for(max(s.P + s.D for mode in playable for s in candidates[mode]))
    seed_list = seeds_of(seed, seeds)
    tasks = [t for mode in playable for t in _tasks(mode, candidates[mode], scenarios, agents, options, seed_list)]
    rates = {k: v for mode in playable for k, v in _rates(mode, candidates[mode], seed_list).items()}
    done = play(tasks, where, lambda: _python_s(tasks, rates), on_compile)  # every mode's runs at once, on the executor's workers
    checks = {mode: _judged(mode, candidates[mode], agents, seed_list, done) for mode in playable}
    return ModesCheck(checks) if len(checks) > 1 else next(iter(checks.values()))


def lead_frac(rival: float, pick: float) -> float:
    """How far a rival's steady turns/s is ahead of the pick's (infinite when the pick finished nothing in its window
    and the rival did)."""
    if pick > 0:
        return rival / pick - 1
    return float("inf") if rival > 0 else 0.0


def apart(better_low: float | None, pick_high: float | None) -> bool:
    """A lead the draw cannot explain: the 95 % intervals do not overlap. One seed has no interval, so it never
    moves the recommendation (a rate moves by several per cent from seed to seed on these clusters)."""
    return better_low is not None and pick_high is not None and better_low > pick_high


@dataclass(frozen=True)
class Ranking:
    """The runner's verdict on candidates in the bound's order (index 0 the pick): its best, how far that leads the pick,
    and the one recommended (the pick, unless a rival leads by more than the tolerance with 95 % intervals apart)."""

    best: int
    lead_frac: float
    recommended: int

    @property
    def agrees(self) -> bool:
        """The runner's best is the pick, or within the tolerance of it."""
        return self.lead_frac <= TOLERANCE_FRAC


def ranking(values: Sequence[float], lows: Sequence[float | None], highs: Sequence[float | None]) -> Ranking:
    """The one rule every check ranks by (offline steady turns/s, online capacity, a sweep's group): ``values`` (means
    over the seeds) with their 95 % intervals, the candidates in the bound's order."""
    best = max(range(len(values)), key=lambda i: values[i])  # the first of equals: the bound's order breaks ties
    clear = [i for i in range(len(values)) if lead_frac(values[i], values[0]) > TOLERANCE_FRAC and apart(lows[i], highs[0])]
    return Ranking(best, lead_frac(values[best], values[0]), max(clear, key=lambda i: values[i]) if clear else 0)
