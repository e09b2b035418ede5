"""The closed-form LP relaxation of a budget question (relax.py); HiGHS' relaxation is its reference in
tests/properties/test_plan_props.py."""

from __future__ import annotations

import numpy as np
import pytest

from dualpath_plan.planning.relax import budget_relaxation, concave_envelope


def test_the_envelope_keeps_the_points_no_chord_passes_over():
    xs, ys = concave_envelope(np.array([1.0, 4.0, 5.0, 9.0, 10.0]))  # d = 1..5; (3, 5) lies below the chord (2, 4)-(4, 9)
    assert xs.tolist() == [1.0, 2.0, 4.0, 5.0] and ys.tolist() == [1.0, 4.0, 9.0, 10.0]
    assert np.interp(3.0, xs, ys) == pytest.approx(6.5)


def test_a_convex_table_relaxes_to_its_chord():
    xs, ys = concave_envelope(np.array([1.0, 4.0, 9.0, 16.0]))  # capacity growing faster than the nodes
    assert xs.tolist() == [1.0, 4.0] and ys.tolist() == [1.0, 16.0]


def test_one_prefill_link_and_decode_meet_where_the_budget_splits_them():
    # X <= P (one PE link, one turn/s per node), X <= 2 D (decode), P + D <= 9: the best is P = 6, D = 3, X = 6
    rows, on_pe = np.array([[1.0, 0.0]]), np.array([True])
    X = budget_relaxation(rows, on_pe, 0.0, 1.0, np.arange(1.0, 9.0) * 2.0, (1.0, 1.0), 9.0, (1.0, 8.0), 8.0, False)
    assert X == pytest.approx(6.0, rel=1e-12)


def test_a_budget_below_one_node_per_side_relaxes_to_nothing():
    rows, on_pe = np.array([[1.0, 0.0]]), np.array([True])
    assert budget_relaxation(rows, on_pe, 0.0, 1.0, np.array([2.0]), (1.0, 1.0), 1.5, (1.0, 0.5), 1.0, False) == 0.0
