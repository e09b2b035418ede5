"""The throughput LP: modes, binding limits, shadow prices, batches (lp.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from dualpath_plan.bounds import compute, lp
from dualpath_plan.bounds.bandwidth import ceiling
from dualpath_plan.bounds.steptime import weight_share_bytes
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.model.workload import agent_turns, served_turns

REL_TOL_LP = 1e-7  # relative; HiGHS primal/dual feasibility tolerance is 1e-7 on O(1) scaled rows


def paper_node(P=2, D=4, **kw):
    return build_scenario("hopper", accounting="paper", P=P, D=D, **kw)


def io_only(lim):
    """The same limits with prefill compute and decode far out of the way, so only the links bind."""
    return replace(lim, prefill_flops_per_gpu=1e20, decode_tokens_per_gpu_s=1e12)


@pytest.mark.slow
def test_papers_node_basic_and_dualpath_are_the_snic_ceilings_in_turns():
    """Hopper 2P4D, I/O only: basic = P*s*B / hit bytes per turn; dualpath = (P + D)*s*B / hit bytes per turn.
    (Prefill compute is lifted out of the way: under the step-time model it binds DualPath on this cluster.)"""
    sc = paper_node()
    lim = io_only(lp.limits_of(sc))
    h = lim.hit_bytes_per_turn
    basic, dual = lp.solve(lim, "basic"), lp.solve(lim, "dualpath")
    assert math.isclose(basic.turns_per_s, 2 * 50e9 / h, rel_tol=REL_TOL_LP)
    assert math.isclose(dual.turns_per_s, 6 * 50e9 / h, rel_tol=REL_TOL_LP)
    assert basic.binding == ("pe_snic",)
    assert set(dual.binding) == {"pe_snic", "de_snic"}
    assert math.isclose(dual.de_read_fraction, 4 / 6, rel_tol=REL_TOL_LP)
    assert math.isclose(dual.agents_per_s, dual.turns_per_s / agent_turns(sc.workload), rel_tol=REL_TOL_LP)


def test_shadow_prices_of_the_snics_are_nodes_over_hit_bytes():
    """One more B/s of SNIC on every PE node carries P more B/s of KV: dX = P / h per B/s per node."""
    lim = io_only(lp.limits_of(paper_node()))
    prices = lp.solve(lim, "dualpath").shadow_prices
    h = lim.hit_bytes_per_turn
    assert math.isclose(prices["pe_snic"].turns_per_s_per_unit, 2 / h, rel_tol=REL_TOL_LP)
    assert math.isclose(prices["de_snic"].turns_per_s_per_unit, 4 / h, rel_tol=REL_TOL_LP)
    assert (prices["pe_snic"].unit, prices["pe_snic"].per) == ("B/s", "node")
    assert math.isclose(prices["pe_snic"].elasticity + prices["de_snic"].elasticity, 1.0, rel_tol=REL_TOL_LP)
    assert lp.next_purchase(lp.solve(lim, "dualpath")).resource == "de_snic"


def test_oracle_is_compute_or_decode_bound_and_moves_no_kv():
    lim = lp.limits_of(paper_node())
    oracle = lp.solve(lim, "oracle")
    caps = lim.capacities()
    expected = min(caps[lp.COMPUTE] / lim.flops_per_turn, caps[lp.DECODE] / lim.gen_tokens_per_turn)
    assert math.isclose(oracle.turns_per_s, expected, rel_tol=REL_TOL_LP)
    assert oracle.R_p_Bps == oracle.R_d_Bps == 0.0
    assert all(oracle.utilization[name] == 0.0 for name in lim.coefficients)
    price = oracle.shadow_prices[oracle.binding[0]]
    assert price.per == "GPU" and price.unit in ("FLOP/s", "tokens/s")


def test_compute_binds_when_flops_are_scarce():
    sc = paper_node()
    lim = replace(lp.limits_of(sc), prefill_flops_per_gpu=1e12)
    dual = lp.solve(lim, "dualpath")
    assert dual.binding == (lp.COMPUTE,)
    assert math.isclose(dual.turns_per_s, 2 * 8 * 1e12 / lim.flops_per_turn, rel_tol=REL_TOL_LP)
    assert math.isclose(dual.shadow_prices[lp.COMPUTE].turns_per_s_per_unit, 16 / lim.flops_per_turn, rel_tol=REL_TOL_LP)


def test_a_decode_side_that_cannot_hold_the_weights_gives_zero():
    """DeepSeek-V3.2 (671 GB) on one 8 x 80 GB decode node: no decode, X = 0, decode binding."""
    lim = lp.limits_of(paper_node(P=1, D=1))
    assert lim.decode.limited_by == "weights_do_not_fit"
    for mode in lp.MODES:
        bound = lp.solve(lim, mode)
        assert bound.turns_per_s == 0.0 and lp.DECODE in bound.binding


def test_lp_equals_closed_form_on_the_default_scenario_both_accountings():
    for accounting in ("paper", "exact"):
        sc = build_scenario("hopper", accounting=accounting, P=3, D=5)
        lim = replace(lp.limits_of(sc), prefill_flops_per_gpu=1e20, decode_tokens_per_gpu_s=1e12)
        for mode in ("basic", "dualpath"):
            got = lp.solve(lim, mode).kv_Bps
            assert math.isclose(got, ceiling(sc.cluster, sc.traffic, mode).kv_Bps, rel_tol=REL_TOL_LP)


def test_a_batch_gives_the_same_bounds_as_single_solves():
    sc = build_scenario("hopper")
    limits = [lp.limits_of(sc.with_nodes(P, D)) for P in (1, 2, 5) for D in (1, 2, 3, 7)]
    for mode in lp.MODES:
        many = lp.solve_many(limits, mode)
        for lim, got in zip(limits, many):
            one = lp.solve(lim, mode)
            assert math.isclose(got.turns_per_s, one.turns_per_s, rel_tol=REL_TOL_LP, abs_tol=1e-9)
            assert set(got.binding) == set(one.binding)


def test_heterogeneous_cluster_takes_compute_from_pe_and_decode_from_de():
    sc = build_scenario(None, pe_profile="hopper", de_profile="h20", P=2, D=4)
    lim = lp.limits_of(sc)
    caps = lim.capacities()
    assert caps[lp.COMPUTE] == pytest.approx(2 * 8 * compute.prefill_flops_per_gpu(sc.model, served_turns(sc.workload), sc.pe_hw, "fp8"))
    assert lim.decode.weight_share_bytes == pytest.approx(weight_share_bytes(sc.model, 4 * 8))
    assert lp.solve(lim, "dualpath").turns_per_s > 0


def test_unknown_mode_and_dtype_are_refused():
    with pytest.raises(PlanError, match="mode 'split'"):
        lp.solve(lp.limits_of(paper_node()), "split")
    with pytest.raises(PlanError, match="--dtype 'int4'"):
        lp.BoundOptions.parse("int4")


def test_bf16_never_raises_the_compute_capacity_and_lowers_a_gemm_bound_model_s():
    def bf16_over_fp8(sc):
        fp8, bf16 = lp.limits_of(sc, lp.BoundOptions.parse("fp8")), lp.limits_of(sc, lp.BoundOptions.parse("bf16"))
        return bf16.capacities()[lp.COMPUTE] / fp8.capacities()[lp.COMPUTE]

    assert bf16_over_fp8(paper_node(model="qwen2.5-32b")) < 0.8
    # DeepSeek: the measured BF16 expert GEMMs (SGLang's fused MoE, 10 % of BF16 peak at 512 rows per expert) make
    # its BF16 passes GEMM bound too, where the FP8 ones wait on the all-to-all
    assert bf16_over_fp8(paper_node()) <= 1.0


def test_prefill_nodes_that_cannot_hold_the_weights_compute_nothing():
    from dualpath_plan.bounds.compute import min_prefill_nodes
    from dualpath_plan.model.scenario import build_scenario

    sc = build_scenario("hopper", P=1, D=4)  # 671 GB of FP8 weights over 8 x 80 GB: 84 GB per GPU
    assert min_prefill_nodes(sc.model, sc.pe_hw) == 2
    assert lp.limits_of(sc).prefill_flops_per_gpu == 0.0
    assert lp.solve(lp.limits_of(sc), "dualpath").turns_per_s == 0.0
    assert lp.limits_of(sc.with_nodes(2, 4)).prefill_flops_per_gpu > 0.0
