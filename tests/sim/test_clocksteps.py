"""The runner's clock in whole steps (sim/clocksteps.py), shared by both engines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.sim.clocksteps import steps_until


def test_an_event_on_a_step_s_time_is_handled_at_that_step_whatever_the_rounding():
    dt = 0.05
    # 20 steps: t = 1.0; an event due at 1.05 as a sum of periods (1.0500000000000003) or exactly
    assert steps_until(0.9 + 0.15, 20, dt) == (1 if 0.9 + 0.15 <= 21 * dt else 2)
    assert steps_until(21 * dt, 20, dt) == 1
    assert steps_until(1.0, 20, dt) == 0 and steps_until(0.2, 20, dt) == 0


@given(st.integers(0, 10**6), st.floats(0.0, 1e4), st.sampled_from([0.01, 0.05, 0.1, 0.3]))
def test_it_is_the_first_loop_time_at_or_after_the_event(steps, ahead, dt):
    due = steps * dt + ahead
    j = steps_until(due, steps, dt)
    assert due <= (steps + j) * dt
    assert j == 0 or due > (steps + j - 1) * dt


def test_the_compiled_twin_gives_the_same_steps():
    pytest.importorskip("numba")
    from dualpath_plan.sim.compiled.loop import steps_until as compiled

    for due, steps, dt in ((0.9 + 0.15, 20.0, 0.05), (1e3 + 1e-9, 3.0, 0.3), (5.0, 100.0, 0.05)):
        assert compiled(due, steps, dt) == steps_until(due, steps, dt)
