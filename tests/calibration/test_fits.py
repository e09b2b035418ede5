"""Fitting step-time tables (calibration/fits.py): known tables come back from the rows they predict."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.calibration import fits
from dualpath_plan.calibration.measurements import Measurement
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import _check_gemm_curve, catalog

HW = replace(catalog().get("hardware", "h100-dgx"), hbm_Bps=1e30)  # weights read in no time: every GEMM row is compute bound
# Shares no H100 beats: every row reads its weights slower than HBM allows (the CSV test calibrates the real profile)
DENSE = {"16": 0.04, "64": 0.16, "512": 0.5, "4096": 0.6}
GROUPED = {"256": 0.4, "1024": 0.5, "2048": 0.55, "8192": 0.6}
T0, RATE, BW = 15e-6, 0.6 * HW.bf16_flops, 0.7 * 3.35e12
LINES = {("nvlink", 8): ((20e-6, 0.3e-6), (22e-6, 0.5e-6)), ("rdma", 16): ((30e-6, 0.6e-6), (40e-6, 1.1e-6)),
         ("rdma", 32): ((35e-6, 0.9e-6), (45e-6, 1.7e-6))}


def _row(op, dtype, shape, tokens, ep=1, path="-", context=0.0, latency=1e-3, n=0) -> Measurement:
    return Measurement(op, dtype, shape, float(tokens), ep, path, float(context), latency, f"synthetic row {n}")


def gemm_rows() -> list[Measurement]:
    rows = []
    for dtype in ("fp8", "bf16"):
        for n, k in ((4096, 7168), (7168, 2048), (2048, 7168)):
            for m, share in DENSE.items():
                flops = 2.0 * int(m) * n * k
                rows.append(_row("gemm", dtype, (n, k), int(m), latency=flops / (HW.peak_flops(dtype) * share), n=len(rows)))
    return rows


def grouped_rows() -> list[Measurement]:
    rows, (h, i, e, k), ep = [], (7168, 2048, 256, 8), 32
    for m, share in GROUPED.items():
        tokens = int(m) * e / (ep * k)  # rows per expert m = ep * tokens * k / E
        rows.append(_row("grouped_gemm", "fp8", (h, i, e, k), tokens, ep, latency=tokens * k * 6 * h * i / (HW.fp8_flops * share), n=len(rows)))
    return rows


def mla_rows() -> list[Measurement]:
    rows = []
    for heads in (8, 32, 128):
        for b in (1, 4, 16, 64):
            for ctx in (1024, 8192, 32768):
                keys = b * ctx
                t = T0 + max(keys * 2 * heads * 1088 / RATE, keys * 576 / BW)
                rows.append(_row("mla_decode", "fp8", (heads,), b, context=ctx, latency=t, n=len(rows)))
        for ctx in (1024, 4096, 16384):
            rows.append(_row("mla_prefill", "bf16", (heads,), 2, context=ctx, latency=2 * ctx * ctx / 2 * 2 * heads * 320 / (0.55 * HW.bf16_flops), n=len(rows)))
    return rows


def a2a_rows() -> list[Measurement]:
    rows = []
    for (path, ep), parts in LINES.items():
        for part, (a, s) in zip(("dispatch", "combine"), parts):
            for tokens in (1, 8, 64, 128, 512):
                rows.append(_row(f"a2a_ll_{part}", "fp8", (7168, 8), tokens, ep, path, latency=a + s * tokens, n=len(rows)))
        for part, (a, s) in zip(("dispatch", "combine"), parts):  # the throughput kernels: other lines, on both paths
            for tokens in (512, 2048, 8192, 16384):
                rows.append(_row(f"a2a_normal_{part}", "fp8", (7168, 8), tokens, ep, path, latency=2 * a + 3 * s * tokens, n=len(rows)))
    return rows


def test_known_gemm_tables_come_back_from_the_rows_they_predict():
    fit = fits.fit_all(tuple(gemm_rows() + grouped_rows()), HW)
    assert fit.values["gemm_dense_frac"] == DENSE and fit.values["bf16_gemm_dense_frac"] == DENSE
    assert fit.values["gemm_grouped_frac"] == GROUPED
    assert all(r.mape_fit < 1e-9 and (r.mape_held_out or 0) < 1e-9 for r in fit.reports)


def test_the_decode_attention_roofline_and_the_prefill_rate_come_back():
    fit = fits.fit_all(tuple(mla_rows()), HW)
    assert fit.values["decode_attn_layer_us"] == pytest.approx(15.0, rel=1e-3)
    assert fit.values["decode_attn_frac"] == pytest.approx(0.6, rel=1e-3)
    assert fit.values["attn_frac"] == pytest.approx(0.55, rel=1e-3)


def test_the_decode_attention_bandwidth_comes_back_against_a_real_hbm():
    hw = catalog().get("hardware", "h100-dgx")
    fit = fits.fit_all(tuple(r for r in mla_rows() if r.op == "mla_decode"), hw)
    assert fit.values["decode_attn_hbm_frac"] == pytest.approx(BW / hw.hbm_Bps, rel=1e-3)


def test_all_to_all_lines_come_back_as_the_profile_keys():
    fit = fits.fit_all(tuple(a2a_rows()), HW)
    v = fit.values
    payload = 8 * (7168 * (1 + 1 / 32) + 2 * 7168)
    assert v["ep_nvlink_intercept_us"] == pytest.approx(42.0) and v["ep_nvlink_GBps"] == pytest.approx(payload * 7 / 8 / 0.8e-6 / 1e9, rel=1e-3)
    assert v["ep_dispatch_us"] == {"16": pytest.approx(30 + 128 * 0.6), "32": pytest.approx(35 + 128 * 0.9)}
    assert v["ep_combine_us"] == {"16": pytest.approx(40 + 128 * 1.1), "32": pytest.approx(45 + 128 * 1.7)}
    assert v["ep_ll_intercept_us"] == pytest.approx((70 + 80) / 2)
    assert v["ep_normal_intercept_us"] == {"16": pytest.approx(140.0), "32": pytest.approx(160.0)}  # each EP size its own line
    assert v["ep_normal_GBps"] == {"16": pytest.approx(payload / 5.1e-6 / 1e9, rel=1e-3), "32": pytest.approx(payload / 7.8e-6 / 1e9, rel=1e-3)}
    assert v["ep_normal_nvlink_intercept_us"] == pytest.approx(84.0)
    assert v["ep_normal_nvlink_GBps"] == pytest.approx(payload * 7 / 8 / 2.4e-6 / 1e9, rel=1e-3)
    assert all(r.mape_fit < 1e-6 for r in fit.reports if r.table.startswith("a2a_normal"))


def test_a_fit_without_keys_leaves_them_to_the_base():
    fit = fits.fit_all(tuple(a2a_rows()), HW).without(("ep_normal_nvlink_GBps",))
    assert "ep_normal_nvlink_GBps" not in fit.values and "ep_normal_nvlink_intercept_us" in fit.values
    assert all("ep_normal_nvlink_GBps" not in keys for keys in fit.keys_of.values())
    assert fit.reports == fits.fit_all(tuple(a2a_rows()), HW).reports


def test_a_row_faster_than_the_datasheet_is_refused_kept_or_dropped():
    real = catalog().get("hardware", "h100-dgx")
    fast = _row("gemm", "fp8", (4096, 7168), 4096, latency=2 * 4096 * 4096 * 7168 / (real.fp8_flops * 1.5), n=99)
    rows = (fast, *[r for r in gemm_rows() if r.dtype == "fp8"])
    with pytest.raises(PlanError, match="synthetic row 99: gemm fp8 4096x7168 at 4096 tokens would need 2968 TFLOP/s"):
        fits.fit_all(rows, real)
    kept, dropped = fits.fit_all(rows, real, policy="keep"), fits.fit_all(rows, real, policy="drop")
    assert kept.reports[0].rows_fit + kept.reports[0].rows_held_out == len(rows)
    assert dropped.reports[0].dropped == 1 and dropped.reports[0].rows_fit + dropped.reports[0].rows_held_out == len(rows) - 1


def test_every_fifth_row_is_held_out():
    report = fits.fit_all(tuple(gemm_rows()), HW).reports[0]
    assert (report.rows_fit, report.rows_held_out) == (10, 2)


@pytest.mark.slow
@given(st.dictionaries(st.integers(1, 100_000), st.floats(1e-4, 1.0), min_size=1, max_size=30))
def test_a_fitted_curve_is_one_every_profile_accepts(points):
    table = fits.make_curve({float(m): f for m, f in points.items()})
    assert len(table) <= 8
    _check_gemm_curve("fitted", "gemm_dense_frac", table)  # never falls with M, never rises faster than M


def test_nothing_to_fit_is_one_line():
    with pytest.raises(PlanError, match="no measurement of mla_decode to fit"):
        fits.fit_all(tuple(gemm_rows()), HW, families=("mla_decode",))
    assert math.isfinite(fits.fit_line(a2a_rows()[:1])[0])


def test_decode_rows_of_one_head_count_cannot_tell_compute_from_bandwidth():
    one = tuple(r for r in mla_rows() if r.op == "mla_decode" and r.shape == (128,))
    with pytest.raises(PlanError, match="mla_decode: 10 rows at 1 FLOP-to-byte ratio cannot tell the kernel's compute rate from its bandwidth"):
        fits.fit_all(one, HW)


def test_fp4_rows_fit_the_fp4_table_of_an_fp4_gpu_and_are_refused_on_a_gpu_without_fp4():
    b200 = replace(catalog().get("hardware", "blackwell"), hbm_Bps=1e30)
    rows = []
    for n, k in ((4096, 7168), (7168, 2048)):
        for m, share in DENSE.items():
            rows.append(_row("gemm", "fp4", (n, k), int(m), latency=2.0 * int(m) * n * k / (b200.fp4_flops * share), n=len(rows)))
    assert fits.fit_all(tuple(rows), b200).values["fp4_gemm_dense_frac"] == DENSE
    with pytest.raises(PlanError, match="dtype fp4 is not allowed on h100-dgx"):
        fits.fit_all(tuple(rows), HW)


REAL = catalog().get("hardware", "h100-dgx")


def _streaming_rows(m_top: int, hbm_frac: float) -> tuple[Measurement, ...]:
    """GEMM rows of M = 1 .. ``m_top`` on the real H100 that read their weights at ``hbm_frac`` of its usable HBM rate."""
    n, k = 2048, 7168
    rate = REAL.hbm_Bps * REAL.hbm_efficiency * hbm_frac
    return tuple(_row("gemm", "fp8", (n, k), m, latency=n * k / rate, n=i) for i, m in enumerate((1, 2, 4, 8, 16, m_top)))


def test_a_gemm_table_whose_largest_rows_stream_their_weights_is_refused():
    with pytest.raises(PlanError, match=r"gemm fp8: the largest rows measured, M = 32, read their weights at 50.0 % of h100-dgx's usable HBM"):
        fits.fit_all(_streaming_rows(32, 0.5), REAL, families=("gemm",))


def test_the_hbm_share_of_a_row_is_its_weight_bytes_over_its_time():
    (row,) = _streaming_rows(32, 0.125)[-1:]
    share = 2.0 * 32 * 2048 * 7168 / (row.latency_s * REAL.peak_flops("fp8"))
    assert fits.hbm_share(share, 32, "fp8", REAL) == pytest.approx(0.125, rel=1e-12)
    assert "gemm_dense_frac" in fits.fit_all(_streaming_rows(32, 0.125), REAL, families=("gemm",)).values


def test_rows_of_families_not_asked_for_are_counted_not_fitted():
    fit = fits.fit_all(tuple(gemm_rows() + grouped_rows()), HW, families=("gemm",))
    assert fit.not_asked == {"grouped_gemm": len(grouped_rows())}
    assert "gemm_grouped_frac" not in fit.values
