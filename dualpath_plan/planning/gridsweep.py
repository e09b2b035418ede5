"""A whole sweep: the axes resolved into a grid, bounded in closed form (``grid``), priced, optionally checked
against HiGHS on a sample (``grid.lp_reference``) and by the runner on each group's best (``gridcheck``, on an
``executor``).

Prices: a money budget's basis prices every configuration (``--price``/``--rent`` or the profiles' own, all
required); a node or GPU budget prices the configurations whose node types have a price on the basis
``money.money_basis`` chooses (purchase when every type has one, else rent when some type has a rent and none a
purchase price), the others have no cost.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.axes import BUDGETS, Axes, read_scenario, set_axis, spread_values
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import MAX_NODES, check_flag
from dualpath_plan.model.money import BASES, PURCHASE, Basis, money_basis
from dualpath_plan.planning.executor import Outcome, compile_once, resolve_engine, run_tasks
from dualpath_plan.planning.grid import Grid, LpCheck, evaluate, families_of, groups_of, lp_reference, sample_rows
from dualpath_plan.planning.gridcheck import Cell, CheckPlan, RowCheck, pending, plan_checks, row_checks, with_engine
from dualpath_plan.planning.request import one_of
from dualpath_plan.planning.sweep import DEFAULT_GPUS

_FILE_BUDGET = {kind: b.key for kind, b in BUDGETS.items()}  # kind -> scenario file key
_FLAG_OF = {"profiles": "--profile", "pairs": "--pe-profile/--de-profile", "models": "--model", "workloads": "--workload", "set": "--set",
            "accounting": "--accounting", "nodes": "--nodes", "gpus": "--gpus", "budget_usd": "--budget-usd",
            "budget_usd_per_hour": "--budget-usd-per-hour", "storage": "--storage", "storage_nodes": "--storage-nodes"}


@dataclass(frozen=True)
class GridSweep:
    """A sweep over any axes: the grid bounded in closed form, priced, and optionally checked.

    What :func:`dualpath_plan.grid_sweep` returns, and :func:`dualpath_plan.check_grid` with the runner's checks added;
    :func:`dualpath_plan.write_rows` writes it one row per configuration and mode.

    Attributes:
        axes: The sweep's axes as resolved (``model.axes.Axes``: hardware profiles or (PE, DE) pairs, models, workloads,
            accounting, one budget axis and its values, the ``--set`` axes).
        grid: Every configuration of every group and its bound per mode, as arrays (``planning.grid.Grid``; costs in
            the budget's unit, bounds in turns/s).
        basis: ``purchase`` or ``rent``, the basis its prices are on (``model.money.BASES``).
        prices: Per family (hardware, model, workload and ``--set`` values), one PE node's and one DE node's price in the
            basis' unit (USD or USD/h), ``None`` where a node type has none.
        lp: The HiGHS check of a sample (``--lp-sample``; ``planning.grid.LpCheck``: configurations, largest relative
            difference, binding sets that differ), or ``None``.
        plan: What the runner check plays (``planning.gridcheck.CheckPlan``: candidates per group and mode, agents,
            seeds), or ``None`` before :func:`dualpath_plan.check_grid`.
        checks: The runner's results by (grid row, mode) (``planning.gridcheck.RowCheck``: steady and whole-run
            turns/s, JCT, ratios to the bound; online, the capacity in agents/s).
    """

    axes: Axes
    grid: Grid
    basis: str = PURCHASE.name
    prices: tuple[tuple[float | None, float | None], ...] = ()  # per family: one PE node's and one DE node's price, in money.unit
    lp: LpCheck | None = None
    plan: CheckPlan | None = None
    checks: dict[Cell, RowCheck] = field(default_factory=dict)  # by (grid row, mode)

    @property
    def money(self) -> Basis:
        return BASES[self.basis]

    def storage_prices(self, family) -> tuple[float, float]:
        """One storage node of ``family``'s storage profile: its price on the sweep's basis and its power, W (NaN where
        unknown; 0 and 0 without a storage profile)."""
        store = family.scenario.storage
        if store is None:
            return 0.0, 0.0
        price = store.price_usd if self.money is PURCHASE else store.rent_per_hour_usd
        return (np.nan if price is None else price), (np.nan if store.node_power_W is None else store.node_power_W)

    def power_W(self, mode: str | None = None) -> np.ndarray:
        """Each configuration's power at full load, W (NaN where a node type gives no ``node_power_W``); with ``mode``,
        its storage nodes in that mode included."""
        g = self.grid
        watts = np.array([[np.nan if w is None else w for w in (f.scenario.pe_hw.node_power_W, f.scenario.de_hw.node_power_W)]
                          for f in g.families], dtype=float).reshape(-1, 2)
        fam = self._families()
        return g.P * watts[fam, 0] + g.D * watts[fam, 1] + self._storage_part(mode, 1)

    def money_cost(self, mode: str | None = None) -> np.ndarray:
        """Each configuration's cost in ``money.unit`` (NaN where a node type has no price); with ``mode``, its storage
        nodes in that mode included (NaN where the storage profile has no price)."""
        g = self.grid
        pairs = self.prices or ((None, None),) * len(g.families)  # no prices given: nothing has a cost
        price = np.array([[np.nan if p is None else p for p in pair] for pair in pairs], dtype=float).reshape(-1, 2)
        fam = self._families()
        return g.P * price[fam, 0] + g.D * price[fam, 1] + self._storage_part(mode, 0)

    def _families(self) -> np.ndarray:
        return np.array([grp.family for grp in self.grid.groups])[self.grid.group]

    def _storage_part(self, mode: str | None, which: int) -> np.ndarray:
        """Each configuration's storage nodes in ``mode`` times one storage node's price (``which`` 0) or power (1); 0
        without a mode or a storage profile."""
        g = self.grid
        if mode is None:
            return np.zeros(g.size)
        per_node = np.array([self.storage_prices(f)[which] for f in g.families], dtype=float)[self._families()]
        nodes = g.modes[mode].storage_nodes
        with np.errstate(invalid="ignore"):
            return np.where(nodes > 0, nodes * per_node, 0.0)


def _values(flag: str, given, whole: bool) -> tuple:
    """A budget axis from a flag's text (``model.axes.spread_values``) or a sequence of numbers (the API)."""
    if isinstance(given, str):
        return spread_values(flag, given, whole)
    values = list(given) if isinstance(given, Iterable) else [given]  # a list, a range, a numpy array, or one number
    texts = [repr(float(v)) if isinstance(v, (float, np.floating)) else str(v) for v in values]
    return spread_values(flag, ",".join(texts), whole) if texts else ()


def make_axes(profiles: Sequence[str] = (), pairs: Sequence[tuple[str, str]] = (), models: Sequence[str] = (), workloads: Sequence[str] = (),
              budgets: dict[str, object] | None = None, sets: Sequence[str] = (), scenario: Path | None = None, accounting: str | None = None,
              profile_files: tuple = (), storage: str | None = None, storage_nodes=None, storage_retention_s: float = 0.0) -> Axes:
    """The sweep's axes from flags (``budgets`` by kind: nodes, gpus, usd, usd_per_hour; text or numbers) and a scenario file,
    one source per axis; defaults: every known hardware profile, the default model and workload, 48 GPUs. ``storage``: a
    storage profile, ``storage_nodes`` its node counts (text or numbers; an axis), ``storage_retention_s`` (a flag)."""
    from_file = read_scenario(scenario) if scenario is not None else {}
    given = {k: v for k, v in (budgets or {}).items() if v is not None}
    flags = {"profiles": tuple(profiles), "pairs": tuple(pairs), "models": tuple(models), "workloads": tuple(workloads), "set": tuple(sets),
             "accounting": accounting, "storage": storage, "storage_nodes": storage_nodes, **{_FILE_BUDGET[k]: v for k, v in given.items()}}
    flags = {k: (v if isinstance(v, str) or v is None else tuple(v) if isinstance(v, Iterable) else v) for k, v in flags.items()}
    for key, value in flags.items():
        if key in from_file and value is not None and value != () and key != "set":  # --set: each key is its own axis
            raise PlanError(f"{_FLAG_OF.get(key, '--' + key)} is given both in --scenario {scenario} and on the command line; give each axis once", 2)
    merged = {**{k: v for k, v in flags.items() if v is not None and v != ()}, **from_file}
    one_of({_FLAG_OF[k]: merged.get(k) for k in _FILE_BUDGET.values()}, "budget axis")
    kind = next((k for k, v in _FILE_BUDGET.items() if v in merged), "gpus")
    with _named(scenario if _FILE_BUDGET[kind] in from_file else None):
        amounts = _values(BUDGETS[kind].flag, merged.get(_FILE_BUDGET[kind], (DEFAULT_GPUS,)), kind in ("nodes", "gpus"))
    with _named(scenario if "set" in from_file else None):
        file_sets = tuple(set_axis(text) for text in from_file.get("set", ()))
    flag_sets = tuple(set_axis(text) for text in flags["set"] or ())
    set_axes, merged["set"] = file_sets + flag_sets, tuple(from_file.get("set", ())) + tuple(flags["set"] or ())
    if both := sorted({k for k, _ in file_sets} & {k for k, _ in flag_sets}):
        raise PlanError(f"--set {both[0]} is given both in --scenario {scenario} and on the command line; give each key once", 2)
    if twice := sorted({k for k, _ in set_axes if [key for key, _ in set_axes].count(k) > 1}):
        raise PlanError(f"--set {twice[0]} is given more than once; give each key once (a list or range makes it an axis)", 2)
    with _named(scenario):
        _check_file_names(from_file, tuple(profile_files))
    hardware = tuple(merged.get("profiles", ()))
    pairs_ = tuple(tuple(pair) for pair in merged.get("pairs", ()))
    for flag, names in (("--profile", hardware), ("--model", merged.get("models", ())), ("--workload", merged.get("workloads", ())),
                        ("--pe-profile/--de-profile", pairs_)):  # from the flags or the file
        if twice := sorted({n for n in names if list(names).count(n) > 1}):
            raise PlanError(f"{flag} {twice[0] if isinstance(twice[0], str) else '/'.join(twice[0])} is given twice; give each once", 2)
    if not hardware and not pairs_:
        from dualpath_plan.model.profiles import catalog

        hardware = tuple(catalog(tuple(profile_files)).names("hardware"))
    with _named(scenario if "storage_nodes" in from_file else None):
        counts = _values("--storage-nodes", merged["storage_nodes"], True) if "storage_nodes" in merged else ()
    for count in counts:
        check_flag("--storage-nodes", count)
    if counts and "storage" not in merged:
        raise PlanError("--storage-nodes is not allowed without --storage; name a storage profile", 2)
    check_flag("--storage-retention-s", storage_retention_s)
    return Axes(hardware, pairs_, tuple(merged.get("models", ())), tuple(merged.get("workloads", ())), merged.get("accounting"), kind,
                amounts, set_axes, _typed(set_axes, merged.get("set", ()), len(file_sets), scenario), merged.get("storage"),
                tuple(int(c) for c in counts), float(storage_retention_s), str(scenario) if "storage_nodes" in from_file else None)


_FILE_KINDS = {"profiles": "hardware", "models": "model", "workloads": "workload"}


def _check_file_names(from_file: dict, profile_files: tuple) -> None:
    """Refuse a scenario file's unknown profile, model, workload, storage profile or accounting here, so that the error
    names the file (:func:`_named`) and not the flag the value stands in for."""
    from dualpath_plan.model.cluster import ACCOUNTINGS
    from dualpath_plan.model.profiles import catalog

    if (accounting := from_file.get("accounting")) is not None and accounting not in ACCOUNTINGS:
        raise PlanError(f"accounting {accounting!r} is not allowed; must be one of {', '.join(ACCOUNTINGS)}", 2)
    from dualpath_plan.model.workload import is_trace_name

    named = [(kind, name) for key, kind in _FILE_KINDS.items() for name in from_file.get(key, ())
             if not (kind == "workload" and is_trace_name(name))]  # a trace is read where its scenario is built
    named += [("hardware", name) for pair in from_file.get("pairs", ()) for name in pair]
    named += [("storage", from_file["storage"])] if "storage" in from_file else []
    if named:
        known = catalog(profile_files)
        for kind, name in named:
            known.get(kind, name)


def _typed(set_axes, texts, from_file: int, scenario: Path | None) -> tuple[tuple[str, str], ...]:
    """Each ``--set`` axis as typed, for messages: the first ``from_file`` came from the scenario file's ``[set]``."""
    return tuple((key, text if i >= from_file else f"{text} in --scenario {scenario}") for i, ((key, _), text) in enumerate(zip(set_axes, texts)))


@contextlib.contextmanager
def _named(scenario: Path | None):
    """A value's error names the scenario file it came from (none when it came from a flag)."""
    try:
        yield
    except PlanError as exc:
        if scenario is None:
            raise
        raise PlanError(f"--scenario {scenario}: {exc}", exc.exit_code) from None


SIDE_PRICES = tuple(basis.field for basis in BASES.values())  # a node's price on each basis


def is_single(axes: Axes) -> bool:
    """One budget of GPUs, USD or USD/h over homogeneous profiles, one model, workload and ``--set`` value, and no node
    price set on one side only (``de.rent_per_node_hour_usd``: ``planning.sweep`` prices both sides alike, the grid each
    side): the sweep ``planning.sweep`` answers with its per-profile table and plot."""
    one_side = any(key.split(".", 1)[-1] in SIDE_PRICES and "." in key for key, _ in axes.sets)
    return (len(axes.budgets) == 1 and axes.budget_kind in ("gpus", "usd", "usd_per_hour") and not axes.pairs and len(axes.models) <= 1
            and len(axes.workloads) <= 1 and all(len(v) == 1 for _, v in axes.sets) and axes.storage is None and not one_side)


def single_sweep(axes: Axes, options: BoundOptions = BoundOptions(), profile_files: tuple = (), prices_usd: dict[str, float] | None = None,
                 rents_usd_per_hour: dict[str, float] | None = None):
    """A sweep :func:`is_single` holds, as ``planning.sweep`` answers it: one budget per homogeneous profile, with its
    per-profile table, JSON and plot."""
    from dualpath_plan.planning.sweep import priced_sweep

    scenarios = [f.scenario for f in families_of(axes, profile_files)]  # one family per profile here
    amount, kind = axes.budgets[0], axes.budget_kind
    return priced_sweep(scenarios, int(amount) if kind == "gpus" else None, options, budget_usd=amount if kind == "usd" else None,
                        budget_usd_per_hour=amount if kind == "usd_per_hour" else None, prices_usd=prices_usd, rents_usd_per_hour=rents_usd_per_hour)


def check_budgets(kind: str, amounts: tuple[float, ...]) -> None:
    """Each budget value in its flag's range (a node budget: at most ``MAX_NODES``, the most one sweep cluster has)."""
    flag = BUDGETS[kind].flag
    for amount in amounts:
        if kind == "nodes":
            if not (isinstance(amount, int) and 1 <= amount <= MAX_NODES):
                raise PlanError(f"--nodes = {amount} nodes is not allowed; must be a whole number >= 1 and <= {MAX_NODES} (the most "
                                "nodes of one sweep cluster)", 2)
        else:
            check_flag(flag, amount)


def build(axes: Axes, options: BoundOptions = BoundOptions(), profile_files: tuple = (), fixed_sets: tuple[str, ...] = (),
          prices_usd: dict[str, float] | None = None, rents_usd_per_hour: dict[str, float] | None = None,
          lp_sample: float | None = None) -> GridSweep:
    """Resolve ``axes`` (every family, every budget) and bound the grid; ``lp_sample``: the share of configurations to
    solve again with HiGHS."""
    kind = axes.budget_kind or "gpus"
    check_budgets(kind, axes.budgets)
    families = families_of(axes, profile_files, fixed_sets)
    hardware = [hw for f in families for hw in (f.scenario.pe_hw, f.scenario.de_hw)]
    basis = money_basis(kind if kind in ("usd", "usd_per_hour") else None, list(prices_usd or ()), list(rents_usd_per_hour or ()), hardware,
                        every=False)
    given = (prices_usd if basis is PURCHASE else rents_usd_per_hour) or {}
    groups = groups_of(families, kind, axes.budgets, given, axes.storage_nodes)
    known = tuple(tuple(given.get(hw.name, basis.price(hw)) for hw in (f.scenario.pe_hw, f.scenario.de_hw)) for f in families)  # after --set
    grid = evaluate(families, groups, options)
    lp = None
    if lp_sample is not None:
        check_flag("--lp-sample", lp_sample)
        lp = lp_reference(grid, sample_rows(grid, lp_sample))
    return GridSweep(axes, grid, basis.name, known, lp)


def _python_s(grid: Grid, plan: CheckPlan) -> float:
    """The Python engine's estimated wall time for every run of ``plan`` (``compiled_run.python_estimate_s``)."""
    from dualpath_plan.sim.compiled.run import python_estimate_s

    dt = plan.tasks[0].options.dt_s if plan.tasks else 0.0
    total = 0.0
    for r, mode in plan.rows:
        turns = plan.agents[int(grid.group[r])] * float(grid.turns_per_agent[r])
        total += len(plan.seeds) * python_estimate_s(int(turns), turns / float(grid.modes[mode].turns_per_s[r]), dt)
    return total


def checked(sweep: GridSweep, count: int, seeds: int = 1, *, engine: str = "auto", executor: str = "local", jobs: int | None = None,
            address: str | None = None, done: dict[str, Outcome] | None = None, earlier: dict[str, RowCheck] | None = None,
            on_done: Callable[[Outcome], None] | None = None, on_compile: Callable[[], None] | None = None,
            on_start: Callable[[int], None] | None = None, dt_s: float | None = None) -> GridSweep:
    """``sweep`` with the runner on the ``count`` best configurations of each group. ``done`` (task outcomes by key) and
    ``earlier`` (configuration checks by key) are results kept from an interrupted or earlier sweep: only the rest run.
    ``on_start(n)`` hears how many tasks will run; ``on_done`` each outcome as it finishes."""
    from dualpath_plan.planning.executor import check_executor

    check_executor(executor, jobs, address)
    plan = plan_checks(sweep.grid, count, seeds, "python", dt_s)  # its keys name no engine: one plan serves either
    chosen = resolve_engine(engine, lambda: _python_s(sweep.grid, plan))
    plan = with_engine(plan, chosen)
    same_sweep(plan, done or {}, {t.key for t in plan.tasks}, earlier or {})
    kept = dict(done or {})
    todo = pending(plan, kept, earlier)
    if todo and chosen == "compiled" and executor == "local":  # a Ray worker loads or compiles it on its own machine
        compile_once(on_compile)
    kept |= run_tasks(todo, executor, jobs, address, on_done, on_start)
    return GridSweep(sweep.axes, sweep.grid, sweep.basis, sweep.prices, sweep.lp, plan, row_checks(sweep.grid, plan, kept, earlier))


def same_sweep(plan: CheckPlan, done: Iterable[str], runs: set[str], earlier: dict[str, RowCheck]) -> None:
    """Refuse to resume from runs none of which this sweep would make (``done``: the journal's run names, ``runs`` this
    sweep's), or from an output none of whose checked rows it would make: they are another sweep's (other axes,
    profiles, settings, version, or the other kind of check), and keeping nothing of them while deleting them would lose
    them silently."""
    done = set(done)
    if done and not done & runs:
        raise PlanError(f"--resume: the journal's {len(done)} runs are all of another sweep (other axes, settings, profiles, version, or "
                        "the other kind of check); give the command that wrote it, or remove the journal to start afresh", 2)
    if earlier and not set(earlier) & set(plan.row_keys.values()):
        raise PlanError(f"--resume: the output's {len(earlier)} checked rows are all of another sweep (or the other kind of check); give "
                        "the command that wrote it, or drop --resume to overwrite it", 2)
