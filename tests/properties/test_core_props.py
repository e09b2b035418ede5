"""Properties of the compiled engine: its sharing kernel and its runs are the Python engine's, exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from dualpath_plan.sim.compiled.share import allocate_loops
from dualpath_plan.sim.python.share import allocate
from tests.properties.test_fluid_props import sharing_problems, small_runs
from tests.sim.core_cases import assert_same_run, run_both


@given(sharing_problems())
def test_the_compiled_sharing_kernel_returns_the_numpy_allocation_bit_for_bit(problem):
    inc, budget, work = problem
    expected = allocate(inc, budget, work)
    got = allocate_loops(inc.flow, inc.res, inc.coef, inc.aw, inc.starts, inc.lengths, inc.weight, budget, work)
    for e, g in zip(expected, got):
        assert np.array_equal(e, g, equal_nan=True)


@settings(max_examples=15)
@given(small_runs())
def test_the_compiled_engine_takes_the_python_engines_steps(case):
    """On random small clusters, workloads and policies, both engines give the same turn times and totals."""
    assert_same_run(*run_both(*case))
