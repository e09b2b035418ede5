"""The Python API: every command's computation without the command line.

Each function takes the same inputs as its command (profile names, ``--set`` texts, flag values) and
returns the frozen record that command renders; :func:`to_dict` turns any of them into exactly the
dictionary the command prints with ``--json``. Heavy imports (scipy's solver, sympy, numba) happen
inside the functions that need them, as in the command line, so ``import dualpath_plan`` stays cheap.

    >>> import dualpath_plan as dp
    >>> sc = dp.scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=2, D=4)
    >>> round(dp.bottleneck(sc).bounds["dualpath"].turns_per_s, 1)
    190.6
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Sequence

from dualpath_plan.bounds.decode import DEFAULT_TPOT_SLO_MS
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import DEFAULT_D, DEFAULT_MODEL, DEFAULT_P, DEFAULT_WORKLOAD, Scenario, build_scenario
from dualpath_plan.report.jsonable import jsonable

if TYPE_CHECKING:  # the records, for annotations only (their modules import scipy or numba lazily anyway)
    from dualpath_plan.bounds.lp import Bound, BoundOptions
    from dualpath_plan.bounds.symbolic import FormulaSheet
    from dualpath_plan.calibration.calibrate import Calibration
    from dualpath_plan.model.profiles import Catalog, Workload
    from dualpath_plan.model.trace.convert import Report as TraceReport
    from dualpath_plan.model.trace.ops import TraceSummary
    from dualpath_plan.planning.analysis import Analysis
    from dualpath_plan.planning.compare import Comparison
    from dualpath_plan.planning.plan import ModePlan
    from dualpath_plan.planning.request import PlanRequest
    from dualpath_plan.planning.sweep import SweepResult
    from dualpath_plan.planning.tier import TierPlan
    from dualpath_plan.planning.gridsweep import GridSweep
    from dualpath_plan.sim.runner import Capacity, SimResult
    from dualpath_plan.sim.spread import Repeated
    from dualpath_plan.planning.check import ModesCheck, RunnerCheck
    from dualpath_plan.planning.online import OnlineCheck
    from dualpath_plan.planning.pick import OptimalSet
    from dualpath_plan.model.workload import Trajectories
    from dualpath_plan.validation import Validation


@dataclass(frozen=True)
class PlanResult:
    """What ``plan`` answers: the checked request and one answer per mode.

    What :func:`dualpath_plan.plan` returns; :meth:`to_dict` gives ``plan --json``.

    Attributes:
        request: The request as checked (:class:`~dualpath_plan.planning.request.PlanRequest`).
        answers: Per mode (``basic``, ``dualpath``), the answer (:class:`~dualpath_plan.planning.plan.ModePlan`).
        tiers: With a DRAM tier, the same question without it and the four options at equal cost
            (:class:`~dualpath_plan.planning.tier.TierPlan`); ``None`` without one.
    """

    request: PlanRequest
    answers: dict[str, ModePlan]
    tiers: TierPlan | None = None

    def to_dict(self) -> dict:
        """The dict ``plan --json`` prints."""
        from dualpath_plan.report import plan as report

        return jsonable(report.to_json(self.request, self.answers, self.tiers))


@dataclass(frozen=True)
class Simulation:
    """What ``simulate`` answers: the scenario, the agents' trajectories and one run per policy.

    What :func:`dualpath_plan.simulate` returns; :meth:`to_dict` gives ``simulate --json``.

    Attributes:
        scenario: The cluster played (:class:`~dualpath_plan.model.scenario.Scenario`).
        trajectories: The first seed's agents (:class:`~dualpath_plan.model.workload.Trajectories`).
        runs: Per policy, the first seed's run (:class:`~dualpath_plan.sim.runner.SimResult`).
        repeated: Every seed's spread (:class:`~dualpath_plan.sim.spread.Repeated`; its ``spreads`` are empty with one
            seed).
    """

    scenario: Scenario
    trajectories: Trajectories
    runs: dict[str, SimResult]
    repeated: Repeated | None = None

    def to_dict(self) -> dict:
        """The dict ``simulate --json`` prints."""
        from dualpath_plan.report import simulate as report

        return jsonable(report.to_json(self.scenario, self.trajectories, self.runs, self.repeated))


@dataclass(frozen=True)
class CapacitySearch:
    """What ``simulate --find-capacity`` answers: the highest arrival rate within the SLO, with its probes.

    What :func:`dualpath_plan.find_capacity` returns; :meth:`to_dict` gives ``simulate --find-capacity --json``.

    Attributes:
        scenario: The cluster searched (:class:`~dualpath_plan.model.scenario.Scenario`).
        trajectories: The trajectories each probe's agents are drawn from: the workload's data set or a trace
            (:class:`~dualpath_plan.model.workload.Trajectories`).
        capacity: The search's result (:class:`~dualpath_plan.sim.runner.Capacity`).
    """

    scenario: Scenario
    trajectories: Trajectories
    capacity: Capacity

    def to_dict(self) -> dict:
        """The dict ``simulate --find-capacity --json`` prints."""
        from dualpath_plan.report import simulate as report

        return jsonable(report.capacity_json(self.scenario, self.trajectories, self.capacity))


def scenario(profile: str | None = "hopper", *, model: str = DEFAULT_MODEL, workload: str = DEFAULT_WORKLOAD,
             P: int = DEFAULT_P, D: int = DEFAULT_D, accounting: str = "exact", pe_profile: str | None = None,
             de_profile: str | None = None, profile_files: Sequence[str | Path] = (), sets: Sequence[str] = (),
             storage: str | None = None, storage_nodes: int | None = None, storage_retention_s: float = 0.0,
             dram_tier_GB: float | None = None) -> Scenario:
    """A checked scenario: ``P`` prefill and ``D`` decode nodes of a hardware profile (or ``pe_profile`` /
    ``de_profile`` per side), serving ``model`` on ``workload``. ``sets`` are ``--set KEY=VALUE`` texts
    (``pe.``/``de.`` prefixes for one side); ``profile_files`` are extra TOML profiles. ``storage``: a storage profile
    behind the storage NICs (``--storage``), of ``storage_nodes`` nodes (``None``: planned by :func:`bottleneck`), keeping
    an agent's KV ``storage_retention_s`` seconds after its last turn; ``None``: unlimited storage. ``dram_tier_GB``: GB of
    host DRAM per node pooled as a KV cache (``--dram-tier``; :func:`bottleneck` compares it with DualPath)."""
    return build_scenario(profile, model=model, workload=workload, P=P, D=D, accounting=accounting, pe_profile=pe_profile, de_profile=de_profile,
                          profile_files=tuple(Path(f) for f in profile_files), sets=tuple(sets), storage=storage,
                          storage_nodes=storage_nodes, storage_retention_s=storage_retention_s, dram_tier_GB=dram_tier_GB)


def bound_options(dtype: str | None = None, tpot_slo_ms: float = DEFAULT_TPOT_SLO_MS,
                  decode_instance_nodes: int | None = None, mtp: int = 0, mtp_accepted: float | None = None,
                  prefill_instance_nodes: int | None = None) -> BoundOptions:
    """The bound's choices beyond the scenario (``--dtype``, ``--tpot-slo-ms``, ``--decode-instance-nodes``, ``--mtp``,
    ``--mtp-accepted``, ``--prefill-instance-nodes``)."""
    from dualpath_plan.bounds.lp import BoundOptions

    return BoundOptions.parse(dtype, tpot_slo_ms, decode_instance_nodes, mtp, mtp_accepted, prefill_instance_nodes)


def bottleneck(sc: Scenario, options: BoundOptions | None = None) -> Analysis:
    """``dualpath-plan bottleneck``: the P/D range, the KV ceilings, the throughput bound of every mode
    (closed form) with its binding limits and shadow prices, and the best split of the same nodes."""
    from dualpath_plan.planning.analysis import analyze

    return analyze(sc, options or bound_options())


def bound(sc: Scenario, mode: str = "dualpath", options: BoundOptions | None = None, *, solver: str = "closed") -> Bound:
    """The throughput bound of one mode (``basic``, ``dualpath`` or ``oracle``), solved in closed form
    (``solver="closed"``, what ``bottleneck`` uses) or by the HiGHS LP (``solver="lp"``); the two agree
    (a tested invariant)."""
    from dualpath_plan.bounds.lp import limits_of

    lim = limits_of(sc, options or bound_options())
    if solver == "lp":
        from dualpath_plan.bounds.lp import solve

        return solve(lim, mode)
    if solver != "closed":
        raise PlanError(f"solver = {solver!r} is not allowed; must be 'closed' or 'lp'", 2)
    from dualpath_plan.bounds.closed_bound import solve_closed

    return solve_closed(lim, mode)


def plan(profiles: Sequence[str] = ("hopper",), *, pe_profiles: Sequence[str] = (), de_profiles: Sequence[str] = (),
         model: str = DEFAULT_MODEL, workload: str = DEFAULT_WORKLOAD, accounting: str = "exact",
         nodes: int | None = None, gpus: int | None = None, budget_usd: float | None = None, budget_usd_per_hour: float | None = None,
         target_turns_per_s: float | None = None, target_agents_per_s: float | None = None,
         node_costs: Sequence[str] | Mapping[str, float] = (), rents: Sequence[str] | Mapping[str, float] = (),
         options: BoundOptions | None = None, alternatives: int = 3,
         modes: Sequence[str] | None = None, profile_files: Sequence[str | Path] = (), sets: Sequence[str] = (),
         power_kw: float | None = None, electricity_usd_per_kwh: float | None = None, storage: str | None = None,
         storage_retention_s: float = 0.0, dram_tier_GB: float | None = None, dram_price: float | None = None,
         dram_rent: float | None = None) -> PlanResult:
    """``dualpath-plan plan``: integer P and D with the most turns/s for a budget (``nodes``,
    ``gpus``, ``budget_usd``, ``budget_usd_per_hour`` or ``power_kw``), or the cheapest cluster that reaches a target; one answer per
    mode. ``node_costs`` (``--price``) and ``rents`` (``--rent``) are ``"USD"`` or ``"NAME=USD"`` texts, or a dict of USD by
    profile as ``sweep`` takes its prices. ``dram_tier_GB``
    (``--dram-tier``) plans with a DRAM tier on every node and again without, at equal cost (``dram_price`` USD/GB or
    ``dram_rent`` USD/GB/h: what the tier's DRAM adds to a node where clusters cost money)."""
    from dualpath_plan.planning.plan import plan as solve_plan
    from dualpath_plan.planning.request import PLAN_MODES, make_request
    from dualpath_plan.planning.tier import plan_tiers

    if pe_profiles or de_profiles:
        profiles = ()
    profiles, pe_profiles, de_profiles = (_names(n) for n in (profiles, pe_profiles, de_profiles))
    request = make_request(
        profiles, pe_profiles, de_profiles, model=model, workload=workload, accounting=accounting,
        profile_files=tuple(Path(f) for f in profile_files), sets=tuple(sets), nodes=nodes, gpus=gpus, budget_usd=budget_usd,
        budget_usd_per_hour=budget_usd_per_hour, power_kw=power_kw, electricity_usd_per_kwh=electricity_usd_per_kwh, storage=storage,
        storage_retention_s=storage_retention_s, dram_tier_GB=dram_tier_GB, dram_price=dram_price, dram_rent=dram_rent,
        target_turns_per_s=target_turns_per_s,
        target_agents_per_s=target_agents_per_s, node_costs=_texts(node_costs), rents=_texts(rents),
        options=options or bound_options(), alternatives=alternatives, modes=tuple(modes or PLAN_MODES),
    )
    answers = solve_plan(request)
    return PlanResult(request, answers, plan_tiers(request, answers))


def _names(names: str | Sequence[str]) -> tuple[str, ...]:
    """Profile names as given: one name alone, or several."""
    return (names,) if isinstance(names, str) else tuple(names)


def _texts(values: str | float | Sequence[str | float] | Mapping[str, float]) -> tuple[str, ...]:
    """``--price``/``--rent`` values as the CLI takes them: ``"USD"`` or ``"NAME=USD"`` texts (a number is one price for every
    node type; a dict by profile, as ``sweep``'s ``prices_usd`` takes them, is one ``NAME=USD`` text each)."""
    if isinstance(values, Mapping):
        return tuple(f"{name}={value!r}" for name, value in values.items())
    return tuple(str(v) for v in ((values,) if isinstance(values, (str, int, float)) else values))


def _hardware_scenarios(profiles: Sequence[str] | None, profile_files: Sequence[str | Path], **scenario_args) -> list[Scenario]:
    """One homogeneous scenario per hardware profile named (default: every known one, by name)."""
    from dualpath_plan.model.profiles import catalog

    files = tuple(Path(f) for f in profile_files)
    names = list(profiles) if profiles else catalog(files).names("hardware")
    return [build_scenario(name, profile_files=files, **scenario_args) for name in names]


def sweep(profiles: Sequence[str] | None = None, *, gpus: int | None = None, model: str = DEFAULT_MODEL,
          workload: str = DEFAULT_WORKLOAD, accounting: str = "exact", options: BoundOptions | None = None,
          profile_files: Sequence[str | Path] = (), sets: Sequence[str] = (), budget_usd: float | None = None,
          prices_usd: dict[str, float] | None = None, budget_usd_per_hour: float | None = None,
          rents_usd_per_hour: dict[str, float] | None = None) -> SweepResult:
    """``dualpath-plan sweep``: the bound of every P/D split of ``gpus`` GPUs (or of the nodes ``budget_usd`` buys at
    ``prices_usd`` by profile, else the profiles' own prices; or ``budget_usd_per_hour`` rents at ``rents_usd_per_hour``,
    else the profiles' rents) for each hardware profile (default: every known one)."""
    from dualpath_plan.planning.sweep import priced_sweep

    scenarios = _hardware_scenarios(profiles, profile_files, model=model, workload=workload, accounting=accounting, sets=tuple(sets))
    return priced_sweep(scenarios, gpus, options or bound_options(), budget_usd=budget_usd, budget_usd_per_hour=budget_usd_per_hour,
                        prices_usd=prices_usd, rents_usd_per_hour=rents_usd_per_hour)


def grid_sweep(profiles: Sequence[str] | None = None, *, pairs: Sequence[tuple[str, str]] = (), models: Sequence[str] = (),
               workloads: Sequence[str] = (), nodes: str | Sequence[int] | None = None, gpus: str | Sequence[int] | None = None,
               budget_usd: str | Sequence[float] | None = None, budget_usd_per_hour: str | Sequence[float] | None = None,
               sets: Sequence[str] = (), scenario: str | Path | None = None, accounting: str | None = None, options: BoundOptions | None = None,
               profile_files: Sequence[str | Path] = (), prices_usd: dict[str, float] | None = None,
               rents_usd_per_hour: dict[str, float] | None = None, lp_sample: float | None = None, storage: str | None = None,
               storage_nodes: str | Sequence[int] | None = None, storage_retention_s: float = 0.0) -> GridSweep:
    """``dualpath-plan sweep`` over any axes: every P/D split of every budget (``nodes``, ``gpus``, ``budget_usd`` or
    ``budget_usd_per_hour``: a list, or a text such as ``"6..144"``) for every hardware profile (or (PE, DE) pair), model,
    workload and ``--set`` axis (``"snic_Gbps=400,800"``), bounded in closed form; ``scenario`` a TOML file of the same axes;
    ``lp_sample`` the share solved again with HiGHS; ``storage`` a storage profile behind the SNICs with ``storage_nodes`` its node
    counts (an axis; ``None``: each split's planned count). :func:`check_grid` adds the runner; :func:`write_rows` the files."""
    from dualpath_plan.planning import gridsweep

    files = tuple(Path(f) for f in profile_files)
    axes = gridsweep.make_axes(profiles or (), pairs, models, workloads, {"nodes": nodes, "gpus": gpus, "usd": budget_usd,
                                                                          "usd_per_hour": budget_usd_per_hour}, sets,
                               None if scenario is None else Path(scenario), accounting, files, storage, storage_nodes, storage_retention_s)
    return gridsweep.build(axes, options or bound_options(), files, prices_usd=prices_usd, rents_usd_per_hour=rents_usd_per_hour,
                           lp_sample=lp_sample)


def check_grid(sweep: GridSweep, count: int = 3, *, seeds: int = 1, engine: str = "auto", executor: str = "local", jobs: int | None = None,
               address: str | None = None, files: Sequence[str | Path] = (), resume: bool = False, online: bool = False,
               ttft_slo_s: float | None = None) -> GridSweep:
    """``sweep --check K [--online]``: the fluid runner on the ``count`` best configurations of each group of a
    :func:`grid_sweep`, on ``executor`` (``local`` with ``jobs`` worker processes, or ``ray`` on the cluster at ``address`` or
    the Ray this process has initialised); the same results whichever runs them. ``online``: each one's capacity within the
    SLO (TTFT ``ttft_slo_s``, default 4 s; TPOT the sweep's own), as ``planning.gridonline`` searches it. ``files``: the row
    files the sweep will be written to (:func:`write_rows`); finished runs go to the first one's journal, and ``resume``
    keeps what it and the files hold."""
    from dualpath_plan.planning.check import refuse_offline_slo
    from dualpath_plan.report import grid as rows

    if ttft_slo_s is not None and not online:
        raise PlanError(f"ttft_slo_s = {ttft_slo_s!r} s is not allowed without online; an offline check has no SLO", 2)
    refuse_offline_slo(sweep.grid.options.decode.tpot_slo_s, online)
    return rows.checked_with_journal(sweep, count, seeds, [_row_file(f) for f in files], resume, engine=engine, executor=executor,
                                     jobs=jobs, address=address, online=online, ttft_slo_s=ttft_slo_s)


def write_rows(sweep: GridSweep, *paths: str | Path) -> None:
    """``sweep --csv`` or ``--json-file`` (by each name's suffix, .json or else CSV): one row per configuration and mode,
    then the journal of a check whose runs went to them is removed."""
    from dualpath_plan.report import grid as rows
    from dualpath_plan.report.files import check_distinct, check_output

    files = [_row_file(p) for p in paths]
    for flag, path in files:
        check_output(path, flag)
    check_distinct({f"{flag} ({i + 1})": path for i, (flag, path) in enumerate(files)})
    rows.finish(sweep, files)


def _row_file(path: str | Path) -> tuple[str, Path]:
    path = Path(path)
    return ("--json-file" if path.suffix.lower() == ".json" else "--csv", path)


def compare(profiles: Sequence[str] | None = None, *, gpus: int | None = None, model: str = DEFAULT_MODEL, workload: str = DEFAULT_WORKLOAD,
            accounting: str = "exact", options: BoundOptions | None = None, profile_files: Sequence[str | Path] = (),
            sets: Sequence[str] = (), dram_tier_GB: float | None = None) -> Comparison:
    """``dualpath-plan compare``: per hardware profile (in the order given, each once; default: every known one, by dense
    compute per node), storage-NIC and host-link bytes per dense FLOP beside the workload's cache-compute ratio, and the
    basic and DualPath bounds at an equal budget of ``gpus``; with ``dram_tier_GB`` (``--dram-tier``), both again with
    that DRAM tier on every node whose profile holds it."""
    from dualpath_plan.planning.compare import compare as run_compare

    scenarios = _hardware_scenarios(list(dict.fromkeys(_names(profiles or ()))), profile_files, model=model, workload=workload,
                                    accounting=accounting, sets=tuple(sets))
    return run_compare(scenarios, gpus, options or bound_options(), in_order=bool(profiles), dram_tier_GB=dram_tier_GB)


def check(optimal: OptimalSet, scenarios: dict[tuple[str, str], Scenario], count: int = 3, options: BoundOptions | None = None,
          seed: int = 0, seeds: int = 1, *, engine: str = "auto", executor: str = "local", jobs: int | None = None,
          address: str | None = None) -> RunnerCheck:
    """``--check K [--seeds N]``: the fluid runner on the ``count`` best splits of an optimal set (``bottleneck(...).optimal
    ["dualpath"]``, a ``plan`` answer's ``.optimal``, ``sweep(...).optimal[profile]["dualpath"]``), ``scenarios`` keyed by
    (PE profile, DE profile); the runs on ``executor`` (``local`` with ``jobs`` worker processes, or ``ray``)."""
    from dualpath_plan.planning.check import Where, check as run_check, refuse_offline_slo

    refuse_offline_slo((options or bound_options()).decode.tpot_slo_s, False)
    return run_check(optimal, scenarios, count, options or bound_options(), seed=seed, seeds=seeds, where=Where(engine, executor, jobs, address))


def check_modes(optimals: dict[str, OptimalSet], scenarios: dict[tuple[str, str], Scenario], count: int = 3,
                options: BoundOptions | None = None, seed: int = 0, seeds: int = 1, *, engine: str = "auto", executor: str = "local",
                jobs: int | None = None, address: str | None = None) -> ModesCheck | RunnerCheck:
    """``plan --check K`` with both modes: the fluid runner on the ``count`` best splits of each mode's optimal set
    (``{mode: answer.optimal for mode, answer in plan(...).answers.items()}``) on the same agents, and whether it ranks
    the modes as the bounds do (``ModesCheck.confirms``); with one mode that serves anything, that mode's ``RunnerCheck``."""
    from dualpath_plan.planning.check import Where, check_modes as run_modes, refuse_offline_slo

    refuse_offline_slo((options or bound_options()).decode.tpot_slo_s, False)
    return run_modes(optimals, scenarios, count, options or bound_options(), seed=seed, seeds=seeds, where=Where(engine, executor, jobs, address))


def check_online(optimals: dict[str, OptimalSet], scenarios: dict[tuple[str, str], Scenario], count: int = 3,
                 options: BoundOptions | None = None, seed: int = 0, seeds: int = 1, *, ttft_slo_s: float | None = None,
                 engine: str = "auto", executor: str = "local", jobs: int | None = None, address: str | None = None) -> OnlineCheck:
    """``plan --check K --online``: the capacity within the SLO (mean TTFT ``ttft_slo_s``, default 4 s; TPOT the options'
    SLO, default 50 ms) of the ``count`` best splits of each mode's optimal set, the probes run side by side on
    ``executor``'s workers, and whether the capacities rank the modes as the bounds do (``OnlineCheck.confirms``)."""
    from dualpath_plan.planning.check import Where
    from dualpath_plan.planning.online import check_online as run_online, slo_of

    options = options or bound_options()
    return run_online(optimals, scenarios, count, slo_of(options, ttft_slo_s), options, seed=seed, seeds=seeds,
                      where=Where(engine, executor, jobs, address))


def simulate(sc: Scenario, policies: str | Sequence[str] = "dualpath", *, agents: int | None = None,
             trace: str | Path | None = None, seed: int = 0, online: bool = False, aps: float | None = None,
             ttft_slo_s: float | None = None, tpot_slo_ms: float | None = None, dt_ms: float | None = None,
             dtype: str | None = None, decode_instance_nodes: int | None = None, engine: str = "auto", seeds: int = 1,
             mtp: int = 0, mtp_accepted: float | None = None, prefill_instance_nodes: int | None = None) -> Simulation:
    """``dualpath-plan simulate``: the fluid runner plays each policy on the same trajectories (offline:
    all agents at t = 0, a trace's at their recorded start times; ``online``: Poisson arrivals at ``aps`` agents/s) and
    reports JCT or latencies, utilisation and the LP bound of the same inputs."""
    from dualpath_plan.sim import runner

    names = [policies] if isinstance(policies, str) else list(policies)
    spec = runner.online_spec(online, aps, runner.TTFT_SLO_S if ttft_slo_s is None else ttft_slo_s,
                              (runner.TPOT_SLO_S * 1e3 if tpot_slo_ms is None else tpot_slo_ms) * 1e-3, False, len(names))
    from dualpath_plan.model.flags import check_flag
    from dualpath_plan.sim.spread import repeat, seeds_of

    options = _sim_options(seed, dt_ms, dtype, decode_instance_nodes, engine, mtp, mtp_accepted, prefill_instance_nodes)  # checks --seed first
    check_flag("--seeds", seeds)
    rep = repeat(sc, sc.workload, agents, None if trace is None else Path(trace), seeds_of(seed, seeds), names, spec, options)
    return Simulation(sc, rep.trajectories, rep.runs, rep)


def find_capacity(sc: Scenario, policy: str = "dualpath", *, agents: int | None = None, trace: str | Path | None = None,
                  seed: int = 0, ttft_slo_s: float | None = None, tpot_slo_ms: float | None = None,
                  dt_ms: float | None = None, dtype: str | None = None, decode_instance_nodes: int | None = None,
                  engine: str = "auto", mtp: int = 0, mtp_accepted: float | None = None,
                  prefill_instance_nodes: int | None = None) -> CapacitySearch:
    """``dualpath-plan simulate --find-capacity``: the highest agent arrival rate whose online run meets
    the TTFT and TPOT SLOs (bisection, each probe a full online run)."""
    from dualpath_plan.sim import runner

    spec = runner.online_spec(True, None, runner.TTFT_SLO_S if ttft_slo_s is None else ttft_slo_s,
                              (runner.TPOT_SLO_S * 1e3 if tpot_slo_ms is None else tpot_slo_ms) * 1e-3, True, 1)
    source = runner.capacity_source(sc.workload, agents, None if trace is None else Path(trace))
    options = _sim_options(seed, dt_ms, dtype, decode_instance_nodes, engine, mtp, mtp_accepted, prefill_instance_nodes)
    return CapacitySearch(sc, source, runner.find_capacity(sc, source, policy, slo=spec, options=options))


def _sim_options(seed: int, dt_ms: float | None, dtype: str | None, decode_instance_nodes: int | None, engine: str, mtp: int = 0,
                 mtp_accepted: float | None = None, prefill_instance_nodes: int | None = None):
    from dualpath_plan.sim import runner

    dt_s = runner.DT_S if dt_ms is None else dt_ms * 1e-3
    return runner.SimOptions(dt_s=dt_s, seed=seed, dtype=dtype, decode_instance_nodes=decode_instance_nodes, engine=engine, mtp=mtp,
                             mtp_accepted=mtp_accepted, prefill_instance_nodes=prefill_instance_nodes)


def validate(skip_sim: bool = False, seed: int | None = None, kernels: bool = False) -> Validation:
    """``dualpath-plan validate``: the paper's published figures next to ours, with each error; ``kernels``: also each
    shipped profile's step-time tables against AIConfigurator's measurements (the 'calibrate' extra)."""
    from dualpath_plan.validation import ValidateOptions
    from dualpath_plan.validation import validate as run_validation

    return run_validation(skip_sim, ValidateOptions() if seed is None else ValidateOptions(seed=seed), kernels)


def formulas(accounting: str = "exact") -> FormulaSheet:
    """``dualpath-plan formulas``: the symbolic per-unit loads, each resource's P/D bound and range (9)."""
    from dualpath_plan.bounds.symbolic import formula_sheet

    return formula_sheet(accounting)


def calibrate(source: str | Path, *, base: str | None = None, system: str | None = None, backend: str | None = None,
              version: str | None = None, ops: Sequence[str] | None = None, keep_implausible: bool = False, drop_implausible: bool = False,
              profile_files: Sequence[str | Path] = ()) -> Calibration:
    """``dualpath-plan calibrate``: the hardware profile ``base`` with its step-time tables (``ops``: the families,
    default all) fitted to ``source``'s measurements: ``"aiconfigurator"`` (AIConfigurator's database, with
    ``system``, ``backend`` and ``version``; the 'calibrate' extra) or a CSV file. The result's ``text`` is the
    new profile; nothing is written."""
    from dualpath_plan.calibration.calibrate import calibrate_request
    from dualpath_plan.model.profiles import catalog

    return calibrate_request(catalog(tuple(Path(f) for f in profile_files)), source, base=base, system=system, backend=backend,
                             version=version, ops=ops, keep_implausible=keep_implausible, drop_implausible=drop_implausible)


def trace_workload(path: str | Path, format: str | None = None, time_scale: float = 1.0, tool_scale: float = 1.0) -> str:
    """``--trace FILE [--trace-format F] [--time-scale X] [--tool-scale X]``: the workload name under which every function
    taking ``workload=`` (``scenario``, ``plan``, ``sweep``, ``grid_sweep``'s ``workloads``, ``compare``) uses the trace."""
    from dualpath_plan.model.workload import trace_name

    return trace_name(path, format, time_scale, tool_scale)


def trace_import(inputs: Sequence[str | Path], format: str, out: str | Path, *, max_context_tokens: int | None = None,
                 model: str | None = None, profile_files: Sequence[str | Path] = ()) -> TraceReport:
    """``dualpath-plan trace import``: convert a public trace into a schema v2 file ``out`` (whole or not at all),
    cutting sessions at ``max_context_tokens`` or ``model``'s context window; returns the import's report (how hits
    and tool time were found, what each rule did)."""
    from dualpath_plan.model.trace.formats import ImportOptions
    from dualpath_plan.model.trace.ops import import_trace, import_window

    window = import_window(max_context_tokens, model, tuple(Path(f) for f in profile_files))
    return import_trace(format, [Path(p) for p in inputs], Path(out), ImportOptions(window))


def trace_stats(paths: str | Path | Sequence[str | Path], format: str | None = None, model: str | None = None,
                profile_files: Sequence[str | Path] = ()) -> TraceSummary:
    """``dualpath-plan trace stats``: a trace's sessions, rounds, token and tool-time distributions and hit shares;
    with ``model``, the KV bytes a turn reads."""
    from dualpath_plan.model.profiles import catalog
    from dualpath_plan.model.trace.ops import trace_stats as stats

    files = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    kv = None if model is None else catalog(tuple(Path(f) for f in profile_files)).get("model", model).kv_bytes_per_token
    return stats(files, format, model, kv)


def workload_from_trace(trace: str | Path, out: str | Path, format: str | None = None, description: str | None = None) -> Workload:
    """``dualpath-plan profiles workload-from-trace``: write a workload profile standing for a trace (Table 2's columns
    and its mean tool time) to ``out`` and return it as loaded."""
    from dualpath_plan.model.profiles import load_file
    from dualpath_plan.model.trace.ops import drawable_workload_toml, trace_stats as stats
    from dualpath_plan.report.files import check_output, write_atomic

    out = Path(out)
    check_output(out, "-o", ".toml")
    text = drawable_workload_toml(stats([Path(trace)], format), Path(trace), format, out.stem, description)
    write_atomic(out, lambda tmp: tmp.write_text(text, encoding="utf-8"), "-o")
    return load_file(out)


def profiles(profile_files: Sequence[str | Path] = ()) -> Catalog:
    """``dualpath-plan profiles``: every hardware, model and workload profile (shipped, on
    ``DUALPATH_PLAN_PROFILES``, and ``profile_files``)."""
    from dualpath_plan.model.profiles import catalog

    return catalog(tuple(Path(f) for f in profile_files))


# The records of lower layers and the report function that prints each as ``--json``.
_RENDERERS = {
    "dualpath_plan.planning.analysis.Analysis": ("dualpath_plan.report.bottleneck", "to_json"),
    "dualpath_plan.planning.sweep.SweepResult": ("dualpath_plan.report.sweep", "to_json"),
    "dualpath_plan.planning.compare.Comparison": ("dualpath_plan.report.compare", "to_json"),
    "dualpath_plan.validation.records.Validation": ("dualpath_plan.report.validate", "to_json"),
    "dualpath_plan.bounds.symbolic.FormulaSheet": ("dualpath_plan.report.formulas", "to_json"),
    "dualpath_plan.model.profiles.Catalog": ("dualpath_plan.report.profiles", "list_json"),
    "dualpath_plan.calibration.calibrate.Calibration": ("dualpath_plan.report.calibrate", "to_json"),
    "dualpath_plan.bounds.lp.Bound": ("dualpath_plan.report.bounds", "bound_json"),
    "dualpath_plan.model.trace.convert.Report": ("dualpath_plan.report.trace", "import_json"),
    "dualpath_plan.model.trace.ops.TraceSummary": ("dualpath_plan.report.trace", "stats_json"),
    "dualpath_plan.planning.check.RunnerCheck": ("dualpath_plan.report.check", "check_json"),
    "dualpath_plan.planning.check.ModesCheck": ("dualpath_plan.report.check", "modes_json"),
    "dualpath_plan.planning.online.OnlineCheck": ("dualpath_plan.report.check", "online_json"),
    "dualpath_plan.planning.gridsweep.GridSweep": ("dualpath_plan.report.gridview", "full_json"),
}


def to_dict(result: object) -> dict:
    """The ``--json`` dictionary of any result above, exactly as its command prints it (a single
    :class:`Bound` as it stands in ``bottleneck --json``'s ``bounds``)."""
    if isinstance(result, (PlanResult, Simulation, CapacitySearch)):
        return result.to_dict()
    kind = f"{type(result).__module__}.{type(result).__qualname__}"
    if kind not in _RENDERERS:
        raise PlanError(f"to_dict: a {type(result).__name__} is not a result of dualpath_plan's API; "
                        f"must be one of {', '.join(name.rpartition('.')[2] for name in _RENDERERS)}, PlanResult, Simulation or CapacitySearch", 2)
    module, name = _RENDERERS[kind]
    return jsonable(getattr(importlib.import_module(module), name)(result))
