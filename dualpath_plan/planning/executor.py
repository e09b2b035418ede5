"""Runner checks as independent tasks, on local worker processes or on an existing Ray cluster.

A :class:`RunTask` is one fluid-runner run: a cluster, the agents drawn from its workload's data set with
``seed`` (offline: ``agents`` of them at t = 0; online, a capacity probe: the Poisson arrivals of its
``online`` spec before the steady-state horizon, ``sim.runner.probe``), a policy and the engine settings. Its result (:class:`Outcome`) depends on nothing else, so it is
the same whichever process or machine ran it (same seeds, same trajectories): the tests run one set of tasks
on one process, on two worker processes and on Ray, and compare.

Executors:

* ``local`` (the default): ``jobs`` worker processes on this machine (``jobs = 1`` runs in this process). On
  Linux they are forked while this process has no other thread (before a progress bar starts), so they start
  with everything loaded, the compiled engine included; elsewhere, or when another thread runs, they are
  started with ``spawn`` (a clean interpreter, as on macOS and Windows) and load it once each (``_warm``).
  They ignore Ctrl-C, which the parent handles; results come back as tasks finish. On this 2-core machine,
  8 runs of 4,096-4,608 agents: forked workers 2.0x the throughput of one process, spawned ones 1.7x.
* ``ray``: every task a Ray task (one CPU each) on an existing cluster (``address``: ``auto``, the default,
  or ``ray://HOST:PORT``; a Ray already initialised in this process is used as it is). Needs the ``ray``
  extra, and the same version of this package on every node.

**The compiled engine's one-time compile.** numba caches the compiled engine on disk
(``sim.compiled.cache``), so the parent compiles it once, or loads it, before any worker starts. Each worker
then has it from the fork, or loads it from that cache once, when it starts (``_warm``; about a second with
the imports), not on every task. A Ray
worker on another machine finds no cache there: it compiles the engine once (about 40 s on 2 cores), and
every later worker on that machine loads it.

Ctrl-C (or an error) stops the workers; every task that finished before it has been handed to ``on_done`` (a
sweep writes each to its journal, so ``--resume`` re-runs only the rest), and :class:`Interrupted` says how
many. A worker whose parent is killed outright ends too (Linux: the kernel's parent-death signal; elsewhere at its
task pipe's end).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import MAX_AGENTS, check_flag
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.workload import source_of, trajectories
from dualpath_plan.planning.raycluster import connect as _connect, first_line as _first_line
from dualpath_plan.sim.compiled.run import ENGINES
from dualpath_plan.sim.runner import OnlineSpec, SimOptions

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class RunTask:
    """One run: ``scenario`` (its P and D) serving ``agents`` agents drawn with ``seed``, with ``policy``."""

    key: str  # what identifies the run across sweeps and resumes (sweep rows name it)
    scenario: Scenario
    agents: int
    seed: int
    policy: str
    options: SimOptions
    online: OnlineSpec | None = None  # a capacity probe at ``online.aps`` (``agents`` unused: the arrivals set them)


@dataclass(frozen=True)
class Outcome:
    """What a check keeps of a run: steady (steady-window) and whole-run turns/s, the JCT, the bound of the run's own
    turns, and the engine that ran it; with a DRAM tier, the share of the steady window's hit KV its LRU served and the
    share the bound has it serve."""

    key: str
    steady_turns_per_s: float
    turns_per_s: float
    jct_s: float | None
    bound_turns_per_s: float
    engine: str
    slo_met: bool | None = None  # a probe: its run met the SLO (None offline)
    agents: int | None = None  # the agents that arrived (a probe's follow from its rate and the horizon)
    steady_bound_turns_per_s: float | None = None  # the bound of the turns that finished in the steady window (None: none did)
    tier_share: float | None = None  # SimResult.steady_tier_share (None: no DRAM tier, or no turn in the window)
    bound_tier_share: float | None = None  # SimResult.bound_tier_share (None: no DRAM tier)

    @property
    def over_window_bound(self) -> float | None:
        """Steady turns/s over the bound of the window's own turns (``SimResult.steady_over_window_bound``)."""
        bound = self.steady_bound_turns_per_s
        return self.steady_turns_per_s / bound if bound else None

    def as_json(self) -> dict:
        return {"key": self.key, "steady_turns_per_s": self.steady_turns_per_s, "turns_per_s": self.turns_per_s, "jct_s": self.jct_s,
                "bound_turns_per_s": self.bound_turns_per_s, "engine": self.engine, "slo_met": self.slo_met, "agents": self.agents,
                "steady_bound_turns_per_s": self.steady_bound_turns_per_s, "tier_share": self.tier_share,
                "bound_tier_share": self.bound_tier_share}

    @classmethod
    def from_json(cls, data: dict) -> Outcome:
        """An outcome as :meth:`as_json` wrote it; ValueError for anything else (a value of another type, a number that
        is not finite or is negative: a journal is checked like every other input)."""
        met, agents, jct, window = data.get("slo_met"), data.get("agents"), data["jct_s"], data.get("steady_bound_turns_per_s")
        if not isinstance(data["key"], str) or not isinstance(data["engine"], str) or met not in (None, True, False):
            raise ValueError("not an outcome")
        if agents is not None and (isinstance(agents, bool) or not isinstance(agents, int) or not 0 <= agents <= MAX_AGENTS):
            raise ValueError(f"agents {agents!r}")
        tier, bound_tier = data.get("tier_share"), data.get("bound_tier_share")
        return cls(data["key"], _rate(data["steady_turns_per_s"]), _rate(data["turns_per_s"]), None if jct is None else _rate(jct),
                   _rate(data["bound_turns_per_s"]), data["engine"], met, agents, None if window is None else _rate(window),
                   None if tier is None else _share(tier), None if bound_tier is None else _share(bound_tier))


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_tasks`: ``done`` of ``total`` tasks finished (each handed to ``on_done``)."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"interrupted after {done} of {total} runs")
        self.done, self.total = done, total


def run_task(task: RunTask) -> Outcome:
    """Play one task (in whatever process runs it)."""
    from dualpath_plan.sim import runner

    try:
        if task.online is not None:
            source = source_of(task.scenario.workload, None)
            run = runner.probe(task.scenario, source, task.policy, task.online, task.online.aps, task.options)
        else:
            run = runner.run(task.scenario, trajectories(task.scenario.workload, task.agents, None, task.seed), task.policy, options=task.options)
    except PlanError as exc:  # say which run: a sweep plays many
        raise PlanError(f"runner check on {task.scenario.inputs}, seed {task.seed}: {exc}", exc.exit_code) from None
    return Outcome(task.key, run.steady_turns_per_s or 0.0, run.turns_per_s or 0.0, run.jct_s, run.bound_turns_per_s, run.engine,
                   None if task.online is None else bool(run.slo_met), run.agents, run.steady_bound_turns_per_s, run.steady_tier_share,
                   run.bound_tier_share)


def _warm(engine: str, parent: int | None = None) -> None:
    """A worker's start: leave Ctrl-C to the parent, end with the parent (a killed parent's forked workers would wait on
    their task pipe forever: each holds the others' ends), and load the compiled engine from the disk cache once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent(parent)
    _load_engine(engine)


def _load_engine(engine: str) -> None:
    """Load the compiled engine from numba's disk cache (or compile it, where there is none) once in this process."""
    if engine == "compiled":
        from dualpath_plan.sim.compiled.run import compile_engine

        compile_engine()


def _end_with_parent(parent: int | None) -> None:
    """Linux: have the kernel send this process SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG)``), and end now
    if ``parent`` (the pid that started it) is gone already; elsewhere a worker ends with its task pipe."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:  # the parent died before the call (adopted by init or a subreaper)
        os._exit(1)


def resolve_engine(engine: str, python_s: Callable[[], float] | None = None) -> str:
    """The engine the runner checks use, by ``sim.compiled.run.choose``'s rule for one run: ``auto`` takes the compiled one
    when it is compiled already (numba's cache) or when the Python engine would take longer than compiling it
    (``python_s()``: its estimated wall time over every run), else the Python one; both take the same steps."""
    if engine not in ENGINES:
        raise PlanError(f"--engine {engine!r} is not allowed; must be one of {', '.join(ENGINES)}", 2)
    if engine != "auto":
        return engine
    from dualpath_plan.sim.compiled import run as compiled_run

    if not compiled_run.numba_available():
        return "python"
    return compiled_run.choose("auto", python_s() if python_s is not None else float("inf"), compiled_run.is_compiled)


def compile_once(on_compile: Callable[[], None] | None) -> None:
    """Compile the engine (or load it from numba's cache) here, before any worker starts (module docstring)."""
    from dualpath_plan.sim.compiled.run import compile_engine, is_compiled

    if not is_compiled():
        if on_compile is not None:
            on_compile()
        compile_engine()


def workers(executor: str, jobs: int | None, address: str | None) -> int:
    """How many runs the executor plays at once: ``jobs`` locally, the Ray cluster's CPUs (one per task)."""
    if executor == "ray":
        ray = _ray()
        _connect(ray, address)
        return max(1, int(ray.cluster_resources().get("CPU", 1)))
    return int(jobs or 1)


def check_executor(executor: str, jobs: int | None, address: str | None) -> None:
    """Refuse a bad executor choice in one line before any work."""
    if executor not in EXECUTORS:
        raise PlanError(f"--executor {executor!r} is not allowed; must be one of {', '.join(EXECUTORS)}", 2)
    if jobs is not None:
        check_flag("--jobs", jobs)
        if executor == "ray":
            raise PlanError(f"--jobs = {jobs} is not allowed with --executor ray; the Ray cluster's CPUs set how many run at once", 2)
    if address is not None and executor != "ray":
        raise PlanError(f"--address {address} is not allowed with --executor {executor}; it names a Ray cluster (--executor ray)", 2)
    if address is not None and not (address == "auto" or address.startswith("ray://") or ":" in address):
        raise PlanError(f"--address {address!r} is not allowed; give auto, ray://HOST:PORT or HOST:PORT", 2)
    if executor == "ray":
        _ray()


def _ray():
    try:
        import ray
    except ImportError:
        raise PlanError("--executor ray needs Ray, which is not installed here: pip install 'dualpath-plan[ray]' (from a checkout: "
                        "pip install '.[ray]')", 2) from None
    return ray


def run_tasks(tasks: list[RunTask], executor: str = "local", jobs: int | None = None, address: str | None = None,
              on_done: Callable[[Outcome], None] | None = None, on_start: Callable[[int], None] | None = None) -> dict[str, Outcome]:
    """Run every task; outcomes by key. ``on_start(n)`` hears how many once the workers are up (a progress bar's thread
    starts after the fork); ``on_done`` sees each outcome as it finishes (in finishing order)."""
    check_executor(executor, jobs, address)
    started = on_start or (lambda n: None)
    if not tasks:
        started(0)
        return {}
    engine = tasks[0].options.engine
    out: dict[str, Outcome] = {}

    def keep(outcome: Outcome) -> None:
        out[outcome.key] = outcome
        if on_done is not None:
            on_done(outcome)

    try:
        if executor == "ray":
            _on_ray(tasks, address, engine, keep, started)
        elif (jobs or 1) == 1:
            started(len(tasks))
            for task in tasks:
                keep(run_task(task))
        else:
            _on_processes(tasks, int(jobs), engine, keep, started)
    except KeyboardInterrupt:
        raise Interrupted(len(out), len(tasks)) from None
    return out


def start_method() -> str:
    """``fork`` on Linux while this process has one thread (module docstring), else ``spawn``."""
    import threading

    return "fork" if sys.platform.startswith("linux") and threading.active_count() == 1 else "spawn"


def _on_processes(tasks: list[RunTask], jobs: int, engine: str, keep: Callable[[Outcome], None], started: Callable[[int], None]) -> None:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=multiprocessing.get_context(start_method()),
                               initializer=_warm, initargs=(engine, os.getpid()))
    submitted: list = []
    handed: set = set()

    def hand_on(future) -> None:
        handed.add(future)
        keep(future.result())

    # The command line takes SIGPIPE's default action (console.py); the pool's pipes to a worker ended by Ctrl-C must
    # raise instead of ending this process before it says what finished. Only the main thread may set a handler.
    import threading

    main = threading.current_thread() is threading.main_thread()
    pipe = signal.signal(signal.SIGPIPE, signal.SIG_IGN) if main and hasattr(signal, "SIGPIPE") else None
    try:
        masked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if hasattr(signal, "pthread_sigmask") else None
        try:  # a Ctrl-C while the workers start is taken by this process once they are up, not by a half-started worker
            submitted = [pool.submit(run_task, task) for task in tasks]  # forked workers are all made at the first submit
        finally:
            if masked is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, masked)
        started(len(tasks))
        pending = set(submitted)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                hand_on(future)
    except BrokenProcessPool as exc:
        _stop(pool)
        raise PlanError(f"--jobs {jobs}: a worker process ended without a result ({_first_line(exc)}); out of memory? try fewer --jobs", 1) from None
    except KeyboardInterrupt:
        try:
            _keep_finished([f for f in submitted if f not in handed], hand_on)
        finally:
            _stop(pool)
        raise
    except BaseException:
        _stop(pool)
        raise
    finally:
        if pipe is not None:
            signal.signal(signal.SIGPIPE, pipe)
    pool.shutdown(wait=True)


def _keep_finished(futures: list, hand_on: Callable) -> None:
    """Hand on the tasks that finished while Ctrl-C arrived (their results are in; only the running ones are lost)."""
    for future in futures:
        if future.done() and not future.cancelled() and future.exception() is None:
            hand_on(future)


def _stop(pool) -> None:
    """End the workers now: the running tasks' results are not wanted (Ctrl-C or another task's error)."""
    for process in list(getattr(pool, "_processes", {}).values()):  # noqa: SLF001 (no public way to end a running task)
        try:
            os.kill(process.pid, signal.SIGTERM)
        except (OSError, AttributeError):
            pass
    pool.shutdown(wait=True, cancel_futures=True)


_RAY_WARM: dict[str, bool] = {}


def _ray_task(task: RunTask) -> Outcome:
    """A task on a Ray worker: the engine loaded (or compiled, on a machine without the cache) once per worker."""
    if not _RAY_WARM.get(task.options.engine):
        _load_engine(task.options.engine)
        _RAY_WARM[task.options.engine] = True
    return run_task(task)


RAY_WAIT_S = 0.5  # how long one wait gathers finished tasks (one pass over the pending list each)


def _on_ray(tasks: list[RunTask], address: str | None, engine: str, keep: Callable[[Outcome], None], started: Callable[[int], None]) -> None:
    ray = _ray()
    _connect(ray, address)
    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
    submitted = [remote.remote(task) for task in tasks]
    pending, handed = list(submitted), set()
    started(len(tasks))
    try:
        while pending:
            finished, pending = ray.wait(pending, num_returns=len(pending), timeout=RAY_WAIT_S)
            for ref in finished:
                handed.add(ref)
                keep(_ray_result(ray, ref))
    except KeyboardInterrupt:
        try:  # the tasks that finished while Ctrl-C arrived are kept; the rest are cancelled
            ready, _ = ray.wait([r for r in submitted if r not in handed], num_returns=len(submitted) - len(handed), timeout=0)
            for ref in ready:
                keep(_ray_result(ray, ref))
        finally:
            for ref in submitted:
                if ref not in handed:
                    ray.cancel(ref, force=True)
        raise
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise


def _ray_result(ray, ref) -> Outcome:
    """A finished task's outcome; a failed one as one line: the task's own error when it raised one (a PlanError keeps its
    message and exit code), else what Ray says (a worker or node that died)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, PlanError):
            raise PlanError(str(cause), cause.exit_code) from None
        raise PlanError(f"--executor ray: a runner task failed ({_first_line(cause or exc)})", 1) from None
    except ray.exceptions.RayError as exc:
        raise PlanError(f"--executor ray: a runner task was lost ({type(exc).__name__}: {_first_line(exc)})", 1) from None


def _share(value) -> float:
    """A journal's share: a number from 0 to 1, else ValueError."""
    if _rate(value) > 1:
        raise ValueError(f"{value!r} is not a share from 0 to 1")
    return float(value)


def _rate(value) -> float:
    """A journal's number: a finite, non-negative int or float (JSON's), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError(f"{value!r} is not a finite number >= 0")
    return float(value)
