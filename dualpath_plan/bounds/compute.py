"""Prefill compute: FLOPs per turn, the cache-compute ratio, and a prefill node's usable FLOP/s.

The compute model is the one that reproduces the paper's Table 1 (reference/hardware.md D.1-D.3):

    F(L) = 2*N_active + c*L + c_s*min(L, k)        FLOP per appended token at context L

``N_active`` are the parameters active per token; ``c`` (``attn_flops_per_ctx_token``) is the
attention FLOP per new token per context token over the whole context (GQA: 4*q_heads*head_dim*
layers; the DSA indexer for DeepSeek-V3.2); ``c_s`` (``sparse_attn_flops_per_key``) is the
attention term whose keys are capped at ``k = sparse_topk_tokens`` (V3.2's top-2048 MLA, GPT-OSS's
128-token sliding window). The attention term is not halved for causality: every appended token
attends to the whole cached context. Attention among the appended tokens themselves (at most
``append/2`` keys each, ~1 % of the context here) is left out, as in the paper's ratio.

One turn prefills its miss tokens against its hit context, so (section 3 of the paper)

    F_turn = n_miss * F(n_hit)

With a workload's hit rate defined as context/(context + append) (Table 2) this is exactly
``append * F(context)``; taking the miss and hit tokens keeps ``--set hit_rate_frac=...`` what-ifs
consistent with the KV bytes the bandwidth model moves.
"""

from __future__ import annotations

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import Hardware, Model, Workload

DTYPES = ("fp8", "bf16")


def flops_per_new_token(model: Model, context_tokens: float) -> float:
    """F(L): prefill FLOP per appended token at a cached context of ``context_tokens`` (D.1)."""
    capped = min(context_tokens, model.sparse_topk_tokens)
    return (
        2.0 * model.active_params  # one multiply-add per active weight
        + model.attn_flops_per_ctx_token * context_tokens  # attention over the whole context
        + model.sparse_attn_flops_per_key * capped  # attention over the capped key set
    )


def flops_per_turn(model: Model, workload: Workload) -> float:
    """F_turn = n_miss * F(n_hit): FLOP one agent turn costs the prefill engines."""
    return workload.miss_tokens * flops_per_new_token(model, workload.hit_tokens)


def cache_compute_ratio(model: Model, context_tokens: float, append_tokens: float) -> float:
    """KV bytes to load per prefill FLOP (paper section 3, Table 1), bytes/FLOP.

    ``L * kv_bytes_per_token / (append * F(L))``; multiply by 1e6 for the paper's GB/PFLOP.
    """
    return context_tokens * model.kv_bytes_per_token / (append_tokens * flops_per_new_token(model, context_tokens))


def resolve_dtype(model: Model, dtype: str | None) -> str:
    """The GEMM dtype: ``dtype`` if given, else the model's own (FP8 where the model runs FP8)."""
    chosen = model.compute_dtype if dtype is None else dtype
    if chosen not in DTYPES:
        raise PlanError(f"--dtype {chosen!r} is not allowed; must be one of {', '.join(DTYPES)}", 2)
    return chosen


def prefill_flops_per_gpu(hw: Hardware, dtype: str) -> float:
    """Usable prefill FLOP/s of one GPU: dense peak of ``dtype`` times the profile's MFU.

    The MFU (``prefill_mfu_frac``) is a hardware-profile value with its source in the profile
    file; ``--set prefill_mfu_frac=...`` (or ``pe.prefill_mfu_frac``) overrides it.
    """
    return hw.peak_flops(dtype) * hw.prefill_mfu


def prefill_weight_share_bytes(model: Model, hw: Hardware, P: int) -> float:
    """Weight bytes each prefill GPU holds when the weights spread over all ``P*g`` prefill GPUs
    (expert parallelism across the prefill side, as the paper runs its DeepSeek models, section 7.1)."""
    return model.weight_bytes / (P * hw.g)


def min_prefill_nodes(model: Model, hw: Hardware) -> int:
    """The fewest prefill nodes whose HBM holds the weights (``share < hbm_GB``); fewer serve nothing."""
    return int(model.weight_bytes // (hw.g * hw.hbm_bytes)) + 1
