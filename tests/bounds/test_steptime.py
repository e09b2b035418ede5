"""The step-time model (bounds/steptime.py): a decode step and a prefill pass on one GPU."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dualpath_plan.bounds import steptime
from dualpath_plan.bounds.decode import DecodeOptions, attention_s, decode_rate, kv_bytes
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
                   gemm_grouped_frac=flat, bf16_gemm_dense_frac=None, bf16_gemm_grouped_frac=None, layer_overhead_s=0.0, step_overhead_s=0.0, request_overhead_s=0.0, ep_ll_intercept_s=0.0,
                   ep_normal_intercept_s=0.0, ep_nvlink_intercept_s=0.0, ep_nvlink_Bps=float("inf"), decode_attn_layer_s=0.0)


def _infinitely_fast(hw):
    """``_no_comm_no_overhead`` with unbounded tensor throughput and the attention kernel reading at the weights' rate."""
    inf = float("inf")
    return replace(_no_comm_no_overhead(hw), fp8_flops=inf, bf16_flops=inf, decode_attn_hbm_frac=hw.hbm_efficiency)


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


def test_a_decode_step_at_ep32_pays_58_layers_of_deepep_latency_over_rdma_an_intercept_and_a_slope():
    step = DecodeStep.of(V32, HOPPER, 32)
    assert step.comm_path == "rdma"
    assert step.comm_fixed_s == pytest.approx(58 * HOPPER.ep_ll_intercept_s)
    assert step.comm_fixed_s + 128 * step.comm_s_per_token == pytest.approx(58 * (155e-6 + 273e-6))  # DeepEP's latency at 128 tokens
    parts = step.parts(64, 0.0, 0.0)
    assert parts["comm"] == pytest.approx(step.comm_fixed_s + 64 * step.comm_s_per_token) and parts["hidden"] == 0.0
    at_128 = step.parts(128, 0.0, 0.0)
    assert at_128["hidden"] == pytest.approx(min(at_128["work"], at_128["comm"]))
    assert at_128["step"] == pytest.approx(at_128["work"] + at_128["comm"] - at_128["hidden"] + at_128["overhead"])


def test_an_instance_inside_one_nvlink_domain_exchanges_tokens_over_nvlink():
    gb200 = CAT.get("hardware", "gb200")
    inside, across = DecodeStep.of(V32, gb200, 72), DecodeStep.of(V32, gb200, 76)
    assert inside.comm_path == "nvlink" and across.comm_path == "rdma"
    assert inside.comm_fixed_s == pytest.approx(58 * gb200.ep_nvlink_intercept_s)
    assert inside.comm_s_per_token == pytest.approx(58 * 8 * steptime.copy_bytes(V32) * 71 / 72 / gb200.ep_nvlink_Bps)  # the copies that leave
    assert inside.step_s(64, 0.0, 0.0) < across.step_s(64, 0.0, 0.0)


def test_the_prefill_all_to_all_is_read_by_ep_size_across_domains_and_at_the_nvlink_rate_inside_one():
    payload, layers = 8 * steptime.copy_bytes(V32), 58
    rdma = {n: steptime.prefill_comm(V32, HOPPER, n) for n in (16, 24, 32, 64, 128)}
    assert all(path == "rdma" for _, _, path in rdma.values())
    for n in (16, 32, 64):  # the measured sizes: their own rate and intercept
        assert rdma[n][1] == pytest.approx(layers * payload / HOPPER.ep_normal_Bps[str(n)])
        assert rdma[n][0] == pytest.approx(layers * HOPPER.ep_normal_intercept_s[str(n)])
    between = (1 / HOPPER.ep_normal_Bps["16"] + 1 / HOPPER.ep_normal_Bps["32"]) / 2  # time linear between sizes, the end held beyond
    assert rdma[24][1] == pytest.approx(layers * payload * between) and rdma[128][1] == rdma[64][1]
    fixed, per_token, path = steptime.prefill_comm(V32, HOPPER, 8)
    assert path == "nvlink" and fixed == pytest.approx(layers * HOPPER.ep_normal_nvlink_intercept_s)
    assert per_token == pytest.approx(layers * payload * 7 / 8 / HOPPER.ep_normal_nvlink_Bps)  # the copies that leave the GPU
    bare = replace(HOPPER, ep_normal_nvlink_Bps=None, ep_normal_nvlink_intercept_s=None, ep_normal_Bps=50e9, ep_normal_intercept_s=90e-6)
    assert steptime.prefill_comm(V32, bare, 8)[:2] == pytest.approx((layers * HOPPER.ep_nvlink_intercept_s,
                                                                     layers * payload * 7 / 8 / HOPPER.ep_nvlink_Bps))  # absent: the LL rate
    assert steptime.prefill_comm(V32, bare, 16)[:2] == pytest.approx((layers * 90e-6, layers * payload / 50e9))  # one number: every size
    assert steptime.prefill_comm(QWEN, HOPPER, 16) == (0.0, 0.0, "none")


@pytest.mark.parametrize("model", ["ds-v3.2", "qwen2.5-32b", "gpt-oss-120b"])
def test_decode_step_time_grows_with_batch_and_context_on_each_side_of_the_overlap(model):
    m = CAT.get("model", model)
    step = DecodeStep.of(m, HOPPER, 32)
    read, attn = kv_bytes(m, 30_000)[0], attention_s(m, HOPPER, 30_000)
    for side in (np.arange(1, 128), np.arange(128, 600)):
        times = [step.step_s(b, b * read, b * attn) for b in side]
        assert all(a <= b for a, b in zip(times, times[1:])) and times[-1] > times[0]
        per_seq = [t / b for t, b in zip(times, side)]
        assert all(a >= b * (1 - 1e-12) for a, b in zip(per_seq, per_seq[1:]))  # b / t(b) grows: the largest batch is the best
    longer = kv_bytes(m, 60_000)[0], attention_s(m, HOPPER, 60_000)
    assert step.step_s(64, 64 * longer[0], 64 * longer[1]) > step.step_s(64, 64 * read, 64 * attn)
    at = step.parts(128, 128 * read, 128 * attn)
    assert step.step_s(128, 128 * read, 128 * attn) <= at["work"] + at["comm"] + at["overhead"]


def test_a_dense_model_has_no_all_to_all():
    step = DecodeStep.of(QWEN, HOPPER, 32)
    assert step.comm_fixed_s == step.comm_s_per_token == 0.0 and step.comm_path == "none"
    assert step.parts(64, 1e9, 1e-3)["comm"] == 0.0
    assert PrefillPass.of(QWEN, HOPPER, "bf16", 16).comm_s_per_token == 0.0
    assert PrefillPass.of(QWEN, HOPPER, "bf16", 16).routed_flops_per_token == 0.0


def test_with_compute_infinitely_fast_the_old_hbm_only_decode_step_comes_back():
    """Infinite tensor throughput, no all-to-all or fixed costs, attention reading KV at the weights' rate: the step is
    the old (W + kv) / BW and the best batch the old closed form, whatever the bisection."""
    hw = _infinitely_fast(HOPPER)
    for m in (QWEN, CAT.get("model", "llama-3.1-70b")):
        rate = decode_rate(m, WORK, hw, 4, DecodeOptions())
        weight, bw = m.weight_bytes / 32, hw.hbm_Bps * hw.hbm_efficiency
        read, held = kv_bytes(m, WORK.prompt_tokens + WORK.gen_tokens / 2)
        b_slo, b_mem = (bw * 0.05 - weight) / read, (hw.hbm_bytes - weight) / held
        batch = min(b_slo, b_mem)
        assert rate.batch_per_gpu == pytest.approx(batch, rel=1e-9)
        assert rate.tokens_per_gpu_s == pytest.approx(batch * bw / (weight + batch * read), rel=1e-9)
    step = DecodeStep.of(V32, hw, 32)
    for b in (1.0, 40.0, 300.0):  # a MoE model: the old step read every hosted expert; the new one those the batch hits
        kv = b * 1e6
        hit = 1.0 - (1.0 - 8 / 256) ** (32 * b)
        assert step.step_s(b, kv, 0.0) == pytest.approx((step.dense_weight_bytes + step.expert_weight_bytes * hit) / bw + kv / bw, rel=1e-12)


def test_without_mtp_the_step_is_todays_and_with_it_the_step_over_the_accepted_tokens():
    off = DecodeStep.of(V32, HOPPER, 32)
    assert DecodeStep.of(V32, HOPPER, 32, mtp=steptime.Mtp()).vector.tolist() == off.vector.tolist()
    on = DecodeStep.of(V32, HOPPER, 32, mtp=steptime.Mtp(1, 1.85, 1))
    b, read, attn = 30.0, 30 * 4e8, 30 * 1e-4
    parts_on, parts_off = on.parts(b, read, attn), off.parts(b, read, attn)
    assert parts_on["attention"] >= parts_off["attention"]  # two queries per sequence, one KV read
    raw = parts_on["work"] + parts_on["comm"] - parts_on["hidden"] + parts_on["overhead"]
    assert parts_on["step"] == pytest.approx(raw / 1.85)
    assert parts_on["work"] == pytest.approx((parts_on["attention"] + parts_on["dense_gemm"] + parts_on["expert_gemm"]) * (1 + 1 / 61))


@pytest.mark.parametrize("b", [0.5, 3.0, 17.0, 64.0, 127.0, 128.0, 700.0])
@pytest.mark.parametrize("model", ["ds-v3.2", "ds-v3", "qwen3-235b-a22b", "llama-3.1-70b"])
def test_each_kernel_family_costs_at_least_either_side_of_its_roofline(b, model):
    m = CAT.get("model", model)
    for hw in (HOPPER, CAT.get("hardware", "h20"), CAT.get("hardware", "gb200")):
        step = DecodeStep.of(m, hw, 32)
        context = 20_000.0
        read, attn = b * kv_bytes(m, context)[0], b * attention_s(m, hw, context)
        parts = step.parts(b, read, attn)
        assert parts["attention"] >= max(attn, read / step.attn_hbm_Bps) * (1 - 1e-12)
        assert parts["dense_gemm"] >= step.dense_weight_bytes / step.hbm_Bps * (1 - 1e-12)
        assert parts["dense_gemm"] >= step.dense_flops_per_token * b / step.peak_flops * (1 - 1e-12)
        assert parts["expert_gemm"] >= step.routed_flops_per_token * b / step.peak_flops * (1 - 1e-12)


def test_without_communication_and_overheads_a_flat_efficiency_is_the_old_compute_bound():
    """Old: every FLOP at peak x MFU. New with flat GEMM tables and attention at the same share of the same peak."""
    from dualpath_plan.bounds import compute

    hw = replace(_no_comm_no_overhead(HOPPER), attn_frac=0.45, hbm_Bps=1e30)  # weights read in no time
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


def test_gemm_efficiency_is_a_power_law_in_rows_between_the_table_s_rows_and_the_weight_read_beneath_it():
    table = {"64": 0.15, "128": 0.27, "4096": 0.57}
    hw = replace(HOPPER, gemm_dense_frac=table)
    v = PrefillPass.of(V32, hw, "fp8", 32)
    only_dense = replace(v, routed_flops_per_token=0.0, expert_weight_bytes=0.0, comm_s_per_token=0.0, comm_fixed_s=0.0, fixed_s=0.0, request_s=0.0)
    t = lambda tokens: only_dense.pass_s(tokens, 0.0, 0)  # noqa: E731
    frac = lambda tokens: only_dense.dense_flops_per_token * tokens / (only_dense.peak_flops * t(tokens))  # noqa: E731
    assert frac(4096) == pytest.approx(0.57) and frac(10**6) == pytest.approx(0.57)
    geometric_mid = (128 * 4096) ** 0.5  # halfway in log rows: the geometric mean of the two shares
    assert frac(geometric_mid) == pytest.approx((0.27 * 0.57) ** 0.5)
    read = only_dense.dense_weight_bytes / only_dense.hbm_Bps
    assert t(8) == pytest.approx(max(read, only_dense.dense_flops_per_token * 8 / (only_dense.peak_flops * 0.15)))  # the first share below
    assert t(1) == pytest.approx(read)  # a GEMM of one row: the weights' read time
    times = [t(m) for m in np.geomspace(1, 10**5, 400)]
    assert all(a <= b * (1 + 1e-12) for a, b in zip(times, times[1:]))  # more rows never take less time


def test_a_bigger_or_faster_gpu_never_lowers_a_bound():
    from dualpath_plan.bounds import lp
    from dualpath_plan.model.scenario import build_scenario

    sc = build_scenario("hopper", P=2, D=4)
    bigger = replace(sc, pe_hw=replace(sc.pe_hw, hbm_bytes=sc.pe_hw.hbm_bytes * 1.5), de_hw=replace(sc.de_hw, hbm_bytes=sc.de_hw.hbm_bytes * 1.5))
    faster = replace(sc, pe_hw=replace(sc.pe_hw, fp8_flops=sc.pe_hw.fp8_flops * 1.5, bf16_flops=sc.pe_hw.bf16_flops * 1.5),
                     de_hw=replace(sc.de_hw, fp8_flops=sc.de_hw.fp8_flops * 1.5, bf16_flops=sc.de_hw.bf16_flops * 1.5, hbm_Bps=sc.de_hw.hbm_Bps * 1.5))
    for mode in ("basic", "dualpath", "oracle"):
        base = lp.solve(lp.limits_of(sc), mode).turns_per_s
        assert lp.solve(lp.limits_of(bigger), mode).turns_per_s >= base * (1 - 1e-12)
        assert lp.solve(lp.limits_of(faster), mode).turns_per_s >= base * (1 - 1e-12)


def test_the_parameter_vectors_hold_the_records():
    d = DecodeStep.of(V32, HOPPER, 32)
    assert d.vector[steptime.D_COMM_FIXED] == d.comm_fixed_s and d.vector.size == steptime.N_DECODE
    assert int(d.vector[steptime.D_GROUPED_N]) == len(HOPPER.gemm_grouped_frac)
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


def test_fp4_gemms_run_at_the_fp4_peak_and_table_and_a_gpu_without_fp4_refuses_them():
    blackwell = CAT.get("hardware", "blackwell")
    pp = PrefillPass.of(V32, blackwell, "fp4", 32)
    assert pp.peak_flops == blackwell.fp4_flops and dict(pp.dense_table) == {float(k): v for k, v in blackwell.fp4_gemm_dense_frac.items()}
    assert pp.saturated_gemm_s_per_token < PrefillPass.of(V32, blackwell, "fp8", 32).saturated_gemm_s_per_token
    with pytest.raises(PlanError, match="dtype fp4 is not allowed on hopper .*no FP4 tensor cores"):
        PrefillPass.of(V32, HOPPER, "fp4", 32)
