"""Prefill FLOPs, the cache-compute ratio and usable FLOP/s (compute.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from dualpath_plan.bounds import compute, steptime
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.workload import TurnSet, served_turns

REL_TOL = 1e-12  # relative; a handful of float operations
TABLE1_TOL = 0.02  # relative; hardware notes D.3 reproduce Table 1 "to within about 2 %"
CAT = catalog()


def model(name):
    return CAT.get("model", name)


def test_flops_per_new_token_adds_dense_full_and_capped_attention():
    """F(L) = 2 N + c L + c_s min(L, k), built from the profile's own fields."""
    m = model("ds-v3.2")
    L = 32_721.0
    expected = 2 * 37e9 + 999_424.0 * L + 4_997_120.0 * 2048
    assert math.isclose(compute.flops_per_new_token(m, L), expected, rel_tol=REL_TOL)
    assert math.isclose(compute.flops_per_new_token(m, 1000.0), 2 * 37e9 + 999_424.0 * 1000 + 4_997_120.0 * 1000, rel_tol=REL_TOL)


def test_flops_per_turn_is_the_mean_of_each_turns_miss_times_f_of_its_hit():
    """F_turn = n_miss * F(n_hit) per turn, averaged over the turns (F is not linear in the context)."""
    m = model("qwen2.5-32b")
    turns = TurnSet(np.array([0.0, 1000.0, 30_000.0]), np.array([5000.0, 300.0, 50.0]), np.ones(3), 3.0)
    expected = np.mean([miss * compute.flops_per_new_token(m, hit) for hit, miss in zip(turns.hit, turns.miss)])
    assert math.isclose(compute.flops_per_turn(m, turns), expected, rel_tol=1e-12)
    mean = compute.turn_flops(m, turns.hit.mean(), turns.miss.mean())
    assert not math.isclose(compute.flops_per_turn(m, turns), float(mean), rel_tol=0.01)  # the mean turn's would be wrong


def test_turn_flops_is_the_numpy_twin_of_flops_per_new_token():
    m = model("ds-v3.2")
    for hit in (0.0, 100.0, 2048.0, 5000.0, 65_536.0):
        assert compute.turn_flops(m, np.array([hit]), np.array([7.0]))[0] == pytest.approx(7 * compute.flops_per_new_token(m, hit), rel=1e-12)


@pytest.mark.parametrize(
    ("name", "layout", "context", "paper_GB_per_PFLOP"),
    [
        ("qwen2.5-32b", "bf16", 16_384, 117.0),  # DualPath Table 1, Qwen2.5-32B (FP16 KV), 16K
        ("qwen2.5-32b", "bf16", 65_536, 267.0),  # 64K
        ("qwen3-235b-a22b", "fp8", 16_384, 39.0),
        ("qwen3-235b-a22b", "fp8", 65_536, 60.0),
        ("gpt-oss-120b", "fp8", 16_384, 47.0),
        ("gpt-oss-120b", "fp8", 65_536, 95.0),
    ],
)
def test_cache_compute_ratio_reproduces_table_1(name, layout, context, paper_GB_per_PFLOP):
    """Ratio = L * kv / (append * F(L)) in GB/PFLOP matches the paper's Table 1 (append 429)."""
    m = replace(model(name), kv_layout=layout)
    got = compute.cache_compute_ratio(m, context, 429.0) * 1e6  # bytes/FLOP -> GB/PFLOP
    assert math.isclose(got, paper_GB_per_PFLOP, rel_tol=TABLE1_TOL)


def test_dtype_defaults_to_the_models_and_refuses_unknown():
    assert compute.resolve_dtype(model("ds-v3.2"), None) == "fp8"
    assert compute.resolve_dtype(model("qwen2.5-32b"), None) == "bf16"
    assert compute.resolve_dtype(model("ds-v3.2"), "bf16") == "bf16"
    assert compute.resolve_dtype(model("ds-v3.2"), "fp4") == "fp4"  # the GPU's peak refuses it where it has no FP4
    with pytest.raises(PlanError, match="--dtype 'fp6'"):
        compute.resolve_dtype(model("ds-v3.2"), "fp6")


@pytest.mark.slow
def test_prefill_flops_per_gpu_is_the_turns_flop_over_their_saturated_pass_time():
    hw, m = CAT.get("hardware", "hopper"), model("ds-v3.2")
    turns = served_turns(CAT.get("workload", "agentic-64k"))
    pp = compute.prefill_pass(m, hw, "fp8")
    seconds = [miss * pp.saturated_s_per_token(compute.attn_flops_per_token(m, hit)) for hit, miss in zip(turns.hit[:500], turns.miss[:500])]
    assert compute.turn_prefill_seconds(pp, m, turns.hit[:500], turns.miss[:500]) == pytest.approx(seconds, rel=1e-12)
    assert compute.prefill_flops_per_gpu(m, turns, hw, "fp8") == pytest.approx(
        compute.flops_per_turn(m, turns) / compute.turn_prefill_seconds(pp, m, turns.hit, turns.miss).mean(), rel=REL_TOL)
    q = model("qwen2.5-32b")  # dense: GEMM-bound, so the dtype's peak shows
    assert compute.prefill_flops_per_gpu(q, turns, hw, "bf16") < compute.prefill_flops_per_gpu(q, turns, hw, "fp8")


def test_turn_prefill_seconds_in_place_is_the_formula_bit_for_bit_on_arrays_and_scalars():
    """Computed in place for millions of turns, each element is still miss * max(gemm + attn(hit) / rate, comm)."""
    hw, m = CAT.get("hardware", "hopper"), model("ds-v3.2")
    pp = compute.prefill_pass(m, hw, "fp8")
    hit, miss = np.array([0, 1, 2047, 2048, 70_000, 10**6]), np.array([1, 3, 0, 7, 1000, 2])
    ctx = hit.astype(float)
    attn = m.attn_flops_per_ctx_token * ctx + m.sparse_attn_flops_per_key * np.minimum(ctx, m.sparse_topk_tokens)
    expected = miss.astype(float) * np.maximum(pp.saturated_gemm_s_per_token + attn / pp.attn_flops_per_s, pp.comm_s_per_token)
    assert compute.turn_prefill_seconds(pp, m, hit, miss).tolist() == expected.tolist()
    assert float(compute.turn_prefill_seconds(pp, m, 2048.0, 7.0)) == expected[3]


def test_turn_prefill_seconds_over_several_slices_is_the_same_bits(monkeypatch):
    """Worked out a slice of CHUNK_TURNS turns at a time (here 2, over 6 turns): the same floats as in one slice."""
    hw, m = CAT.get("hardware", "hopper"), model("ds-v3.2")
    pp = compute.prefill_pass(m, hw, "fp8")
    hit, miss = np.array([0, 1, 2047, 2048, 70_000, 10**6]), np.array([1, 3, 0, 7, 1000, 2])
    whole = compute.turn_prefill_seconds(pp, m, hit, miss).tolist()
    monkeypatch.setattr(compute, "CHUNK_TURNS", 2)
    assert compute.turn_prefill_seconds(pp, m, hit, miss).tolist() == whole


def test_a_prefill_instance_is_the_fewest_nodes_that_hold_the_weights():
    m = model("ds-v3.2")
    assert compute.prefill_instance_nodes(m, CAT.get("hardware", "hopper")) == 2  # 80 GB: EP16, the paper's 2P
    assert compute.prefill_instance_nodes(m, CAT.get("hardware", "h200")) == 1  # 141 GB: one node, over NVLink
    for name in ("hopper", "h200", "blackwell", "gb200"):
        hw = CAT.get("hardware", name)
        assert compute.prefill_instance_gpus(m, hw) == compute.min_prefill_nodes(m, hw) * hw.g


def test_the_prefill_pass_runs_at_the_instance_s_ep_size():
    hw, m = CAT.get("hardware", "hopper"), model("ds-v3.2")
    pp = compute.prefill_pass(m, hw, "fp8")
    payload = m.experts_per_token * steptime.copy_bytes(m)
    assert pp.comm_s_per_token == pytest.approx(m.moe_layers * payload / steptime.ep_value(hw.ep_normal_Bps, 16))
    assert pp.comm_fixed_s == pytest.approx(m.moe_layers * steptime.ep_value(hw.ep_normal_intercept_s, 16))
    assert pp.rows_per_token == pytest.approx(16 * m.experts_per_token / m.routed_experts)


@pytest.mark.parametrize("name", ["hopper", "h100-dgx", "h200"])
def test_the_measured_throughput_all_to_all_costs_more_per_token_at_every_larger_ep_size(name):
    """Why the smallest instance across nodes serves the most per GPU (``compute.prefill_instance_nodes``), held on
    the shipped measured tables at each RDMA EP size."""
    hw, m = CAT.get("hardware", name), model("ds-v3.2")
    sizes = sorted(int(k) for k in hw.ep_normal_Bps)
    per_token = [steptime.prefill_comm(m, hw, n)[1] for n in sizes]
    assert per_token == sorted(per_token) and len(set(per_token)) == len(per_token)


def test_the_memoised_prefill_rates_are_each_node_type_s_own():
    cat = catalog(())
    model, turns = cat.get("model", "ds-v3.2"), served_turns(cat.get("workload", "agentic-64k"))
    hopper = cat.get("hardware", "hopper")
    slower = replace(hopper, fp8_flops=hopper.fp8_flops / 2)  # equal to hopper but for one field: a record of its own
    for hw in (hopper, slower, hopper, slower):
        flops = compute.flops_per_turn(model, turns)
        assert compute.prefill_rates(model, turns, hw, "fp8") == (flops, compute.prefill_flops_per_gpu(model, turns, hw, "fp8", flops))
    assert compute.prefill_rates(model, turns, slower, "fp8")[1] < compute.prefill_rates(model, turns, hopper, "fp8")[1]


def test_a_chosen_prefill_instance_sets_the_ep_size_and_the_fewest_prefill_nodes():
    from dualpath_plan.bounds import lp

    hw, m = CAT.get("hardware", "hopper"), model("ds-v3.2")
    assert compute.prefill_instance_nodes(m, hw, None) == 2 and compute.prefill_instance_nodes(m, hw, 8) == 8
    assert compute.prefill_instance_nodes(m, hw, 1) == compute.MAX_PREFILL_NODES  # one node holds no copy: it serves nothing
    assert compute.prefill_pass(m, hw, "fp8", 8).comm_s_per_token == pytest.approx(compute.prefill_pass(m, hw, "fp8").comm_s_per_token * (
        hw.ep_normal_Bps["16"] / hw.ep_normal_Bps["64"]), rel=1e-12)  # EP64's rate: the all-to-all a token costs at that size
    turns = served_turns(CAT.get("workload", "agentic-64k"))
    wide = compute.prefill_flops_per_gpu(m, turns, hw, "fp8", nodes=8)
    assert wide < compute.prefill_flops_per_gpu(m, turns, hw, "fp8")  # EP64's all-to-all binds the pass
    options = lp.BoundOptions.parse(prefill_instance_nodes=8)
    assert options.prefill_floor(m, hw) == 8 and lp.BoundOptions().prefill_floor(m, hw) == 2
    with pytest.raises(PlanError, match="--prefill-instance-nodes = 1 nodes is not allowed for ds-v3.2 on hopper"):
        lp.BoundOptions.parse(prefill_instance_nodes=1).prefill_floor(m, hw)
    with pytest.raises(PlanError, match="--prefill-instance-nodes = 0"):
        lp.BoundOptions.parse(prefill_instance_nodes=0)
    tiny = replace(hw, hbm_bytes=10e9)  # DeepSeek-V3.2's non-routed weights alone fill it
    with pytest.raises(PlanError, match="its non-routed weights alone fill a GPU's HBM, so no number of nodes holds them"):
        options.prefill_floor(m, tiny)


def test_the_fewest_nodes_chosen_as_the_instance_change_nothing():
    from dualpath_plan.bounds import lp
    from dualpath_plan.model.scenario import build_scenario

    for P, D in ((2, 4), (5, 7)):
        sc = build_scenario("hopper", P=P, D=D)
        default, chosen = lp.limits_of(sc), lp.limits_of(sc, lp.BoundOptions.parse(prefill_instance_nodes=2))
        assert chosen == default


def test_a_larger_prefill_instance_serves_nothing_below_it_and_lowers_an_all_to_all_bound_pass():
    from dualpath_plan.bounds import lp
    from dualpath_plan.model.scenario import build_scenario

    wide = lp.BoundOptions.parse(prefill_instance_nodes=8)
    assert lp.limits_of(build_scenario("hopper", P=7, D=4), wide).serves_nothing_because == ("prefill_instance_exceeds_prefill_side",)
    assert lp.limits_of(build_scenario("hopper", P=1, D=4), wide).serves_nothing_because == ("prefill_weights_do_not_fit",)
    at_8 = lp.limits_of(build_scenario("hopper", P=8, D=4), wide)
    assert at_8.prefill_instance == (64, "rdma")
    assert at_8.prefill_flops_per_gpu < lp.limits_of(build_scenario("hopper", P=8, D=4)).prefill_flops_per_gpu
