"""Runner checks on executors (planning.executor, planning.gridcheck): the same results on one process and two worker
processes (Ray: test_executor_ray.py); refusals; Ctrl-C keeps what finished."""

from __future__ import annotations

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.planning import executor, raycluster
from dualpath_plan.planning.gridcheck import plan_checks
from dualpath_plan.planning.executor import resolve_engine
from dualpath_plan.planning.gridsweep import build, checked, make_axes

ENGINE = resolve_engine("auto")  # compiled where numba is (compiled once per machine), else the Python engine


def small():
    """Six runs of a second or so: llama-3.1-8b on 2- and 3-node Hopper clusters, the two best of each in each mode."""
    return build(make_axes(("hopper",), models=("llama-3.1-8b",), workloads=("agentic-32k",), budgets={"nodes": "2,3"}))


@pytest.mark.slow
def test_two_worker_processes_give_the_same_results_as_one(one_process):
    two = checked(small(), 2, engine=ENGINE, jobs=2)
    assert one_process.checks == two.checks and len(two.checks) == 6  # 1P1D; the two splits of 3 nodes; each in both modes
    assert all(c.steady_turns_per_s > 0 for c in two.checks.values())


def test_a_task_key_names_what_its_result_depends_on():
    plan = plan_checks(small().grid, 1, seeds=2, engine=ENGINE)
    keys = [t.key for t in plan.tasks]
    assert len(set(keys)) == len(keys) == 8  # 2 budgets x 2 modes x 2 seeds
    assert all("hopper/hopper|llama-3.1-8b|agentic-32k|exact" in k and "agents=" in k and "|seed=" in k and "|inputs=" in k
               and "engine" not in k for k in keys)  # the engines give the same results: a resume may switch
    other = build(make_axes(("hopper",), models=("llama-3.1-8b",), workloads=("agentic-32k",), budgets={"nodes": "2,3"},
                            sets=("hbm_efficiency_frac=0.8",))).grid
    assert not set(keys) & {t.key for t in plan_checks(other, 1, seeds=2, engine=ENGINE).tasks}  # other inputs, other keys


@pytest.mark.parametrize("kwargs, needle", [
    ({"executor": "slurm"}, "--executor 'slurm' is not allowed; must be one of local, ray"),
    ({"executor": "ray", "jobs": 2}, "--jobs = 2 is not allowed with --executor ray"),
    ({"address": "auto"}, "--address auto is not allowed with --executor local"),
    ({"jobs": 0}, "--jobs = 0 processes is not allowed"),
    ({"executor": "ray", "address": "127.0.0.1:" + "1" * 30}, "port '111111111111111111111111111111' is not allowed; give HOST:PORT with a"),
    ({"executor": "ray", "address": "127.0.0.1:65545"}, "port '65545' is not allowed"),  # dialled another port before
    ({"executor": "ray", "address": "ray://127.0.0.1:abc"}, "port 'abc' is not allowed"),
    ({"executor": "ray", "address": "127.0.0.1:"}, "port '' is not allowed"),
])
@pytest.mark.slow
def test_bad_executor_choices_are_refused_before_any_run(kwargs, needle):
    with pytest.raises(PlanError, match=needle):
        checked(small(), 1, engine=ENGINE, **kwargs)


def test_without_ray_installed_one_line_says_how_to_install_it(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(PlanError, match=r"pip install 'dualpath-plan\[ray\]'"):
        executor.check_executor("ray", None, None)


@pytest.mark.slow
def test_ctrl_c_keeps_the_runs_that_finished():
    seen = []

    def stop_after_one(outcome):
        seen.append(outcome)
        raise KeyboardInterrupt

    tasks = list(plan_checks(small().grid, 2, engine=ENGINE).tasks)
    with pytest.raises(executor.Interrupted) as info:
        executor.run_tasks(tasks, on_done=stop_after_one)
    assert (info.value.done, info.value.total) == (1, 6) and len(seen) == 1


def test_a_hit_rate_what_if_cannot_be_checked():
    sweep = build(make_axes(("hopper",), budgets={"nodes": "6"}, sets=("hit_rate_frac=0.9",)))
    with pytest.raises(PlanError, match="--check is not allowed with hit_rate_frac"):
        checked(sweep, 1, engine=ENGINE)


def _failing_task(key: str):
    from dualpath_plan.model.scenario import build_scenario
    from dualpath_plan.sim.runner import SimOptions

    sc = build_scenario("hopper", model="llama-3.1-8b", workload="agentic-32k", P=1, D=4)
    return executor.RunTask(key, sc, 16, 0, "dualpath", SimOptions(engine=ENGINE, decode_instance_nodes=3))  # 4 nodes are no whole instances


def failing_tasks():
    """Two runs that fail: 4 decode nodes are no whole instances of 3."""
    return [_failing_task("a"), _failing_task("b")]


def assert_names_the_failed_run(error: PlanError) -> None:
    message = str(error)
    assert message.startswith("runner check on hopper 1P4D") and "--decode-instance-nodes = 3 nodes is not allowed" in message
    assert "\n" not in message and "Traceback" not in message and error.exit_code == 2


@pytest.mark.parametrize("jobs", [None, 2])
@pytest.mark.slow
def test_a_run_that_fails_is_one_line_naming_the_run(jobs):
    with pytest.raises(PlanError) as info:
        executor.run_tasks(failing_tasks(), "local", jobs=jobs)
    assert_names_the_failed_run(info.value)


@pytest.mark.slow
def test_workers_run_from_a_thread_that_is_not_the_main_one(one_process):
    """An API caller's thread (a web server, a notebook kernel): only the main thread may set signal handlers."""
    import threading

    sweep, out = small(), {}
    thread = threading.Thread(target=lambda: out.setdefault("grid", checked(sweep, 2, engine=ENGINE, jobs=2)))
    thread.start()
    thread.join(120)
    assert out["grid"].checks == one_process.checks


def test_an_outcome_reads_back_from_its_json_and_from_a_journal_line_without_the_probe_fields():
    probe = executor.Outcome("k", 1.0, 2.0, None, 3.0, "compiled", True, 120)
    assert executor.Outcome.from_json(probe.as_json()) == probe
    old = {"key": "k", "steady_turns_per_s": 1.0, "turns_per_s": 2.0, "jct_s": 5.0, "bound_turns_per_s": 3.0, "engine": "python"}
    assert executor.Outcome.from_json(old) == executor.Outcome("k", 1.0, 2.0, 5.0, 3.0, "python")  # a journal of an earlier version


def _closed_port() -> int:
    """A local port nothing listens at (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_an_address_nothing_answers_at_is_refused_within_seconds(monkeypatch, how):
    """A stale RAY_ADDRESS behind --address auto skipped this check before, and Ray retried past 60 s."""
    class NoRay:  # the check comes before Ray is asked: Ray itself is not needed, nor reached
        def is_initialized(self):
            return False

        def init(self, **kwargs):
            raise AssertionError("Ray was dialled")

    address = f"127.0.0.1:{_closed_port()}"
    if how == "env":
        monkeypatch.setenv("RAY_ADDRESS", address)
    given_by = "--address" if how == "flag" else "RAY_ADDRESS"
    with pytest.raises(PlanError, match=f"^{given_by} {address}: nothing answers there"):
        raycluster.connect(NoRay(), address if how == "flag" else "auto")


@pytest.mark.parametrize("address, needle", [("127.0.0.1:65545", "port '65545' is not allowed"), ("ray://host", "port 'host' is not allowed")])
def test_a_malformed_address_is_refused_where_ray_is_initialised_already(address, needle):
    """An API caller's process with Ray up (a notebook): the flag is still checked, not passed over."""

    class Up(_NoRay):
        def is_initialized(self):
            return True

    with pytest.raises(PlanError, match=needle):
        raycluster.connect(Up(), address)
    raycluster.connect(Up(), "127.0.0.1:6379")  # a well-formed one: the running Ray serves it, nothing is dialled


class _NoRay:
    """Ray's stand-in: never initialised; ``init`` records its call or raises what it is given."""

    def __init__(self, raises: BaseException | None = None):
        self.raises, self.called = raises, False

    def is_initialized(self):
        return False

    def init(self, **kwargs):
        self.called = True
        if self.raises is not None:
            raise self.raises


@pytest.fixture
def peer():
    """A gRPC server on a local port that answers every call with ``status`` (set by the test), as a Ray head's
    client server or GCS under token authentication answers a call without the right token."""
    grpc = pytest.importorskip("grpc")
    from concurrent.futures import ThreadPoolExecutor

    answer = {"status": grpc.StatusCode.UNAUTHENTICATED}

    class Handler(grpc.GenericRpcHandler):
        def service(self, details):
            def reply(request, context):
                if answer["status"] is not grpc.StatusCode.OK:
                    context.abort(answer["status"], "Invalid or missing authentication token")
                return b""
            return grpc.unary_unary_rpc_method_handler(reply)

    server = grpc.server(ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers((Handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield port, answer
    server.stop(0)


def _token(monkeypatch, sent: tuple):
    from ray._private.authentication import grpc_authentication_client_interceptor as interceptor

    monkeypatch.setattr(interceptor, "_get_authentication_metadata_tuple", lambda: sent)


@pytest.mark.parametrize("scheme", ["ray://", ""])  # the head's client server, or the GCS
@pytest.mark.parametrize("sent, says", [((), "this process sends none"),
                                        ((("authorization", "Bearer wrong"),), "refused the token this process sends")])
def test_a_cluster_with_token_authentication_is_named_as_such_at_once(monkeypatch, peer, scheme, sent, says):
    """Ray's client waited 30 s and said 'ray client connection timeout' (a GCS address: 20 s, 'Failed to connect')."""
    port, _ = peer
    _token(monkeypatch, sent)
    ray = _NoRay()
    with pytest.raises(PlanError, match=rf"^--executor ray: the Ray cluster at {scheme}127.0.0.1:{port} requires token authentication "
                                        rf"and {says}; set RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN .*ray get-auth-token"):
        raycluster.connect(ray, f"{scheme}127.0.0.1:{port}")
    assert not ray.called


def test_a_stale_ray_address_with_token_authentication_names_the_variable(monkeypatch, peer):
    port, _ = peer
    _token(monkeypatch, ())
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(PlanError, match="requires token authentication"):
        raycluster.connect(_NoRay(), "auto")


def test_a_cluster_that_answers_is_left_to_ray(monkeypatch, peer):
    import grpc

    port, answer = peer
    answer["status"] = grpc.StatusCode.OK
    _token(monkeypatch, (("authorization", "Bearer right"),))
    ray = _NoRay()
    raycluster.connect(ray, f"ray://127.0.0.1:{port}")
    assert ray.called


def test_a_version_mismatch_names_both_versions_on_one_line(monkeypatch, peer):
    """Ray's message takes six lines, and the first said only 'Version mismatch: The cluster was started with:'."""
    import grpc

    port, answer = peer
    answer["status"] = grpc.StatusCode.OK
    _token(monkeypatch, ())
    mismatch = RuntimeError("Version mismatch: The cluster was started with:\n    Ray: 2.49.0\n    Python: 3.12.3\n"
                            "This process on Ray Client was started with:\n    Ray: 2.60.0\n    Python: 3.11.7\n")
    with pytest.raises(PlanError, match=r"^--executor ray: the Ray cluster at ray://127.0.0.1:\d+ runs Ray 2.49.0 on Python 3.12.3, this "
                                        r"process Ray 2.60.0 on Python 3.11.7; .*pip install 'ray\[client\]==2.49.0' here \(on Python 3.12\)"):
        raycluster.connect(_NoRay(mismatch), f"ray://127.0.0.1:{port}")
