"""The throughput LP of ``lp`` solved in closed form: the same optimum and prices without a solver.

The LP (``lp`` module docstring) has one structural property that makes it small: the compute and
decode rows involve only ``X``, and the link rows only the path rates, tied to ``X`` by
``R_p + R_d = X*h`` (``h`` hit bytes per turn). With ``R_d = f*X*h`` every link ``i`` admits
``X <= C_i / (h*(alpha_i + (beta_i - alpha_i)*f))``, so

    X* = min( R*(f*)/h,  P*g*prefill_rate / F_turn,  D*g*decode_rate / gen_tokens,  N_s*U / k )

where ``R*`` is the I/O ceiling of ``bandwidth.envelope`` (``f = 0`` for ``basic``; no I/O term for
``oracle``), over the links and, with a sized storage cluster, its read and write sides (flat lines: every split
loads them alike); the last term is the storage capacity (``bounds.storage``), absent without one and for
``oracle``. Among optimal splits the least DE-path traffic is reported, as the LP does.

Prices (``dX/dC`` of each binding limit) follow from the active constraints. Compute or decode
alone: ``1/F_turn`` or ``1/gen_tokens``. One link at an end of the split range: ``1/(h*c_i(f*))``.
A falling and a rising link crossing inside (0, 1): the 2x2 system ``[alpha_i beta_i; alpha_j
beta_j]^T y = [1, 1]`` gives ``dR/dC``. Where more limits tie than the LP needs (a degenerate
vertex) the price goes to the first limiting term in the order I/O, compute, decode, storage capacity: one of the
valid dual solutions, as a solver would return one. ``bottleneck`` uses this (it answers in well
under a second without importing ``scipy.optimize``); tests hold it equal to the HiGHS solve.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.bounds.bandwidth import RESOURCES, coefficient_arrays, envelope
from dualpath_plan.bounds.lp import BINDING_TOL, COMPUTE, DECODE, STORAGE_CAPACITY, Bound, Limits, make_bound

_TIE = 1e-12  # relative: terms this close count as limiting together


def _lines(lim: Limits) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Per-link names, coefficients (on R_p, on R_d, bytes per hit byte) and capacities (B/s): the links and DRAMs,
    then a sized storage cluster's read and write sides."""
    alpha, beta = coefficient_arrays(lim.traffic)
    extra = lim.storage_coefficients
    names = (*RESOURCES, *extra)
    alpha = np.concatenate([alpha, [a for a, _ in extra.values()]])
    beta = np.concatenate([beta, [b for _, b in extra.values()]])
    caps = lim.capacities()
    return names, alpha, beta, np.array([caps[n] for n in names])


def _least_de_fraction(alpha: np.ndarray, beta: np.ndarray, caps: np.ndarray, R: float) -> float:
    """The smallest DE-read fraction at which every link carries a total hit-KV rate ``R``."""
    falling = beta < alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        lows = np.where(falling, (alpha * R - caps) / ((alpha - beta) * R), 0.0)
    return float(np.clip(lows.max(initial=0.0), 0.0, 1.0)) if R > 0 else 0.0


def _io_prices(names: tuple[str, ...], alpha: np.ndarray, beta: np.ndarray, caps: np.ndarray, f: float, h: float, free: bool) -> dict[str, float]:
    """``dX/dC`` of the links active at split ``f`` when the I/O ceiling limits ``X``."""
    c = alpha + (beta - alpha) * f
    util = c / caps / (c / caps).max()
    active = [i for i in range(len(caps)) if util[i] >= 1 - BINDING_TOL]
    down = [i for i in active if beta[i] < alpha[i]]
    up = [i for i in active if beta[i] > alpha[i]]
    flat = [i for i in active if beta[i] == alpha[i]]  # a storage side: every split loads it alike
    if free and flat:  # it caps R at any split, so it alone prices the ceiling
        return {names[flat[0]]: 1.0 / (h * c[flat[0]])}
    if free and down and up and 0.0 < f < 1.0:
        i, j = down[0], up[0]
        y = np.linalg.solve(np.array([[alpha[i], alpha[j]], [beta[i], beta[j]]]), np.ones(2))
        return {names[i]: max(y[0], 0.0) / h, names[j]: max(y[1], 0.0) / h}
    first = active[0]
    return {names[first]: 1.0 / (h * c[first])}


def solve_closed(lim: Limits, mode: str) -> Bound:
    """The bound of ``mode`` (basic, dualpath, oracle) in closed form; equal to :func:`lp.solve`."""
    h = lim.hit_bytes_per_turn
    caps = lim.capacities()
    x_compute = caps[COMPUTE] / lim.flops_per_turn if lim.flops_per_turn > 0 else np.inf  # no miss tokens: nothing to prefill
    x_decode = caps[DECODE] / lim.gen_tokens_per_turn
    kept = lim.kept_bytes_s_per_turn
    x_kept = caps[STORAGE_CAPACITY] / kept if STORAGE_CAPACITY in caps and mode != "oracle" and kept > 0 else np.inf
    names, alpha, beta, link_caps = _lines(lim)
    if mode == "oracle":
        x_io = np.inf
    else:
        H, _ = envelope((alpha / link_caps)[None, :], ((beta - alpha) / link_caps)[None, :], mode == "dualpath")
        x_io = 1.0 / float(H[0]) / h
    X = min(x_io, x_compute, x_decode, x_kept)
    f = _least_de_fraction(alpha, beta, link_caps, X * h) if mode == "dualpath" else 0.0
    R_p, R_d = ((1 - f) * X * h, f * X * h) if mode != "oracle" else (0.0, 0.0)
    if x_io <= X * (1 + _TIE):
        prices = _io_prices(names, alpha, beta, link_caps, f, h, mode == "dualpath")
    elif x_compute <= X * (1 + _TIE):
        prices = {COMPUTE: 1.0 / lim.flops_per_turn}
    elif x_decode <= X * (1 + _TIE):
        prices = {DECODE: 1.0 / lim.gen_tokens_per_turn}
    else:
        prices = {STORAGE_CAPACITY: 1.0 / kept}
    return make_bound(lim, mode, X, R_p, R_d, prices)
