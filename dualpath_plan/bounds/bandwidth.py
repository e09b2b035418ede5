"""Numeric closed-form bandwidth model: link loads, the bottleneck-free P/D range, KV ceilings.

Every formula comes from ``symbolic.py`` through the generated ``_generated.py`` (no sympy import
here). Loads are linear in the path rates ``R_p``, ``R_d`` (bytes/s of hit KV read on the PE and DE
path); a resource's load is ``alpha*R_p + beta*R_d`` against a capacity of ``nodes * unit``.

The KV ceiling of a mode is the largest ``R = R_p + R_d`` every resource admits. Writing
``R_d = f*R`` (``f`` the DE-read fraction), resource ``i`` admits ``R <= C_i / (alpha_i + (beta_i -
alpha_i)*f)``; ``basic`` fixes ``f = 0`` (PE path only), ``dualpath`` takes the best ``f`` in
[0, 1]. The best ``f`` minimises the upper envelope of the lines ``h_i(f) = (alpha_i + (beta_i -
alpha_i) f)/C_i``, a convex piecewise-linear function, so it lies at ``f = 0``, ``f = 1`` or where
two lines cross: the evaluation checks exactly those candidates, vectorised over any number of
clusters. When several ``f`` are optimal the smallest (least DE-path traffic) is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualpath_plan.bounds._generated import LOAD_COEFFS, PD_FORMS, RESOURCES, STORAGE_LOAD_COEFFS, STORAGE_PD_FORMS, UNIT_CAPACITY
from dualpath_plan.model.cluster import Cluster, NodeSpec, StorageSide, Traffic
from dualpath_plan.model.errors import PlanError

MODES = ("basic", "dualpath")
BINDING_TOL = 1e-9  # relative: a resource at >= 1 - 1e-9 of capacity is binding
_CHUNK = 20_000  # clusters per vectorised block (bounds memory to ~100 MB)

RESOURCE_WORDS = {
    "pe_snic": "prefill-node storage NICs",
    "de_snic": "decode-node storage NICs",
    "de_snic_write": "decode-node storage NICs (write-back direction)",
    "pe_cnic_read": "prefill-GPU compute NICs (read direction)",
    "pe_cnic_write": "prefill-GPU compute NICs (write direction)",
    "de_cnic_read": "decode-GPU compute NICs (read direction)",
    "de_cnic_write": "decode-GPU compute NICs (write direction)",
    "pe_dram": "prefill-node host DRAM",
    "de_dram": "decode-node host DRAM",
}


def load_coefficients(traffic: Traffic) -> dict[str, tuple[float, float]]:
    """Bytes/s on each resource per byte/s of hit KV read on the PE path and on the DE path."""
    return {name: (float(fp(traffic.mu, traffic.omega)), float(fd(traffic.mu, traffic.omega))) for name, (fp, fd) in LOAD_COEFFS.items()}


def capacities(cluster: Cluster) -> dict[str, float]:
    """Aggregate capacity of every resource, bytes/s: side nodes times one node's capacity."""
    out = {}
    for name in RESOURCES:
        side, n = (cluster.pe, cluster.P) if name.startswith("pe") else (cluster.de, cluster.D)
        out[name] = n * float(UNIT_CAPACITY[name](side.g, side.B, side.s, side.M))
    return out


def storage_capacities(storage: StorageSide) -> dict[str, float]:
    """Aggregate capacity of a sized storage cluster's read and write sides, bytes/s (``N_s*S_r``, ``N_s*S_w``)."""
    return {"storage_read": storage.nodes * storage.read_Bps, "storage_write": storage.nodes * storage.write_Bps}


def storage_coefficients(traffic: Traffic) -> dict[str, tuple[float, float]]:
    """Bytes/s on the storage cluster's read and write sides per byte/s of hit KV on the PE and on the DE path."""
    return {name: (float(fp(traffic.mu, traffic.omega)), float(fd(traffic.mu, traffic.omega))) for name, (fp, fd) in STORAGE_LOAD_COEFFS.items()}


def envelope(intercepts: np.ndarray, slopes: np.ndarray, free_split: bool) -> tuple[np.ndarray, np.ndarray]:
    """Minimise ``H(f) = max_i (intercepts[:, i] + slopes[:, i] * f)`` over f in [0, 1], per row.

    Returns ``(H*, f*)``: the minimum and the smallest minimiser; ``free_split=False`` fixes f = 0.
    Arrays are (N, K); rows are independent clusters. In one dimension, the minimum of a maximum
    of convex functions is attained by some pair of them (Helly's theorem in dimension 1), so
    ``H*`` is the largest pairwise min-max over a falling line ``d`` and a rising or flat line
    ``u`` (at their crossing clipped to [0, 1]), or a lone line's own minimum (``d(1)``, ``u(0)``).
    ``f*`` is then the smallest f at which every falling line is down to ``H*``.
    """
    if not free_split:
        return intercepts.max(axis=1), np.zeros(len(intercepts))
    falling = np.flatnonzero((slopes < 0).any(axis=0))
    rising = np.flatnonzero((slopes >= 0).any(axis=0))
    down, up = slopes[:, falling] < 0, slopes[:, rising] >= 0  # each line plays one role per row
    a_d = np.where(down, intercepts[:, falling], -np.inf)
    b_d = np.where(down, slopes[:, falling], 0.0)
    a_u = np.where(up, intercepts[:, rising], -np.inf)
    b_u = np.where(up, slopes[:, rising], 0.0)
    best = np.maximum((a_d + b_d).max(axis=1, initial=-np.inf), a_u.max(axis=1, initial=-np.inf))
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (a_d[:, :, None] - a_u[:, None, :]) / (b_u[:, None, :] - b_d[:, :, None])
    cross = np.clip(np.nan_to_num(cross, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)
    pair = np.maximum(a_d[:, :, None] + b_d[:, :, None] * cross, a_u[:, None, :] + b_u[:, None, :] * cross)
    if pair.size:
        best = np.maximum(best, pair.reshape(len(best), -1).max(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(down, (best[:, None] - a_d) / np.where(down, b_d, -1.0), 0.0)
    f = np.clip(reach.max(axis=1, initial=0.0), 0.0, 1.0)
    return best, f


def ceiling_arrays(caps: np.ndarray, alpha: np.ndarray, beta: np.ndarray, free_split: bool) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised KV ceiling: ``caps`` (N, K) bytes/s, ``alpha``/``beta`` (K,) or (N, K) per byte.

    Returns ``(R, f)``: the largest total hit-KV rate (bytes/s) and its DE-read fraction.
    """
    caps = np.atleast_2d(np.asarray(caps, dtype=float))
    alpha = np.broadcast_to(alpha, caps.shape)
    beta = np.broadcast_to(beta, caps.shape)
    out_r, out_f = np.empty(len(caps)), np.empty(len(caps))
    for start in range(0, len(caps), _CHUNK):
        block = slice(start, start + _CHUNK)
        h, f = envelope(alpha[block] / caps[block], (beta[block] - alpha[block]) / caps[block], free_split)
        out_r[block], out_f[block] = 1.0 / h, f
    return out_r, out_f


def capacity_matrix(P: np.ndarray, D: np.ndarray, pe: NodeSpec, de: NodeSpec) -> np.ndarray:
    """Capacities (N, K) in bytes/s for N clusters; ``pe``/``de`` fields may be arrays of length N."""
    P, D = np.asarray(P, dtype=float), np.asarray(D, dtype=float)
    columns = []
    for name in RESOURCES:
        side, n = (pe, P) if name.startswith("pe") else (de, D)
        columns.append(n * UNIT_CAPACITY[name](side.g, side.B, side.s, side.M))
    return np.stack(np.broadcast_arrays(*columns), axis=1)


def coefficient_arrays(traffic: Traffic) -> tuple[np.ndarray, np.ndarray]:
    """:func:`load_coefficients` as two arrays in ``RESOURCES`` order: (on R_p, on R_d)."""
    coeffs = load_coefficients(traffic)
    return np.array([coeffs[n][0] for n in RESOURCES]), np.array([coeffs[n][1] for n in RESOURCES])


def kv_ceilings(P: np.ndarray, D: np.ndarray, pe: NodeSpec, de: NodeSpec, traffic: Traffic, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`ceiling` over N clusters: ``(kv_Bps, de_read_fraction)`` arrays."""
    alpha, beta = coefficient_arrays(traffic)
    return ceiling_arrays(capacity_matrix(P, D, pe, de), alpha, beta, mode == "dualpath")


@dataclass(frozen=True)
class Ceiling:
    """The I/O-only KV ceiling of one mode: rates in bytes/s, utilisation 0..1 per resource.

    Attributes:
        mode: ``basic`` (the PE path only) or ``dualpath`` (the best split).
        kv_Bps: The most hit KV the links and DRAMs admit, ``R_p + R_d``, bytes/s.
        R_p_Bps: Of it, read on the PE path, bytes/s.
        R_d_Bps: Of it, read on the DE path, bytes/s.
        de_read_fraction: ``R_d / (R_p + R_d)``, a fraction (the smallest of the optimal ones).
        utilization: Load over capacity of each of the nine resources at the ceiling, a fraction.
        binding: The resources at capacity.
    """

    mode: str
    kv_Bps: float
    R_p_Bps: float
    R_d_Bps: float
    de_read_fraction: float
    utilization: dict[str, float]
    binding: tuple[str, ...]


def resource_loads(coeffs: dict[str, tuple[float, float]], R_p: float, R_d: float) -> dict[str, float]:
    """Aggregate load (bytes/s) on every resource for the given path rates."""
    return {name: a * R_p + b * R_d for name, (a, b) in coeffs.items()}


def utilization(cluster: Cluster, traffic: Traffic, R_p: float, R_d: float) -> dict[str, float]:
    """Load over capacity for every resource at path rates ``R_p``, ``R_d`` bytes/s (a sized storage cluster's two
    sides included)."""
    caps, coeffs = capacities(cluster), load_coefficients(traffic)
    if cluster.storage_limits:
        caps, coeffs = caps | storage_capacities(cluster.storage), coeffs | storage_coefficients(traffic)
    return {name: load / caps[name] for name, load in resource_loads(coeffs, R_p, R_d).items()}


def binding_of(util: dict[str, float]) -> tuple[str, ...]:
    """Resources at capacity (within BINDING_TOL)."""
    return tuple(name for name, u in util.items() if u >= 1 - BINDING_TOL)


def ceiling(cluster: Cluster, traffic: Traffic, mode: str) -> Ceiling:
    """The KV ceiling of ``mode`` (``basic``: PE path only; ``dualpath``: best split)."""
    if mode not in MODES:
        raise PlanError(f"mode {mode!r} is not allowed; must be one of {', '.join(MODES)}", 2)
    if cluster.storage_limits:  # the storage sides are two more (flat) lines
        caps = capacities(cluster) | storage_capacities(cluster.storage)
        coeffs = load_coefficients(traffic) | storage_coefficients(traffic)
        alpha, beta = (np.array([coeffs[n][k] for n in caps]) for k in (0, 1))
        total, frac = ceiling_arrays(np.array([list(caps.values())]), alpha, beta, mode == "dualpath")
    else:
        total, frac = kv_ceilings(np.array([cluster.P]), np.array([cluster.D]), cluster.pe, cluster.de, traffic, mode)
    R, f = float(total[0]), float(frac[0])
    R_p, R_d = R * (1 - f), R * f
    util = utilization(cluster, traffic, R_p, R_d)
    return Ceiling(mode, R, R_p, R_d, f, util, binding_of(util))


@dataclass(frozen=True)
class PdRange:
    """The bottleneck-free P/D range (eq. (9)) with both SNICs saturated.

    ``upper`` is ``inf`` when nothing bounds it from above.

    Attributes:
        lower: The lowest P/D at which no NIC or DRAM binds, a ratio of node counts.
        upper: The highest such P/D (``inf``: no resource bounds it from above).
        lower_limits: Each resource that bounds P/D from below, with its bound (a ratio).
        upper_limits: Each resource that bounds P/D from above, with its bound (a ratio).
        lower_by: The resources that set ``lower``.
        upper_by: The resources that set ``upper``.
        violated: Resources over capacity at every P/D (then the range is empty).
    """

    lower: float
    upper: float
    lower_limits: dict[str, float]
    upper_limits: dict[str, float]
    lower_by: tuple[str, ...]
    upper_by: tuple[str, ...]
    violated: tuple[str, ...]

    @property
    def limits(self) -> dict[str, float]:
        return {**self.lower_limits, **self.upper_limits}

    def contains(self, ratio: float) -> bool:
        return not self.violated and self.lower * (1 - BINDING_TOL) <= ratio <= self.upper * (1 + BINDING_TOL)


def pd_range(node: NodeSpec, traffic: Traffic, storage: tuple[float, StorageSide] | None = None) -> PdRange:
    """Eq. (9) generalised: each resource's saturated-SNIC form ``a*r + b <= 0`` bounds r = P/D. ``storage``:
    ``(n_s, side)``, a sized storage cluster of ``n_s`` storage nodes per decode node, whose read and write sides
    give the range a storage end (``symbolic.storage_linear_forms``)."""
    lower, upper, violated = {}, {}, []
    args = (node.g, node.B, node.s, node.M, traffic.mu, traffic.omega)
    forms = [(name, fa(*args), fb(*args)) for name, (fa, fb) in PD_FORMS.items()]
    if storage is not None:
        n_s, side = storage
        more = (*args, n_s, side.read_Bps, side.write_Bps)
        forms += [(name, fa(*more), fb(*more)) for name, (fa, fb) in STORAGE_PD_FORMS.items()]
    for name, a, b in forms:
        a, b = float(a), float(b)
        scale = max(abs(a), abs(b), 1.0)
        if abs(a) <= 1e-12 * scale:
            if b > 1e-12 * scale:
                violated.append(name)
        elif a > 0:
            upper[name] = -b / a
            if -b / a <= 0:
                violated.append(name)
        elif -b / a > 0:
            lower[name] = -b / a
    low = max(lower.values(), default=0.0)
    high = min(upper.values(), default=float("inf"))
    return PdRange(
        lower=low,
        upper=high,
        lower_limits=lower,
        upper_limits=upper,
        lower_by=tuple(n for n, v in lower.items() if np.isclose(v, low, rtol=1e-12)),
        upper_by=tuple(n for n, v in upper.items() if np.isclose(v, high, rtol=1e-12)),
        violated=tuple(violated) + (("range",) if low > high else ()),
    )
