"""``--check K``: the fluid runner plays the K best splits of a recommendation, so the buyer sees whether the
scheduler reaches what the bound promises and whether it ranks the splits as the bound's rule does.

The candidates are the optimal set in the rule's order, then the best splits outside it
(``OptimalSet.candidates``). Every candidate serves the same agents (one draw of the workload's data set,
``seed``), all at t = 0 (offline), with the command's policy (``dualpath`` for a DualPath set). The number
of agents follows the cluster's size at the density of ``simulate``'s default run (1,024 agents on the
paper's 6-node 2P4D), so a 144-node candidate is as loaded as 2P4D is by default.

The runner ranks the candidates by steady turns/s: the turns finished in the middle half of the run, when
the agents neither start together nor drain (``SimResult.steady_turns_per_s``), which is what a cluster
serving a stream of agents sustains; the whole run's turns/s and JCT, set by the longest agents' tail, are
shown beside it. The pick stands unless a candidate beats it by more than ``pick.TOLERANCE_FRAC`` with 95 %
intervals of the mean that do not overlap, over several seeds (``--seeds``): the runner then recommends that
one, as it plays the scheduler the bound idealises. One seed shows the ranking but cannot move the pick: one
split's rate moves by several per cent from seed to seed (on 144 Hopper nodes 71P73D led 72P72D by 6 % on seed 0
and not over three seeds), far more than the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean
from typing import Callable, Mapping

from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import MAX_AGENTS, check_flag
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.workload import DEFAULT_AGENTS, trajectories
from dualpath_plan.planning.pick import TOLERANCE_FRAC, OptimalSet, Split
from dualpath_plan.sim import runner
from dualpath_plan.sim.runner import SimOptions, SimResult
from dualpath_plan.sim.spread import Spread, seeds_of, spread

DENSITY_NODES = 6  # simulate's default run: DEFAULT_AGENTS agents on the paper's 2P4D
POLICY = {"dualpath": "dualpath", "basic": "basic", "oracle": "oracle"}  # a mode's set is played by its policy


@dataclass(frozen=True)
class Checked:
    """One candidate and its runs, one per seed (``run``: the first seed's)."""

    split: Split
    runs: tuple[SimResult, ...] = field(repr=False)

    @property
    def run(self) -> SimResult:
        return self.runs[0]

    @property
    def spread(self) -> Spread:
        """Steady turns/s (middle half; 0 when no turn finished in it) over the seeds."""
        return spread([r.steady_turns_per_s or 0.0 for r in self.runs])

    @property
    def steady(self) -> float:
        """The mean steady turns/s over the seeds."""
        return self.spread.mean

    @property
    def whole_run_turns_per_s(self) -> float:
        """The whole run's turns/s, the mean over the seeds."""
        return fmean(r.turns_per_s or 0.0 for r in self.runs)

    @property
    def jct_s(self) -> float | None:
        """The JCT, the mean over the seeds (None if a run has none)."""
        values = [r.jct_s for r in self.runs]
        return None if any(v is None for v in values) else fmean(values)

    @property
    def achieved_over_bound(self) -> float | None:
        """Steady turns/s over the candidate's bound."""
        return None if not self.split.turns_per_s > 0 else self.steady / self.split.turns_per_s


@dataclass(frozen=True)
class RunnerCheck:
    """The candidates in the bound's order with their runs, the runner's order, and the recommendation."""

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


def agents_for(nodes: int) -> int:
    """Agents for a cluster of ``nodes``: the default run's density, within the run's cap."""
    return max(1, min(MAX_AGENTS, round(DEFAULT_AGENTS * nodes / DENSITY_NODES)))


def candidates_of(optimal: OptimalSet, count: int) -> tuple[Split, ...]:
    """The ``count`` best splits of ``optimal`` that serve anything (a split that serves nothing has nothing to play)."""
    if optimal.mode not in POLICY:
        raise PlanError(f"--check plays a {optimal.mode} set with no policy of that name", 2)
    return tuple(s for s in optimal.candidates(int(count)) if s.turns_per_s > 0)


def _nothing_to_play() -> PlanError:
    return PlanError("--check has nothing to play: no candidate split serves anything (see why in the table)", 1)


def check(optimal: OptimalSet, scenarios: Mapping[tuple[str, str], Scenario], count: int, options: BoundOptions = BoundOptions(),
          seed: int = 0, seeds: int = 1, on_compile: Callable[[], None] | None = None, agents: int | None = None) -> RunnerCheck:
    """Run the ``count`` best splits of ``optimal`` (``scenarios`` by (PE type, DE type)) on the same agents, with the
    command's prefill dtype and decode instances (``options``), once per seed of ``seeds_of(seed, seeds)``; ``agents``
    (default: the largest candidate's density, :func:`agents_for`) lets several checks share their agents."""
    check_flag("--check", count)
    check_flag("--seeds", seeds)
    candidates = candidates_of(optimal, count)
    if not candidates:
        raise _nothing_to_play()
    sc_of = {(s.pe_profile, s.de_profile, s.P, s.D): scenarios[(s.pe_profile, s.de_profile)].with_nodes(s.P, s.D) for s in candidates}
    agents = agents_for(max(s.P + s.D for s in candidates)) if agents is None else agents
    first = next(iter(sc_of.values()))
    runs: list[list[SimResult]] = [[] for _ in candidates]
    for each in seeds_of(seed, seeds):  # one draw of agents per seed, shared by every candidate
        traj = trajectories(first.workload, agents, None, each)
        sim = SimOptions(seed=each, dtype=options.dtype, decode_instance_nodes=options.decode.instance_nodes)
        for i, s in enumerate(candidates):
            runs[i].append(runner.run(sc_of[(s.pe_profile, s.de_profile, s.P, s.D)], traj, POLICY[optimal.mode], options=sim, on_compile=on_compile))
    checked = tuple(Checked(s, tuple(r)) for s, r in zip(candidates, runs))
    pick = checked[0]
    best = max(checked, key=lambda c: c.steady)
    lead = _lead(best, pick)
    clear = [c for c in checked if _lead(c, pick) > TOLERANCE_FRAC and _apart(c.spread, pick.spread)]  # any rival the draw cannot explain
    chosen = max(clear, key=lambda c: c.steady).split if clear else pick.split
    return RunnerCheck(POLICY[optimal.mode], agents, seeds_of(seed, seeds), checked, chosen, lead <= TOLERANCE_FRAC, lead)


@dataclass(frozen=True)
class ModesCheck:
    """The runner check of every mode's best splits on the same agents (``checks`` by mode, in the order asked), and
    how the runner ranks the modes against the bounds: each mode by its runner-recommended split (best with best)."""

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
    def confirms(self) -> bool:
        """The runner ranks the modes as the bounds do (their recommended splits' steady turns/s in the bounds' order)."""
        return self.runner_order == self.bound_order


def check_modes(optimals: Mapping[str, OptimalSet], scenarios: Mapping[tuple[str, str], Scenario], count: int,
                options: BoundOptions = BoundOptions(), seed: int = 0, seeds: int = 1,
                on_compile: Callable[[], None] | None = None) -> ModesCheck | RunnerCheck:
    """:func:`check` for every mode's optimal set, on the same agents (the density of the largest candidate of any mode).
    A mode none of whose splits serves anything has nothing to play and is left out; with one mode left, its
    :class:`RunnerCheck` is the answer (no ranking of modes to confirm)."""
    check_flag("--check", count)
    candidates = {mode: candidates_of(optimal, count) for mode, optimal in optimals.items()}
    playable = [mode for mode, splits in candidates.items() if splits]
    if not playable:
        raise _nothing_to_play()
    agents = agents_for(max(s.P + s.D for mode in playable for s in candidates[mode]))
    checks = {mode: check(optimals[mode], scenarios, count, options, seed, seeds, on_compile, agents) for mode in playable}
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


def _lead(rival: Checked, pick: Checked) -> float:
    return lead_frac(rival.steady, pick.steady)


def _apart(better: Spread, pick: Spread) -> bool:
    return apart(better.low, pick.high)
