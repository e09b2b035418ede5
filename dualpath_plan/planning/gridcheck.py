"""``sweep --check K`` on a grid: the fluid runner on the K best configurations of each group.

The candidates of a group are its first ``K`` configurations in the DualPath mode's order (``grid``: the optimal
set in ``pick.RULE``'s order, then the rest by bound), the same as ``planning.check`` plays for one budget, less
those that serve nothing (their bound is 0: the weights do not fit, or decode makes no token). They
serve the same agents (the density of ``check.agents_for`` at the group's largest candidate), drawn once per seed
of ``sim.spread.seeds_of(0, seeds)``, with the ``dualpath`` policy. Each (configuration, seed) is one
``executor.RunTask``; a configuration's check is the mean over its seeds of each task's numbers, and the runner's
order inside the group ranks the candidates by that mean steady turns/s.

A task's key names everything its result depends on (the family's names, settings and a digest of its resolved
profiles and of the code a run depends on, the budget, P and D, the agents, the seed, the policy and the step), so a
journal or an earlier output can stand in for it (``--resume``). Not the engine: the two take the same steps and give
the same results (tests/sim/test_compiled.py), and ``--engine auto`` may choose another one when a sweep is extended.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean

import numpy as np

from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import check_flag
from dualpath_plan.planning.check import POLICY, agents_for, apart, lead_frac
from dualpath_plan.planning.executor import Outcome, RunTask
from dualpath_plan.planning.grid import Family, Grid
from dualpath_plan.planning.pick import TOLERANCE_FRAC
from dualpath_plan.sim.runner import SimOptions
from dualpath_plan.sim.spread import seeds_of, spread

CHECKED_MODE = "dualpath"


@dataclass(frozen=True)
class CheckPlan:
    """The tasks of a grid's check, and which configurations (grid rows) each serves."""

    count: int
    seeds: tuple[int, ...]
    policy: str
    agents: dict[int, int]  # per group
    rows: tuple[int, ...]  # the checked configurations, group after group in the rule's order
    tasks: tuple[RunTask, ...]
    row_keys: dict[int, str]  # the configuration's key (a task key without its seed)

    def task_of(self, row: int, seed: int) -> str:
        return f"{self.row_keys[row]}|seed={seed}"


@dataclass(frozen=True)
class RowCheck:
    """A checked configuration: its agents and seeds, the means over the seeds, and its place in the runner's order
    inside its group (0: the runner's best)."""

    key: str
    agents: int
    seeds: int
    steady_turns_per_s: float
    turns_per_s: float
    jct_s: float | None
    over_bound: float | None
    runner_rank: int
    ci95_low: float | None = None  # the 95 % interval of the mean steady turns/s (None: one seed)
    ci95_high: float | None = None


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
    sc = family.scenario
    sets = ",".join(family.scenario.overrides)
    digest = hashlib.sha256(repr((sc.pe_hw, sc.de_hw, sc.model, sc.workload, code_digest())).encode()).hexdigest()[:16]
    return (f"{sc.pe_hw.name}/{sc.de_hw.name}|{sc.model.name}|{sc.workload.name}|{sc.accounting}|set={sets}|dtype={options.dtype}"
            f"|tpot={options.decode.tpot_slo_s!r}|instance={options.decode.instance_nodes}|inputs={digest}")


def plan_checks(grid: Grid, count: int, seeds: int = 1, engine: str = "python", dt_s: float | None = None) -> CheckPlan:
    """Tasks for the ``count`` best configurations of every group, ``seeds`` seeds each."""
    check_flag("--check", count)
    check_flag("--seeds", seeds)
    for fam in grid.families:
        if fam.scenario.workload.hit_rate is not None:
            raise PlanError(f"--check is not allowed with hit_rate_frac ({fam.scenario.inputs}); the runner replays every turn's "
                            "whole context as hits (paper A.3): check without that --set", 2)
    cols = grid.modes[CHECKED_MODE]
    picked = np.flatnonzero((cols.rank < count) & (cols.turns_per_s > 0))  # a split that serves nothing has nothing to play
    picked = picked[np.lexsort((cols.rank[picked], grid.group[picked]))]
    options = SimOptions(engine=engine, dtype=grid.options.dtype, decode_instance_nodes=grid.options.decode.instance_nodes,
                         **({} if dt_s is None else {"dt_s": dt_s}))
    largest = np.zeros(len(grid.groups), dtype=np.int64)
    np.maximum.at(largest, grid.group[picked], grid.P[picked] + grid.D[picked])
    agents = {int(g): agents_for(int(largest[g])) for g in np.unique(grid.group[picked])}
    fam_keys = [family_key(f, grid.options) for f in grid.families]
    policy = POLICY[CHECKED_MODE]
    seed_list = seeds_of(0, seeds)
    row_keys, tasks = {}, []
    for r in picked:
        r = int(r)
        g = grid.groups[int(grid.group[r])]
        P, D = int(grid.P[r]), int(grid.D[r])
        row_keys[r] = f"{fam_keys[g.family]}|{g.kind}={g.amount!r}|{P}P{D}D|{policy}|agents={agents[int(grid.group[r])]}|dt={options.dt_s!r}"
        sc = grid.families[g.family].scenario.with_nodes(P, D)
        tasks += [RunTask(f"{row_keys[r]}|seed={s}", sc, agents[int(grid.group[r])], s, policy, replace(options, seed=s)) for s in seed_list]
    return CheckPlan(count, seed_list, policy, agents, tuple(int(r) for r in picked), tuple(tasks), row_keys)


def with_engine(plan: CheckPlan, engine: str) -> CheckPlan:
    """The same runs on ``engine`` (the keys stay: they name no engine)."""
    if all(t.options.engine == engine for t in plan.tasks):
        return plan
    return replace(plan, tasks=tuple(replace(t, options=replace(t.options, engine=engine)) for t in plan.tasks))


def row_checks(grid: Grid, plan: CheckPlan, outcomes: dict[str, Outcome], earlier: dict[str, RowCheck] | None = None) -> dict[int, RowCheck]:
    """Every checked configuration whose seeds have all run (or that ``earlier``, by configuration key, holds with the
    same seeds), with the runner's order inside each group."""
    mine: dict[int, tuple] = {}
    for r in plan.rows:
        runs = [outcomes.get(plan.task_of(r, s)) for s in plan.seeds]
        old = (earlier or {}).get(plan.row_keys[r])
        if all(runs):
            jcts = [o.jct_s for o in runs]
            band = spread([o.steady_turns_per_s for o in runs])
            bound = float(grid.modes[CHECKED_MODE].turns_per_s[r])
            mine[r] = (band.mean, fmean(o.turns_per_s for o in runs), None if None in jcts else fmean(jcts),
                       band.mean / bound if bound > 0 else None, band.low, band.high)
        elif old is not None and old.seeds == len(plan.seeds):
            mine[r] = (old.steady_turns_per_s, old.turns_per_s, old.jct_s, old.over_bound, old.ci95_low, old.ci95_high)
    out, place_of, by_group = {}, {r: i for i, r in enumerate(plan.rows)}, _by_group(grid, mine)
    for g, own in by_group.items():
        ranked = sorted(own, key=lambda r: (-mine[r][0], place_of[r]))
        for place, r in enumerate(ranked):
            steady, whole, jct, over, low, high = mine[r]
            out[r] = RowCheck(plan.row_keys[r], plan.agents[g], len(plan.seeds), steady, whole, jct, over, place, low, high)
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


def _by_group(grid: Grid, rows) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for r in rows:
        out.setdefault(int(grid.group[r]), []).append(r)
    return out


def verdicts(grid: Grid, checks: dict[int, RowCheck]) -> dict[int, Verdict]:
    """Every checked group's verdict, by group."""
    out = {}
    for group, own in _by_group(grid, checks).items():
        if (v := _verdict({r: checks[r] for r in own}, grid)) is not None:
            out[group] = v
    return out


def _verdict(mine: dict[int, RowCheck], grid: Grid) -> Verdict | None:
    """The verdict of one group's checks (None when its pick was not checked)."""
    pick = next((r for r in mine if grid.modes[CHECKED_MODE].rank[r] == 0), None)
    if pick is None:
        return None
    best = min(mine, key=lambda r: mine[r].runner_rank)
    lead = lambda r: lead_frac(mine[r].steady_turns_per_s, mine[pick].steady_turns_per_s)  # noqa: E731
    clear = [r for r in mine if lead(r) > TOLERANCE_FRAC and apart(mine[r].ci95_low, mine[pick].ci95_high)]  # planning.check's rule
    chosen = max(clear, key=lambda r: mine[r].steady_turns_per_s) if clear else pick
    return Verdict(pick, best, lead(best), lead(best) <= TOLERANCE_FRAC, chosen, len(mine) == 1)


def pending(plan: CheckPlan, outcomes: dict[str, Outcome], earlier: dict[str, RowCheck] | None = None) -> list[RunTask]:
    """The tasks still to run: neither in ``outcomes`` nor covered by an ``earlier`` configuration check."""
    covered = {key for key, old in (earlier or {}).items() if old.seeds == len(plan.seeds)}
    return [t for t in plan.tasks if t.key not in outcomes and t.key.rpartition("|seed=")[0] not in covered]
