"""Rendering of the step-time breakdown (``planning.steps``): what a decode step and a prefill pass cost."""

from __future__ import annotations

from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.planning.steps import StepTimes

TERM_WORDS = {"attention": "attention", "dense_gemm": "dense GEMMs", "expert_gemm": "expert GEMMs", "gemm": "GEMMs",
              "comm": "all-to-all", "overhead": "fixed costs"}
_DECODE_KEYS = ("attention", "dense_gemm", "expert_gemm", "work", "comm", "overhead", "hidden", "step")
_PREFILL_KEYS = ("gemm", "attention", "comm", "overhead", "hidden", "pass")
_FAMILIES = ("attention", "dense_gemm", "expert_gemm")


def decode_set_by(decode: dict[str, float]) -> dict[str, str]:
    """Which side of its roofline sets each decode kernel family: ``memory`` (HBM reads) or ``compute``."""
    return {k: "memory" if decode[f"{k}_memory_bound"] else "compute" for k in _FAMILIES}


def to_json(steps: StepTimes) -> dict:
    """The ``step_time`` key of ``bottleneck --json``: seconds per term, the batch, the dominant term, and which
    side of each decode kernel family's roofline sets it."""
    decode = None
    if steps.decode is not None:
        decode = {"batch_per_gpu": steps.decode_batch, **{f"{k}_s": steps.decode[k] for k in _DECODE_KEYS},
                  "set_by": decode_set_by(steps.decode), "dominant": steps.decode_dominant}
    prefill = {"tokens_per_gpu": steps.prefill_tokens, "requests": steps.prefill_requests,
               **{f"{k}_s": steps.prefill[k] for k in _PREFILL_KEYS}, "dominant": steps.prefill_dominant}
    return {"decode": decode, "prefill": prefill}


def table(steps: StepTimes) -> Table:
    """One GPU's decode step and prefill pass, term by term, with what sets each decode kernel family."""
    out = Table(title="Step time on one GPU (the LP's decode batch; a prefill batch of one attention quota)", title_justify="left")
    for name, right in (("term", False), ("decode step", True), ("set by", False), ("prefill pass", True)):
        out.add_column(name, justify="right" if right else "left")
    d = steps.decode or {}
    p = steps.prefill
    dash = "-"
    seconds = lambda v: fmt(v, "s")  # noqa: E731
    set_by = decode_set_by(d) if d else {}
    out.add_row("batch", dash if not d else fmt(steps.decode_batch, "sequences"), "",
                f"{fmt(steps.prefill_tokens, 'tokens')} ({fmt(steps.prefill_requests, 'turns')})")
    out.add_row("attention", seconds(d["attention"]) if d else dash, set_by.get("attention", ""), seconds(p["attention"]))
    out.add_row("dense GEMMs", seconds(d["dense_gemm"]) if d else dash, set_by.get("dense_gemm", ""), seconds(p["gemm"]) + " (all GEMMs)")
    out.add_row("expert GEMMs", seconds(d["expert_gemm"]) if d else dash, set_by.get("expert_gemm", ""), dash)
    if d and d["work"] > d["attention"] + d["dense_gemm"] + d["expert_gemm"] * (1 + 1e-12):
        out.add_row("MTP drafts", seconds(d["work"] - d["attention"] - d["dense_gemm"] - d["expert_gemm"]), "", dash)
    out.add_row("all-to-all", seconds(d["comm"]) if d else dash, "network" if d and d["comm"] > 0 else "", seconds(p["comm"]))
    out.add_row("fixed costs", seconds(d["overhead"]) if d else dash, "latency" if d else "", seconds(p["overhead"]))
    hidden = lambda s: f"-{seconds(s)}" if s > 0 else "none"  # noqa: E731
    out.add_row("hidden by overlap", hidden(d["hidden"]) if d else dash, "", hidden(p["hidden"]))
    out.add_row("total (decode: per generated token)", seconds(d["step"]) if d else dash, "", seconds(p["pass"]))
    out.add_row("dominant", TERM_WORDS[steps.decode_dominant] if d else dash, "", TERM_WORDS[steps.prefill_dominant])
    return out
