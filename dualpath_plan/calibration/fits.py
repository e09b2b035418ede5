"""Fitting a hardware profile's step-time tables to kernel measurements, each family by the term it feeds.

Every family predicts its rows with the very arithmetic ``bounds/steptime.py`` charges, so a row's error is the
model's error on that measurement:

* ``gemm`` (per dtype): the share of the dtype's dense peak by rows M is the FLOP-weighted harmonic mean over the
  measured shapes at that M (``sum FLOP / (sum time x peak)``), kept at up to 8 rows spread evenly in log M and
  made a curve the profile accepts (never falling with M, never rising faster than M). A row is predicted as
  ``max(2MNK / (peak x e(M)), N K bytes / (HBM x hbm_efficiency_frac))``, ``e`` interpolated in log M.
* ``grouped_gemm`` (per dtype): the same for an expert GEMM of ``m = n T k / E`` rows (``T`` tokens on each of the
  ``n`` GPUs), ``T k 6 H I`` FLOP per GPU; its memory side reads the hosted experts ``T`` tokens hit.
* ``mla_decode``: ``t = t0 + max(F / R, B / W)`` per layer, fitted in relative error on at least 4 rows of two head
  counts or more (one FLOP-to-byte ratio cannot tell ``R`` from ``W``): ``F`` the absorbed form's
  ``2 x heads x 1,088`` FLOP per key, ``B`` the KV bytes per key the measured kernels read (576 in FP8: SGLang's and
  TensorRT-LLM's FP8 MLA cache keeps the 512 + 64 values one byte each; 1,152 in BF16). ``R``, ``W`` and ``t0`` become ``decode_attn_frac`` (of BF16 peak),
  ``decode_attn_hbm_frac`` and ``decode_attn_layer_us``.
* ``mla_prefill``: ``t = F / R`` with the MHA form's ``2 x heads x 320`` FLOP per query-key pair over a causal
  prompt (``L^2 / 2`` pairs); ``R`` over BF16 peak is ``attn_frac``.
* ``a2a_*``: ``t = a + s x tokens`` per kernel, path, EP size and part (dispatch, combine), in relative error.
  NVLink rows give ``ep_nvlink_intercept_us`` and ``ep_nvlink_GBps`` (the payload of the ``(n - 1)/n`` of a token's
  ``k`` copies that leave the GPU, ``H (1 + 1/32) + 2H`` bytes each, over the slope: ``steptime`` charges the same); RDMA low-latency rows give ``ep_dispatch_us`` and ``ep_combine_us`` at 128 tokens by
  EP size and ``ep_ll_intercept_us`` (their mean intercept); RDMA normal rows give ``ep_normal_GBps`` (a token's
  ``k`` copies over the slope) and ``ep_normal_intercept_us`` by EP size; NVLink normal rows give
  ``ep_normal_nvlink_GBps`` and ``ep_normal_nvlink_intercept_us`` as the low-latency ones give theirs.

Every fifth row of a family (in its sorted order) is held out of the fit; its error is reported apart. A row
faster than the datasheet allows (more FLOP/s than the peak, or more HBM bytes/s than HBM's) is refused, kept
(``keep``) or left out (``drop``), as the caller says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dualpath_plan.bounds.steptime import LL_TOKENS, TABLE_SLOTS, copy_bytes_of, expert_hit, gemm_share, remote_share, table_into
from dualpath_plan.calibration.measurements import Measurement
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.profiles import MAX_TABLE_ROWS, Hardware

FAMILIES = ("gemm", "grouped_gemm", "mla_decode", "mla_prefill", "a2a_ll", "a2a_normal")
HOLD_OUT_EVERY = 5
MLA_LATENT, MLA_ROPE, MLA_NOPE, MLA_V = 512, 64, 128, 128
KV_BYTES_PER_KEY = {"fp8": 576.0, "bf16": 1152.0}  # per layer: the frameworks' FP8 MLA cache (576 one-byte values), BF16 latent
BYTES_PER_WEIGHT = {"fp8": 1.0, "bf16": 2.0, "fp4": 0.5}  # FP4: the 4-bit values (NVFP4 adds one byte of scale per 16)
MIN_DECODE_ROWS = 4  # a three-parameter fit needs more rows than parameters


def family_of(op: str) -> str:
    """The family of an op: ``a2a_ll_dispatch`` -> ``a2a_ll``, every other op its own."""
    return op.rsplit("_", 1)[0] if op.startswith("a2a_") else op


@dataclass(frozen=True)
class Report:
    """How one fitted table meets its rows: counts, mean absolute percentage errors (fit and held-out rows) and
    the worst row (its origin and signed error).

    Attributes:
        table: The fitted table's name.
        rows_fit: Rows the fit used.
        rows_held_out: Rows held out of the fit (every fifth).
        mape_fit: Mean absolute relative error of the model's time on the fit rows, a fraction.
        mape_held_out: The same on the held-out rows, a fraction; ``None`` with none.
        worst_where: Where the worst row came from.
        worst_error: The worst row's signed relative error (model / measured - 1), a fraction.
        dropped: Rows left out as faster than the datasheet (``--drop-implausible``).
        note: A remark on the fit, or empty.
    """

    table: str
    rows_fit: int
    rows_held_out: int
    mape_fit: float
    mape_held_out: float | None
    worst_where: str
    worst_error: float
    dropped: int = 0
    note: str = ""


@dataclass(frozen=True)
class Fit:
    """Fitted profile values in file units (``values``), with one report per table they came from.

    Attributes:
        values: The fitted profile keys and their values, in the profile file's units (as each key names them).
        reports: One :class:`Report` per fitted table.
        keys_of: Per report's table, the profile keys it set.
        not_asked: Per table family the fit was not asked for (``--ops``), the rows of it that were measured and left out.
    """

    values: dict[str, object] = field(default_factory=dict)
    reports: tuple[Report, ...] = ()
    keys_of: dict[str, tuple[str, ...]] = field(default_factory=dict)  # report table -> the profile keys it set
    not_asked: dict[str, int] = field(default_factory=dict)  # family -> rows measured but left out because --ops did not name it

    def without(self, keys: tuple[str, ...]) -> Fit:
        """This fit with ``keys`` left out (the base profile keeps its own values and sources for them)."""
        if not keys:
            return self
        kept = {t: tuple(k for k in ks if k not in keys) for t, ks in self.keys_of.items()}
        return Fit({k: v for k, v in self.values.items() if k not in keys}, self.reports, kept, self.not_asked)


def _split(rows: list[Measurement]) -> tuple[list[Measurement], list[Measurement]]:
    """(fit rows, held-out rows): every fifth row of ``rows`` sorted by their values is held out."""
    ordered = sorted(rows, key=lambda r: (r.key, r.latency_s))
    return ([r for i, r in enumerate(ordered) if i % HOLD_OUT_EVERY != HOLD_OUT_EVERY - 1],
            [r for i, r in enumerate(ordered) if i % HOLD_OUT_EVERY == HOLD_OUT_EVERY - 1])


def _report(table: str, fit_rows, held_rows, predict, dropped: int = 0, note: str = "") -> Report:
    def errors(rows):
        return [(predict(r) / r.latency_s - 1.0, r.where) for r in rows]
    fit_err, held_err = errors(fit_rows), errors(held_rows)
    worst = max(fit_err + held_err, key=lambda e: abs(e[0]))
    mape = lambda errs: float(np.mean([abs(e) for e, _ in errs])) if errs else None  # noqa: E731
    return Report(table, len(fit_rows), len(held_rows), mape(fit_err), mape(held_err), worst[1], worst[0], dropped, note)


# --- plausibility ---------------------------------------------------------------------------------------------

def _work(row: Measurement) -> tuple[float, float, str]:
    """(FLOP, HBM bytes at least, the peak's dtype) of one row; a2a rows have neither."""
    if row.op == "gemm":
        n, k = row.shape
        return 2.0 * row.tokens * n * k, n * k * BYTES_PER_WEIGHT[row.dtype], row.dtype
    if row.op == "grouped_gemm":
        h, i, e, k = row.shape
        hosted = e / row.ep_size
        hit = expert_hit(row.tokens, row.ep_size * math.log(1.0 - k / e)) if k < e else 1.0
        return row.tokens * k * 6.0 * h * i, hosted * hit * 3.0 * h * i * BYTES_PER_WEIGHT[row.dtype], row.dtype
    if row.op == "mla_decode":
        keys = row.tokens * row.context
        return keys * 2.0 * row.shape[0] * (MLA_LATENT + MLA_ROPE + MLA_LATENT), keys * KV_BYTES_PER_KEY[row.dtype], "bf16"
    if row.op == "mla_prefill":
        pairs = row.tokens * row.context * row.context / 2.0
        return pairs * 2.0 * row.shape[0] * (MLA_NOPE + MLA_ROPE + MLA_V), 0.0, "bf16"
    return 0.0, 0.0, "bf16"


def implausible(row: Measurement, hw: Hardware) -> str | None:
    """Why ``row`` beats ``hw``'s datasheet (more FLOP/s than the dtype's dense peak, more bytes/s than HBM), or None."""
    flops, bytes_, dtype = _work(row)
    peak = hw.peak_flops(dtype)
    if flops / row.latency_s > peak * (1 + 1e-9):
        return f"{flops / row.latency_s / 1e12:.4g} TFLOP/s, more than the {dtype} dense peak of {peak / 1e12:g} TFLOP/s"
    if bytes_ / row.latency_s > hw.hbm_Bps * (1 + 1e-9):
        return f"{bytes_ / row.latency_s / 1e12:.4g} TB/s of HBM reads, more than HBM's {hw.hbm_Bps / 1e12:g} TB/s"
    return None


def screen(rows: tuple[Measurement, ...], hw: Hardware, policy: str) -> tuple[tuple[Measurement, ...], dict[tuple[str, str], int]]:
    """The rows to fit: an implausible row is refused (``refuse``: one line naming it), kept (``keep``) or left
    out (``drop``); returns the rows and how many each family and dtype dropped."""
    kept, dropped = [], {}
    for row in rows:
        why = implausible(row, hw)
        if why is None or policy == "keep":
            kept.append(row)
        elif policy == "drop":
            key = (family_of(row.op), row.dtype)
            dropped[key] = dropped.get(key, 0) + 1
        else:
            raise PlanError(f"{row.where}: {row.op} {row.dtype} {'x'.join(map(str, row.shape))} at {row.tokens:g} tokens would need {why}; "
                            f"the measurement beats the {hw.gpu}'s datasheet: fix it, or pass --keep-implausible (keep it in the fit) "
                            "or --drop-implausible (leave it out)", 1)
    return tuple(kept), dropped


# --- GEMM tables ----------------------------------------------------------------------------------------------

def rows_per_expert(row: Measurement) -> float:
    """Rows of one expert GEMM: ``n T k / E``."""
    _, _, e, k = row.shape
    return row.ep_size * row.tokens * k / e


def _gemm_m(row: Measurement) -> float:
    return row.tokens if row.op == "gemm" else rows_per_expert(row)


def make_curve(points: dict[float, float]) -> dict[str, float]:
    """Shares by rows as a profile table: at most 8 rows spread evenly in log M (the nearest measured ones), then
    never falling with M and never rising faster than M (``model.profiles``' rule), 4 significant digits."""
    ms = sorted(points)
    if len(ms) > MAX_TABLE_ROWS:
        grid = np.geomspace(ms[0], ms[-1], MAX_TABLE_ROWS)
        ms = sorted({min(ms, key=lambda m: abs(math.log(m / g))) for g in grid})
    shares, out = [min(points[m], 1.0) for m in ms], {}
    for i in range(1, len(shares)):
        shares[i] = max(shares[i], shares[i - 1])
        shares[i] = min(shares[i], shares[i - 1] * ms[i] / ms[i - 1])
    for m, f in zip(ms, shares):
        out[str(int(round(m)))] = float(f"{f:.4g}")
    return _monotone_after_rounding(out)


def _floor_sig(x: float) -> float:
    """``x`` rounded down to four significant digits."""
    if x <= 0:
        return 0.0
    scale = 10.0 ** (3 - math.floor(math.log10(x)))
    return math.floor(x * scale * (1 + 1e-12)) / scale


def _monotone_after_rounding(table: dict[str, float]) -> dict[str, float]:
    """The profile's curve rule again after rounding: a share rounded above ``previous x M / M_previous`` is
    rounded down instead."""
    keys = sorted(table, key=int)
    for a, b in zip(keys, keys[1:]):
        table[b] = max(table[b], table[a])
        if table[b] > table[a] * int(b) / int(a) * (1 + 1e-12):
            table[b] = _floor_sig(table[a] * int(b) / int(a))
    return table


def _table_vector(table: dict[str, float]) -> np.ndarray:
    out = np.zeros(1 + 2 * TABLE_SLOTS)
    table_into(out, 0, tuple(sorted((float(k), v) for k, v in table.items())))
    return out


def gemm_predict(row: Measurement, vector: np.ndarray, hw: Hardware) -> float:
    """The step-time model's time for one GEMM or grouped-GEMM row with a table's ``vector`` (``_table_vector``, made
    once for the table's many rows)."""
    flops, weight, dtype = _work(row)
    share = gemm_share(max(_gemm_m(row), 1e-9), vector, 0)
    return max(flops / (hw.peak_flops(dtype) * share), weight / (hw.hbm_Bps * hw.hbm_efficiency))


def fit_gemm(rows: list[Measurement], hw: Hardware) -> dict[str, float]:
    """The GEMM table of ``rows`` (one op and dtype): per whole M (rows of at least one; an expert GEMM's fractional
    rows are rounded), sum FLOP over sum time and peak. Rows below one row still count in the errors."""
    flops, time = {}, {}
    for row in rows:
        m = round(_gemm_m(row))
        if m < 1:
            continue
        f, _, dtype = _work(row)
        flops[m] = flops.get(m, 0.0) + f
        time[m] = time.get(m, 0.0) + row.latency_s * hw.peak_flops(dtype)
    if not flops:
        raise PlanError(f"{rows[0].op} {rows[0].dtype}: no measurement of a GEMM of one row or more; a table needs them", 2)
    top = max(flops)
    _check_top_compute_bound(rows[0], top, flops[top] / time[top], hw)
    return make_curve({m: flops[m] / time[m] for m in flops})


MEMORY_BOUND_SHARE = 0.25  # a GEMM row reading its weights at this share of usable HBM bandwidth or more counts as memory bound


def hbm_share(row_share: float, m: int, dtype: str, hw: Hardware) -> float:
    """The share of ``hw``'s usable HBM bandwidth at which a GEMM of ``m`` rows (an expert GEMM: rows per expert) reads its
    weights when it runs at ``row_share`` of the ``dtype`` peak: its ``N K`` weight bytes over its time ``2 M N K / (peak x
    share)``, i.e. ``share x M* / M`` with ``M* = peak x bytes per weight / (2 x HBM bytes/s usable)``."""
    ridge = hw.peak_flops(dtype) * BYTES_PER_WEIGHT[dtype] / (2.0 * hw.hbm_Bps * hw.hbm_efficiency)
    return row_share * ridge / m


def _check_top_compute_bound(row: Measurement, m: int, share: float, hw: Hardware) -> None:
    """Refuse a GEMM table whose largest measured rows are memory bound: they read their weights at a quarter of HBM's
    usable rate or more (:func:`hbm_share`), so their share says how fast the weights stream, not how fast the kernel
    computes, and a table holds its last share for every larger M, where prefill's GEMMs (thousands of rows a pass; an
    expert's hundreds) run compute bound: a prefill bound from it would be off by the ratio. (AIConfigurator's tables
    end at 0.002-0.11 of HBM's rate.)"""
    streaming = hbm_share(share, m, row.dtype, hw)
    if streaming >= MEMORY_BOUND_SHARE:
        raise PlanError(
            f"{row.op} {row.dtype}: the largest rows measured, M = {m:,}, read their weights at {fmt(streaming, '%')} of {hw.name}'s usable HBM "
            f"bandwidth (memory bound: {fmt(MEMORY_BOUND_SHARE, '%')} or more), and a table holds its last share at every larger M, where "
            f"prefill's GEMMs run compute bound; measure up to larger M (thousands of rows) or leave {row.op} out (--ops)", 2)


# --- MLA ----------------------------------------------------------------------------------------------------

def mla_decode_predict(row: Measurement, t0: float, rate: float, bw: float) -> float:
    flops, bytes_, _ = _work(row)
    return t0 + max(flops / rate, bytes_ / bw)


def fit_mla_decode(rows: list[Measurement]) -> tuple[float, float, float]:
    """(t0 s, FLOP/s, bytes/s) of ``t = t0 + max(F / R, B / W)``, least squares in relative error. The rows must hold
    at least two FLOP-to-byte ratios (head counts): with one, a compute rate and a bandwidth explain them equally."""
    from scipy.optimize import least_squares

    ratios = {round(_work(r)[0] / _work(r)[1], 9) for r in rows}
    if len(rows) < MIN_DECODE_ROWS or len(ratios) < 2:
        raise PlanError(f"mla_decode: {len(rows)} rows at {len(ratios)} FLOP-to-byte ratio{'s' if len(ratios) != 1 else ''} cannot tell the "
                        f"kernel's compute rate from its bandwidth; measure at least {MIN_DECODE_ROWS} rows at two or more head counts "
                        "(e.g. 16 and 128 heads), or leave mla_decode out (--ops)", 2)
    work = np.array([_work(r)[:2] for r in rows])
    t = np.array([r.latency_s for r in rows])
    start = np.array([t.min() * 0.5, (t / work[:, 0]).min(), (t / work[:, 1]).min()])
    scale = np.maximum(start, 1e-30)

    def residual(x):
        t0, inv_r, inv_w = x * scale
        return (t0 + np.maximum(work[:, 0] * inv_r, work[:, 1] * inv_w)) / t - 1.0

    sol = least_squares(residual, np.ones(3), bounds=(np.zeros(3), np.full(3, np.inf)), x_scale="jac")
    t0, inv_r, inv_w = sol.x * scale
    return float(t0), 1.0 / max(inv_r, 1e-300), 1.0 / max(inv_w, 1e-300)


def fit_mla_prefill(rows: list[Measurement]) -> float:
    """FLOP/s of ``t = F / R``: the FLOP-weighted harmonic mean."""
    return sum(_work(r)[0] for r in rows) / sum(r.latency_s for r in rows)


# --- all-to-all -----------------------------------------------------------------------------------------------

def payload_bytes(row: Measurement) -> float:
    """Bytes one token moves through dispatch and combine: ``k`` copies (``steptime.copy_bytes_of``)."""
    h, k = row.shape
    return k * copy_bytes_of(h)


def fit_line(rows: list[Measurement]) -> tuple[float, float]:
    """``(a, s)`` of ``t = a + s x tokens`` in relative error, ``a >= 0``."""
    t = np.array([r.latency_s for r in rows])
    x = np.array([r.tokens for r in rows])
    if len(set(x.tolist())) < 2:
        return float(t.mean()), 0.0
    design = np.stack([1.0 / t, x / t], axis=1)
    (a, s), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if a < 0:  # the best line through the origin
        a, s = 0.0, float(np.sum(x / t) / np.sum((x / t) ** 2))
    if s < 0:  # the best flat line
        a, s = float(np.sum(1.0 / t) / np.sum(1.0 / t**2)), 0.0
    return float(a), float(s)


def _sig(x: float) -> float:
    """Four significant digits: what a profile keeps of a fitted number."""
    return float(f"{x:.4g}")


def _share(x: float, low: float = 0.001) -> float:
    return _sig(min(max(x, low), 1.0))


# --- the families ---------------------------------------------------------------------------------------------

GEMM_KEYS = {("gemm", "fp8"): "gemm_dense_frac", ("gemm", "bf16"): "bf16_gemm_dense_frac", ("gemm", "fp4"): "fp4_gemm_dense_frac",
             ("grouped_gemm", "fp8"): "gemm_grouped_frac", ("grouped_gemm", "bf16"): "bf16_gemm_grouped_frac",
             ("grouped_gemm", "fp4"): "fp4_gemm_grouped_frac"}


def _gemms(rows: list[Measurement], hw: Hardware, family: str, dropped: dict[tuple[str, str], int]) -> Fit:
    values, reports, keys_of = {}, [], {}
    for dtype in ("fp8", "bf16", "fp4"):
        mine = [r for r in rows if r.dtype == dtype]
        if not mine:
            continue
        fit_rows, held = _split(mine)
        table = fit_gemm(fit_rows, hw)
        name = f"{family} {dtype}"
        reports.append(_report(name, fit_rows, held, lambda r, t=_table_vector(table): gemm_predict(r, t, hw), dropped.get((family, dtype), 0)))
        values[GEMM_KEYS[(family, dtype)]] = table
        keys_of[name] = (GEMM_KEYS[(family, dtype)],)
    if "bf16" in {r.dtype for r in rows} and "fp8" not in {r.dtype for r in rows} and hw.fp8_flops == hw.bf16_flops:
        values[GEMM_KEYS[(family, "fp8")]] = values[GEMM_KEYS[(family, "bf16")]]  # no FP8 units: FP8 models run at the BF16 rate
        keys_of[f"{family} bf16"] += (GEMM_KEYS[(family, "fp8")],)
    return Fit(values, tuple(reports), keys_of)


def _mla_decode(rows: list[Measurement], hw: Hardware, dropped: int) -> Fit:
    dtype = "fp8" if any(r.dtype == "fp8" for r in rows) else "bf16"
    mine = [r for r in rows if r.dtype == dtype]
    fit_rows, held = _split(mine)
    t0, rate, bw = fit_mla_decode(fit_rows)
    t0, rate, bw = _sig(t0 * 1e6) * 1e-6, _share(rate / hw.bf16_flops) * hw.bf16_flops, _share(bw / hw.hbm_Bps, 0.01) * hw.hbm_Bps
    report = _report(f"mla_decode {dtype} KV", fit_rows, held, lambda r: mla_decode_predict(r, t0, rate, bw), dropped)
    values = {"decode_attn_frac": _sig(rate / hw.bf16_flops), "decode_attn_hbm_frac": _sig(bw / hw.hbm_Bps), "decode_attn_layer_us": _sig(t0 * 1e6)}
    return Fit(values, (report,), {report.table: tuple(values)})


PREFILL_MIN_CONTEXT = 1024  # prompt tokens: below, a prefill attention call is too small to be compute bound
NORMAL_TOKENS = (512, 16384)  # tokens per GPU of a prefill pass (the throughput kernels' regime)


def _mla_prefill(rows: list[Measurement], hw: Hardware, dropped: int) -> Fit:
    rows = [r for r in rows if r.context >= PREFILL_MIN_CONTEXT]
    if not rows:
        return Fit()
    fit_rows, held = _split(rows)
    share = _share(fit_mla_prefill(fit_rows) / hw.bf16_flops)
    rate = share * hw.bf16_flops
    report = _report("mla_prefill", fit_rows, held, lambda r: _work(r)[0] / rate, dropped,
                     f"prompts of {PREFILL_MIN_CONTEXT:,} tokens or more (the compute-bound calls the model charges)")
    return Fit({"attn_frac": share}, (report,), {report.table: ("attn_frac",)})


def _lines(rows: list[Measurement]) -> dict[tuple[str, int], tuple[float, float]]:
    """Fitted ``(a, s)`` per (part, EP size) of ``rows``' fit subset, for every part and size measured at two token
    counts or more (a line needs two)."""
    out = {}
    for part in ("dispatch", "combine"):
        for ep in sorted({r.ep_size for r in rows}):
            mine = [r for r in rows if r.op.endswith(part) and r.ep_size == ep]
            if len({r.tokens for r in mine}) >= 2:
                out[(part, ep)] = fit_line(mine)
    return out


def _a2a_report(name: str, rows: list[Measurement], line_of, dropped: int, note: str = "") -> Report:
    fit_rows, held = _split(rows)
    return _report(name, fit_rows, held, lambda r: line_of(r)[0] + line_of(r)[1] * r.tokens, dropped, note)


def _a2a(rows: list[Measurement], family: str, dropped: int) -> Fit:
    values, reports, keys_of = {}, [], {}
    if family == "a2a_normal":  # the throughput kernels serve prefill passes: fit them where those run
        rows = [r for r in rows if NORMAL_TOKENS[0] <= r.tokens <= NORMAL_TOKENS[1]]
    for path in ("nvlink", "rdma"):
        mine = [r for r in rows if r.path == path]
        if not mine:
            continue
        lines = _lines(_split(mine)[0])
        eps = sorted({ep for _, ep in lines if ("dispatch", ep) in lines and ("combine", ep) in lines})
        if not eps:
            continue
        payload = payload_bytes(mine[0])
        both = lambda ep: (lines[("dispatch", ep)][0] + lines[("combine", ep)][0], lines[("dispatch", ep)][1] + lines[("combine", ep)][1])  # noqa: E731
        name = f"{family} {path}"
        if family == "a2a_ll" and path == "rdma":
            at = lambda part, ep: _sig((lines[(part, ep)][0] + LL_TOKENS * lines[(part, ep)][1]) * 1e6)  # noqa: E731
            found = {"ep_dispatch_us": {str(ep): at("dispatch", ep) for ep in eps}, "ep_combine_us": {str(ep): at("combine", ep) for ep in eps},
                     "ep_ll_intercept_us": _sig(float(np.mean([both(ep)[0] for ep in eps])) * 1e6)}
            mine = [r for r in mine if r.ep_size in eps]  # rows of a size without both lines are not fitted: not scored
            line_of = lambda r: lines[(r.op.rsplit("_", 1)[1], r.ep_size)]  # noqa: E731
            note = f"EP sizes {', '.join(map(str, eps))}"
        elif family == "a2a_normal" and path == "rdma":  # a rate and an intercept per EP size
            rate = lambda ep: _sig(payload / max(both(ep)[1], 1e-300) / 1e9)  # noqa: E731
            found = {"ep_normal_GBps": {str(ep): rate(ep) for ep in eps}, "ep_normal_intercept_us": {str(ep): _sig(both(ep)[0] * 1e6) for ep in eps}}
            mine = [r for r in mine if r.ep_size in eps]
            line_of = lambda r: lines[(r.op.rsplit("_", 1)[1], r.ep_size)]  # noqa: E731
            note = f"EP sizes {', '.join(map(str, eps))}; {NORMAL_TOKENS[0]:,}-{NORMAL_TOKENS[1]:,} tokens per GPU"
        elif path == "nvlink":  # inside one domain: one rate per kernel, at the largest EP size measured
            ep = eps[-1]
            a, s = both(ep)
            prefix = "ep_nvlink" if family == "a2a_ll" else "ep_normal_nvlink"
            moved = payload * remote_share(ep)  # NVLink carries the copies that leave the GPU
            found = {f"{prefix}_GBps": _sig(moved / max(s, 1e-300) / 1e9), f"{prefix}_intercept_us": _sig(a * 1e6)}
            line_of = lambda r, ep=ep: lines[(r.op.rsplit("_", 1)[1], ep)]  # noqa: E731
            note = f"EP {ep} for every EP size inside the domain" + (f"; {NORMAL_TOKENS[0]:,}-{NORMAL_TOKENS[1]:,} tokens per GPU" if family == "a2a_normal" else "")
        else:
            continue  # low-latency kernels over RDMA by rate: no profile key takes them
        reports.append(_a2a_report(name, mine, line_of, dropped, note))
        values.update(found)
        keys_of[name] = tuple(found)
    return Fit(values, tuple(reports), keys_of)


def fit_all(rows: tuple[Measurement, ...], hw: Hardware, families: tuple[str, ...] = FAMILIES, policy: str = "refuse") -> Fit:
    """Every table ``families`` names that ``rows`` measure, fitted against ``hw``'s datasheet (module docstring)."""
    kept, dropped = screen(tuple(r for r in rows if family_of(r.op) in families), hw, policy)
    values, reports, keys_of = {}, [], {}
    by_family: dict[str, list[Measurement]] = {}
    for r in kept:
        by_family.setdefault(family_of(r.op), []).append(r)
    for family in families:
        mine = by_family.get(family, [])
        if not mine:
            continue
        n = sum(count for (fam, _), count in dropped.items() if fam == family)
        if family in ("gemm", "grouped_gemm"):
            part = _gemms(mine, hw, family, dropped)
        elif family == "mla_decode":
            part = _mla_decode(mine, hw, n)
        elif family == "mla_prefill":
            part = _mla_prefill(mine, hw, n)
        else:
            part = _a2a(mine, family, n)
        values.update(part.values)
        reports.extend(part.reports)
        keys_of.update(part.keys_of)
    if not values:
        raise PlanError(f"no measurement of {', '.join(families)} to fit; the rows measure {', '.join(sorted({family_of(r.op) for r in rows})) or 'nothing'}", 2)
    not_asked: dict[str, int] = {}
    for r in rows:
        if family_of(r.op) not in families:
            not_asked[family_of(r.op)] = not_asked.get(family_of(r.op), 0) + 1
    return Fit(values, tuple(reports), keys_of, {f: not_asked[f] for f in FAMILIES if f in not_asked})
