"""Decode capacity: tokens/s per decode GPU at its best batch, from the step time of ``steptime``.

A decode step of ``b`` sequences on one GPU takes ``t(b)`` (``steptime.DecodeStep``: the HBM reads of
the GPU's weights and every sequence's KV, the expert-parallel all-to-all of every MoE layer, and fixed
costs; communication hidden behind HBM work from 128 sequences on). The batch is capped twice: by the
TPOT SLO, ``t(b) <= TPOT`` (the paper's 50 ms, section 7), and by free HBM, ``W + b * kv_held <= HBM``.
``t`` is linear in ``b`` on each side of the overlap threshold, so ``b / t(b)`` grows with ``b`` and the
best batch is the largest one both caps allow; the GPU then makes ``b / t(b)`` tokens/s. Activations and
allocator slack in HBM are not modelled: they only lower the figure, so this stays an upper bound, as
the LP needs.

* ``kv_read``/``kv_held`` use the mean context a sequence has while it decodes, the prompt plus
  half the generated tokens. A model with a DSA indexer cache (DeepSeek-V3.2) reads the indexer
  keys of the whole context but the MLA latent of only its top-k keys; it holds both in HBM.
* The instance is the whole decode side by default, ``D*g`` GPUs (expert parallelism across every
  decode engine, as the paper runs its DeepSeek models with EP, section 7.1): a bigger decode side holds
  fewer experts per GPU and pays a larger all-to-all. ``instance_nodes`` fixes the instance at that many
  nodes instead; then the rate per GPU no longer depends on D.
* A model profile may carry ``decode_tokens_per_gpu_s``, a calibrated figure with its source; it
  replaces the step-time model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.profiles import Hardware, Model, Workload
from dualpath_plan.model.units import to_si
from dualpath_plan.bounds.steptime import LL_TOKENS, OVERLAP_TOKENS, DecodeStep, weight_share_bytes

DEFAULT_TPOT_SLO_MS = 50.0  # paper section 7: SLO TPOT <= 50 ms


@dataclass(frozen=True)
class DecodeOptions:
    """TPOT SLO in seconds and the decode instance size (``None``: the whole decode side)."""

    tpot_slo_s: float = DEFAULT_TPOT_SLO_MS * 1e-3
    instance_nodes: int | None = None

    @classmethod
    def parse(cls, tpot_slo_ms: float = DEFAULT_TPOT_SLO_MS, instance_nodes: int | None = None) -> DecodeOptions:
        """Validate flag values (``--tpot-slo-ms``, ``--decode-instance-nodes``) and convert to SI."""
        check_flag("--tpot-slo-ms", tpot_slo_ms)
        if instance_nodes is not None:
            check_flag("--decode-instance-nodes", instance_nodes)
        return cls(to_si(tpot_slo_ms, "ms"), instance_nodes)


@dataclass(frozen=True)
class DecodeRate:
    """One decode GPU at its best batch: tokens/s, batch (sequences), step time and what caps it.

    ``limited_by`` is ``tpot_slo``, ``hbm_capacity``, ``calibrated`` (the model profile's figure),
    ``weights_do_not_fit`` (the weight share fills HBM), ``weights_exceed_slo`` (a step without
    sequences, its weights and fixed costs, takes longer than the TPOT SLO) or ``instance_exceeds_decode_side`` (an
    instance spans more nodes than D); the last three make zero tokens/s.
    """

    tokens_per_gpu_s: float
    batch_per_gpu: float | None  # None: a calibrated figure (no batch or step is modelled)
    step_s: float | None  # None: calibrated, or no instance fits the decode side
    weight_share_bytes: float | None  # None: calibrated
    kv_read_bytes_per_seq: float
    kv_held_bytes_per_seq: float
    limited_by: str
    step: DecodeStep | None = None  # the step-time model behind the rate (None for a calibrated figure)


def decode_context_tokens(workload: Workload) -> float:
    """Mean context of a decoding sequence: its prompt plus half of the generated tokens."""
    return workload.prompt_tokens + workload.gen_tokens / 2.0


def kv_bytes(model: Model, context_tokens: float) -> tuple[float, float]:
    """(bytes read per step, bytes held in HBM) for one sequence at ``context_tokens``."""
    layout = model.kv_layouts[model.kv_layout]
    sparse = model.indexer_bytes_per_token > 0 and model.sparse_topk_tokens > 0
    attended = min(context_tokens, model.sparse_topk_tokens) if sparse else context_tokens
    read = layout * attended + model.indexer_bytes_per_token * context_tokens
    held = (layout + model.indexer_bytes_per_token) * context_tokens
    return read, held


def best_batch(step: DecodeStep, read: float, b_mem: float, tpot_slo_s: float) -> tuple[float, str]:
    """The largest batch within free HBM (``b_mem`` sequences) whose step meets the TPOT SLO, and what caps
    it. ``t(b)`` is linear on each side of the overlap threshold, so each side is one division: the
    overlapped side's largest batch if it reaches the threshold, else the serial side's (a batch below the
    threshold runs serially, whatever capped it)."""
    w, fixed, req, bw = step.weight_bytes / step.hbm_Bps, step.fixed_s, step.request_s, step.hbm_Bps
    comm_per_seq = step.comm_128_s / LL_TOKENS
    room = tpot_slo_s - fixed
    serial = (room - w) / (read / bw + comm_per_seq + req)  # t = w + b*(read/bw + comm + req) + fixed
    overlap = min((room - w) / (read / bw + req), room / (comm_per_seq + req) if comm_per_seq + req > 0 else float("inf"))
    if min(overlap, b_mem) >= OVERLAP_TOKENS:
        return (overlap, "tpot_slo") if overlap <= b_mem else (b_mem, "hbm_capacity")
    return (serial, "tpot_slo") if serial <= b_mem else (b_mem, "hbm_capacity")


def roofline(model: Model, workload: Workload, hw: Hardware, sharing_gpus: float, tpot_slo_s: float) -> DecodeRate:
    """One decode GPU at its best batch when its instance spreads the experts over ``sharing_gpus`` GPUs."""
    step = DecodeStep.of(model, hw, sharing_gpus)
    weight, hbm = step.weight_bytes, hw.hbm_bytes
    read, held = kv_bytes(model, decode_context_tokens(workload))
    if weight >= hbm:
        return DecodeRate(0.0, 0.0, step.step_s(0.0, 0.0), weight, read, held, "weights_do_not_fit")
    batch, limit = best_batch(step, read, (hbm - weight) / held, tpot_slo_s)
    if batch <= 0:
        return DecodeRate(0.0, 0.0, step.step_s(0.0, 0.0), weight, read, held, "weights_exceed_slo")
    t = step.step_s(batch, batch * read)
    return DecodeRate(batch / t, batch, t, weight, read, held, limit, step)


def decode_rate(model: Model, workload: Workload, hw: Hardware, D: int, options: DecodeOptions) -> DecodeRate:
    """Tokens/s of one decode GPU when the decode side has ``D`` nodes of ``hw``, averaged over all
    ``D * g`` GPUs: with instances of N nodes only ``floor(D / N) * N`` nodes serve."""
    if model.decode_tokens_per_gpu_s is not None:
        read, held = kv_bytes(model, decode_context_tokens(workload))
        return DecodeRate(model.decode_tokens_per_gpu_s, None, None, None, read, held, "calibrated")
    nodes = D if options.instance_nodes is None else options.instance_nodes
    if nodes > D:
        read, held = kv_bytes(model, decode_context_tokens(workload))
        return DecodeRate(0.0, 0.0, None, weight_share_bytes(model, nodes * hw.g), read, held, "instance_exceeds_decode_side")
    rate = roofline(model, workload, hw, nodes * hw.g, options.tpot_slo_s)
    whole = D // nodes * nodes  # nodes in whole instances: the others hold no full copy of the weights and serve nothing
    return rate if whole == D else replace(rate, tokens_per_gpu_s=rate.tokens_per_gpu_s * whole / D)


def decode_capacity(model: Model, workload: Workload, hw: Hardware, D: int, options: DecodeOptions) -> float:
    """Aggregate decode tokens/s of ``D`` nodes: ``D * g * tokens_per_gpu_s``."""
    return D * hw.g * decode_rate(model, workload, hw, D, options).tokens_per_gpu_s
