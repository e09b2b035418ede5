"""Prefill compute: FLOPs per turn, the cache-compute ratio, and the prefill rate the LP uses.

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

    F_turn = n_miss * F(n_hit)   (+ p * F(0): its share of the agent's first-round prompt, as the runs replay it)

With a workload's hit rate defined as context/(context + append) (Table 2) this is exactly
``append * F(context)``; taking the miss and hit tokens keeps ``--set hit_rate_frac=...`` what-ifs
consistent with the KV bytes the bandwidth model moves.

What those FLOPs cost in time is ``steptime.PrefillPass``: GEMMs at DeepGEMM's measured efficiency for the
rows they get, attention at FlashMLA's rate, the expert-parallel all-to-all, fixed costs. The LP's
prefill rate (:func:`prefill_flops_per_gpu`) is a turn's FLOP over its saturated pass time.
"""

from __future__ import annotations

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import Hardware, Model, Workload
from dualpath_plan.bounds.steptime import PrefillPass, weight_share_bytes
from dualpath_plan.model.workload import agent_turns, fit_synthetic

DTYPES = ("fp8", "bf16")
MAX_PREFILL_NODES = 1 << 20  # a model whose replicated weights fill HBM never fits: no P serves it


def flops_per_new_token(model: Model, context_tokens: float) -> float:
    """F(L): prefill FLOP per appended token at a cached context of ``context_tokens`` (D.1)."""
    capped = min(context_tokens, model.sparse_topk_tokens)
    return (
        2.0 * model.active_params  # one multiply-add per active weight
        + model.attn_flops_per_ctx_token * context_tokens  # attention over the whole context
        + model.sparse_attn_flops_per_key * capped  # attention over the capped key set
    )


def first_round_tokens_per_turn(workload: Workload) -> float:
    """Each agent's first round prefills its initial prompt (the data set's fitted ``prefix_tokens``, at an empty
    context) once; spread over the agent's turns, this many tokens per turn come on top of the mean turn's."""
    return fit_synthetic(workload).prefix_tokens / agent_turns(workload)


def flops_per_turn(model: Model, workload: Workload, first_round: bool = True) -> float:
    """F_turn = n_miss * F(n_hit) + p * F(0): FLOP one agent turn costs the prefill engines, its share ``p`` of the
    agent's first-round prompt included (:func:`first_round_tokens_per_turn`) unless ``first_round`` is False (a
    workload that is already the mean of turns served, first rounds among them)."""
    first = first_round_tokens_per_turn(workload) if first_round else 0.0
    return workload.miss_tokens * flops_per_new_token(model, workload.hit_tokens) + first * flops_per_new_token(model, 0.0)


def prefill_seconds_per_turn(model: Model, workload: Workload, hw: Hardware, dtype: str, first_round: bool = True) -> float:
    """GPU-seconds of one turn's prefill in saturated passes, on the same tokens as :func:`flops_per_turn`."""
    pp = PrefillPass.of(model, hw, dtype, hw.g)
    first = first_round_tokens_per_turn(workload) if first_round else 0.0
    return (workload.miss_tokens * pp.saturated_s_per_token(attn_flops_per_token(model, workload.hit_tokens))
            + first * pp.saturated_s_per_token(attn_flops_per_token(model, 0.0)))


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


def attn_flops_per_token(model: Model, context_tokens: float) -> float:
    """The attention part of F(L): FLOP per appended token at ``context_tokens`` (the rest is GEMMs)."""
    return flops_per_new_token(model, context_tokens) - 2.0 * model.active_params


def prefill_pass(model: Model, hw: Hardware, dtype: str, P: int) -> PrefillPass:
    """The forward pass of one prefill GPU when the experts spread over all ``P*g`` prefill GPUs."""
    return PrefillPass.of(model, hw, dtype, P * hw.g)


def prefill_flops_per_gpu(model: Model, workload: Workload, hw: Hardware, dtype: str, first_round: bool = True) -> float:
    """The LP's prefill rate of one GPU, FLOP/s: a turn's FLOP over the GPU-seconds its tokens take in a
    saturated pass (``steptime.PrefillPass.saturated_s_per_token``: GEMMs at the best measured efficiency,
    attention at its kernel's rate, the all-to-all overlapped, fixed costs amortised). No forward batch
    is faster, so the bound holds for every batch the runner forms; the rate does not depend on P."""
    return flops_per_turn(model, workload, first_round) / prefill_seconds_per_turn(model, workload, hw, dtype, first_round)


def prefill_weight_share_bytes(model: Model, hw: Hardware, P: int) -> float:
    """Weight bytes each prefill GPU holds when the experts spread over all ``P*g`` prefill GPUs
    (expert parallelism across the prefill side, as the paper runs its DeepSeek models, section 7.1;
    ``steptime.weight_share_bytes``)."""
    return weight_share_bytes(model, P * hw.g)


def min_prefill_nodes(model: Model, hw: Hardware) -> int:
    """The fewest prefill nodes whose HBM holds the weights (``share < hbm_GB``); fewer serve nothing.
    A MoE GPU holds every non-routed weight, so with too little HBM for those no P serves."""
    routed = model.routed_params * model.weight_bytes_per_param if model.is_moe else model.weight_bytes
    fixed = model.weight_bytes - routed
    if fixed >= hw.hbm_bytes:
        return MAX_PREFILL_NODES
    return min(int(routed // (hw.g * (hw.hbm_bytes - fixed))) + 1, MAX_PREFILL_NODES)
