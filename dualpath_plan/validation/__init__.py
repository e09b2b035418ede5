"""``validate``: published figures next to ours, with the error of each.

Two kinds of rows (``records.PaperFigure.kind``): the DualPath paper's own figures (``paper``: the P/D range,
Table 1's cache-compute ratios, the offline speed-up), and published deployment and micro-benchmark figures that
test the step-time model (``deployments``). No number that sets a parameter appears here: parameters come from the
micro-benchmarks cited in the profiles, and these rows only test them (docs/assumptions.md).
"""

from __future__ import annotations

import math

from dualpath_plan.validation import deployments, paper
from dualpath_plan.validation.paper import CONTEXT_16K_TOKENS, CONTEXT_64K_TOKENS, SPEEDUP_AGENTS, TRACE_CONTEXT_TOKENS
from dualpath_plan.validation.records import DEFAULT_SEED, Comparison, Condition, PaperFigure, ValidateOptions, Validation

__all__ = ["CONTEXT_16K_TOKENS", "CONTEXT_64K_TOKENS", "DEFAULT_SEED", "SPEEDUP_AGENTS", "TRACE_CONTEXT_TOKENS", "Comparison",
           "Condition", "PaperFigure", "ValidateOptions", "Validation", "figures", "validate"]


def figures() -> tuple[PaperFigure, ...]:
    """Every row, in display order: the paper's, then the deployments'."""
    return (*paper.figures(), *deployments.figures())


def validate(skip_sim: bool = False, options: ValidateOptions = ValidateOptions(), kernels: bool = False) -> Validation:
    """Compute our value for every figure (leaving out the simulator rows when ``skip_sim``), and with ``kernels``
    the fit of every shipped profile's step-time tables (``validation.kernels``; the 'calibrate' extra)."""
    if kernels:  # the extra is there before any row is computed, or the one line says how to install it
        from dualpath_plan.calibration.aiconfigurator import package_version

        package_version()
    rows, skipped = [], []
    for figure in figures():
        if skip_sim and figure.needs_sim:
            skipped.append(figure.name)
            continue
        ours = float(figure.compute(options))
        rows.append(Comparison(figure, ours if math.isfinite(ours) else None))
    fits = None
    if kernels:
        from dualpath_plan.validation.kernels import kernel_fits

        fits = kernel_fits()
    return Validation(tuple(rows), tuple(skipped), fits)
