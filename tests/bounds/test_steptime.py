"""The step-time model (bounds/steptime.py): a decode step and a prefill pass on one GPU."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dualpath_plan.bounds import steptime
from dualpath_plan.bounds.decode import DecodeOptions, decode_rate, kv_bytes
from dualpath_plan.bounds.steptime import DecodeStep, PrefillPass, ep_value, weight_share_bytes
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.workload import served_turns

CAT = catalog()
HOPPER = CAT.get("hardware", "hopper")
V32 = CAT.get("model", "ds-v3.2")
QWEN = CAT.get("model", "qwen2.5-32b")
WORK = CAT.get("workload", "agentic-64k")


def _no_comm_no_overhead(hw):
    """The profile with every all-to-all latency, bandwidth cost and fixed cost at zero, and a flat GEMM efficiency."""
    flat = {"1": 0.45, "8192": 0.45}  # flat from one row up: no memory-bound small GEMMs
    return replace(hw, ep_dispatch_s={"8": 0.0}, ep_combine_s={"8": 0.0}, ep_normal_Bps=float("inf"), gemm_dense_frac=flat,
                   gemm_grouped_frac=flat, layer_overhead_s=0.0, step_overhead_s=0.0, request_overhead_s=0.0)


def test_ep_tables_interpolate_linearly_and_hold_their_ends():
    table = HOPPER.ep_dispatch_s
    assert ep_value(table, 32) == pytest.approx(155e-6)
    assert ep_value(table, 48) == pytest.approx((155e-6 + 173e-6) / 2)
    assert ep_value(table, 2) == pytest.approx(77e-6) and ep_value(table, 4096) == pytest.approx(194e-6)


def test_a_moe_gpu_holds_every_non_routed_weight_and_its_share_of_the_experts():
    routed = V32.routed_params * V32.weight_bytes_per_param
    assert weight_share_bytes(V32, 32) == pytest.approx(V32.weight_bytes - routed + routed / 32)
    assert weight_share_bytes(QWEN, 32) == pytest.approx(QWEN.weight_bytes / 32)  # dense: spread, no replication


def test_the_deepseek_expert_shape_gives_the_published_parameter_counts():
    assert V32.routed_params == pytest.approx(653.9e9, rel=1e-3)  # 58 x 256 x 3 x 7168 x 2048
    assert 2 * 37e9 - 2 * V32.routed_active_params == pytest.approx(2 * 16.57e9, rel=1e-2)


def test_a_decode_step_at_ep32_pays_58_layers_of_deepep_latency_at_128_tokens():
    step = DecodeStep.of(V32, HOPPER, 32)
    assert step.comm_128_s == pytest.approx(58 * (155e-6 + 273e-6))
    parts = step.parts(64, 0.0)
    assert parts["comm"] == pytest.approx(step.comm_128_s / 2) and parts["hidden"] == 0.0
    at_128 = step.parts(128, 0.0)
    assert at_128["hidden"] == pytest.approx(min(at_128["hbm"], at_128["comm"]))
    assert at_128["step"] == pytest.approx(at_128["hbm"] + at_128["comm"] - at_128["hidden"] + at_128["overhead"])


@pytest.mark.parametrize("model", ["ds-v3.2", "qwen2.5-32b", "gpt-oss-120b"])
def test_decode_step_time_grows_with_batch_and_context_on_each_side_of_the_overlap(model):
    m = CAT.get("model", model)
    step = DecodeStep.of(m, HOPPER, 32)
    read = kv_bytes(m, 30_000)[0]
    for side in (np.arange(1, 128), np.arange(128, 600)):
        times = [step.step_s(b, b * read) for b in side]
        assert all(a < b for a, b in zip(times, times[1:]))
    assert step.step_s(64, 64 * kv_bytes(m, 60_000)[0]) > step.step_s(64, 64 * read)
    assert step.step_s(128, 128 * read) <= step.parts(128, 128 * read)["hbm"] + step.parts(128, 128 * read)["comm"] + step.parts(128, 0)["overhead"]


def test_a_dense_model_has_no_all_to_all():
    assert DecodeStep.of(QWEN, HOPPER, 32).comm_128_s == 0.0
    assert PrefillPass.of(QWEN, HOPPER, "bf16", 16).comm_s_per_token == 0.0
    assert PrefillPass.of(QWEN, HOPPER, "bf16", 16).routed_flops_per_token == 0.0


def test_without_communication_and_overheads_the_old_hbm_roofline_comes_back():
    hw = _no_comm_no_overhead(HOPPER)
    for m in (QWEN, CAT.get("model", "llama-3.1-70b")):
        rate = decode_rate(m, WORK, hw, 4, DecodeOptions())
        weight, bw = m.weight_bytes / 32, hw.hbm_Bps * hw.hbm_efficiency
        read, held = kv_bytes(m, WORK.prompt_tokens + WORK.gen_tokens / 2)
        b_slo, b_mem = (bw * 0.05 - weight) / read, (hw.hbm_bytes - weight) / held
        batch = min(b_slo, b_mem)
        assert rate.batch_per_gpu == pytest.approx(batch, rel=1e-12)
        assert rate.tokens_per_gpu_s == pytest.approx(batch * bw / (weight + batch * read), rel=1e-12)


def test_without_communication_and_overheads_a_flat_efficiency_is_the_old_compute_bound():
    """Old: every FLOP at peak x MFU. New with flat GEMM tables and attention at the same share of the same peak."""
    from dualpath_plan.bounds import compute

    hw = replace(_no_comm_no_overhead(HOPPER), attn_frac=0.45)
    for m, dtype in ((QWEN, "bf16"), (V32, "bf16")):
        assert compute.prefill_flops_per_gpu(m, served_turns(WORK), hw, dtype) == pytest.approx(0.45 * hw.bf16_flops, rel=1e-12)


def test_prefill_time_per_token_falls_with_the_tokens_per_pass_and_levels_off():
    pp = PrefillPass.of(V32, HOPPER, "fp8", 32)
    attn = steptime_attn(V32, 20_000)
    per_token = [pp.pass_s(t, t * attn, 1) / t for t in (16, 64, 256, 1024, 4096, 16384, 65536)]
    assert all(a > b for a, b in zip(per_token, per_token[1:]))
    assert per_token[-1] == pytest.approx(pp.saturated_s_per_token(attn), rel=0.01)
    assert per_token[-1] >= pp.saturated_s_per_token(attn)


def steptime_attn(model, context):
    from dualpath_plan.bounds.compute import attn_flops_per_token

    return attn_flops_per_token(model, context)


def test_no_pass_is_faster_per_token_than_the_saturated_rate():
    for hw in (HOPPER, CAT.get("hardware", "blackwell"), CAT.get("hardware", "ampere")):
        for m in (V32, QWEN, CAT.get("model", "gpt-oss-120b")):
            pp = PrefillPass.of(m, hw, "fp8", 16)
            for context in (0, 4_000, 60_000):
                attn = steptime_attn(m, context)
                floor = pp.saturated_s_per_token(attn)
                assert all(pp.pass_s(t, t * attn, 1) / t >= floor * (1 - 1e-12) for t in (1, 50, 127, 128, 300, 5000, 10**6))


def test_the_expert_gemms_get_n_t_k_over_e_rows():
    pp = PrefillPass.of(V32, HOPPER, "fp8", 32)
    assert pp.rows_per_token == pytest.approx(32 * 8 / 256)


def test_gemm_efficiency_is_the_table_between_rows_and_memory_bound_below_it():
    v = PrefillPass.of(V32, HOPPER, "fp8", 32)
    only_dense = replace(v, routed_flops_per_token=0.0, comm_s_per_token=0.0, fixed_s=0.0, request_s=0.0)
    t = lambda tokens: only_dense.pass_s(tokens, 0.0, 0)  # noqa: E731
    frac = lambda tokens: only_dense.dense_flops_per_token * tokens / (only_dense.peak_flops * t(tokens))  # noqa: E731
    assert frac(64) == pytest.approx(HOPPER.gemm_dense_frac["64"])
    assert frac(4096) == pytest.approx(HOPPER.gemm_dense_frac["4096"]) and frac(10**6) == pytest.approx(HOPPER.gemm_dense_frac["4096"])
    mid = (HOPPER.gemm_dense_frac["128"] + HOPPER.gemm_dense_frac["4096"]) / 2
    assert frac((128 + 4096) / 2) == pytest.approx(mid)
    assert t(8) == pytest.approx(t(32)) == pytest.approx(t(64))  # below the table: the weights' read time, flat


def test_a_bigger_hbm_never_lowers_a_bound():
    from dualpath_plan.bounds import lp
    from dualpath_plan.model.scenario import build_scenario

    sc = build_scenario("hopper", P=2, D=4)
    bigger = replace(sc, pe_hw=replace(sc.pe_hw, hbm_bytes=sc.pe_hw.hbm_bytes * 1.5), de_hw=replace(sc.de_hw, hbm_bytes=sc.de_hw.hbm_bytes * 1.5))
    for mode in ("basic", "dualpath", "oracle"):
        assert lp.solve(lp.limits_of(bigger), mode).turns_per_s >= lp.solve(lp.limits_of(sc), mode).turns_per_s * (1 - 1e-12)


def test_the_parameter_vectors_hold_the_records():
    d = DecodeStep.of(V32, HOPPER, 32)
    assert d.vector[steptime.D_COMM_128] == d.comm_128_s and d.vector.size == steptime.N_DECODE
    p = PrefillPass.of(V32, HOPPER, "fp8", 32)
    v = p.vector
    assert int(v[steptime.P_GROUPED_N]) == len(HOPPER.gemm_grouped_frac) and v[steptime.P_PEAK] == HOPPER.fp8_flops


def test_a_table_with_keys_that_are_not_sizes_is_refused(tmp_path):
    text = (CAT.files["hardware"]["hopper"]).read_text().replace('ep_dispatch_us = { "8" = 77', 'ep_dispatch_us = { "eight" = 77')
    path = tmp_path / "odd.toml"
    path.write_text(text)
    with pytest.raises(PlanError, match="ep_dispatch_us.eight"):
        catalog((path,)).get("hardware", "odd")


@pytest.mark.parametrize("hardware", ["hopper", "blackwell", "h200", "ampere", "gb200"])
@pytest.mark.parametrize("model", ["ds-v3", "ds-v3.2", "qwen3-235b-a22b", "llama-3.1-70b"])
@pytest.mark.parametrize("D", [1, 2, 4, 8, 16, 64])
@pytest.mark.parametrize("slo_ms", [20.0, 50.0, 100.0])
def test_the_best_decode_batch_meets_the_tpot_slo(hardware, model, D, slo_ms):
    """Whatever caps the batch (HBM or the SLO), its step meets the SLO: a batch capped by HBM below the overlap
    threshold runs serially, so the serial side's limit applies to it too."""
    hw, m = CAT.get("hardware", hardware), CAT.get("model", model)
    rate = decode_rate(m, WORK, hw, D, DecodeOptions(tpot_slo_s=slo_ms * 1e-3))
    if rate.tokens_per_gpu_s > 0:
        assert rate.step_s <= slo_ms * 1e-3 * (1 + 1e-9), (rate.batch_per_gpu, rate.step_s, rate.limited_by)
