"""Shared test set-up: the hypothesis ``ci`` profile (bounded, deterministic), a data-set cache of the suite's own
(so that a run neither reads nor fills the user's), and common fixtures."""

from __future__ import annotations

import os
import tempfile

from dualpath_plan.model import datacache

os.environ.setdefault(datacache.ENV_VAR, tempfile.mkdtemp(prefix="dualpath-plan-test-datasets-"))  # subprocesses inherit it
# Output the tests read is captured, not a terminal: without COLUMNS it is PIPE_WIDTH wide (cli.app.console_width). A
# narrow terminal's COLUMNS would wrap the tables the tests read; a test that wants a width sets it itself.
os.environ.pop("COLUMNS", None)

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_RUNS: dict = {}


@pytest.fixture
def remembered_runs(monkeypatch):
    """Each runner task played once per test process, its outcome kept under the whole task (its key, scenario,
    agents, seed, policy, options and probe: ``repr`` of the frozen record): for tests whose commands check the same
    splits on the same agents, or that compare an API call with its command (a command whose task differs in anything
    runs again, so the comparison still sees it). Runs on worker processes are not remembered."""
    from dualpath_plan.planning import executor

    real = executor.run_task

    def remembered(task):
        whole = repr(task)
        if whole not in _RUNS:
            _RUNS[whole] = real(task)
        return _RUNS[whole]

    monkeypatch.setattr(executor, "run_task", remembered)


# The modules whose tests take longest, longest first (their summed durations on two workers, docs/development.md,
# "Tests"). ``--dist loadfile --no-loadscope-reorder`` hands whole modules to the workers in collection order, so these
# go first and the short modules fill in at the end: the two workers then finish together (in path order the longest
# came last and one worker ran alone for a minute). The first worker compiles the runner's engine in test_compiled.py
# (numba: 100 s on this machine with an empty cache, as on a fresh CI machine); the modules after it, until
# test_grid_rows.py, never call the compiled engine, so the second worker works through them meanwhile and finds the
# engine in numba's cache when it needs it, instead of compiling it a second time at once (323.7 s for the suite with an
# empty cache before, when test_grid_rows.py came second). test_plots.py's compare --check (the engine chosen by
# --engine auto) comes after test_grid_rows.py: while the engine compiled, it ran on the Python engine, 26 s against 2 s.
# The order is a hint; a module missing here just runs later.
LONGEST_FIRST = ("tests/sim/test_compiled.py", "tests/cli/test_cli.py", "tests/test_readme_examples.py", "tests/properties/test_grid_props.py",
                 "tests/properties/test_workload_props.py", "tests/validation/test_kernels.py", "tests/calibration/test_shipped.py",
                 "tests/report/test_grid_rows.py", "tests/report/test_plots.py", "tests/sim/test_runner.py", "tests/test_api.py",
                 "tests/sim/test_scale.py", "tests/planning/test_executor_ray.py", "tests/planning/test_check.py",
                 "tests/planning/test_executor.py", "tests/cli/test_trace.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest keep their order
