"""Sums of products that come out the same on every machine.

``np.dot`` hands a long vector to the BLAS numpy ships (OpenBLAS), which splits it over one thread per core and adds
the threads' partial sums; each split rounds differently, so the same inputs gave different last bits on machines with
different numbers of cores (measured here on 7.7 M products: 348176236170179.5 with one BLAS thread, ...179.1 with two
or three). :func:`dot` takes numpy's own pairwise sum of the products instead, a slice at a time, which no thread count
changes: the bounds and reports read from a run's or a data set's turns are then bit for bit the same everywhere.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

# Turns (or products) per slice of a pass over a run's turns, the one size every such pass takes (model.workload's
# blocks, bounds.compute's and sim's slices): a slice's temporaries stay ~8 MB, whatever the run
CHUNK = 1 << 20


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)``, as floats: numpy's pairwise sum of each slice of :data:`CHUNK` products, the slices' sums added
    in order (``a`` and ``b`` 1-D, of one length; whole numbers are taken as floats)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 1 or b.shape != a.shape:
        raise ValueError(f"dot: vectors of shapes {a.shape} and {b.shape}; must be 1-D and of one length")
    return dot_by_slice(a, lambda s: b[s])


def dot_by_slice(a: np.ndarray, b_of: Callable[[slice], np.ndarray]) -> float:
    """:func:`dot` of ``a`` and a vector given a slice at a time (``b_of(s)`` is its slice ``s``): the same sums, with
    no array of the whole vector (at millions of turns, tens of MB of fresh memory)."""
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"dot_by_slice: a vector of shape {a.shape}; must be 1-D")
    total = 0.0
    for i in range(0, a.size, CHUNK):
        s = slice(i, i + CHUNK)
        b = np.asarray(b_of(s))
        if b.shape != a[s].shape:
            raise ValueError(f"dot_by_slice: slice {i}:{i + a[s].size} of the second vector has shape {b.shape}; must be {a[s].shape}")
        total += float(np.add.reduce(np.multiply(a[s], b, dtype=np.float64)))
    return total
