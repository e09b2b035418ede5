"""How much hit KV an LRU cache of a given size serves: Che's approximation, and the DRAM tier's serving cap.

**Che's approximation** (Che, Tung and Wang, IEEE JSAC 2002; Fricker, Robert and Roberts, ITC 2012 for its
accuracy): objects ``i`` of ``s_i`` bytes are asked for as Poisson streams of rate ``lambda_i`` (the independent
reference model); an LRU cache of ``C`` bytes keeps an object for a characteristic time ``T`` after its last request,
the ``T`` that fills it, ``sum_i s_i * (1 - exp(-lambda_i * T)) = C``, so object ``i`` hits with probability
``1 - exp(-lambda_i * T)`` and the cache serves a share ``sum_i lambda_i s_i (1 - exp(-lambda_i T)) / sum_i lambda_i
s_i`` of the bytes asked for (:func:`byte_hit_ratio`).

**The DRAM tier** (``--dram-tier``): its objects are the live agents' KV, each asked for once a cycle (a turn and the
tool time after it), every agent at the same rate in the steady state the bound describes. With equal rates the
characteristic time drops out: the tier serves a share ``min(1, C / W)`` of the hit KV, ``W`` the working set of the
live agents' KV, whatever their sizes. By Little's law ``W = X * k`` at ``X`` turns/s (``k``:
``bounds.storage.kept_bytes_s_per_turn`` without retention, as an ended agent is asked for no more), so the KV it
serves, ``min(1, C/(X k)) * X * h``, is at most ``C * h / k`` bytes/s (:func:`served_cap_Bps`): a tier serves its
capacity about once a cycle, whatever the throughput. The bound (``bounds.lp``) takes that as a cap on the tier's
rate ``R_m``, which the scheduler may leave unused (a hit can still be read from storage), so more DRAM never lowers
the bound. A test holds the equal-rate share to a direct simulation of an LRU cache.
"""

from __future__ import annotations

import math

import numpy as np

from dualpath_plan.model.sums import dot


def characteristic_time(capacity: float, sizes: np.ndarray, rates: np.ndarray) -> float:
    """Che's ``T``: ``sum s (1 - exp(-rate T)) = capacity`` (``inf`` when every object fits), by bisection on ``log T``."""
    if capacity >= float(sizes.sum()):
        return math.inf
    filled = lambda t: dot(sizes, -np.expm1(-rates * t))  # noqa: E731
    low, high = 0.0, 1.0 / float(rates.min())
    while filled(high) < capacity:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if filled(mid) < capacity else (low, mid)
    return 0.5 * (low + high)


def byte_hit_ratio(capacity: float, sizes: np.ndarray, rates: np.ndarray) -> float:
    """The share of the bytes asked for that an LRU cache of ``capacity`` bytes serves (Che's approximation)."""
    t = characteristic_time(capacity, sizes, rates)
    if math.isinf(t):
        return 1.0
    asked = rates * sizes
    return dot(asked, -np.expm1(-rates * t)) / float(asked.sum())


def served_cap_Bps(capacity_bytes: float, hit_bytes_per_turn: float, working_bytes_s_per_turn: float) -> float:
    """The most hit KV a DRAM tier of ``capacity_bytes`` serves, bytes/s: ``C * h / k`` (module docstring; ``inf`` when
    the working set per turn/s is 0: every agent's KV fits whatever the throughput)."""
    if working_bytes_s_per_turn <= 0:
        return math.inf
    return capacity_bytes * hit_bytes_per_turn / working_bytes_s_per_turn
