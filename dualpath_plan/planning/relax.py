"""The LP relaxation of a budget question in closed form: the best X when P and D may be fractions.

Dropping integrality from the budget MILP (``plan``) leaves, for given continuous ``P`` and ``D``, the LP of the
cluster with fractional node counts, except for decode: the one-hot table ``X*gen <= sum_d cap(d)*y_d``,
``D = sum_d d*y_d``, ``sum_d y_d = 1`` relaxes to ``X*gen <= c(D)``, the upper concave envelope of the points
``(d, cap(d))``. So

    X(P, D) = min( I/O(P, D),  P / F_coef,  c(D) / gen )

with the I/O term ``bandwidth.envelope``'s ceiling over links whose capacities grow with ``P`` or ``D``. Each term
is concave and non-decreasing in ``P`` and ``D``, so the best point spends the budget, and along the budget line
``X`` is a concave function of ``P``: a grid and a golden-section search find its maximum to a relative 1e-12.
``plan`` reports it as the LP relaxation without importing a solver; a property test holds it equal to HiGHS'
relaxation of the MILP.
"""

from __future__ import annotations

import math

import numpy as np

from dualpath_plan.bounds.bandwidth import envelope

GRID = 513  # points along the budget line before the golden-section search
GOLDEN_STEPS = 80  # each keeps 0.618 of the interval: 80 steps leave a 1e-17 share of it
_GOLD = (math.sqrt(5.0) - 1.0) / 2.0


def concave_envelope(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The upper concave envelope of the points ``(d, values[d - 1])`` for ``d = 1..n``, as its vertices ``(d, value)``."""
    hull: list[tuple[float, float]] = []
    for point in zip(np.arange(1.0, values.size + 1.0), values.astype(float)):
        while len(hull) >= 2 and _not_above(hull[-2], hull[-1], point):
            hull.pop()
        hull.append(point)
    xs, ys = zip(*hull)
    return np.array(xs), np.array(ys)


def _not_above(a: tuple[float, float], b: tuple[float, float], c: tuple[float, float]) -> bool:
    """``b`` lies on or below the chord from ``a`` to ``c`` (so it is not a vertex of the upper envelope)."""
    return (b[1] - a[1]) * (c[0] - a[0]) <= (c[1] - a[1]) * (b[0] - a[0])


def budget_relaxation(io_rows: np.ndarray, io_on_pe: np.ndarray, compute_coef: float, gen: float, caps: np.ndarray,
                      weights: tuple[float, float], amount: float, p_bounds: tuple[float, float], d_max: float,
                      free_split: bool) -> float:
    """The relaxed optimum, turns/s: ``io_rows`` (K, 2) are the links' loads on (r_p, r_d) per node of capacity, on the
    prefill side where ``io_on_pe``; ``compute_coef`` a turn's FLOP over one prefill node's rate; ``caps[d - 1]`` the
    decode capacity (tokens/s) of ``d`` nodes; ``w_P*P + w_D*D <= amount`` with ``P`` in ``p_bounds`` and
    ``1 <= D <= d_max``; ``free_split`` False reads everything through the prefill side (basic)."""
    wp, wd = weights
    hull = concave_envelope(caps)
    lo, hi = p_bounds[0], min(p_bounds[1], (amount - wd) / wp)
    if hi < lo:
        return 0.0

    def turns(P: np.ndarray) -> np.ndarray:
        D = np.minimum(d_max, (amount - wp * P) / wd)
        side = np.where(io_on_pe[None, :], P[:, None], D[:, None])
        H, _ = envelope(io_rows[None, :, 0] / side, (io_rows[None, :, 1] - io_rows[None, :, 0]) / side, free_split)
        with np.errstate(divide="ignore"):
            io = np.where(H > 0, 1.0 / H, np.inf)
            compute = P / compute_coef if compute_coef > 0 else np.full_like(P, np.inf)
        return np.minimum(np.minimum(io, compute), np.interp(D, *hull) / gen)

    grid = np.linspace(lo, hi, GRID)
    values = turns(grid)
    best = int(values.argmax())
    a, b = grid[max(best - 1, 0)], grid[min(best + 1, GRID - 1)]
    for _ in range(GOLDEN_STEPS):  # concave along the line: the maximum stays inside [a, b]
        c, d = b - _GOLD * (b - a), a + _GOLD * (b - a)
        fc, fd = turns(np.array([c, d]))
        a, b = (a, d) if fc >= fd else (c, b)
    return float(max(values.max(), turns(np.array([0.5 * (a + b)]))[0]))
