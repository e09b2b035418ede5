"""The runner's clock in whole steps, shared by both engines (numba compiles :func:`steps_until` as it stands).

The clock is the step count: a loop's time is ``steps * dt``, never a running sum, so a quiet jump of ``k`` steps
lands on the very time ``k`` single steps reach. An event due at ``due`` is handled at the first loop time
``t >= due``; a jump may not pass it.
"""

from __future__ import annotations

import math


def steps_until(due: float, steps: float, dt: float) -> float:
    """Whole steps from the clock at ``steps`` to the first loop time ``(steps + j) * dt`` at or after ``due``: the
    ceiling of ``(due - t) / dt``, put right where rounding moved it across a step."""
    j = max(0.0, math.ceil((due - steps * dt) / dt))
    while j > 0 and due <= (steps + j - 1.0) * dt:
        j -= 1.0
    while due > (steps + j) * dt:
        j += 1.0
    return j
