"""Prefill FLOPs, the cache-compute ratio and usable FLOP/s (compute.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from dualpath_plan.bounds import compute
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import catalog

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


def test_flops_per_turn_is_append_times_f_of_context_when_hit_rate_is_context_share():
    """With hit = context/(context + append) the turn costs exactly append * F(context)."""
    w = CAT.get("workload", "agentic-64k")
    exact = replace(w, hit_rate=w.context_tokens / (w.context_tokens + w.append_tokens))
    m = model("qwen2.5-32b")
    expected = w.append_tokens * compute.flops_per_new_token(m, w.context_tokens)
    assert math.isclose(compute.flops_per_turn(m, exact, first_round=False), expected, rel_tol=1e-9)
    first = compute.first_round_tokens_per_turn(exact) * compute.flops_per_new_token(m, 0.0)  # the agent's prompt, shared
    assert math.isclose(compute.flops_per_turn(m, exact), expected + first, rel_tol=1e-9)


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
    with pytest.raises(PlanError, match="--dtype 'fp4'"):
        compute.resolve_dtype(model("ds-v3.2"), "fp4")


def test_prefill_flops_per_gpu_is_a_turns_flop_over_its_saturated_pass_time():
    hw, m, w = CAT.get("hardware", "hopper"), model("ds-v3.2"), CAT.get("workload", "agentic-64k")
    pp = compute.prefill_pass(m, hw, "fp8", 2)
    seconds = pp.saturated_s_per_token(compute.attn_flops_per_token(m, w.hit_tokens))
    assert compute.prefill_flops_per_gpu(m, w, hw, "fp8", first_round=False) == pytest.approx(compute.flops_per_new_token(m, w.hit_tokens) / seconds, rel=REL_TOL)
    assert compute.prefill_flops_per_gpu(m, w, hw, "fp8") == pytest.approx(
        compute.flops_per_turn(m, w) / compute.prefill_seconds_per_turn(m, w, hw, "fp8"), rel=REL_TOL)
    q = model("qwen2.5-32b")  # dense: GEMM-bound, so the dtype's peak shows; DeepSeek at EP16 is bound by its all-to-all
    assert compute.prefill_flops_per_gpu(q, w, hw, "bf16") < compute.prefill_flops_per_gpu(q, w, hw, "fp8")


def test_the_saturated_prefill_rate_does_not_depend_on_the_prefill_side():
    hw, m, w = CAT.get("hardware", "hopper"), model("ds-v3.2"), CAT.get("workload", "agentic-64k")
    rates = {compute.prefill_pass(m, hw, "fp8", P).saturated_s_per_token(1e9) for P in (1, 2, 4, 16, 64)}
    assert len(rates) == 1
