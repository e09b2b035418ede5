"""Fixtures shared by the executor tests (test_executor.py, test_executor_ray.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def one_process():
    """The small sweep's runner checks in this process (``test_executor.small``): the results every other executor
    must give. Made once per test process."""
    from dualpath_plan.planning.gridsweep import checked
    from tests.planning.test_executor import ENGINE, small

    return checked(small(), 2, engine=ENGINE, jobs=1)
