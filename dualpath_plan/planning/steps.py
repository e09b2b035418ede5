"""What one decode step and one prefill pass cost on this cluster, term by term (``bottleneck``'s breakdown).

The decode step is the one the LP's decode limit runs: the best batch per decode GPU (``decode.DecodeRate``)
at the workload's mean decoding context. The prefill pass is a typical forward batch: as many tokens as
the 300 ms attention quota admits at the workload's mean context (paper section 6, ``sim.rules.QUOTA_S``), the
batch the scheduler forms under load; the LP's prefill limit is the saturated rate, which no pass beats.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualpath_plan.bounds.compute import attn_flops_per_token, prefill_pass, resolve_dtype
from dualpath_plan.bounds.decode import DecodeRate
from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.sim.rules import QUOTA_S


@dataclass(frozen=True)
class StepTimes:
    """The decode step and the prefill pass of ``bottleneck``'s breakdown, each as ``steptime``'s terms in seconds.

    Attributes:
        decode_batch: Sequences per decode GPU in the step (the LP's best batch), or ``None`` when the decode rate is a
            calibrated figure or zero.
        decode: The decode step's terms, seconds (``attention``, ``dense_gemm``, ``expert_gemm``, ``work``, ``comm``,
            ``overhead``, ``hidden``, ``step``), and ``*_memory_bound`` flags (1.0 where the memory side sets that
            family's time); ``None`` with ``decode_batch``.
        prefill_tokens: New tokens per prefill GPU in the pass: those one 300 ms attention quota admits at the
            workload's mean context.
        prefill_requests: Requests in the pass (``prefill_tokens`` over a turn's miss tokens).
        prefill: The pass's terms, seconds (``gemm``, ``attention``, ``comm``, ``overhead``, ``hidden``, ``pass``).
    """

    decode_batch: float | None
    decode: dict[str, float] | None
    prefill_tokens: float
    prefill_requests: float
    prefill: dict[str, float]

    @property
    def decode_dominant(self) -> str | None:
        return None if self.decode is None else _dominant(self.decode, ("attention", "dense_gemm", "expert_gemm", "comm", "overhead"))

    @property
    def prefill_dominant(self) -> str:
        return _dominant(self.prefill, ("gemm", "attention", "comm", "overhead"))


def _dominant(parts: dict[str, float], names: tuple[str, ...]) -> str:
    return max(names, key=lambda n: parts[n])


def step_times(scenario: Scenario, rate: DecodeRate, options: BoundOptions) -> StepTimes:
    """The breakdown for ``scenario`` whose decode GPUs run at ``rate`` (the LP's)."""
    model, work = scenario.model, scenario.turn
    decode_batch = decode = None
    if rate.limited_by in ("tpot_slo", "hbm_capacity"):
        decode_batch = rate.batch_per_gpu
        decode = rate.step.parts(decode_batch, decode_batch * rate.kv_read_bytes_per_seq, decode_batch * rate.attn_s_per_seq)
    pp = prefill_pass(model, scenario.pe_hw, resolve_dtype(model, options.dtype), options.prefill_instance_nodes)
    attn = attn_flops_per_token(model, work.hit_tokens)
    tokens = max(1.0, QUOTA_S * pp.attn_flops_per_s / attn) if attn > 0 else work.miss_tokens
    requests = tokens / work.miss_tokens if work.miss_tokens > 0 else 0.0
    return StepTimes(decode_batch, decode, tokens, requests, pp.parts(tokens, tokens * attn, requests))
