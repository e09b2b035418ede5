"""``sweep --check K`` on a grid: the fluid runner on the K best configurations of each group, in each mode.

The candidates of a group in a mode (DualPath and basic, :data:`CHECKED_MODES`) are its first ``K`` configurations
in that mode's order (``grid``: the optimal set in ``pick.RULE``'s order, then the rest by bound), the same as
``planning.check`` plays for one budget, less those that serve nothing (their bound is 0: the weights do not fit,
or decode makes no token). Every candidate of a group, of either mode, serves the same agents (the density of
``check.agents_for`` at the group's largest candidate), drawn once per seed of ``sim.spread.seeds_of(0, seeds)``,
with its mode's policy. Each (configuration, mode, seed) is one ``executor.RunTask``; a cell's check (a
configuration in a mode) is the mean over its seeds of each task's numbers, and the runner's order inside the group
and mode ranks the candidates by that mean steady turns/s (``RowCheck.measure``: an online check's capacity,
``planning.gridonline``). A group's modes are then ranked by their recommended splits' measures against the bounds'
ranking of their picks (:class:`ModesVerdict`), as ``plan --check`` does.

A task's key names everything its result depends on (the family's names, settings and a digest of its resolved
profiles and of the code a run depends on, the budget, P and D, the agents, the seed, the policy and the step), so a
journal or an earlier output can stand in for it (``--resume``). Not the engine: the two take the same steps and give
the same results (tests/sim/test_compiled.py), and ``--engine auto`` may choose another one when a sweep is extended.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import fmean

import numpy as np

from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import check_flag
from dualpath_plan.planning.check import POLICY, agents_for, from_zero, ranking, window_ratio
from dualpath_plan.planning.executor import Outcome, RunTask
from dualpath_plan.planning.grid import Family, Grid
from dualpath_plan.planning.pick import bounds_tie
from dualpath_plan.sim.runner import OnlineSpec, SimOptions
from dualpath_plan.sim.spread import seeds_of, spread

CHECKED_MODES = ("dualpath", "basic")
Cell = tuple[int, str]  # a configuration (grid row) in a mode


@dataclass(frozen=True)
class CheckPlan:
    """The tasks of a grid's check, and which cells (configuration, mode) each serves."""

    count: int
    seeds: tuple[int, ...]
    modes: tuple[str, ...]
    agents: dict[int, int]  # per group
    rows: tuple[Cell, ...]  # the checked cells, group after group, each mode's in its rule's order
    tasks: tuple[RunTask, ...]
    row_keys: dict[Cell, str]  # the cell's key (a task key without its seed)
    slo: OnlineSpec | None = None  # online (``planning.gridonline``): the SLO each cell's capacity is searched at; no tasks

    def task_of(self, cell: Cell, seed: int) -> str:
        return f"{self.row_keys[cell]}|seed={seed}"

    @property
    def policies(self) -> tuple[str, ...]:
        return tuple(POLICY[m] for m in self.modes)


@dataclass(frozen=True)
class RowCheck:
    """A checked configuration: its agents and seeds, the means over the seeds, and its place in the runner's order
    inside its group (0: the runner's best). Offline, the runner's measure is the steady turns/s; online
    (``capacity_aps`` given), the capacity within the SLO, and the offline numbers are None."""

    key: str
    agents: int | None
    seeds: int
    steady_turns_per_s: float | None
    turns_per_s: float | None
    jct_s: float | None
    over_bound: float | None  # the measure over its bound (online: over the bound at the SLO)
    runner_rank: int
    ci95_low: float | None = None  # the 95 % interval of the mean measure (None: one seed)
    ci95_high: float | None = None
    capacity_aps: float | None = None  # online: the mean capacity within the SLO over the seeds, agents/s
    bound_aps: float | None = None  # online: the LP bound at the SLO of the probes' turns, agents/s
    probes: int | None = None  # online: the probes of every seed's search
    every_probe_met: bool | None = None  # online: every probe kept the SLO (the capacity is within the tolerance of the bound)
    over_window_bound: float | None = None  # offline: steady turns/s over its window's own bound, mean over the seeds (check.window_ratio)
    agents_served: int | None = None  # offline: the agents the first seed's run served (``agents`` plus a trace's sub-agents)

    @property
    def online(self) -> bool:
        return self.capacity_aps is not None

    @property
    def measure(self) -> float:
        """What the runner ranks by: capacity (agents/s) online, steady turns/s offline."""
        return self.capacity_aps if self.online else self.steady_turns_per_s


@functools.cache
def code_digest() -> str:
    """A digest of the source of every module a run's result depends on (``model``, ``bounds``, ``sim``)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(p for layer in ("model", "bounds", "sim") for p in (root / layer).rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def family_key(family: Family, options: BoundOptions) -> str:
    """The family's names and settings, and a digest of its resolved profiles and of the code a run depends on: an
    edited profile file or another version makes new keys, so ``--resume`` never reuses a run made on other inputs."""
    sc = from_zero(family.scenario)  # the runs' own inputs: a trace's --time-scale does not change a check's runs
    sets = ",".join(family.scenario.overrides)
    digest = hashlib.sha256(repr((sc.pe_hw, sc.de_hw, sc.model, sc.workload, code_digest())).encode()).hexdigest()[:16]
    return (f"{sc.pe_hw.name}/{sc.de_hw.name}|{sc.model.name}|{sc.workload.name}|{sc.accounting}|set={sets}|dtype={options.dtype}"
            f"|tpot={options.decode.tpot_slo_s!r}|instance={options.decode.instance_nodes}|mtp={options.decode.mtp_drafts},"
            f"{options.decode.mtp_accepted!r}|prefill_instance={options.prefill_instance_nodes}|inputs={digest}")


def checked_cells(grid: Grid, count: int, seeds: int, modes: tuple[str, ...]) -> tuple[Cell, ...]:
    """The ``count`` best configurations of every group in each of ``modes`` that serve anything, group after group, each
    mode's in its rule's order (the flags checked first)."""
    check_flag("--check", count)
    check_flag("--seeds", seeds)
    for fam in grid.families:
        if fam.scenario.workload.hit_rate is not None:
            raise PlanError(f"--check is not allowed with hit_rate_frac ({fam.scenario.inputs}); the runner replays every turn's "
                            "whole context as hits (paper A.3): check without that --set", 2)
    cells = []
    for mode in modes:
        cols = grid.modes[mode]
        cells += [(int(r), mode) for r in np.flatnonzero((cols.rank < count) & (cols.turns_per_s > 0))]  # serving nothing: nothing to play
    return tuple(sorted(cells, key=lambda c: (int(grid.group[c[0]]), modes.index(c[1]), int(grid.modes[c[1]].rank[c[0]]))))


def plan_checks(grid: Grid, count: int, seeds: int = 1, engine: str = "python", dt_s: float | None = None,
                modes: tuple[str, ...] = CHECKED_MODES) -> CheckPlan:
    """Tasks for the ``count`` best configurations of every group in each of ``modes``, ``seeds`` seeds each."""
    cells = checked_cells(grid, count, seeds, modes)
    picked = {m: np.array([r for r, mode in cells if mode == m], dtype=np.int64) for m in modes}
    options = SimOptions.of(grid.options, engine=engine, **({} if dt_s is None else {"dt_s": dt_s}))
    largest = np.zeros(len(grid.groups), dtype=np.int64)
    for m in modes:
        np.maximum.at(largest, grid.group[picked[m]], grid.P[picked[m]] + grid.D[picked[m]])
    agents = {int(grid.group[r]): agents_for(int(largest[grid.group[r]])) for r, _ in cells}
    fam_keys = [family_key(f, grid.options) for f in grid.families]
    seed_list = seeds_of(0, seeds)
    row_keys, tasks = {}, []
    for r, mode in cells:
        g = grid.groups[int(grid.group[r])]
        P, D, policy, n = int(grid.P[r]), int(grid.D[r]), POLICY[mode], agents[int(grid.group[r])]
        sc = from_zero(grid.families[g.family].scenario.with_nodes(P, D))
        starts = "" if sc.workload.trace is None else "|starts=0"
        row_keys[(r, mode)] = f"{fam_keys[g.family]}|{g.kind}={g.amount!r}|{P}P{D}D|{policy}|agents={n}|dt={options.dt_s!r}{starts}"
        tasks += [RunTask(f"{row_keys[(r, mode)]}|seed={s}", sc, n, s, policy, replace(options, seed=s)) for s in seed_list]
    return CheckPlan(count, seed_list, tuple(modes), agents, tuple(cells), tuple(tasks), row_keys)


def with_engine(plan: CheckPlan, engine: str) -> CheckPlan:
    """The same runs on ``engine`` (the keys stay: they name no engine)."""
    if all(t.options.engine == engine for t in plan.tasks):
        return plan
    return replace(plan, tasks=tuple(replace(t, options=replace(t.options, engine=engine)) for t in plan.tasks))


def row_checks(grid: Grid, plan: CheckPlan, outcomes: dict[str, Outcome], earlier: dict[str, RowCheck] | None = None) -> dict[Cell, RowCheck]:
    """Every checked cell whose seeds have all run (or that ``earlier``, by cell key, holds with the same seeds), with
    the runner's order inside each group and mode."""
    mine: dict[Cell, tuple] = {}
    for cell in plan.rows:
        runs = [outcomes.get(plan.task_of(cell, s)) for s in plan.seeds]
        old = (earlier or {}).get(plan.row_keys[cell])
        if all(runs):
            jcts = [o.jct_s for o in runs]
            band = spread([o.steady_turns_per_s for o in runs])
            bound = float(grid.modes[cell[1]].turns_per_s[cell[0]])
            mine[cell] = (band.mean, fmean(o.turns_per_s for o in runs), None if None in jcts else fmean(jcts),
                          band.mean / bound if bound > 0 else None, band.low, band.high, window_ratio(runs), runs[0].agents)
        elif old is not None and old.seeds == len(plan.seeds):
            mine[cell] = (old.steady_turns_per_s, old.turns_per_s, old.jct_s, old.over_bound, old.ci95_low, old.ci95_high, old.over_window_bound,
                          old.agents_served)
    return with_ranks(grid, plan, {c: RowCheck(plan.row_keys[c], plan.agents[int(grid.group[c[0]])], len(plan.seeds), steady, whole, jct, over, 0,
                                            low, high, over_window_bound=window, agents_served=served)
                                   for c, (steady, whole, jct, over, low, high, window, served) in mine.items()})


def with_ranks(grid: Grid, plan: CheckPlan, checks: dict[Cell, RowCheck]) -> dict[Cell, RowCheck]:
    """``checks`` with each one's place in the runner's order inside its group and mode: by measure, best first (ties:
    the bound's order)."""
    out, place_of = {}, {c: i for i, c in enumerate(plan.rows)}
    for own in _by_group(grid, checks).values():
        for place, c in enumerate(sorted(own, key=lambda c: (-checks[c].measure, place_of[c]))):
            out[c] = replace(checks[c], runner_rank=place)
    return out


@dataclass(frozen=True)
class Verdict:
    """A group's runner check, as ``planning.check`` gives one: the pick's row, the runner's best, how far it leads,
    whether the runner agrees (its best within the tolerance of the pick) and the row recommended (the pick, unless a
    candidate leads by more than the tolerance with 95 % intervals apart: several seeds only)."""

    pick: int
    best: int
    lead_frac: float
    agrees: bool
    recommended: int
    alone: bool = False  # the pick was the group's only candidate checked


@dataclass(frozen=True)
class ModesVerdict:
    """A group's modes ranked by the runner (each by its recommended split's ``RowCheck.measure``) against the bounds
    (each by its pick's bound, at the SLO online): ``confirms`` when the two orders agree."""

    bound_order: tuple[str, ...]
    runner_order: tuple[str, ...]
    best: dict[str, int]  # each mode's recommended configuration (grid row)
    bounds_tie: bool = False  # the first two modes' picks have the same bound: no order contradicts them
    picks: dict[str, int] = field(default_factory=dict)  # each mode's pick (grid row), whose bounds the bounds' order ranks

    @property
    def confirms(self) -> bool:
        return self.bounds_tie or self.bound_order == self.runner_order


def _by_group(grid: Grid, cells) -> dict[tuple[int, str], list[Cell]]:
    out: dict[tuple[int, str], list[Cell]] = {}
    for c in cells:
        out.setdefault((int(grid.group[c[0]]), c[1]), []).append(c)
    return out


def verdicts(grid: Grid, checks: dict[Cell, RowCheck]) -> dict[tuple[int, str], Verdict]:
    """Every checked group's verdict in each mode, by (group, mode)."""
    out = {}
    for (group, mode), own in _by_group(grid, checks).items():
        if (v := _verdict({r: checks[(r, mode)] for r, _ in own}, grid, mode)) is not None:
            out[(group, mode)] = v
    return out


def modes_verdicts(grid: Grid, checks: dict[Cell, RowCheck]) -> dict[int, ModesVerdict]:
    """Every group checked in more than one mode: the runner's order of its modes against the bounds'."""
    by_group: dict[int, dict[str, Verdict]] = {}
    for (group, mode), v in verdicts(grid, checks).items():
        by_group.setdefault(group, {})[mode] = v
    out = {}
    for group, own in by_group.items():
        if len(own) > 1:
            bounds = {m: _bound_of(grid, checks[(own[m].pick, m)], own[m].pick, m) for m in own}
            bound = tuple(sorted(own, key=lambda m: -bounds[m]))
            runner = tuple(sorted(own, key=lambda m: -checks[(own[m].recommended, m)].measure))
            out[group] = ModesVerdict(bound, runner, {m: v.recommended for m, v in own.items()}, bounds_tie(bounds[bound[0]], bounds[bound[1]]),
                                      {m: v.pick for m, v in own.items()})
    return out


def _bound_of(grid: Grid, check: RowCheck, row: int, mode: str) -> float:
    """The bound a check's measure is ranked against: the bound at the SLO online (in the search's own terms), else the grid's."""
    return check.bound_aps if check.online else float(grid.modes[mode].turns_per_s[row])


def _verdict(mine: dict[int, RowCheck], grid: Grid, mode: str) -> Verdict | None:
    """The verdict of one group's checks in ``mode`` (None when its pick was not checked)."""
    rows = sorted(mine, key=lambda r: int(grid.modes[mode].rank[r]))  # the bound's order, the pick first
    if int(grid.modes[mode].rank[rows[0]]) != 0:
        return None
    r = ranking([mine[x].measure for x in rows], [mine[x].ci95_low for x in rows], [mine[x].ci95_high for x in rows])
    return Verdict(rows[0], rows[r.best], r.lead_frac, r.agrees, rows[r.recommended], len(mine) == 1)


def pending(plan: CheckPlan, outcomes: dict[str, Outcome], earlier: dict[str, RowCheck] | None = None) -> list[RunTask]:
    """The tasks still to run: neither in ``outcomes`` nor covered by an ``earlier`` configuration check."""
    covered = {key for key, old in (earlier or {}).items() if old.seeds == len(plan.seeds)}
    return [t for t in plan.tasks if t.key not in outcomes and t.key.rpartition("|seed=")[0] not in covered]
