"""Step time: what one decode step and one prefill forward pass cost on one GPU (reference step-time.md).

**Decode step** of ``b`` sequences whose attention reads ``kv`` bytes of KV (all sequences together):

    hbm(b)  = (W + kv) / BW                              the GPU's weights and every sequence's KV, from HBM
    comm(b) = L_moe * (t_disp + t_comb)(n) * b / 128     expert-parallel all-to-all (DeepEP low latency)
    ovh(b)  = t_step + layers * t_layer + b * t_req      fixed costs (BLIS coefficients)
    t(b)    = hbm + comm + ovh          if b < 128
            = max(hbm, comm) + ovh      if b >= 128  (two micro-batches of >= 64 tokens each)

* ``W`` is :func:`weight_share_bytes`: a MoE GPU holds every non-routed weight (attention runs data
  parallel, DeepSeek's day-6 overview) and ``1/n`` of the routed experts of an instance of ``n`` GPUs; a
  dense model spreads all weights over the instance. Every hosted expert is read each step (with uniform
  routing an expert receives ``n*b*k/E`` tokens per step, over 3 for DeepSeek-V3 at EP32 from b = 3).
* DeepEP measured ``t_disp``, ``t_comb`` at 128 tokens per GPU; from EP32 up the kernels move 39-53 GB/s of
  RDMA there, about the NIC's 50 GB/s line rate (DeepEP's own bandwidth column), so the time is the payload
  at line rate and scales with the tokens: ``* b / 128`` (the EP8 and EP16 rows, 63-127 GB/s with local
  traffic counted, are scaled alike: an assumption). No fixed latency is measured, so none is modelled.
  Between the table's EP sizes the latency is interpolated linearly; outside it, the nearest end is used
  (:func:`ep_value`: the table starts at one node and is flat from EP128 to EP256). A dense model has no
  all-to-all; a MoE model always has one (no deployment serves these models from a single GPU).
* **Overlap.** Two micro-batches hide one's communication behind the other's work only when both are big
  enough: SGLang measured "minimal or negative gains (-27 % at 32 tokens/device)" below 64-128 tokens per
  GPU and +25.5 % at 256 (step-time.md section 2). So below 128 sequences nothing is hidden; from 128 on
  the shorter of HBM work and communication is hidden entirely. t(b) grows with ``b`` on each side of 128
  and drops there once, when overlap becomes worth it.

**Prefill pass** of ``T`` new tokens per GPU (``r`` requests, attention ``A`` FLOP in all):

    gemm(T) = F_dense*T / (peak * e_dense(T)) + F_routed*T / (peak * e_grouped(n*T*k/E))
    attn    = A / (attn_frac * BF16 peak)                FlashMLA's compute-bound rate
    comm(T) = L_moe * T * k * (dispatch + combine bytes per copy) / bw_normal
    t(T)    = gemm + attn + comm + ovh      if T < 128, else max(gemm + attn, comm) + ovh

``F_dense`` are the FLOP per token of the non-routed weights (``2 * (active - routed active)``) and
``F_routed`` of the routed experts; an expert GEMM gets ``M = n*T*k/E`` rows (tokens of ``n`` GPUs spread over
``E`` experts). ``e`` are DeepGEMM's measured TFLOPS by rows, as fractions of dense peak, interpolated linearly
in ``M``; below the first row the GEMM is memory bound (time flat, throughput proportional to ``M``), above the
last it stays at the last value. A copy dispatched is FP8 with one 4-byte scale per 128 values (``H + H/32``
bytes) and combined in BF16 (``2H``), DeepEP's formats, at the throughput kernels' measured bandwidth ``bw_normal``
(one figure per GPU: DeepEP measured 43-58 GB/s from EP16 to EP64, flat enough that the prefill rate does not
depend on P). Prefill overlaps its all-to-all by the same rule.

The saturated rates (``T`` and the tables' top, overheads amortised away) are the LP's prefill limit: no
forward batch can beat them. The kernels below take plain floats and one parameter vector, so numba compiles
the very same functions for the compiled engine (``sim.compiled``), which keeps both engines and the bounds on
one physics (``tests/bounds/test_steptime.py``, ``tests/sim/test_compiled.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dualpath_plan.model.profiles import Hardware, Model

OVERLAP_TOKENS = 128.0  # two micro-batches of >= 64 tokens each (SGLang's threshold, step-time.md section 2)
LL_TOKENS = 128.0  # DeepEP's low-latency table is measured at 128 tokens per GPU
TABLE_SLOTS = 8  # rows of a GEMM table in the parameter vector (model.profiles.MAX_TABLE_ROWS)

# The decode parameter vector (one decode GPU).
D_W, D_BW, D_COMM_128, D_STEP, D_REQ = range(5)
N_DECODE = 5
# The prefill parameter vector (one prefill GPU): scalars, then the two GEMM tables (count, rows, fractions).
(P_PEAK, P_F_DENSE, P_F_ROUTED, P_ROWS_PER_TOKEN, P_ATTN_RATE, P_COMM_PER_TOKEN, P_PASS, P_REQ, P_DENSE_N) = range(9)
P_DENSE_ROWS = P_DENSE_N + 1
P_DENSE_FRAC = P_DENSE_ROWS + TABLE_SLOTS
P_GROUPED_N = P_DENSE_FRAC + TABLE_SLOTS
P_GROUPED_ROWS = P_GROUPED_N + 1
P_GROUPED_FRAC = P_GROUPED_ROWS + TABLE_SLOTS
N_PREFILL = P_GROUPED_FRAC + TABLE_SLOTS


def weight_share_bytes(model: Model, gpus: float) -> float:
    """Weight bytes one GPU of an instance of ``gpus`` GPUs holds (and reads every step)."""
    if not model.is_moe:
        return model.weight_bytes / gpus
    routed = model.routed_params * model.weight_bytes_per_param
    return (model.weight_bytes - routed) + routed / gpus


def _points(table: dict[str, float]) -> tuple[tuple[float, float], ...]:
    """A profile table (sizes or rows as keys) as (x, value) points in increasing x."""
    return tuple(sorted((float(k), v) for k, v in table.items()))


def ep_value(table: dict[str, float], ep: float) -> float:
    """A measured value at EP size ``ep``: linear between the table's sizes, the nearest end outside them."""
    sizes, values = zip(*_points(table))
    return float(np.interp(ep, sizes, values))  # np.interp holds the end values outside the table


@dataclass(frozen=True)
class DecodeStep:
    """The decode step of one GPU (module docstring): weights, HBM rate, all-to-all at 128 tokens, overheads."""

    weight_bytes: float
    hbm_Bps: float
    comm_128_s: float  # dispatch + combine over every MoE layer at 128 tokens per GPU (0: no all-to-all)
    fixed_s: float  # fixed cost per step: t_step + layers * t_layer
    request_s: float  # fixed cost per sequence per step

    @classmethod
    def of(cls, model: Model, hw: Hardware, instance_gpus: float) -> DecodeStep:
        comm = 0.0
        if model.is_moe:
            comm = model.moe_layers * (ep_value(hw.ep_dispatch_s, instance_gpus) + ep_value(hw.ep_combine_s, instance_gpus))
        return cls(weight_share_bytes(model, instance_gpus), hw.hbm_Bps * hw.hbm_efficiency, comm,
                   hw.step_overhead_s + model.layers * hw.layer_overhead_s, hw.request_overhead_s)

    @cached_property
    def vector(self) -> np.ndarray:
        """The parameters as the kernels read them (``D_*`` slots)."""
        out = np.zeros(N_DECODE)
        out[[D_W, D_BW, D_COMM_128, D_STEP, D_REQ]] = (self.weight_bytes, self.hbm_Bps, self.comm_128_s, self.fixed_s, self.request_s)
        return out

    def step_s(self, b: float, kv_bytes: float) -> float:
        """Seconds of one step of ``b`` sequences reading ``kv_bytes`` of KV in all."""
        return float(decode_terms(b, kv_bytes, self.vector, np.zeros(N_TERMS)))

    def parts(self, b: float, kv_bytes: float) -> dict[str, float]:
        """The terms of one step, seconds: ``hbm``, ``comm``, ``overhead``, the part ``hidden`` by overlap,
        and ``step`` (= hbm + comm + overhead - hidden)."""
        out = np.zeros(N_TERMS)
        step = decode_terms(b, kv_bytes, self.vector, out)
        return {"hbm": float(out[T_WORK]), "comm": float(out[T_COMM]), "overhead": float(out[T_OVERHEAD]), "hidden": float(out[T_HIDDEN]),
                "step": float(step)}


# The terms a step-time kernel writes into ``out`` (seconds): its work (HBM reads for decode, GEMMs and
# attention for prefill), the all-to-all, the fixed costs, the part of the shorter of work and all-to-all
# that overlap hides, and (prefill) the attention part of the work.
T_WORK, T_COMM, T_OVERHEAD, T_HIDDEN, T_ATTN = range(5)
N_TERMS = 5


def decode_terms(b: float, kv_bytes: float, p: np.ndarray, out: np.ndarray) -> float:
    """Seconds of one decode step of ``b`` sequences reading ``kv_bytes`` of KV (module docstring); its
    terms go to ``out``. Self-contained arithmetic on floats, so numba compiles it as it stands."""
    hbm = (p[D_W] + kv_bytes) / p[D_BW]
    comm = p[D_COMM_128] * b / LL_TOKENS
    hidden = 0.0
    if b >= OVERLAP_TOKENS:
        hidden = comm if comm < hbm else hbm
    overhead = p[D_STEP] + b * p[D_REQ]
    out[T_WORK], out[T_COMM], out[T_OVERHEAD], out[T_HIDDEN], out[T_ATTN] = hbm, comm, overhead, hidden, 0.0
    return hbm + comm - hidden + overhead


def _table_into(out: np.ndarray, count_at: int, points: tuple[tuple[float, float], ...]) -> None:
    out[count_at] = len(points)
    for i, (rows, frac) in enumerate(points):
        out[count_at + 1 + i], out[count_at + 1 + TABLE_SLOTS + i] = rows, frac


@dataclass(frozen=True)
class PrefillPass:
    """The forward pass of one prefill GPU (module docstring), with the GEMM tables of its hardware."""

    peak_flops: float
    dense_flops_per_token: float
    routed_flops_per_token: float
    rows_per_token: float  # expert GEMM rows per token of this GPU: n*k/E
    attn_flops_per_s: float
    comm_s_per_token: float  # all-to-all seconds per token over every MoE layer
    fixed_s: float  # fixed cost per pass: t_step + layers * t_layer
    request_s: float
    dense_table: tuple[tuple[float, float], ...]
    grouped_table: tuple[tuple[float, float], ...]

    @classmethod
    def of(cls, model: Model, hw: Hardware, dtype: str, instance_gpus: float) -> PrefillPass:
        routed = 2.0 * model.routed_active_params
        rows = comm = 0.0
        if model.is_moe:
            rows = instance_gpus * model.experts_per_token / model.routed_experts
            copy_bytes = model.hidden_size * (1.0 + 1.0 / 32.0) + 2.0 * model.hidden_size  # FP8 + scales out, BF16 back
            comm = model.moe_layers * model.experts_per_token * copy_bytes / hw.ep_normal_Bps
        return cls(hw.peak_flops(dtype), 2.0 * model.active_params - routed, routed, rows, hw.attn_frac * hw.bf16_flops, comm,
                   hw.step_overhead_s + model.layers * hw.layer_overhead_s, hw.request_overhead_s,
                   _points(hw.gemm_dense_frac), _points(hw.gemm_grouped_frac))

    @cached_property
    def vector(self) -> np.ndarray:
        """The parameters as the kernels read them (``P_*`` slots, then the two GEMM tables)."""
        out = np.zeros(N_PREFILL)
        out[[P_PEAK, P_F_DENSE, P_F_ROUTED, P_ROWS_PER_TOKEN, P_ATTN_RATE, P_COMM_PER_TOKEN, P_PASS, P_REQ]] = (
            self.peak_flops, self.dense_flops_per_token, self.routed_flops_per_token, self.rows_per_token, self.attn_flops_per_s,
            self.comm_s_per_token, self.fixed_s, self.request_s)
        _table_into(out, P_DENSE_N, self.dense_table)
        _table_into(out, P_GROUPED_N, self.grouped_table)
        return out

    @property
    def saturated_gemm_s_per_token(self) -> float:
        """GEMM seconds per token of an unbounded pass: every GEMM at its table's best efficiency."""
        gemm = self.dense_flops_per_token / (self.peak_flops * max(f for _, f in self.dense_table))
        if self.routed_flops_per_token > 0:
            gemm += self.routed_flops_per_token / (self.peak_flops * max(f for _, f in self.grouped_table))
        return gemm

    def saturated_s_per_token(self, attn_flops_per_token: float) -> float:
        """Seconds per new token of an unbounded pass: GEMMs at their best, attention at its rate, the
        all-to-all overlapped, no fixed costs. No pass of any size is faster per token."""
        work = self.saturated_gemm_s_per_token + attn_flops_per_token / self.attn_flops_per_s
        return work if work > self.comm_s_per_token else self.comm_s_per_token

    def pass_s(self, tokens: float, attn_flops: float, requests: float) -> float:
        """Seconds of one pass of ``tokens`` new tokens (``requests`` requests, ``attn_flops`` attention FLOP)."""
        return float(prefill_terms(tokens, attn_flops, requests, self.vector, np.zeros(N_TERMS)))

    def parts(self, tokens: float, attn_flops: float, requests: float) -> dict[str, float]:
        """The terms of one pass, seconds: ``gemm``, ``attention``, ``comm``, ``overhead``, ``hidden``, ``pass``."""
        out = np.zeros(N_TERMS)
        total = prefill_terms(tokens, attn_flops, requests, self.vector, out)
        return {"gemm": float(out[T_WORK] - out[T_ATTN]), "attention": float(out[T_ATTN]), "comm": float(out[T_COMM]),
                "overhead": float(out[T_OVERHEAD]), "hidden": float(out[T_HIDDEN]), "pass": float(total)}


def prefill_terms(tokens: float, attn_flops: float, requests: float, p: np.ndarray, out: np.ndarray) -> float:
    """Seconds of one forward pass of ``tokens`` new tokens of ``requests`` requests with ``attn_flops``
    attention FLOP (module docstring), 0 for an empty pass; its terms go to ``out``. Self-contained
    arithmetic on floats (the GEMM tables are interpolated inline), so numba compiles it as it stands."""
    for k in range(N_TERMS):
        out[k] = 0.0
    if tokens <= 0:
        return 0.0
    gemm = 0.0
    for table in range(2):  # dense GEMMs at M = tokens rows; expert GEMMs at M = tokens * n*k/E rows
        flops, rows, at = p[P_F_DENSE], tokens, P_DENSE_N
        if table == 1:
            flops, rows, at = p[P_F_ROUTED], tokens * p[P_ROWS_PER_TOKEN], P_GROUPED_N
        if flops <= 0:
            continue
        first, last = at + 1, at + int(p[at])
        frac = p[last + TABLE_SLOTS]  # above the table: its last value
        if rows <= p[first]:  # below it: memory bound, throughput proportional to rows
            frac = p[first + TABLE_SLOTS] * rows / p[first]
        else:
            for i in range(first, last):
                if rows <= p[i + 1]:
                    frac = p[i + TABLE_SLOTS] + (p[i + 1 + TABLE_SLOTS] - p[i + TABLE_SLOTS]) * (rows - p[i]) / (p[i + 1] - p[i])
                    break
        gemm += flops * tokens / (p[P_PEAK] * frac)
    attn = attn_flops / p[P_ATTN_RATE]
    work = gemm + attn
    comm = tokens * p[P_COMM_PER_TOKEN]
    hidden = 0.0
    if tokens >= OVERLAP_TOKENS:
        hidden = comm if comm < work else work
    overhead = p[P_PASS] + requests * p[P_REQ]
    out[T_WORK], out[T_COMM], out[T_OVERHEAD], out[T_HIDDEN], out[T_ATTN] = work, comm, overhead, hidden, attn
    return work + comm - hidden + overhead
