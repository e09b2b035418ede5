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

    F_turn = n_miss * F(n_hit)

``F`` is not linear in the context, so the LP's FLOP per turn is the mean of ``F_turn`` over concrete turns
(``workload.TurnSet``: the data set's, which every run replays, first rounds included, or a run's own), not
``F_turn`` of the mean turn. The same holds for the saturated pass seconds.

What those FLOPs cost in time is ``steptime.PrefillPass``: GEMMs at DeepGEMM's measured efficiency for the
rows they get, attention at FlashMLA's rate, the expert-parallel all-to-all, fixed costs. The LP's
prefill rate (:func:`prefill_flops_per_gpu`) is a turn's FLOP over its saturated pass time.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import Hardware, Model
from dualpath_plan.model.sums import CHUNK
from dualpath_plan.bounds.steptime import PrefillPass
from dualpath_plan.model.workload import TurnSet

DTYPES = ("fp8", "bf16", "fp4")
MAX_PREFILL_NODES = 1 << 20  # a model whose replicated weights fill HBM never fits: no P serves it


def flops_per_new_token(model: Model, context_tokens: float) -> float:
    """F(L): prefill FLOP per appended token at a cached context of ``context_tokens`` (D.1)."""
    capped = min(context_tokens, model.sparse_topk_tokens)
    return (
        2.0 * model.active_params  # one multiply-add per active weight
        + model.attn_flops_per_ctx_token * context_tokens  # attention over the whole context
        + model.sparse_attn_flops_per_key * capped  # attention over the capped key set
    )


def turn_flops(model: Model, hit_tokens: np.ndarray | float, miss_tokens: np.ndarray | float) -> np.ndarray:
    """``F_turn = n_miss * F(n_hit)`` per turn (numpy twin of :func:`flops_per_new_token`; a test holds them equal)."""
    ctx = np.asarray(hit_tokens, dtype=float)
    per_token = 2.0 * model.active_params + model.attn_flops_per_ctx_token * ctx + model.sparse_attn_flops_per_key * np.minimum(ctx, model.sparse_topk_tokens)
    return np.asarray(miss_tokens, dtype=float) * per_token


def turn_prefill_seconds(pp: PrefillPass, model: Model, hit_tokens: np.ndarray, miss_tokens: np.ndarray) -> np.ndarray:
    """GPU-seconds of each turn's miss tokens against its hit context in a saturated pass (numpy twin of
    ``PrefillPass.saturated_s_per_token``, per turn): what the LP's prefill rate charges them."""
    # miss * max(gemm + (c_attn * ctx + c_sparse * min(ctx, topk)) / attn_rate, comm), a slice of CHUNK_TURNS turns at a
    # time into the result: for a run's millions of turns one array of them and a slice's temporary, and the same
    # operations on every element (whole numbers are taken as floats inside each operation, not copied: dtype=float)
    hit, miss = np.asarray(hit_tokens), np.asarray(miss_tokens)
    work = np.empty(np.broadcast_shapes(hit.shape, miss.shape))
    flat_hit, flat_miss, flat = np.broadcast_to(hit, work.shape).reshape(-1), np.broadcast_to(miss, work.shape).reshape(-1), work.reshape(-1)
    for i in range(0, flat.size, CHUNK_TURNS):
        s = slice(i, i + CHUNK_TURNS)
        out = flat[s]
        capped = np.minimum(flat_hit[s], model.sparse_topk_tokens, dtype=float)
        capped *= model.sparse_attn_flops_per_key
        np.multiply(flat_hit[s], model.attn_flops_per_ctx_token, out=out, dtype=float)
        out += capped
        out /= pp.attn_flops_per_s
        out += pp.saturated_gemm_s_per_token
        np.maximum(out, pp.comm_s_per_token, out=out)
        out *= flat_miss[s]
    return work


CHUNK_TURNS = CHUNK  # turns per slice when averaging over many (model.sums.CHUNK)


def mean_over_turns(per_turn, turns: TurnSet) -> float:
    """The mean of ``per_turn(hit, miss)`` over ``turns``, taken in slices of :data:`CHUNK_TURNS` so that a run of
    millions of turns never holds more than one slice's temporaries."""
    n = turns.hit.size
    total = sum(float(per_turn(turns.hit[i:i + CHUNK_TURNS], turns.miss[i:i + CHUNK_TURNS]).sum()) for i in range(0, n, CHUNK_TURNS))
    return total / n


def flops_per_turn(model: Model, turns: TurnSet) -> float:
    """Mean ``F_turn`` over ``turns``: FLOP one turn costs the prefill engines."""
    return mean_over_turns(lambda hit, miss: turn_flops(model, hit, miss), turns)


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


def prefill_instance_nodes(model: Model, hw: Hardware, nodes: int | None = None) -> int:
    """Nodes of one prefill instance: ``nodes`` (``--prefill-instance-nodes``) when given, else the fewest whose HBM
    holds the weights (:func:`min_prefill_nodes`). An instance too small to hold the weights serves nothing
    (:data:`MAX_PREFILL_NODES`: no ``P`` reaches it); no ``P`` smaller than one instance serves either.

    The prefill side runs as instances of this size, each spreading the experts over its GPUs (expert
    parallelism with data-parallel attention, as the paper runs its DeepSeek models, section 7.1; its 2P is
    DeepSeek-V3.2's smallest instance on 80 GB GPUs). A saturated pass's GEMMs do not depend on the size, its
    all-to-all does, and the smallest instance is the cheapest per token on every path measured: across NVLink
    domains a token's ``k`` copies reach more nodes as an instance spans more, and the throughput kernels cost
    more per token at every larger EP size (H100, AIConfigurator's rows of DeepEP's normal kernels at 8,192 tokens
    per GPU, dispatch + combine per layer: 0.58 us a token at EP16, 1.27 at EP32, 2.46 at EP64); inside a domain fewer of a token's
    copies stay on its GPU as the instance grows (``steptime.remote_share``); and one H100 node over its 900 GB/s
    NVLink takes 0.34 us a token, less than two nodes. The exception is a node whose NVLink is slow: on the H800
    (400 GB/s) DeepEP's intranode kernels take about 1.0 us a token, more than two nodes over RDMA, so a model that
    one H800 node holds would move its tokens faster in two-node instances. The fewest nodes are charged there
    too: they are what a one-node prefill side runs, and in the shipped models the GEMMs bind such a pass
    (DeepSeek 27B on ``hopper``: 8.9 us of GEMMs against 7.7 us of all-to-all a token).

    The size does not depend on ``P`` (no ``P`` below it serves), so neither does the prefill rate. ``P`` nodes form
    ``P / this`` instances; a remainder is charged as if it formed instances of this size too (across domains a
    larger instance is slower per token: the charge never falls short of what the remainder does)."""
    fewest = min_prefill_nodes(model, hw)
    if nodes is None:
        return fewest
    return nodes if nodes >= fewest else MAX_PREFILL_NODES


def prefill_instance_gpus(model: Model, hw: Hardware, nodes: int | None = None) -> int:
    """GPUs of one prefill instance (:func:`prefill_instance_nodes` times ``g``): its EP size."""
    return prefill_instance_nodes(model, hw, nodes) * hw.g


def prefill_pass(model: Model, hw: Hardware, dtype: str, nodes: int | None = None) -> PrefillPass:
    """The forward pass of one prefill GPU of a prefill instance (:func:`prefill_instance_gpus`; ``nodes``: its
    nodes when chosen): the same for every ``P`` that serves."""
    return PrefillPass.of(model, hw, dtype, prefill_instance_gpus(model, hw, nodes))


def prefill_flops_per_gpu(model: Model, turns: TurnSet, hw: Hardware, dtype: str, flops: float | None = None,
                          nodes: int | None = None) -> float:
    """The LP's prefill rate of one GPU, FLOP/s: the turns' FLOP over the GPU-seconds their tokens take in a
    saturated pass (``steptime.PrefillPass.saturated_s_per_token``: GEMMs at the best measured efficiency,
    attention at its kernel's rate, the all-to-all of a prefill instance overlapped, fixed costs amortised).
    No forward batch is faster, so the bound holds for every batch the runner forms; the rate does not depend on
    P (:func:`prefill_instance_nodes`). ``flops``: :func:`flops_per_turn` of the same turns, when the caller has it
    already; ``nodes``: the instance's nodes when chosen (``--prefill-instance-nodes``)."""
    pp = prefill_pass(model, hw, dtype, nodes)
    seconds = mean_over_turns(lambda hit, miss: turn_prefill_seconds(pp, model, hit, miss), turns)
    return (flops_per_turn(model, turns) if flops is None else flops) / seconds


_RATES_MEMO: dict[tuple[int, int, int, str, int | None], tuple[tuple[Model, TurnSet, Hardware], tuple[float, float]]] = {}
_RATES_MEMO_SIZE = 64


def prefill_rates(model: Model, turns: TurnSet, hw: Hardware, dtype: str, nodes: int | None = None) -> tuple[float, float]:
    """(:func:`flops_per_turn`, :func:`prefill_flops_per_gpu`) of ``turns``: neither depends on P or D, so the splits
    of one sweep or frontier (one model, data set and node type) share them. Memoised by the records' identity,
    which the memo holds so that no id is reused while it is a key: two means over the data set per node type,
    not per split."""
    key = (id(model), id(turns), id(hw), dtype, nodes)
    hit = _RATES_MEMO.get(key)
    if hit is not None and hit[0][0] is model and hit[0][1] is turns and hit[0][2] is hw:
        return hit[1]
    flops = flops_per_turn(model, turns)
    rates = (flops, prefill_flops_per_gpu(model, turns, hw, dtype, flops, nodes))
    if len(_RATES_MEMO) >= _RATES_MEMO_SIZE:
        _RATES_MEMO.clear()
    _RATES_MEMO[key] = ((model, turns, hw), rates)
    return rates


def min_prefill_nodes(model: Model, hw: Hardware) -> int:
    """The fewest prefill nodes whose HBM holds the weights (``share < hbm_GB``); fewer serve nothing.
    A MoE GPU holds every non-routed weight, so with too little HBM for those no P serves."""
    routed = model.routed_params * model.weight_bytes_per_param if model.is_moe else model.weight_bytes
    fixed = model.weight_bytes - routed
    if fixed >= hw.hbm_bytes:
        return MAX_PREFILL_NODES
    return min(int(routed // (hw.g * (hw.hbm_bytes - fixed))) + 1, MAX_PREFILL_NODES)
