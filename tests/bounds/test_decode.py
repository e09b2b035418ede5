"""The decode roofline under the TPOT SLO (decode.py)."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

from dualpath_plan.bounds import decode
from dualpath_plan.bounds.steptime import weight_share_bytes
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import catalog

REL_TOL = 1e-12  # relative; closed-form arithmetic
CAT = catalog()
HOPPER = CAT.get("hardware", "hopper")
WORK = CAT.get("workload", "agentic-64k")
DENSE = CAT.get("model", "llama-3.1-8b")  # 16 GB of BF16 weights, 128 KiB of KV per token


def test_kv_bytes_dense_read_and_hold_the_whole_context():
    read, held = decode.kv_bytes(DENSE, 1000.0)
    assert read == held == 1000.0 * 131_072


def test_kv_bytes_dsa_reads_topk_latents_plus_every_indexer_key():
    """DeepSeek-V3.2: the indexer keys of the whole context, the MLA latents of top-2048 keys."""
    m = CAT.get("model", "ds-v3.2")
    layout = m.kv_layouts[m.kv_layout]
    read, held = decode.kv_bytes(m, 30_000.0)
    assert read == pytest.approx(layout * 2048 + 8052.0 * 30_000, rel=REL_TOL)
    assert held == pytest.approx((layout + 8052.0) * 30_000, rel=REL_TOL)


def test_slo_limited_roofline_matches_hand_arithmetic():
    """A big HBM makes the TPOT SLO bind (a dense model: no all-to-all; compute infinitely fast and the attention
    kernel reading at the weights' rate, so every kernel is memory bound): t(b) = (W + b*kv)/BW + fixed + b*t_req
    = TPOT gives b = (TPOT - fixed - W/BW) / (kv/BW + t_req), and rate = b/TPOT; the bisection finds it."""
    hw = replace(HOPPER, hbm_bytes=1e13, fp8_flops=math.inf, bf16_flops=math.inf, decode_attn_hbm_frac=HOPPER.hbm_efficiency, decode_attn_layer_s=0.0)
    rate = decode.roofline(DENSE, WORK, hw, 8, 0.05)
    bw = hw.hbm_Bps * hw.hbm_efficiency
    kv = decode.kv_bytes(DENSE, decode.decode_context_tokens(WORK))[0]
    weight = DENSE.weight_bytes / 8
    fixed = hw.step_overhead_s + DENSE.layers * hw.layer_overhead_s
    assert rate.limited_by == "tpot_slo"
    assert math.isclose(rate.batch_per_gpu, (0.05 - fixed - weight / bw) / (kv / bw + hw.request_overhead_s), rel_tol=1e-9)
    assert math.isclose(rate.step_s, 0.05, rel_tol=1e-9)
    assert math.isclose(rate.tokens_per_gpu_s, rate.batch_per_gpu / 0.05, rel_tol=1e-9)


def test_hbm_limited_roofline_fills_free_memory():
    """A long SLO makes HBM bind: the batch fills what the weights leave free."""
    rate = decode.roofline(DENSE, WORK, HOPPER, 8, 10.0)
    held = decode.kv_bytes(DENSE, decode.decode_context_tokens(WORK))[1]
    assert rate.limited_by == "hbm_capacity"
    assert math.isclose(rate.batch_per_gpu, (HOPPER.hbm_bytes - DENSE.weight_bytes / 8) / held, rel_tol=REL_TOL)
    assert rate.step_s < 10.0


def test_weights_that_do_not_fit_or_miss_the_slo_make_no_tokens():
    ds = CAT.get("model", "ds-v3.2")  # 671 GB of FP8 weights do not fit 8 x 80 GB
    assert decode.roofline(ds, WORK, HOPPER, 8, 0.05).limited_by == "weights_do_not_fit"
    assert decode.roofline(ds, WORK, HOPPER, 8, 0.05).tokens_per_gpu_s == 0.0
    slow = decode.roofline(DENSE, WORK, HOPPER, 1, 1e-3)  # 16 GB cannot be read in 1 ms
    assert (slow.limited_by, slow.tokens_per_gpu_s) == ("weights_exceed_slo", 0.0)


def test_default_instance_spreads_the_experts_over_the_whole_decode_side():
    ds = CAT.get("model", "ds-v3.2")
    options = decode.DecodeOptions()
    rates = [decode.decode_rate(ds, WORK, HOPPER, d, options) for d in (2, 4, 8)]
    assert [r.weight_share_bytes for r in rates] == pytest.approx([weight_share_bytes(ds, d * 8) for d in (2, 4, 8)])
    assert rates[0].weight_share_bytes > rates[1].weight_share_bytes > rates[2].weight_share_bytes


def test_fixed_instance_makes_the_rate_per_gpu_independent_of_D():
    ds = CAT.get("model", "ds-v3.2")
    options = decode.DecodeOptions(instance_nodes=4)
    rates = {decode.decode_rate(ds, WORK, HOPPER, d, options).tokens_per_gpu_s for d in (4, 8, 12)}
    assert len(rates) == 1


def test_only_whole_instances_serve():
    ds = CAT.get("model", "ds-v3.2")
    options = decode.DecodeOptions(instance_nodes=4)
    per_gpu = decode.decode_rate(ds, WORK, HOPPER, 4, options).tokens_per_gpu_s
    assert decode.decode_capacity(ds, WORK, HOPPER, 9, options) == pytest.approx(8 * 8 * per_gpu, rel=REL_TOL)  # 2 instances; 1 node idle
    short = decode.decode_rate(ds, WORK, HOPPER, 3, options)
    assert short.tokens_per_gpu_s == 0 and short.limited_by == "instance_exceeds_decode_side"


def test_a_calibrated_figure_replaces_the_roofline():
    m = replace(DENSE, decode_tokens_per_gpu_s=1234.0)
    rate = decode.decode_rate(m, WORK, HOPPER, 3, decode.DecodeOptions())
    assert (rate.tokens_per_gpu_s, rate.limited_by) == (1234.0, "calibrated")


@pytest.mark.parametrize(("tpot", "nodes", "flag"), [(0.0, None, "--tpot-slo-ms"), (float("nan"), None, "--tpot-slo-ms"), (-5.0, None, "--tpot-slo-ms"), (50.0, 0, "--decode-instance-nodes")])
def test_bad_decode_options_name_the_flag(tpot, nodes, flag):
    with pytest.raises(PlanError, match=flag) as info:
        decode.DecodeOptions.parse(tpot, nodes)
    assert info.value.exit_code == 2


def test_options_convert_ms_to_seconds():
    assert decode.DecodeOptions.parse(50.0).tpot_slo_s == pytest.approx(0.05, rel=REL_TOL)


def test_mtp_keeps_one_plus_r_plus_r_squared_tokens_per_step_by_default():
    assert decode.mtp_accepted_tokens(0) == 1.0
    assert decode.mtp_accepted_tokens(1) == pytest.approx(1.85) and decode.mtp_accepted_tokens(2) == pytest.approx(1 + 0.85 + 0.85**2)
    options = decode.DecodeOptions.parse(mtp=2)
    assert options.mtp_for(CAT.get("model", "ds-v3")).accepted == pytest.approx(2.5725)


@pytest.mark.parametrize("kwargs, needle", [
    ({"mtp": 1, "mtp_accepted": 2.5}, "--mtp-accepted 2.5 tokens is not allowed; must be >= 1 and <= --mtp + 1 = 2"),
    ({"mtp_accepted": 1.5}, "give --mtp N (N >= 1) too"),
    ({"mtp": 9}, "--mtp = 9 draft tokens is not allowed"),
])
def test_bad_mtp_settings_are_one_line(kwargs, needle):
    with pytest.raises(PlanError, match=re.escape(needle)):
        decode.DecodeOptions.parse(**kwargs)


def test_mtp_needs_a_model_with_an_mtp_module():
    with pytest.raises(PlanError, match="model 'qwen2.5-32b' ships no multi-token-prediction module"):
        decode.DecodeOptions.parse(mtp=1).mtp_for(CAT.get("model", "qwen2.5-32b"))


def test_with_every_draft_accepted_and_weights_read_once_mtp_divides_a_memory_bound_step_by_the_tokens_kept():
    """Compute infinitely fast and no all-to-all: a step reads its weights and KV once whatever it verifies, so with
    N drafts all kept each token costs the step over N + 1, plus the drafts' N layers of work."""
    from dualpath_plan.bounds.steptime import DecodeStep, Mtp

    hw = replace(HOPPER, fp8_flops=math.inf, bf16_flops=math.inf, layer_overhead_s=0.0, step_overhead_s=0.0, request_overhead_s=0.0)
    off = DecodeStep.of(DENSE, hw, 8)
    for drafts in (1, 3):
        on = DecodeStep.of(DENSE, hw, 8, mtp=Mtp(drafts, drafts + 1.0, 1))
        assert on.step_s(32, 32e8, 0.0) == pytest.approx(off.step_s(32, 32e8, 0.0) * (1 + drafts / DENSE.layers) / (drafts + 1))


def test_the_hbm_cap_holds_sequences_at_the_decode_batch_context():
    """With the turns' generated-token-weighted context (``Workload.decode_context``) the HBM-capped batch is the free
    HBM over that context's bytes, and a shorter batch context fits more sequences and makes more tokens."""
    short = replace(WORK, decode_context=0.8 * decode.decode_context_tokens(WORK))
    rate, plain = decode.roofline(DENSE, short, HOPPER, 8, 10.0), decode.roofline(DENSE, WORK, HOPPER, 8, 10.0)
    held = decode.kv_bytes(DENSE, short.decode_context)[1]
    assert math.isclose(rate.batch_per_gpu, (HOPPER.hbm_bytes - DENSE.weight_bytes / 8) / held, rel_tol=REL_TOL)
    assert rate.batch_per_gpu > plain.batch_per_gpu and rate.tokens_per_gpu_s > plain.tokens_per_gpu_s
