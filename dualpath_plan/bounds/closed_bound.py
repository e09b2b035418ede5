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

With a DRAM tier (``--dram-tier``) the LP has a third rate ``R_m`` (``lp`` module docstring). For a fixed ``R_m`` every
link's capacity is reduced by the tier's load ``c_i * R_m`` and the rest is the problem above, so
``G(R_m) = min((R*(R_m) + R_m)/h, compute, decode, storage capacity)``; ``G`` is concave (an LP's optimum as a
function of its right-hand side), so a narrowing grid search over ``0 <= R_m <= min(K, c_i-feasible)`` finds its
maximum (``K``: the LRU's cap, ``bounds.lru``). Among the ``R_m`` that reach it the largest is reported (an LRU serves
the hits it holds). The links' prices are those at that ``R_m``; the tier's own, when its cap binds, is ``G``'s slope
there times ``h/k_w`` (per byte of tier DRAM).

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

from dualpath_plan.bounds.bandwidth import RESOURCES, envelope
from dualpath_plan.bounds.lp import BINDING_TOL, COMPUTE, DECODE, DRAM_TIER, STORAGE_CAPACITY, Bound, Limits, make_bound

_TIE = 1e-12  # relative: terms this close count as limiting together


def _lines(lim: Limits) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Per-link names, coefficients (on R_p, on R_d, bytes per hit byte) and capacities (B/s): the links and DRAMs,
    then a sized storage cluster's read and write sides."""
    coeffs = {**lim.coefficients, **lim.storage_coefficients}  # with a DRAM tier, its caching's loads included
    names = (*RESOURCES, *lim.storage_coefficients)
    alpha, beta = (np.array([coeffs[n][k] for n in names]) for k in (0, 1))
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
    with np.errstate(divide="ignore", invalid="ignore"):  # a line a DRAM tier leaves no capacity: loaded, it binds first
        ratio = np.where(caps > 0, c / caps, np.where(c > 0, np.inf, 0.0))
        top = ratio.max()
        util = ratio / top if np.isfinite(top) else np.where(np.isinf(ratio), 1.0, 0.0)
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


def _x_terms(lim: Limits, mode: str) -> tuple[float, float, float]:
    """The turns/s prefill compute, decode and the storage's capacity admit (``inf`` where a term is absent)."""
    caps, kept = lim.capacities(), lim.kept_bytes_s_per_turn
    x_compute = caps[COMPUTE] / lim.flops_per_turn if lim.flops_per_turn > 0 else np.inf  # no miss tokens: nothing to prefill
    x_decode = caps[DECODE] / lim.gen_tokens_per_turn
    x_kept = caps[STORAGE_CAPACITY] / kept if STORAGE_CAPACITY in caps and mode != "oracle" and kept > 0 else np.inf
    return x_compute, x_decode, x_kept


def solve_closed(lim: Limits, mode: str) -> Bound:
    """The bound of ``mode`` (basic, dualpath, oracle) in closed form; equal to :func:`lp.solve`."""
    if lim.tier and mode != "oracle":
        return _solve_tier(lim, mode)
    h = lim.hit_bytes_per_turn
    x_compute, x_decode, x_kept = _x_terms(lim, mode)
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
    else:
        prices = _term_prices(lim, X, x_compute, x_decode, x_kept)
    return make_bound(lim, mode, X, R_p, R_d, prices)


def _term_prices(lim: Limits, X: float, x_compute: float, x_decode: float, x_kept: float) -> dict[str, float]:
    """The price of the first of prefill compute, decode and the storage's capacity that limits ``X`` (the order of a
    degenerate vertex, module docstring); none when none does."""
    for x, name, per_turn in ((x_compute, COMPUTE, lim.flops_per_turn), (x_decode, DECODE, lim.gen_tokens_per_turn),
                              (x_kept, STORAGE_CAPACITY, lim.kept_bytes_s_per_turn)):
        if x <= X * (1 + _TIE):
            return {name: 1.0 / per_turn}
    return {}


_GRID = 33  # points per pass of the search over R_m: each pass narrows the bracket 16-fold
_PASSES = 10  # 16^-10: the bracket ends within 1e-12 of the tier's reach


class _TierProblem:
    """The bound at a fixed tier rate ``R_m`` (module docstring), for one cluster and mode."""

    def __init__(self, lim: Limits, mode: str) -> None:
        self.lim, self.mode, self.h = lim, mode, lim.hit_bytes_per_turn
        self.names, self.alpha, self.beta, self.caps = _lines(lim)
        self.gamma = np.array([lim.tier_read_coefficients.get(n, 0.0) for n in self.names])
        caps = lim.capacities()
        self.x_compute, self.x_decode, self.x_kept = _x_terms(lim, mode)
        loaded = self.gamma > 0
        with np.errstate(over="ignore"):  # a load of a few ulps reaches past any capacity
            reach = float(np.min(self.caps[loaded] / self.gamma[loaded])) if loaded.any() else np.inf
        x_other = min(self.x_compute, self.x_decode, self.x_kept)  # R_m <= X*h: the tier serves no more than the turns ask
        self.top = min(lim.tier_cap_Bps * caps[DRAM_TIER] / lim.tier_bytes, reach, x_other * self.h)  # the tier's cap, as derated

    def left(self, r_m: float | np.ndarray) -> np.ndarray:
        """Each line's capacity left for the storage reads once the tier serves ``r_m`` (one value, or one row per value
        of an array); a line the tier fills keeps a sliver, 1e-12 of its capacity, so that the envelope ranks it as the
        steepest line rather than as 0/0."""
        r = np.atleast_1d(np.asarray(r_m, dtype=float))
        out = np.maximum(self.caps[None, :] - self.gamma[None, :] * r[:, None], self.caps[None, :] * 1e-12)
        return out[0] if np.ndim(r_m) == 0 else out

    def reads(self, left: np.ndarray) -> np.ndarray:
        """The storage reads the lines admit with capacities ``left`` (one row per case), bytes/s (``bandwidth.envelope``)."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            H, _ = envelope(self.alpha[None, :] / left, (self.beta - self.alpha)[None, :] / left, self.mode == "dualpath")
            return np.where(np.isfinite(H) & (H > 0), 1.0 / H, 0.0)

    def values(self, r_m: np.ndarray) -> np.ndarray:
        """``G`` at every rate of ``r_m``: the most turns/s with the tier serving that many bytes/s (one envelope call)."""
        return np.minimum((self.reads(self.left(r_m)) + r_m) / self.h, min(self.x_compute, self.x_decode, self.x_kept))

    def value(self, r_m: float) -> float:
        return float(self.values(np.array([r_m]))[0])

    def best(self) -> tuple[float, float]:
        """``(X, r_m)``: ``G``'s maximum and the largest ``r_m`` that reaches it. ``G`` is concave: each pass takes the
        bracket around the best of a grid, then the rates that reach the maximum (an interval) are narrowed to its
        right end the same way."""
        top = max(self.top, 0.0)
        lo, hi = 0.0, top
        X = self.value(0.0)
        for _ in range(_PASSES):
            grid = np.linspace(lo, hi, _GRID)
            g = self.values(grid)
            k = int(np.argmax(g))
            X = max(X, float(g[k]))
            lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, _GRID - 1)]
        good = X * (1 - _TIE)
        hi = top  # the right end of {r_m: G(r_m) >= X}: lo reaches it
        for _ in range(_PASSES):
            grid = np.linspace(lo, hi, _GRID)
            reach = np.flatnonzero(self.values(grid) >= good)
            j = int(reach[-1]) if len(reach) else 0
            if j == _GRID - 1:
                return X, hi
            lo, hi = grid[j], grid[j + 1]
        return X, lo

    def tier_price(self, X: float) -> float:
        """``dX/dC`` of the tier's bytes when its cap binds: ``G``'s left slope at the cap times ``h/k_w``."""
        step = self.top * 1e-6
        slope = (X - self.value(self.top - step)) / step
        return max(slope, 0.0) * self.h / self.lim.working_bytes_s_per_turn


def _solve_tier(lim: Limits, mode: str) -> Bound:
    """The bound of ``basic`` or ``dualpath`` with a DRAM tier (module docstring)."""
    p = _TierProblem(lim, mode)
    X, r_m = p.best()
    h, left = p.h, p.left(r_m)
    R = X * h - r_m
    R = R if R > 1e-12 * X * h else 0.0  # what rounding leaves of an exhausted storage read is none
    f = _least_de_fraction(p.alpha, p.beta, left, R) if mode == "dualpath" else 0.0
    R_p, R_d = (1 - f) * R, f * R
    x_io = (float(p.reads(left[None, :])[0]) + r_m) / h
    if x_io <= X * (1 + _TIE) and R > 0:
        prices = _io_prices(p.names, p.alpha, p.beta, left, f, h, mode == "dualpath")
    else:
        prices = _term_prices(lim, X, p.x_compute, p.x_decode, p.x_kept)
    if r_m >= p.top * (1 - 1e-9) and p.top > 0:
        prices[DRAM_TIER] = p.tier_price(X)
    return make_bound(lim, mode, X, R_p, R_d, prices, r_m)

