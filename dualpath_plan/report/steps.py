"""Rendering of the step-time breakdown (``planning.steps``): what a decode step and a prefill pass cost."""

from __future__ import annotations

from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.planning.steps import StepTimes

TERM_WORDS = {"hbm": "HBM reads", "gemm": "GEMMs", "attention": "attention", "comm": "all-to-all", "overhead": "fixed costs"}
_DECODE_KEYS = ("hbm", "comm", "overhead", "hidden", "step")
_PREFILL_KEYS = ("gemm", "attention", "comm", "overhead", "hidden", "pass")


def to_json(steps: StepTimes) -> dict:
    """The ``step_time`` key of ``bottleneck --json``: seconds per term, the batch, the dominant term."""
    decode = None
    if steps.decode is not None:
        decode = {"batch_per_gpu": steps.decode_batch, **{f"{k}_s": steps.decode[k] for k in _DECODE_KEYS}, "dominant": steps.decode_dominant}
    prefill = {"tokens_per_gpu": steps.prefill_tokens, "requests": steps.prefill_requests,
               **{f"{k}_s": steps.prefill[k] for k in _PREFILL_KEYS}, "dominant": steps.prefill_dominant}
    return {"decode": decode, "prefill": prefill}


def table(steps: StepTimes) -> Table:
    """One GPU's decode step and prefill pass, term by term."""
    out = Table(title="Step time on one GPU (the LP's decode batch; a prefill batch of one attention quota)", title_justify="left")
    out.add_column("term")
    out.add_column("decode step", justify="right")
    out.add_column("prefill pass", justify="right")
    d = steps.decode or {}
    dash = "-"
    out.add_row("batch", dash if not d else fmt(steps.decode_batch, "sequences"), f"{fmt(steps.prefill_tokens, 'tokens')} ({fmt(steps.prefill_requests, 'turns')})")
    out.add_row("HBM reads", fmt(d["hbm"], "s") if d else dash, dash)
    out.add_row("GEMMs", dash, fmt(steps.prefill["gemm"], "s"))
    out.add_row("attention", dash, fmt(steps.prefill["attention"], "s"))
    for key, words in (("comm", "all-to-all"), ("overhead", "fixed costs")):
        out.add_row(words, fmt(d[key], "s") if d else dash, fmt(steps.prefill[key], "s"))
    hidden = lambda s: f"-{fmt(s, 's')}" if s > 0 else "none"  # noqa: E731
    out.add_row("hidden by overlap", hidden(d["hidden"]) if d else dash, hidden(steps.prefill["hidden"]))
    out.add_row("total", fmt(d["step"], "s") if d else dash, fmt(steps.prefill["pass"], "s"))
    out.add_row("dominant", TERM_WORDS[steps.decode_dominant] if d else dash, TERM_WORDS[steps.prefill_dominant])
    return out
