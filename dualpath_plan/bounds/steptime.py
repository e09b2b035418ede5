"""Step time: what one decode step and one prefill forward pass cost on one GPU (reference step-time.md).

**Decode step** of ``b`` sequences, ``q = N + 1`` tokens each (``N`` multi-token-prediction drafts verified per
step, 0 without MTP), reading ``kv`` bytes of KV and spending ``a`` seconds of attention compute at the decode
kernels' rates (both summed over the sequences). Each kernel family costs the slower of its compute time and
its memory time, a roofline per kernel rather than per step:

    attn(b)   = t_attn + max(q * a, kv / (BW * e_attn))                   decode attention (and DSA indexer)
    dense(b)  = max(F_dense * q*b / (peak * e_dense(q*b)), W_dense / BW)  the non-routed GEMMs
    expert(b) = max(F_routed * q*b / (peak * e_grouped(m)), W_exp * h(n*q*b) / BW)   the routed-expert GEMMs
    comm(b)   = L_moe * (c0 + c1 * q*b)                                   expert-parallel all-to-all
    ovh(b)    = t_step + layers * t_layer + b * t_req                      fixed costs (BLIS coefficients)
    work      = (attn + dense + expert) * (1 + N * mtp / layers)          MTP drafts: N passes of the MTP module(s)
    t(b)      = (work + comm * (1 + N * mtp / moe_layers) - hidden + ovh) / tau

* ``a`` per sequence is ``c_d * L / R_dense + c_s * min(L, k) / R_sparse`` at context ``L``: the model's decode
  FLOPs per context token (``decode_attn_flops_per_ctx_token``, the absorbed form for MLA) and per capped key
  (``decode_sparse_attn_flops_per_key``) over the kernels' compute-bound rates, ``decode_attn_frac`` and
  ``decode_sparse_attn_frac`` of the BF16 peak (FlashMLA's dense and sparse decoding figures). ``e_attn`` is
  the share of HBM bandwidth the kernel reaches where memory-bound (``decode_attn_hbm_frac``), ``t_attn`` its
  fixed latency per layer times the layers. Queries multiply the compute (``q`` per sequence), not the KV read.
* ``W_dense`` are the non-routed weights a MoE GPU holds (attention runs data parallel, DeepSeek's day-6
  overview), ``W_exp`` its ``1/n`` of the routed experts of an instance of ``n`` GPUs; a dense model spreads
  all weights over the instance. A step reads only the experts its tokens hit: with uniform routing an expert
  is missed by one token with probability ``1 - k/E``, so ``h(T) = 1 - (1 - k/E)^T`` of the hosted experts
  are read for ``T = n*q*b`` tokens in the instance (DeepSeek-V3 at EP32: 0.64 at b = 1, 0.9999 at b = 10).
* GEMMs run at the measured share ``e`` of the dtype's dense peak for their rows ``M``: the dense GEMMs get
  ``M = q*b`` rows, an expert GEMM ``m = n*q*b*k/E``. The tables are interpolated in ``log M`` between rows
  (measured curves bend in log M) as a power law, log share linear in log M (:func:`gemm_share`); below the first row the first share holds and above the last the last:
  outside the table the weight read at ``BW``, the other side of the roofline, is what sets a small GEMM's
  time. BF16 models read the BF16 tables (the FP8 tables' shares where a profile has none).
* **All-to-all**: ``c0 + c1 * tokens`` per MoE layer (dispatch + combine). Inside one NVLink domain
  (``n <= nvl_domain_gpus``): ``c0`` = ``ep_nvlink_intercept_us``, ``c1`` = the payload of the ``(n - 1)/n`` of a
  token's copies that leave its GPU over ``ep_nvlink_GBps``. Across domains, the low-latency kernels over RDMA: ``c0`` = ``ep_ll_intercept_us``
  and ``c1 = (t_128(n) - c0) / 128`` from DeepEP's latency at 128 tokens per GPU by EP size (``ep_value``).
  A copy is dispatched in FP8 with one 4-byte scale per 128 values (``H + H/32`` bytes) and combined in
  BF16 (``2H``), DeepEP's formats, ``k`` copies per token. A dense model has no all-to-all.
* **Overlap.** Two micro-batches hide one's communication behind the other's work only when both are big
  enough: SGLang measured "minimal or negative gains (-27 % at 32 tokens/device)" below 64-128 tokens per
  GPU and +25.5 % at 256 (step-time.md section 2). Below 128 tokens per step nothing is hidden; from 128 on
  the shorter of work and communication is hidden entirely.
* **MTP** (``--mtp N``): each step verifies ``q = N + 1`` tokens per sequence and keeps ``tau`` of them on
  average (the acceptance length, 1 <= tau <= N + 1), so the time per generated token is the step over
  ``tau``; drafting runs the model's MTP module(s) ``N`` times, charged as ``N * mtp_modules`` more layers of
  the step's work (of its ``layers``) and all-to-all (of its MoE layers), at the verify batch's size (a draft
  pass runs ``b`` tokens, not ``q*b``: this leans slow). Without MTP, ``q = tau = 1`` and the draft terms are 0.

**Prefill pass** of ``T`` new tokens per GPU (``r`` requests, attention ``A`` FLOP in all):

    gemm(T) = max(F_dense*T / (peak * e_dense(T)), W_dense / BW)
            + max(F_routed*T / (peak * e_grouped(n*T*k/E)), W_exp * h(n*T) / BW)
    attn    = A / (attn_frac * BF16 peak)                the prefill attention kernel's compute-bound rate
    comm(T) = L_moe * (c0 + T * k * (dispatch + combine bytes per copy) / bw_normal)
    t(T)    = gemm + attn + comm + ovh      if T < 128, else max(gemm + attn, comm) + ovh

``F_dense`` are the FLOP per token of the non-routed weights (``2 * (active - routed active)``) and
``F_routed`` of the routed experts. ``A`` counts attention in the form prefill kernels run (the MHA form over
decompressed K/V for MLA models: the model profile's ``attn_flops_per_ctx_token``). ``n`` is the GPUs of one
prefill instance (``compute.prefill_instance_gpus``: the fewest nodes that hold the weights, the same for every
P). The throughput kernels' all-to-all (:func:`prefill_comm`) moves a token's ``k`` copies at ``ep_normal_GBps``
with ``c0`` = ``ep_normal_intercept_us``, both measured by EP size (DeepEP's normal kernels: per token they cost
more as a token's copies reach more nodes), across NVLink domains; inside one, the copies that leave the GPU
cross NVLink at ``ep_normal_nvlink_GBps``. Prefill overlaps its all-to-all by the same rule as decode.

The saturated rates (``T`` and the tables' top, overheads and intercepts amortised away) are the LP's prefill
limit: no forward batch can beat them. The kernels below take plain floats and one parameter vector, so numba
compiles the very same functions for the compiled engine (``sim.compiled``), which keeps both engines and the
bounds on one physics (``tests/bounds/test_steptime.py``, ``tests/sim/test_compiled.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dualpath_plan.model.profiles import Hardware, Model

OVERLAP_TOKENS = 128.0  # two micro-batches of >= 64 tokens each (SGLang's threshold, step-time.md section 2)
LL_TOKENS = 128.0  # DeepEP's low-latency table is measured at 128 tokens per GPU
TABLE_SLOTS = 8  # rows of a GEMM table in the parameter vector (model.profiles.MAX_TABLE_ROWS)


@dataclass(frozen=True)
class Mtp:
    """Multi-token prediction as a serving option: ``drafts`` tokens drafted and verified per step, ``accepted``
    tokens kept per step on average (the acceptance length, 1 to drafts + 1), ``modules`` MTP modules run per
    draft. ``Mtp()`` is MTP off."""

    drafts: int = 0
    accepted: float = 1.0
    modules: int = 0

    @property
    def on(self) -> bool:
        return self.drafts > 0


NO_MTP = Mtp()

# The decode parameter vector (one decode GPU): scalars, then the two GEMM tables (count, rows, fractions).
(D_W_DENSE, D_W_EXPERT, D_BW, D_ATTN_BW, D_ATTN_FIXED, D_PEAK, D_F_DENSE, D_F_ROUTED, D_ROWS_PER_TOKEN, D_LOG_MISS,
 D_COMM_FIXED, D_COMM_PER_TOKEN, D_STEP, D_REQ, D_VERIFY, D_ACCEPT, D_DRAFT, D_DRAFT_COMM, D_DENSE_N) = range(19)
D_DENSE_ROWS = D_DENSE_N + 1
D_GROUPED_N = D_DENSE_ROWS + 2 * TABLE_SLOTS
N_DECODE = D_GROUPED_N + 1 + 2 * TABLE_SLOTS
# The prefill parameter vector (one prefill GPU): scalars, then the two GEMM tables (count, rows, fractions).
(P_PEAK, P_F_DENSE, P_F_ROUTED, P_ROWS_PER_TOKEN, P_ATTN_RATE, P_COMM_PER_TOKEN, P_COMM_FIXED, P_PASS, P_REQ, P_W_DENSE, P_W_EXPERT, P_BW,
 P_LOG_MISS, P_DENSE_N) = range(14)
P_DENSE_ROWS = P_DENSE_N + 1
P_GROUPED_N = P_DENSE_ROWS + 2 * TABLE_SLOTS
N_PREFILL = P_GROUPED_N + 1 + 2 * TABLE_SLOTS

# The terms a step-time kernel writes into ``out`` (seconds): its work (every kernel family's roofline), the
# all-to-all, the fixed costs, the part of the shorter of work and all-to-all that overlap hides, the
# attention part of the work, the GEMM parts (dense, expert), and for each kernel family whether its memory
# side set it (1.0) or its compute side (0.0).
T_WORK, T_COMM, T_OVERHEAD, T_HIDDEN, T_ATTN, T_DENSE, T_EXPERT, T_ATTN_MEM, T_DENSE_MEM, T_EXPERT_MEM = range(10)
N_TERMS = 10


def weight_share_bytes(model: Model, gpus: float) -> float:
    """Weight bytes one GPU of an instance of ``gpus`` GPUs holds."""
    return dense_weight_bytes(model, gpus) + expert_weight_bytes(model, gpus)


def dense_weight_bytes(model: Model, gpus: float) -> float:
    """Non-routed weight bytes one GPU holds: all of them on a MoE GPU, ``1/gpus`` of the model on a dense one."""
    if not model.is_moe:
        return model.weight_bytes / gpus
    return model.weight_bytes - model.routed_params * model.weight_bytes_per_param


def expert_weight_bytes(model: Model, gpus: float) -> float:
    """Routed-expert weight bytes one GPU of an instance of ``gpus`` GPUs hosts (0 for a dense model)."""
    return model.routed_params * model.weight_bytes_per_param / gpus if model.is_moe else 0.0


def _points(table: dict[str, float]) -> tuple[tuple[float, float], ...]:
    """A profile table (sizes or rows as keys) as (x, value) points in increasing x."""
    return tuple(sorted((float(k), v) for k, v in table.items()))


def ep_value(table: float | dict[str, float], ep: float) -> float:
    """A measured value at EP size ``ep``: linear between the table's sizes, the nearest end outside them (a
    number: the same at every size)."""
    if not isinstance(table, dict):
        return float(table)
    sizes, values = zip(*_points(table))
    return float(np.interp(ep, sizes, values))  # np.interp holds the end values outside the table


def ep_seconds_per_byte(rates: float | dict[str, float], ep: float) -> float:
    """Seconds per byte at EP size ``ep`` of a table of measured rates (bytes/s) by EP size: the time, not the rate,
    linear between the table's sizes (as the latency tables are), the nearest end outside them (a number: every size)."""
    if not isinstance(rates, dict):
        return 1.0 / float(rates)
    return ep_value({size: 1.0 / rate for size, rate in rates.items()}, ep)


def copy_bytes_of(hidden: float) -> float:
    """Bytes one token copy of width ``hidden`` moves through dispatch and combine: FP8 with 4-byte scales per 128
    values out, BF16 back (DeepEP's formats)."""
    return hidden * (1.0 + 1.0 / 32.0) + 2.0 * hidden


def copy_bytes(model: Model) -> float:
    """:func:`copy_bytes_of` the model's hidden size."""
    return copy_bytes_of(model.hidden_size)


def remote_share(instance_gpus: float) -> float:
    """Share of a token's copies that leave its GPU when the experts spread evenly over ``instance_gpus`` GPUs."""
    return (instance_gpus - 1.0) / instance_gpus if instance_gpus > 1 else 0.0


def decode_comm(model: Model, hw: Hardware, instance_gpus: float) -> tuple[float, float, str]:
    """(seconds per step at zero tokens, seconds per token, path) of the decode all-to-all over every MoE layer."""
    if not model.is_moe:
        return 0.0, 0.0, "none"
    layers = model.moe_layers
    if instance_gpus <= hw.nvl_domain_gpus:  # the copies that leave the GPU cross NVLink (ep_nvlink_GBps is a rate of those)
        per_token = model.experts_per_token * copy_bytes(model) * remote_share(instance_gpus) / hw.ep_nvlink_Bps
        return layers * hw.ep_nvlink_intercept_s, layers * per_token, "nvlink"
    at_128 = ep_value(hw.ep_dispatch_s, instance_gpus) + ep_value(hw.ep_combine_s, instance_gpus)
    fixed = min(hw.ep_ll_intercept_s, at_128)  # an intercept above the measured latency is the latency itself
    return layers * fixed, layers * (at_128 - fixed) / LL_TOKENS, "rdma"


def prefill_comm(model: Model, hw: Hardware, instance_gpus: float) -> tuple[float, float, str]:
    """(seconds per pass at zero tokens, seconds per token, path) of the throughput kernels' all-to-all over every
    MoE layer of a prefill instance of ``instance_gpus`` GPUs. Inside one NVLink domain the copies that leave the
    GPU cross NVLink at ``ep_normal_nvlink_GBps`` (absent: the low-latency kernels' ``ep_nvlink_GBps``); across
    domains a token's ``k`` copies move at ``ep_normal_GBps`` at that EP size, with that size's intercept
    (:func:`ep_seconds_per_byte` and :func:`ep_value`: the measured sizes, time linear between them, the nearest end
    outside)."""
    if not model.is_moe:
        return 0.0, 0.0, "none"
    layers, payload = model.moe_layers, model.experts_per_token * copy_bytes(model)
    if instance_gpus <= hw.nvl_domain_gpus:
        rate = hw.ep_nvlink_Bps if hw.ep_normal_nvlink_Bps is None else hw.ep_normal_nvlink_Bps
        fixed = hw.ep_nvlink_intercept_s if hw.ep_normal_nvlink_intercept_s is None else hw.ep_normal_nvlink_intercept_s
        return layers * fixed, layers * payload * remote_share(instance_gpus) / rate, "nvlink"
    per_token = payload * ep_seconds_per_byte(hw.ep_normal_Bps, instance_gpus)
    return layers * ep_value(hw.ep_normal_intercept_s, instance_gpus), layers * per_token, "rdma"


def attention_coefficients(model: Model, hw: Hardware) -> tuple[float, float]:
    """(seconds per context token, seconds per capped key) of one sequence's decode attention compute per step
    (one query): the model's decode FLOPs over the dense and the sparse kernels' compute-bound rates
    (``decode_attn_frac`` and ``decode_sparse_attn_frac`` of the BF16 peak). A sequence at context ``L`` takes
    ``per_ctx * L + per_key * min(L, k)`` (:func:`decode_attention_seconds`)."""
    per_ctx = model.decode_attn_flops_per_ctx_token / (hw.decode_attn_frac * hw.bf16_flops)
    per_key = model.decode_sparse_attn_flops_per_key / (hw.decode_sparse_attn_frac * hw.bf16_flops)
    return per_ctx, per_key


def decode_attention_seconds(per_ctx: float, per_key: float, topk: float, context_tokens):
    """Compute seconds of one sequence's decode attention per step at ``context_tokens`` (numpy-aware; both
    engines and the bound use this arithmetic): ``per_ctx * L + per_key * min(L, topk)``."""
    return per_ctx * context_tokens + per_key * np.minimum(context_tokens, topk)


def _log_miss(model: Model, instance_gpus: float) -> float:
    """``n * ln(1 - k/E)``: a hosted expert is missed by ``T`` tokens on each of the instance's ``n`` GPUs with
    probability ``exp(T * this)`` (0 for a dense model, which hosts no experts; -inf when every token hits every expert)."""
    if not model.is_moe:
        return 0.0
    share = 1.0 - model.experts_per_token / model.routed_experts
    return instance_gpus * math.log(share) if share > 0 else -math.inf


def table_into(out: np.ndarray, count_at: int, points: tuple[tuple[float, float], ...]) -> None:
    out[count_at] = len(points)
    for i, (rows, frac) in enumerate(points):
        out[count_at + 1 + i], out[count_at + 1 + TABLE_SLOTS + i] = rows, frac


@dataclass(frozen=True)
class DecodeStep:
    """The decode step of one GPU (module docstring): weights, HBM rates, GEMM tables, all-to-all, overheads, MTP."""

    dense_weight_bytes: float
    expert_weight_bytes: float
    hbm_Bps: float
    attn_hbm_Bps: float
    attn_fixed_s: float  # the attention kernel's fixed latency over every layer
    peak_flops: float
    dense_flops_per_token: float
    routed_flops_per_token: float
    rows_per_token: float  # expert GEMM rows per token of this GPU: n*k/E
    log_miss_per_token: float  # n * ln(1 - k/E): an expert is missed by all T tokens of the instance's GPUs with exp(T * this)
    comm_fixed_s: float
    comm_s_per_token: float
    comm_path: str
    fixed_s: float  # fixed cost per step: t_step + layers * t_layer
    request_s: float  # fixed cost per sequence per step
    mtp: Mtp
    draft_frac: float  # N * mtp modules / layers: the drafts' share of a step's work
    draft_comm_frac: float  # N * mtp modules / MoE layers: the drafts' share of a step's all-to-all
    dense_table: tuple[tuple[float, float], ...]
    grouped_table: tuple[tuple[float, float], ...]

    @classmethod
    def of(cls, model: Model, hw: Hardware, instance_gpus: float, dtype: str | None = None, mtp: Mtp = NO_MTP) -> DecodeStep:
        dtype = model.compute_dtype if dtype is None else dtype
        routed = 2.0 * model.routed_active_params
        rows = instance_gpus * model.experts_per_token / model.routed_experts if model.is_moe else 0.0
        log_miss = _log_miss(model, instance_gpus)
        fixed, per_token, path = decode_comm(model, hw, instance_gpus)
        dense, grouped = hw.gemm_tables(dtype)
        return cls(dense_weight_bytes(model, instance_gpus), expert_weight_bytes(model, instance_gpus), hw.hbm_Bps * hw.hbm_efficiency,
                   hw.hbm_Bps * hw.decode_attn_hbm_frac, model.layers * hw.decode_attn_layer_s, hw.peak_flops(dtype),
                   2.0 * model.active_params - routed, routed, rows, log_miss, fixed, per_token, path,
                   hw.step_overhead_s + model.layers * hw.layer_overhead_s, hw.request_overhead_s, mtp,
                   mtp.drafts * mtp.modules / model.layers, mtp.drafts * mtp.modules / model.moe_layers if model.is_moe else 0.0,
                   _points(dense), _points(grouped))

    @property
    def weight_bytes(self) -> float:
        """Weight bytes the GPU holds (dense plus its hosted experts)."""
        return self.dense_weight_bytes + self.expert_weight_bytes

    @cached_property
    def vector(self) -> np.ndarray:
        """The parameters as the kernels read them (``D_*`` slots, then the two GEMM tables)."""
        out = np.zeros(N_DECODE)
        out[[D_W_DENSE, D_W_EXPERT, D_BW, D_ATTN_BW, D_ATTN_FIXED, D_PEAK, D_F_DENSE, D_F_ROUTED, D_ROWS_PER_TOKEN, D_LOG_MISS,
             D_COMM_FIXED, D_COMM_PER_TOKEN, D_STEP, D_REQ, D_VERIFY, D_ACCEPT, D_DRAFT, D_DRAFT_COMM]] = (
            self.dense_weight_bytes, self.expert_weight_bytes, self.hbm_Bps, self.attn_hbm_Bps, self.attn_fixed_s, self.peak_flops,
            self.dense_flops_per_token, self.routed_flops_per_token, self.rows_per_token, self.log_miss_per_token, self.comm_fixed_s,
            self.comm_s_per_token, self.fixed_s, self.request_s, self.mtp.drafts + 1.0, self.mtp.accepted, self.draft_frac,
            self.draft_comm_frac)
        table_into(out, D_DENSE_N, self.dense_table)
        table_into(out, D_GROUPED_N, self.grouped_table)
        return out

    def step_s(self, b: float, kv_bytes: float, attn_s: float) -> float:
        """Seconds per generated token of one step of ``b`` sequences reading ``kv_bytes`` of KV with ``attn_s``
        seconds of attention compute in all (the step over the acceptance length)."""
        return float(decode_terms(b, kv_bytes, attn_s, self.vector, np.zeros(N_TERMS)))

    def parts(self, b: float, kv_bytes: float, attn_s: float) -> dict[str, float]:
        """The terms of one step, seconds (before the division by the acceptance length): ``attention``,
        ``dense_gemm``, ``expert_gemm``, ``work`` (their sum with the drafts), ``comm``, ``overhead``, the part
        ``hidden`` by overlap, ``step`` (per generated token), and each family's ``*_memory_bound`` (1.0 when
        its memory side sets it)."""
        out = np.zeros(N_TERMS)
        step = decode_terms(b, kv_bytes, attn_s, self.vector, out)
        return {"attention": float(out[T_ATTN]), "dense_gemm": float(out[T_DENSE]), "expert_gemm": float(out[T_EXPERT]),
                "work": float(out[T_WORK]), "comm": float(out[T_COMM]), "overhead": float(out[T_OVERHEAD]), "hidden": float(out[T_HIDDEN]),
                "step": float(step), "attention_memory_bound": float(out[T_ATTN_MEM]), "dense_gemm_memory_bound": float(out[T_DENSE_MEM]),
                "expert_gemm_memory_bound": float(out[T_EXPERT_MEM])}


def gemm_share(rows: float, p: np.ndarray, at: int) -> float:
    """The measured share of dense peak of a GEMM of ``rows`` rows: the table at ``at`` (count, rows, shares)
    interpolated in log rows as a power law between two rows (log share linear in log rows: with the profiles'
    curve rule the exponent is between 0 and 1, so the share never falls and the time never falls as rows
    grow), its first share below its first row and its last above its last row (below the table the weight
    read, the other side of the roofline, sets the time)."""
    first, last = at + 1, at + int(p[at])
    if rows <= p[first]:
        return p[first + TABLE_SLOTS]
    frac = p[last + TABLE_SLOTS]
    for i in range(first, last):
        if rows <= p[i + 1]:
            w = (math.log(rows) - math.log(p[i])) / (math.log(p[i + 1]) - math.log(p[i]))
            return math.exp(math.log(p[i + TABLE_SLOTS]) + (math.log(p[i + 1 + TABLE_SLOTS]) - math.log(p[i + TABLE_SLOTS])) * w)
    return frac


def gemm_seconds(flops_per_token: float, tokens: float, rows: float, p: np.ndarray, peak_at: int, table_at: int) -> float:
    """Compute seconds of GEMMs of ``flops_per_token`` for ``tokens`` tokens at ``rows`` rows (0 without tokens or FLOPs)."""
    if flops_per_token <= 0 or tokens <= 0:
        return 0.0
    return flops_per_token * tokens / (p[peak_at] * gemm_share(rows, p, table_at))


def expert_hit(tokens: float, log_miss: float) -> float:
    """Share of a GPU's hosted experts that ``tokens`` tokens per GPU hit (uniform routing; module docstring)."""
    return 1.0 - math.exp(tokens * log_miss) if tokens > 0 else 0.0


def decode_terms(b: float, kv_bytes: float, attn_s: float, p: np.ndarray, out: np.ndarray) -> float:
    """Seconds per generated token of one decode step of ``b`` sequences reading ``kv_bytes`` of KV with ``attn_s``
    seconds of attention compute (module docstring); its terms go to ``out``. Self-contained arithmetic on
    floats, so numba compiles it as it stands: :func:`decode_batch_terms`, then :func:`decode_step_terms`."""
    decode_batch_terms(b, p, out)
    return decode_step_terms(b, kv_bytes, attn_s, p, out)


BATCH_TERMS = (T_COMM, T_OVERHEAD, T_DENSE, T_EXPERT, T_DENSE_MEM, T_EXPERT_MEM)  # the terms set by b alone


def decode_batch_terms(b: float, p: np.ndarray, out: np.ndarray) -> None:
    """The terms of a decode step of ``b`` sequences that ``b`` alone sets (``BATCH_TERMS``: the dense and expert
    GEMM rooflines, the all-to-all and the fixed costs), into ``out``. A caller that steps the same ``b`` again may
    keep them (the compiled engine keeps them per ``b``: ``sim.compiled.queues.decode_step``)."""
    tokens = b * p[D_VERIFY]
    dense_compute = gemm_seconds(p[D_F_DENSE], tokens, tokens, p, D_PEAK, D_DENSE_N)
    dense_memory = p[D_W_DENSE] / p[D_BW]
    hit = expert_hit(tokens, p[D_LOG_MISS])
    expert_compute = gemm_seconds(p[D_F_ROUTED], tokens, tokens * p[D_ROWS_PER_TOKEN], p, D_PEAK, D_GROUPED_N)
    expert_memory = p[D_W_EXPERT] * hit / p[D_BW]
    comm = 0.0
    if p[D_COMM_FIXED] > 0 or p[D_COMM_PER_TOKEN] > 0:
        comm = (p[D_COMM_FIXED] + p[D_COMM_PER_TOKEN] * tokens) * (1.0 + p[D_DRAFT_COMM])
    out[T_COMM], out[T_OVERHEAD] = comm, p[D_STEP] + b * p[D_REQ]
    out[T_DENSE], out[T_EXPERT] = max(dense_compute, dense_memory), max(expert_compute, expert_memory)
    out[T_DENSE_MEM] = 1.0 if dense_memory >= dense_compute else 0.0
    out[T_EXPERT_MEM] = 1.0 if expert_memory >= expert_compute else 0.0


def decode_step_terms(b: float, kv_bytes: float, attn_s: float, p: np.ndarray, out: np.ndarray) -> float:
    """The rest of :func:`decode_terms`, from the ``BATCH_TERMS`` of ``b`` in ``out``: the attention roofline, the
    work with the drafts, the all-to-all the work hides; returns seconds per generated token."""
    tokens = b * p[D_VERIFY]
    attn_compute, attn_memory = attn_s * p[D_VERIFY], kv_bytes / p[D_ATTN_BW]
    attn = p[D_ATTN_FIXED] + max(attn_compute, attn_memory)
    work = (attn + out[T_DENSE] + out[T_EXPERT]) * (1.0 + p[D_DRAFT])
    comm = out[T_COMM]
    hidden = 0.0
    if tokens >= OVERLAP_TOKENS:
        hidden = comm if comm < work else work
    out[T_WORK], out[T_HIDDEN], out[T_ATTN] = work, hidden, attn
    out[T_ATTN_MEM] = 1.0 if attn_memory >= attn_compute else 0.0
    return (work + comm - hidden + out[T_OVERHEAD]) / p[D_ACCEPT]


@dataclass(frozen=True)
class PrefillPass:
    """The forward pass of one prefill GPU (module docstring), with the GEMM tables of its hardware and dtype."""

    peak_flops: float
    dense_flops_per_token: float
    routed_flops_per_token: float
    rows_per_token: float  # expert GEMM rows per token of this GPU: n*k/E
    attn_flops_per_s: float
    comm_s_per_token: float  # all-to-all seconds per token over every MoE layer
    comm_fixed_s: float  # all-to-all seconds per pass at zero tokens over every MoE layer
    fixed_s: float  # fixed cost per pass: t_step + layers * t_layer
    request_s: float
    dense_weight_bytes: float
    expert_weight_bytes: float
    hbm_Bps: float
    log_miss_per_token: float
    dense_table: tuple[tuple[float, float], ...]
    grouped_table: tuple[tuple[float, float], ...]

    @classmethod
    def of(cls, model: Model, hw: Hardware, dtype: str, instance_gpus: float) -> PrefillPass:
        routed = 2.0 * model.routed_active_params
        rows = instance_gpus * model.experts_per_token / model.routed_experts if model.is_moe else 0.0
        fixed, comm, _ = prefill_comm(model, hw, instance_gpus)
        dense, grouped = hw.gemm_tables(dtype)
        return cls(hw.peak_flops(dtype), 2.0 * model.active_params - routed, routed, rows, hw.attn_frac * hw.bf16_flops, comm, fixed,
                   hw.step_overhead_s + model.layers * hw.layer_overhead_s, hw.request_overhead_s, dense_weight_bytes(model, instance_gpus),
                   expert_weight_bytes(model, instance_gpus), hw.hbm_Bps * hw.hbm_efficiency, _log_miss(model, instance_gpus),
                   _points(dense), _points(grouped))

    @cached_property
    def vector(self) -> np.ndarray:
        """The parameters as the kernels read them (``P_*`` slots, then the two GEMM tables)."""
        out = np.zeros(N_PREFILL)
        out[[P_PEAK, P_F_DENSE, P_F_ROUTED, P_ROWS_PER_TOKEN, P_ATTN_RATE, P_COMM_PER_TOKEN, P_COMM_FIXED, P_PASS, P_REQ, P_W_DENSE,
             P_W_EXPERT, P_BW, P_LOG_MISS]] = (
            self.peak_flops, self.dense_flops_per_token, self.routed_flops_per_token, self.rows_per_token, self.attn_flops_per_s,
            self.comm_s_per_token, self.comm_fixed_s, self.fixed_s, self.request_s, self.dense_weight_bytes, self.expert_weight_bytes,
            self.hbm_Bps, self.log_miss_per_token)
        table_into(out, P_DENSE_N, self.dense_table)
        table_into(out, P_GROUPED_N, self.grouped_table)
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
        all-to-all overlapped, no fixed costs or intercepts. No pass of any size is faster per token."""
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
    dense = gemm_seconds(p[P_F_DENSE], tokens, tokens, p, P_PEAK, P_DENSE_N)  # dense GEMMs at M = tokens rows
    dense = max(dense, p[P_W_DENSE] / p[P_BW])  # the weight read beneath them
    expert = gemm_seconds(p[P_F_ROUTED], tokens, tokens * p[P_ROWS_PER_TOKEN], p, P_PEAK, P_GROUPED_N)  # M = tokens * n*k/E
    expert = max(expert, p[P_W_EXPERT] * expert_hit(tokens, p[P_LOG_MISS]) / p[P_BW])
    attn = attn_flops / p[P_ATTN_RATE]
    work = dense + expert + attn
    comm = 0.0
    if p[P_COMM_PER_TOKEN] > 0:
        comm = p[P_COMM_FIXED] + tokens * p[P_COMM_PER_TOKEN]
    hidden = 0.0
    if tokens >= OVERLAP_TOKENS:
        hidden = comm if comm < work else work
    overhead = p[P_PASS] + requests * p[P_REQ]
    out[T_WORK], out[T_COMM], out[T_OVERHEAD], out[T_HIDDEN], out[T_ATTN] = work, comm, overhead, hidden, attn
    out[T_DENSE], out[T_EXPERT] = dense, expert
    return work + comm - hidden + overhead
