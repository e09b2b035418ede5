"""``--check K --online``: each candidate's capacity at the SLO, the probes of every search run side by side on the
executor's workers.

A candidate's capacity is the online method ``simulate --find-capacity`` uses (``sim.runner.find_capacity``): the
highest agent arrival rate whose Poisson-arrival run, until the steady-state horizon, keeps the SLO (mean TTFT at
most 4 s, TPOT at most 50 ms by default), searched in ``(0, bound]`` by the bracket of ``sim.search``. Here every
candidate of every mode, once per seed, is one search, and the searches advance in rounds: each round asks every
unfinished search for its next rates, as many as the workers allow (``executor.workers``: ``--jobs N`` locally, the
CPUs of a Ray cluster, shared out over the unfinished searches), runs all of them as tasks of the executor at once,
and hands each search its results. Every unfinished search probes at least once a round, so with no more workers
than searches each one probes as ``find_capacity`` does, one rate at a time (the round's probes queue for the
workers); with more workers than searches, each search probes several rates a round and needs fewer rounds. A probe
depends only on its rate, seed and cluster, and a round's rates only on the earlier rounds and the workers, so the
same workers give the same answer on any executor; other worker counts probe other rates and give the same
capacity within the tolerance.

The candidates are those of the offline check (``planning.check.candidates_of``); a mode's candidates are ranked by
capacity (the mean over the seeds), and the pick stands unless a rival leads it by more than the tolerance with 95 %
intervals apart (the offline check's rule, ``planning.check``). The modes are ranked by the capacity of each one's
recommended split, against the bounds' ranking of their picks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.workload import source_of
from dualpath_plan.planning.check import POLICY, Where, candidates_of, nothing_to_play, play, ranking
from dualpath_plan.planning.executor import Outcome, RunTask, workers
from dualpath_plan.planning.pick import TOLERANCE_FRAC, OptimalSet, Split, bounds_tie
from dualpath_plan.sim.bound import bound_for
from dualpath_plan.sim.runner import TTFT_SLO_S, OnlineSpec, SimOptions, policy_name, probe_spec
from dualpath_plan.sim.search import Bracket
from dualpath_plan.sim.spread import Spread, seeds_of, spread


@dataclass(frozen=True)
class Searched:
    """One candidate's capacity searches, one per seed, and the agents that arrived in each one's probe at its capacity
    (``split``: None for a sweep's configuration, ``planning.gridonline``)."""

    split: Split | None
    brackets: tuple[Bracket, ...]
    agents: tuple[int | None, ...]
    turns_per_agent: float

    @property
    def bound_aps(self) -> float:
        """The LP bound of the probes' turns at the SLO, in agents/s: the search's ceiling."""
        return self.brackets[0].bound_aps

    @property
    def spread(self) -> Spread:
        """The capacity (agents/s) over the seeds."""
        return spread([b.lo for b in self.brackets])

    @property
    def capacity_aps(self) -> float:
        return self.spread.mean

    @property
    def capacity_turns_per_s(self) -> float:
        return self.capacity_aps * self.turns_per_agent

    @property
    def over_bound(self) -> float | None:
        return self.capacity_aps / self.bound_aps if self.bound_aps > 0 else None

    @property
    def probes(self) -> int:
        return sum(len(b.probes) for b in self.brackets)

    @property
    def every_probe_met(self) -> bool:
        """Every probe kept the SLO: the capacity is within the search's tolerance of the bound."""
        return self.probes > 0 and all(ok for b in self.brackets for _, ok in b.probes)


@dataclass(frozen=True)
class ModeSearch:
    """A mode's candidates in the bound's order with their searches, and the split the capacities recommend.

    Attributes:
        policy: The policy the probes played.
        searched: Each candidate's searches, one per seed (``planning.online.Searched``: capacities in agents/s, the
            bound at the SLO, probes).
        recommended: The split the capacities recommend: the pick unless a rival leads it by more than 1 % with 95 %
            intervals apart.
        lead_frac: How far the best capacity is ahead of the pick's, a fraction (0 when the pick is the best).
    """

    policy: str
    searched: tuple[Searched, ...]
    recommended: Split
    lead_frac: float  # how far the best capacity is ahead of the pick's (0 when the pick is the best)

    @property
    def agrees(self) -> bool:
        return self.lead_frac <= TOLERANCE_FRAC

    @property
    def order(self) -> tuple[Searched, ...]:
        """The candidates by capacity, best first."""
        return tuple(sorted(self.searched, key=lambda c: -c.capacity_aps))

    @property
    def best(self) -> Searched:
        return next(c for c in self.searched if c.split is self.recommended)


@dataclass(frozen=True)
class OnlineCheck:
    """Every mode's capacity check, the SLO, the seeds, and how the search ran.

    What :func:`dualpath_plan.check_online` returns (``plan --check K --online``).

    Attributes:
        slo: The SLO every probe kept or broke (:class:`~dualpath_plan.sim.runner.OnlineSpec`: mean TTFT and TPOT in
            seconds).
        seeds: The seeds played.
        modes: Per mode, in the order asked, its :class:`ModeSearch`.
        rounds: Rounds of probes the searches took.
        workers: Workers the probes ran on.
        rel_tol: The search's tolerance, a fraction of the bracket's upper end (0.05).
    """

    slo: OnlineSpec
    seeds: tuple[int, ...]
    modes: dict[str, ModeSearch]
    rounds: int
    workers: int
    rel_tol: float

    @property
    def bound_order(self) -> tuple[str, ...]:
        """The modes by their picks' bounds at the SLO (the bounds' own ranking, in the searches' own terms)."""
        return tuple(sorted(self.modes, key=lambda m: -self.modes[m].searched[0].bound_aps))

    @property
    def runner_order(self) -> tuple[str, ...]:
        """The modes by the capacity of each one's recommended split."""
        return tuple(sorted(self.modes, key=lambda m: -self.modes[m].best.capacity_aps))

    @property
    def bounds_tie(self) -> bool:
        """The first two modes' picks have the same bound at the SLO: the bounds rank neither first (False with one mode)."""
        if len(self.modes) < 2:
            return False
        first, second = self.bound_order[:2]
        return bounds_tie(self.modes[first].searched[0].bound_aps, self.modes[second].searched[0].bound_aps)

    @property
    def confirms(self) -> bool:
        """The capacities rank the modes as the bounds do, or the bounds tie, which no order contradicts."""
        return self.bounds_tie or self.runner_order == self.bound_order


def slo_of(options: BoundOptions, ttft_slo_s: float | None = None) -> OnlineSpec:
    """The SLO an online check holds each probe to: mean TTFT at most ``ttft_slo_s`` (default the paper's 4 s), TPOT at
    most the bound options' SLO (``--tpot-slo-ms``, the one the bound's decode counts within)."""
    return OnlineSpec(1.0, TTFT_SLO_S if ttft_slo_s is None else ttft_slo_s, options.decode.tpot_slo_s)


@dataclass(frozen=True)
class Search:
    """One capacity search in flight: its name (its probes' task keys are ``key|aps=RATE``), mode, candidate, seed, cluster,
    bracket, and the probes' spec (the SLO and horizon; each probe sets its rate) and run options."""

    key: str
    mode: str
    index: int
    seed: int
    scenario: Scenario
    bracket: Bracket
    spec: OnlineSpec
    sim: SimOptions

    def probe_key(self, aps: float) -> str:
        return f"{self.key}|aps={aps!r}"


def bound_aps(scenario: Scenario, source, mode: str, spec: OnlineSpec, sim: SimOptions) -> float:
    """The LP bound at the SLO of the probes' turns on ``scenario`` in ``mode``, in agents/s: a search's ceiling."""
    return bound_for(scenario, source, policy_name(POLICY[mode]), sim.bound_options(spec)).turns_per_s / source.summary().mean_turns


def search_rounds(searches: list[Search], width: int, play_round: Callable[[list[RunTask]], Mapping[str, Outcome]],
                  on_round: Callable[[int, int], None] | None = None) -> tuple[list[Search], dict[tuple[int, float], int | None], int]:
    """Advance ``searches`` in rounds until every one is done: each round asks every unfinished search for its next rates
    (:func:`_round`: ``width`` probes shared out), ``play_round(tasks)`` plays them (outcomes by task key), and each
    search takes its results. Returns the finished searches, the agents that arrived in each probe by (search, rate),
    and the rounds."""
    searches, rounds, agents_at = list(searches), 0, {}
    while asked := _round(searches, width):
        rounds += 1
        if on_round is not None:
            on_round(rounds, sum(len(r) for r in asked.values()))
        tasks = [RunTask(searches[n].probe_key(aps), searches[n].scenario, 0, searches[n].seed, POLICY[searches[n].mode], searches[n].sim,
                         replace(searches[n].spec, aps=aps)) for n, rates in asked.items() for aps in rates]
        done = play_round(tasks)
        for n, rates in asked.items():
            got = [(aps, done[searches[n].probe_key(aps)]) for aps in rates]
            searches[n] = replace(searches[n], bracket=searches[n].bracket.after([(aps, bool(o.slo_met)) for aps, o in got]))
            agents_at |= {(n, aps): o.agents for aps, o in got}
    return searches, agents_at, rounds


def check_online(optimals: Mapping[str, OptimalSet], scenarios: Mapping[tuple[str, str], Scenario], count: int, slo: OnlineSpec,
                 options: BoundOptions = BoundOptions(), seed: int = 0, seeds: int = 1, where: Where = Where(),
                 on_compile: Callable[[], None] | None = None, on_round: Callable[[int, int], None] | None = None,
                 rel_tol: float = 0.05, max_rounds: int = 12, width: int | None = None) -> OnlineCheck:
    """The capacity of the ``count`` best splits of every mode's optimal set (``scenarios`` by (PE type, DE type)), once
    per seed of ``seeds_of(seed, seeds)``, the probes run on ``where``'s executor, at most ``width`` a round (default:
    its workers, ``executor.workers``); ``on_round(round, probes)`` hears each round as it starts."""
    check_flag("--check", count)
    check_flag("--seeds", seeds)
    candidates = {mode: candidates_of(optimal, count) for mode, optimal in optimals.items()}
    candidates = {mode: splits for mode, splits in candidates.items() if splits}
    if not candidates:
        raise nothing_to_play()
    source = source_of(next(iter(scenarios.values())).workload, None)
    spec = probe_spec(source, slo)
    sim = SimOptions.of(options)
    searches = []
    for mode, splits in candidates.items():
        for i, s in enumerate(splits):
            sc = scenarios[(s.pe_profile, s.de_profile)].with_nodes(s.P, s.D)
            ceiling = bound_aps(sc, source, mode, spec, sim)
            searches += [Search(str(len(searches) + k), mode, i, each, sc, Bracket(ceiling, rel_tol, max_rounds), spec, replace(sim, seed=each))
                         for k, each in enumerate(seeds_of(seed, seeds))]
    width = workers(where.executor, where.jobs, where.address) if width is None else width
    searches, agents_at, rounds = search_rounds(searches, width, lambda tasks: play(tasks, where, lambda: float("inf"), on_compile), on_round)
    return OnlineCheck(slo, seeds_of(seed, seeds), _modes(candidates, searches, agents_at, source.summary().mean_turns), rounds, width, rel_tol)


def _round(searches: list[Search], width: int) -> dict[int, tuple[float, ...]]:
    """The next round's rates by search: the workers shared out over the unfinished searches (the first ones take
    what does not divide), at least one probe each."""
    active = [n for n, s in enumerate(searches) if not s.bracket.done]
    share, extra = divmod(width, len(active)) if active else (0, 0)
    return {n: rates for k, n in enumerate(active) if (rates := searches[n].bracket.rates(max(1, share + (k < extra))))}


def _modes(candidates: dict[str, tuple[Split, ...]], searches: list[Search], agents_at: dict, turns: float) -> dict[str, ModeSearch]:
    out = {}
    for mode, splits in candidates.items():
        mine = [(n, s) for n, s in enumerate(searches) if s.mode == mode]
        searched = tuple(Searched(split, tuple(s.bracket for _, s in mine if s.index == i),
                                  tuple(agents_at.get((n, s.bracket.lo)) for n, s in mine if s.index == i), turns)
                         for i, split in enumerate(splits))
        r = ranking([c.capacity_aps for c in searched], [c.spread.low for c in searched], [c.spread.high for c in searched])
        out[mode] = ModeSearch(POLICY[mode], searched, searched[r.recommended].split, r.lead_frac)
    return out

