"""model.sums: a sum of products that no BLAS thread count changes, and that is the sum of the products."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from dualpath_plan.model import sums

_PRINT_DOT = ("import numpy as np; from dualpath_plan.model.sums import dot; rng = np.random.default_rng(7); "
              "print(repr(dot(rng.random(3_000_000) * 3000, rng.random(3_000_000) * 60000)))")


def _dot_with_threads(threads: int) -> str:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    return subprocess.run([sys.executable, "-c", _PRINT_DOT], env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS runs one thread on one core: nothing to compare")
def test_the_sum_is_the_same_whatever_the_blas_threads():
    """3 M products (np.dot splits such a vector over the BLAS threads, and its last bits then follow their count)."""
    assert _dot_with_threads(1) == _dot_with_threads(3)


@pytest.mark.parametrize("n", [0, 1, 7, 100])
def test_it_is_the_sum_of_the_products_across_slices(n, monkeypatch):
    monkeypatch.setattr(sums, "CHUNK", 3)
    rng = np.random.default_rng(n)
    a, b = rng.integers(0, 5000, n), rng.random(n)
    assert sums.dot(a, b) == pytest.approx(math.fsum((a * b).tolist()), rel=1e-12, abs=0.0)


def test_a_vector_given_by_slices_sums_as_the_whole_vector(monkeypatch):
    """dot_by_slice with a vector made a slice at a time: the same bits as dot over that vector made whole (slices of 4
    here, both sides sliced alike)."""
    monkeypatch.setattr(sums, "CHUNK", 4)
    rng = np.random.default_rng(5)
    a, h, m = rng.integers(1, 900, 23), rng.integers(0, 90_000, 23), rng.integers(1, 4000, 23)
    assert sums.dot_by_slice(a, lambda s: h[s] + m[s] + a[s] / 2.0) == sums.dot(a, h + m + a / 2.0)


@pytest.mark.parametrize(("a", "b"), [(np.arange(5.0), np.array([2.0])), (np.arange(3.0), np.arange(4.0)), (np.ones((2, 2)), np.ones((2, 2)))])
def test_vectors_of_other_shapes_are_refused(a, b):
    """Not broadcast as a product would be: np.dot refuses them, and so does dot."""
    with pytest.raises(ValueError, match="1-D and of one length"):
        sums.dot(a, b)
