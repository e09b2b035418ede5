"""Properties of the compiled engine: its sharing kernel and its runs are the Python engine's, exactly."""

from __future__ import annotations

from dataclasses import replace

import pytest
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dualpath_plan.bounds.steptime import Mtp
from dualpath_plan.model.profiles import catalog
from dualpath_plan.sim.compiled.share import allocate_loops, idle_sure
from dualpath_plan.sim.python.share import allocate
from tests.properties.test_fluid_props import sharing_problems, small_runs
from tests.sim.core_cases import assert_same_run, run_both


@pytest.mark.slow
@given(sharing_problems())
def test_the_compiled_sharing_kernel_returns_the_numpy_allocation_bit_for_bit(problem):
    inc, budget, work = problem
    expected = allocate(inc, budget, work)
    none_sure = np.zeros(inc.n_flows, np.int64)
    got = allocate_loops(inc.flow, inc.res, inc.coef, inc.aw, inc.starts, inc.lengths, inc.weight, budget, work, none_sure)
    for e, g in zip(expected, got):
        assert np.array_equal(e, g, equal_nan=True)


@pytest.mark.slow
@given(sharing_problems(), st.data())
def test_idle_flows_marked_sure_for_a_budget_allocate_as_unmarked_under_any_budget_not_below_it(problem, data):
    """The engine marks its pipes once (``share.idle_sure``, from the budget of a step) and allocates under that
    budget plus a late-work bonus: the marks skip work, never change a bit of the allocation."""
    inc, budget, work = problem
    sure = idle_sure(inc.res, inc.coef, inc.starts, inc.lengths, budget)
    bonus = np.array(data.draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 10.0)), min_size=budget.size, max_size=budget.size)))
    step_budget = budget + bonus
    args = (inc.flow, inc.res, inc.coef, inc.aw, inc.starts, inc.lengths, inc.weight, step_budget, work)
    marked, unmarked = allocate_loops(*args, sure), allocate_loops(*args, np.zeros(inc.n_flows, np.int64))
    for m, u in zip(marked, unmarked):
        assert np.array_equal(m, u, equal_nan=True)


@pytest.mark.slow
@settings(max_examples=15)
@given(small_runs())
def test_the_compiled_engine_takes_the_python_engines_steps(case):
    """On random small clusters, workloads and policies, both engines give the same turn times and totals."""
    assert_same_run(*run_both(*case))


@st.composite
def small_tier_runs(draw):
    """``small_runs`` with a DRAM tier of 1-8 GB a node: from one that thrashes to one that holds every agent."""
    sc, traj, policy = draw(small_runs())
    return replace(sc, dram_tier_GB=draw(st.sampled_from([1.0, 2.0, 8.0]))), traj, policy


@pytest.mark.slow
@settings(max_examples=10)
@given(small_tier_runs())
def test_the_compiled_engine_plays_the_python_engines_dram_tier(case):
    """With a DRAM tier both engines ask, fill and evict the same LRU: the same turn times, tier records and totals."""
    assert_same_run(*run_both(*case))


@st.composite
def step_time_inputs(draw):
    """A shipped model on shipped hardware at a drawn instance size, batch and context."""
    cat = catalog()
    model = cat.get("model", draw(st.sampled_from(cat.names("model"))))
    hw = cat.get("hardware", draw(st.sampled_from(cat.names("hardware"))))
    gpus = draw(st.sampled_from([1, 2, 8, 16, 24, 32, 48, 64, 144, 256, 1024]))
    batch = draw(st.floats(0.0, 2000.0))
    context = draw(st.floats(0.0, 200_000.0))
    drafts = draw(st.integers(0, 3))
    mtp = Mtp(drafts, draw(st.floats(1.0, drafts + 1.0)), 1) if drafts else Mtp()
    return model, hw, gpus, batch, context, mtp


@pytest.mark.slow
@given(step_time_inputs())
def test_the_compiled_step_time_kernels_return_the_python_functions_bit_for_bit(case):
    """The compiled engine times decode steps and forward passes with numba's build of bounds/steptime.py's own
    functions; on any input they give the Python functions' numbers exactly, terms included."""
    from dualpath_plan.bounds import steptime
    from dualpath_plan.sim.compiled import queues

    model, hw, gpus, batch, context, mtp = case
    decode, prefill = steptime.DecodeStep.of(model, hw, gpus, mtp=mtp).vector, steptime.PrefillPass.of(model, hw, "fp8", gpus).vector
    kv, attn = batch * 1e6, batch * context * 1e5
    for py, jit, args in ((steptime.decode_terms, queues.decode_terms, (batch, kv, attn * 1e-15, decode)),
                          (steptime.prefill_terms, queues.prefill_terms, (batch * 64, attn, batch, prefill))):
        out_py, out_jit = np.zeros(steptime.N_TERMS), np.zeros(steptime.N_TERMS)
        assert py(*args, out_py) == jit(*args, out_jit)
        assert np.array_equal(out_py, out_jit)


@pytest.mark.slow
@given(step_time_inputs(), st.floats(0.0, 200_000.0))
def test_a_decode_step_from_kept_batch_terms_is_the_whole_computation(case, other_context):
    """The compiled engine keeps a batch size's ``BATCH_TERMS`` and times later steps of that size from them
    (``queues.decode_step``): the kept slots alone, with every other slot garbage, give ``decode_terms`` exactly,
    for any reads and attention of the later step."""
    from dualpath_plan.bounds import steptime
    from dualpath_plan.sim.compiled import queues

    model, hw, gpus, batch, context, mtp = case
    decode = steptime.DecodeStep.of(model, hw, gpus, mtp=mtp).vector
    kept = np.zeros(steptime.N_TERMS)
    queues.decode_batch_terms(batch, decode, kept)
    for ctx in (context, other_context):
        kv, attn = batch * ctx * 70.0, batch * ctx * 1e-10
        whole, later = np.zeros(steptime.N_TERMS), np.full(steptime.N_TERMS, np.nan)
        later[list(steptime.BATCH_TERMS)] = kept[list(steptime.BATCH_TERMS)]
        assert queues.decode_step_terms(batch, kv, attn, decode, later) == steptime.decode_terms(batch, kv, attn, decode, whole)
        assert np.array_equal(later, whole)
