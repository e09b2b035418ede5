"""Decode capacity: tokens/s per decode GPU at its best batch, from the step time of ``steptime``.

A decode step of ``b`` sequences on one GPU takes ``t(b)`` per generated token (``steptime.DecodeStep``: each
kernel family at the slower of its compute and its memory time, the expert-parallel all-to-all of every MoE
layer, fixed costs; communication hidden behind work from 128 tokens per step on; with MTP, the step over the
acceptance length). The batch is capped twice: by the TPOT SLO, ``t(b) <= TPOT`` (the paper's 50 ms, section
7), and by free HBM, ``W + b * kv_held <= HBM``. On each side of the overlap threshold every term of ``t`` has
``t(b)/b`` non-increasing (linear terms with non-negative intercepts, GEMM shares that never fall with M,
the concave expert-hit curve, and maxima and sums of such terms), so ``b / t(b)`` grows with ``b``; the
overlapped side is never slower per sequence than the serial one. The best batch is therefore the largest
one both caps allow, found by bisection on the side it lies on (``t`` is non-decreasing there); the GPU then
makes ``b / t(b)`` tokens/s. Activations and allocator slack in HBM are not modelled: they only lower the
figure, so this stays an upper bound, as the LP needs.

* ``kv_read``/``kv_held`` use the mean context of a sequence in the batch. A turn of prompt ``p`` that generates
  ``g`` tokens holds ``p + g/2`` tokens on average while it decodes, for ``g`` steps; by Little's law on HBM, the
  batch's mean context is ``E[g (p + g/2)] / E[g]`` over the turns, which the bounds take from the turns they
  charge. The plain mean ``E[p] + E[g]/2`` weights a one-token turn like a thousand-token one: on the agentic
  data sets, whose long contexts generate a little less, it is 6-8 % longer than the batch's, so the HBM cap held
  6-8 % fewer sequences than a run keeps and the bound was not one (a basic run at 25P11D decoded 2-7 % above it).
  A model with a DSA indexer cache (DeepSeek-V3.2) reads the indexer
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

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.profiles import Hardware, Model, Workload
from dualpath_plan.model.units import to_si
from dualpath_plan.bounds.steptime import OVERLAP_TOKENS, DecodeStep, Mtp, attention_coefficients, decode_attention_seconds, weight_share_bytes

DEFAULT_TPOT_SLO_MS = 50.0  # paper section 7: SLO TPOT <= 50 ms
# DeepSeek-V3 technical report (arXiv 2412.19437, section 5.4.3): "the acceptance rate of the second token
# prediction ranges between 85% and 90%"; the low end, and each further draft accepted at the same rate once
# the one before it was (an assumption: the report measures one draft only).
MTP_ACCEPT_RATE = 0.85
BISECTIONS = 60  # halvings of the batch interval: far below a thousandth of a sequence


def mtp_accepted_tokens(drafts: int, rate: float = MTP_ACCEPT_RATE) -> float:
    """Mean tokens kept per step with ``drafts`` drafts each accepted at ``rate`` given the one before: 1 + r + ... + r^N."""
    return sum(rate ** i for i in range(drafts + 1))


@dataclass(frozen=True)
class DecodeOptions:
    """The decode side's choices: TPOT SLO, decode instance size and multi-token prediction.

    Attributes:
        tpot_slo_s: The TPOT SLO a decode step must keep, seconds (``--tpot-slo-ms``; default 0.05 s, the paper's).
        instance_nodes: Decode nodes per expert-parallel instance (``--decode-instance-nodes``), or ``None`` for one
            instance over the whole decode side.
        mtp_drafts: Multi-token-prediction drafts verified per step (``--mtp``; 0: off).
        mtp_accepted: Tokens a step keeps on average, 1 to ``mtp_drafts + 1`` (``--mtp-accepted``), or ``None`` for
            :func:`mtp_accepted_tokens` (each draft accepted at 0.85 once the one before it was).
    """

    tpot_slo_s: float = DEFAULT_TPOT_SLO_MS * 1e-3
    instance_nodes: int | None = None
    mtp_drafts: int = 0
    mtp_accepted: float | None = None

    @classmethod
    def parse(cls, tpot_slo_ms: float = DEFAULT_TPOT_SLO_MS, instance_nodes: int | None = None, mtp: int = 0,
              mtp_accepted: float | None = None) -> DecodeOptions:
        """Validate flag values (``--tpot-slo-ms``, ``--decode-instance-nodes``, ``--mtp``, ``--mtp-accepted``) and convert to SI."""
        check_flag("--tpot-slo-ms", tpot_slo_ms)
        if instance_nodes is not None:
            check_flag("--decode-instance-nodes", instance_nodes)
        check_flag("--mtp", mtp)
        if mtp_accepted is not None:
            check_flag("--mtp-accepted", mtp_accepted)
            if mtp == 0:
                raise PlanError(f"--mtp-accepted {mtp_accepted:g}: tokens kept per step need drafts; give --mtp N (N >= 1) too", 2)
            if mtp_accepted > mtp + 1:
                raise PlanError(f"--mtp-accepted {mtp_accepted:g} tokens is not allowed; must be >= 1 and <= --mtp + 1 = {mtp + 1} "
                                "(a step keeps at most its drafts and the token it verifies them with)", 2)
        return cls(to_si(tpot_slo_ms, "ms"), instance_nodes, mtp, mtp_accepted)

    def mtp_for(self, model: Model) -> Mtp:
        """The MTP setting for ``model``: off, or its drafts, acceptance length and MTP modules (refused for a
        model that ships no MTP module)."""
        if self.mtp_drafts == 0:
            return Mtp()
        if model.mtp_modules == 0:
            raise PlanError(f"--mtp {self.mtp_drafts}: model {model.name!r} ships no multi-token-prediction module (mtp_modules = 0 "
                            "in its profile); drop --mtp or use a model with one (ds-v3, ds-v3.2)", 2)
        accepted = mtp_accepted_tokens(self.mtp_drafts) if self.mtp_accepted is None else self.mtp_accepted
        return Mtp(self.mtp_drafts, accepted, model.mtp_modules)


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
    attn_s_per_seq: float = 0.0  # decode attention compute seconds of one sequence per step (one query)


def decode_context_tokens(workload: Workload) -> float:
    """Mean context of a sequence in a decode batch: per turn its prompt plus half of its generated tokens, weighted by
    the tokens it generates (``Workload.decode_context``, from the turns), else of the means (module docstring)."""
    if workload.decode_context is not None:
        return workload.decode_context
    return workload.prompt_tokens + workload.gen_tokens / 2.0


def kv_bytes(model: Model, context_tokens: float) -> tuple[float, float]:
    """(bytes read per step, bytes held in HBM) for one sequence at ``context_tokens``."""
    layout = model.kv_layouts[model.kv_layout]
    sparse = model.indexer_bytes_per_token > 0 and model.sparse_topk_tokens > 0
    attended = min(context_tokens, model.sparse_topk_tokens) if sparse else context_tokens
    read = layout * attended + model.indexer_bytes_per_token * context_tokens
    held = (layout + model.indexer_bytes_per_token) * context_tokens
    return read, held


def attention_s(model: Model, hw: Hardware, context_tokens: float) -> float:
    """Decode attention compute seconds of one sequence per step at ``context_tokens`` (``steptime``'s arithmetic)."""
    per_ctx, per_key = attention_coefficients(model, hw)
    return float(decode_attention_seconds(per_ctx, per_key, model.sparse_topk_tokens, context_tokens))


def _largest(t, lo: float, hi: float, slo: float) -> float:
    """The largest ``b`` in ``[lo, hi]`` with ``t(b) <= slo``, ``t`` non-decreasing there and ``t(lo) <= slo``."""
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if t(mid) <= slo else (lo, mid)
    return lo


def best_batch(step: DecodeStep, read: float, attn: float, b_mem: float, tpot_slo_s: float) -> tuple[float, str]:
    """The largest batch within free HBM (``b_mem`` sequences) whose step meets the TPOT SLO, and what caps it
    (module docstring): on the overlapped side (``q*b >= 128`` tokens) if that side has one, else on the serial
    side; 0 when not even an empty step meets the SLO."""
    t = lambda b: step.step_s(b, b * read, b * attn)  # noqa: E731
    threshold = OVERLAP_TOKENS / (step.mtp.drafts + 1.0)  # sequences per step from which overlap runs
    if b_mem >= threshold and t(threshold) <= tpot_slo_s:
        return (b_mem, "hbm_capacity") if t(b_mem) <= tpot_slo_s else (_largest(t, threshold, b_mem, tpot_slo_s), "tpot_slo")
    top = min(b_mem, threshold)
    if top < threshold and t(top) <= tpot_slo_s:
        return top, "hbm_capacity"
    if t(0.0) > tpot_slo_s:
        return 0.0, "tpot_slo"
    return _largest(t, 0.0, top, tpot_slo_s), "tpot_slo"


def roofline(model: Model, workload: Workload, hw: Hardware, sharing_gpus: float, tpot_slo_s: float, mtp: Mtp = Mtp()) -> DecodeRate:
    """One decode GPU at its best batch when its instance spreads the experts over ``sharing_gpus`` GPUs."""
    step = DecodeStep.of(model, hw, sharing_gpus, mtp=mtp)
    weight, hbm = step.weight_bytes, hw.hbm_bytes
    context = decode_context_tokens(workload)
    read, held = kv_bytes(model, context)
    attn = attention_s(model, hw, context)
    if weight >= hbm:
        return DecodeRate(0.0, 0.0, step.step_s(0.0, 0.0, 0.0), weight, read, held, "weights_do_not_fit", None, attn)
    batch, limit = best_batch(step, read, attn, (hbm - weight) / held, tpot_slo_s)
    if batch <= 0:
        return DecodeRate(0.0, 0.0, step.step_s(0.0, 0.0, 0.0), weight, read, held, "weights_exceed_slo", None, attn)
    t = step.step_s(batch, batch * read, batch * attn)
    return DecodeRate(batch / t, batch, t, weight, read, held, limit, step, attn)


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
    rate = roofline(model, workload, hw, nodes * hw.g, options.tpot_slo_s, options.mtp_for(model))
    whole = D // nodes * nodes  # nodes in whole instances: the others hold no full copy of the weights and serve nothing
    return rate if whole == D else replace(rate, tokens_per_gpu_s=rate.tokens_per_gpu_s * whole / D)


def decode_capacity(model: Model, workload: Workload, hw: Hardware, D: int, options: DecodeOptions) -> float:
    """Aggregate decode tokens/s of ``D`` nodes: ``D * g * tokens_per_gpu_s``."""
    return D * hw.g * decode_rate(model, workload, hw, D, options).tokens_per_gpu_s
