"""Che's approximation of an LRU cache (bounds/lru.py) against a direct simulation of one."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from dualpath_plan.bounds import lru

TOLERANCE = 0.03  # absolute, on the byte hit ratio: Che's approximation on a few thousand objects


def simulated_byte_hit_ratio(capacity: float, sizes: np.ndarray, rates: np.ndarray, requests: int, seed: int) -> float:
    """An LRU cache of ``capacity`` bytes fed independent requests with probabilities proportional to ``rates``: the share
    of the bytes asked for that it held (after a warm-up of a fifth of the requests)."""
    rng = np.random.default_rng(seed)
    asks = rng.choice(len(sizes), size=requests, p=rates / rates.sum())
    cache, held, hit, asked = OrderedDict(), 0.0, 0.0, 0.0
    for k, i in enumerate(asks.tolist()):
        counted = k >= requests // 5
        if i in cache:
            cache.move_to_end(i)
            hit += sizes[i] if counted else 0.0
        else:
            cache[i] = True
            held += sizes[i]
            while held > capacity:
                old, _ = cache.popitem(last=False)
                held -= sizes[old]
        asked += sizes[i] if counted else 0.0
    return hit / asked


@pytest.mark.parametrize("fill", [0.2, 0.5, 0.8])
def test_equal_rates_serve_the_share_of_the_working_set_that_fits(fill):
    """Agents asked for at the same rate, of any sizes: the cache serves ``C / W`` of the bytes (the tier's rule)."""
    rng = np.random.default_rng(7)
    sizes = rng.lognormal(0.0, 1.0, 2000)
    rates = np.ones(2000)
    capacity = fill * sizes.sum()
    assert lru.byte_hit_ratio(capacity, sizes, rates) == pytest.approx(fill, abs=1e-9)
    assert simulated_byte_hit_ratio(capacity, sizes, rates, 120_000, 1) == pytest.approx(fill, abs=TOLERANCE)


@pytest.mark.parametrize("fill", [0.1, 0.3, 0.6])
def test_unequal_rates_as_che_estimates(fill):
    """Zipf-like popularity over objects of random sizes: the simulated LRU within the tolerance of Che's estimate."""
    rng = np.random.default_rng(11)
    sizes = rng.lognormal(0.0, 0.7, 2000)
    rates = 1.0 / np.arange(1, 2001) ** 0.8
    capacity = fill * sizes.sum()
    assert simulated_byte_hit_ratio(capacity, sizes, rates, 120_000, 2) == pytest.approx(lru.byte_hit_ratio(capacity, sizes, rates), abs=TOLERANCE)


def test_a_tier_serves_its_bytes_once_a_cycle():
    """``C * h / k_w``: 3 TB of tier, 1.6 GB of hit KV per turn and 6.4 GB of working set per turn/s serve 750 GB/s."""
    assert lru.served_cap_Bps(3e12, 1.6e9, 6.4e9) == pytest.approx(7.5e11)
    assert lru.served_cap_Bps(3e12, 1.6e9, 0.0) == float("inf")
    assert lru.byte_hit_ratio(10.0, np.ones(5), np.ones(5)) == 1.0  # every object fits
