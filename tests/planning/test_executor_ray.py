"""Runner checks on a local Ray instance (planning.executor): the same results as one process, and a failed run named in
one line. The module's Ray is started once and stopped after its last test, so no other test runs beside it."""

from __future__ import annotations

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.planning import executor
from dualpath_plan.planning.gridsweep import checked
from tests.planning.test_executor import ENGINE, assert_names_the_failed_run, failing_tasks, small

@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray instance for the module (its start and stop take seconds). Ray is imported here, not at
    collection, so a worker that runs none of these tests does not import it."""
    ray = pytest.importorskip("ray")  # the test extra installs it; CI runs these
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)  # its own, even beside a running cluster
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_gives_the_same_results_as_one_process(one_process):
    assert checked(small(), 2, engine=ENGINE, executor="ray").checks == one_process.checks


@pytest.mark.slow
def test_a_run_that_fails_on_ray_is_one_line_naming_the_run():
    with pytest.raises(PlanError) as info:
        executor.run_tasks(failing_tasks(), "ray")
    assert_names_the_failed_run(info.value)
