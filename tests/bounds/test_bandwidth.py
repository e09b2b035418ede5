"""The numeric closed form (bounds/bandwidth.py): ceilings, the P/D range, the envelope."""

from __future__ import annotations

import numpy as np
import pytest

from dualpath_plan.bounds import bandwidth as bw
from dualpath_plan.model.cluster import Cluster, NodeSpec, Traffic

PAPER_NODE = NodeSpec(g=8, B=50e9, s=1.0, M=500e9)
PAPER = Traffic("paper", 0.0, 0.0)


def test_paper_node_range_is_exactly_one_seventh_to_seven_halves():
    rng = bw.pd_range(PAPER_NODE, PAPER)
    assert rng.lower == pytest.approx(1 / 7, rel=1e-15)
    assert rng.upper == pytest.approx(3.5, rel=1e-15)
    assert rng.lower_by == ("pe_cnic_write",)
    assert set(rng.upper_by) == {"de_cnic_write", "de_dram"}
    assert rng.limits["de_cnic_read"] == pytest.approx(6.0)


def test_2p4d_ceilings_match_the_issue_example():
    cluster = Cluster(2, 4, PAPER_NODE, PAPER_NODE)
    basic = bw.ceiling(cluster, PAPER, "basic")
    dual = bw.ceiling(cluster, PAPER, "dualpath")
    assert basic.kv_Bps == pytest.approx(1.0e11) and basic.binding == ("pe_snic",)
    assert dual.kv_Bps == pytest.approx(3.0e11) and set(dual.binding) == {"pe_snic", "de_snic"}
    assert dual.de_read_fraction == pytest.approx(2 / 3)


def test_outside_the_range_a_cnic_binds():
    cluster = Cluster(8, 1, PAPER_NODE, PAPER_NODE)  # P/D = 8 > 3.5
    dual = bw.ceiling(cluster, PAPER, "dualpath")
    assert dual.kv_Bps < (8 + 1) * 50e9
    assert set(dual.binding) & {"de_cnic_write", "de_dram"}


@pytest.mark.slow
def test_envelope_matches_a_dense_grid():
    rng = np.random.default_rng(7)
    intercepts = rng.uniform(0.1, 2.0, (50, 6))
    slopes = rng.uniform(-2.0, 2.0, (50, 6))
    best, f = bw.envelope(intercepts, slopes, free_split=True)
    grid = np.linspace(0, 1, 20001)
    dense = (intercepts[:, None, :] + slopes[:, None, :] * grid[None, :, None]).max(axis=2).min(axis=1)
    assert np.all(best <= dense + 1e-12)
    assert np.allclose(best, dense, rtol=1e-3)
    at_f = (intercepts + slopes * f[:, None]).max(axis=1)
    assert np.allclose(at_f, best, rtol=1e-12)


def test_vectorised_ceiling_equals_scalar_ceiling():
    coeffs = bw.load_coefficients(PAPER)
    alpha = np.array([coeffs[n][0] for n in bw.RESOURCES])
    beta = np.array([coeffs[n][1] for n in bw.RESOURCES])
    rows, expect = [], []
    for P in range(1, 6):
        for D in range(1, 6):
            cluster = Cluster(P, D, PAPER_NODE, PAPER_NODE)
            caps = bw.capacities(cluster)
            rows.append([caps[n] for n in bw.RESOURCES])
            expect.append(bw.ceiling(cluster, PAPER, "dualpath").kv_Bps)
    got, _ = bw.ceiling_arrays(np.array(rows), alpha, beta, free_split=True)
    assert np.allclose(got, expect, rtol=1e-12)


def _storage(nodes, read_Bps=40e9, write_Bps=10e9):
    from dualpath_plan.model.cluster import StorageSide
    return StorageSide("test", nodes, read_Bps, write_Bps, 1e14)


def test_a_storage_cluster_gives_range_9_an_upper_end():
    """n_s storage nodes per decode node of S_r each cap P/D at n_s*S_r/(s*B) - 1 with both SNICs saturated."""
    rng = bw.pd_range(PAPER_NODE, PAPER, (2.0, _storage(8)))
    assert rng.upper_limits["storage_read"] == pytest.approx(2.0 * 40e9 / 50e9 - 1)
    assert rng.upper == pytest.approx(0.6) and rng.upper_by == ("storage_read",)
    assert bw.pd_range(PAPER_NODE, PAPER, (0.5, _storage(2))).violated  # 20 GB/s per decode node < its SNIC's 50


def test_a_small_storage_cluster_caps_the_kv_ceiling_at_its_read_side():
    cluster = Cluster(2, 4, PAPER_NODE, PAPER_NODE, _storage(3))
    for mode in ("basic", "dualpath"):
        c = bw.ceiling(cluster, PAPER, mode)
        assert c.kv_Bps == pytest.approx(min(3 * 40e9, (2 if mode == "basic" else 6) * 50e9))
        assert c.utilization["storage_read"] == pytest.approx(c.kv_Bps / 120e9)
    assert bw.ceiling(Cluster(2, 4, PAPER_NODE, PAPER_NODE, _storage(None)), PAPER, "dualpath") == bw.ceiling(Cluster(2, 4, PAPER_NODE, PAPER_NODE), PAPER, "dualpath")
