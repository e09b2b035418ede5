"""``sweep --check K --online`` on a grid: the capacity within the SLO of the K best configurations of each group, in
each mode, the probes of every search run side by side on the executor's workers.

The cells are the offline check's (``gridcheck.checked_cells``: a configuration in a mode, DualPath and basic). Each
cell, once per seed of ``sim.spread.seeds_of(0, seeds)``, is one capacity search as ``plan --check K --online`` makes
it (``planning.online``: the online method of ``simulate --find-capacity``, the bracket of ``sim.search``, TTFT at most
``--ttft-slo-s``, 4 s by default, and TPOT at most the grid's ``--tpot-slo-ms``), and all searches advance together in
rounds (``online.search_rounds``), the executor's workers shared out over the unfinished ones. A cell's check is the
mean capacity over its seeds (``gridcheck.RowCheck`` with ``capacity_aps``), over the LP bound at the SLO of the probes'
turns; the runner's order inside a group and mode ranks the cells by it, and a group's modes are ranked by their
recommended splits' capacities against their picks' bounds at the SLO (``gridcheck.modes_verdicts``).

A probe's key names everything its result depends on: the cell's key (as the offline check's, with the SLO, the
search's tolerance and the step instead of the agents), its seed and its rate. A probe's rate depends only on the
probes before it and on the workers, so a journal (``--resume``) stands in for every probe it holds: resumed with the
same workers, a search asks the same rates again and runs only those the journal lacks; with other workers it asks
other rates and keeps those that match.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.workload import source_of
from dualpath_plan.planning.check import POLICY
from dualpath_plan.planning.executor import Outcome, RunTask, check_executor, compile_once, resolve_engine, run_tasks, workers
from dualpath_plan.planning.gridcheck import CHECKED_MODES, Cell, CheckPlan, RowCheck, checked_cells, family_key, with_ranks
from dualpath_plan.planning.gridsweep import GridSweep, same_sweep
from dualpath_plan.planning.online import Search, Searched, bound_aps, search_rounds, slo_of
from dualpath_plan.sim.runner import OnlineSpec, SimOptions, probe_spec
from dualpath_plan.sim.search import Bracket
from dualpath_plan.sim.spread import seeds_of

REL_TOL = 0.05  # the search's tolerance, as plan --check --online and simulate --find-capacity
MAX_ROUNDS = 12


def plan_online(sweep: GridSweep, count: int, seeds: int, slo: OnlineSpec, dt_s: float | None = None,
                modes: tuple[str, ...] = CHECKED_MODES, rel_tol: float = REL_TOL) -> CheckPlan:
    """The cells of an online check and their keys (no tasks: a search makes its probes as it goes)."""
    grid = sweep.grid
    cells = checked_cells(grid, count, seeds, modes)
    dt = (SimOptions() if dt_s is None else SimOptions(dt_s=dt_s)).dt_s
    fam_keys = [family_key(f, grid.options) for f in grid.families]
    row_keys = {}
    for r, mode in cells:
        g = grid.groups[int(grid.group[r])]
        row_keys[(r, mode)] = (f"{fam_keys[g.family]}|{g.kind}={g.amount!r}|{int(grid.P[r])}P{int(grid.D[r])}D|{POLICY[mode]}|online"
                               f"|ttft={slo.ttft_slo_s!r}|tpot={slo.tpot_slo_s!r}|tol={rel_tol!r}|dt={dt!r}")
    return CheckPlan(count, seeds_of(0, seeds), tuple(modes), {}, cells, (), row_keys, slo)


def _searches(sweep: GridSweep, plan: CheckPlan, skip: set[Cell], engine: str, dt_s: float | None, rel_tol: float,
              max_rounds: int) -> list[Search]:
    """A search for every cell not in ``skip``, once per seed, named by the cell's key and the seed."""
    grid, out, sources = sweep.grid, [], {}
    for r, mode in plan.rows:
        if (r, mode) in skip:
            continue
        fam = grid.families[grid.groups[int(grid.group[r])].family]
        workload = fam.scenario.workload  # by value: a --set on the workload keeps its name and changes its data set
        if workload not in sources:
            source = source_of(workload, None)
            sources[workload] = (source, probe_spec(source, plan.slo))
        source, spec = sources[workload]
        sim = SimOptions.of(grid.options, engine=engine, **({} if dt_s is None else {"dt_s": dt_s}))
        sc = fam.scenario.with_nodes(int(grid.P[r]), int(grid.D[r]))
        ceiling = bound_aps(sc, source, mode, spec, sim)
        out += [Search(f"{plan.row_keys[(r, mode)]}|seed={s}", mode, r, s, sc, Bracket(ceiling, rel_tol, max_rounds), spec, replace(sim, seed=s))
                for s in plan.seeds]
    return out


def checked_online(sweep: GridSweep, count: int, seeds: int = 1, *, ttft_slo_s: float | None = None, engine: str = "auto",
                   executor: str = "local", jobs: int | None = None, address: str | None = None, done: dict[str, Outcome] | None = None,
                   earlier: dict[str, RowCheck] | None = None, on_done: Callable[[Outcome], None] | None = None,
                   on_compile: Callable[[], None] | None = None, on_round: Callable[[int, int], None] | None = None,
                   dt_s: float | None = None, width: int | None = None, rel_tol: float = REL_TOL, max_rounds: int = MAX_ROUNDS) -> GridSweep:
    """``sweep`` with each group's ``count`` best configurations' capacities within the SLO, in each mode. ``done`` (probe
    outcomes by key) and ``earlier`` (cell checks by key, with the same seeds) are kept from an interrupted or earlier
    sweep; ``on_round(round, probes)`` hears each round as it starts, ``on_done`` each probe as it finishes; ``width``:
    the probes of a round (default: the executor's workers)."""
    check_executor(executor, jobs, address)
    if ttft_slo_s is not None:
        check_flag("--ttft-slo-s", ttft_slo_s)
    plan = plan_online(sweep, count, seeds, slo_of(sweep.grid.options, ttft_slo_s), dt_s, rel_tol=rel_tol)
    names = {f"{key}|seed={s}" for key in plan.row_keys.values() for s in plan.seeds}  # a search's name: its probes' keys less the rate
    same_sweep(plan, {key.rpartition("|aps=")[0] for key in done or {}}, names, earlier or {})
    kept_cells = {c for c in plan.rows if (old := (earlier or {}).get(plan.row_keys[c])) is not None and old.online
                  and old.seeds == len(plan.seeds)}
    chosen = resolve_engine(engine)  # a probe's turns follow its rate: auto takes the compiled engine unless numba is missing
    searches = _searches(sweep, plan, kept_cells, chosen, dt_s, rel_tol, max_rounds)
    kept, compiled = dict(done or {}), []

    def play_round(tasks: list[RunTask]) -> dict[str, Outcome]:
        todo = [t for t in tasks if t.key not in kept]
        if todo and chosen == "compiled" and executor == "local" and not compiled:  # a Ray worker compiles on its own machine
            compile_once(on_compile)
            compiled.append(True)
        kept.update(run_tasks(todo, executor, jobs, address, on_done))
        return {t.key: kept[t.key] for t in tasks}

    width = workers(executor, jobs, address) if width is None else width
    searches, _, _ = search_rounds(searches, width, play_round, on_round)
    checks = {c: earlier[plan.row_keys[c]] for c in kept_cells} | _cell_checks(plan, searches)
    return replace(sweep, plan=plan, checks=with_ranks(sweep.grid, plan, checks))


def _cell_checks(plan: CheckPlan, searches: list[Search]) -> dict[Cell, RowCheck]:
    """Each searched cell's check: the mean capacity over its seeds, its interval, and its bound at the SLO."""
    by_cell: dict[Cell, list[Bracket]] = {}
    for s in searches:
        by_cell.setdefault((s.index, s.mode), []).append(s.bracket)
    out = {}
    for cell, brackets in by_cell.items():
        c = Searched(None, tuple(brackets), (), 1.0)  # the numbers of one candidate's searches, as plan --check --online gives them
        band = c.spread
        out[cell] = RowCheck(plan.row_keys[cell], None, len(brackets), None, None, None, c.over_bound, 0, band.low, band.high,
                             c.capacity_aps, c.bound_aps, c.probes, c.every_probe_met)
    return out
