"""The records of ``validate``: a published figure, our value next to it, the whole comparison."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dualpath_plan.model.flags import check_flag

DEFAULT_SEED = 0


@dataclass(frozen=True)
class ValidateOptions:
    """Inputs of the simulator rows: the seed of their ``numpy.random.Generator`` (trajectories and the runner)
    and an optional ``on_progress(policy, fraction done, simulated s)`` hook for a progress display."""

    seed: int = DEFAULT_SEED
    on_progress: Callable[[str, float, float], None] | None = None

    def __post_init__(self) -> None:
        check_flag("--seed", self.seed)


# One condition of a comparison: (label, value, SI unit or "" for a name); the report formats it.
Condition = tuple[str, "float | str", str]


@dataclass(frozen=True)
class PaperFigure:
    """One published figure: ``paper_value`` in SI ``unit``; ``compute`` gives ours in the same unit. ``kind`` is
    ``paper`` (the DualPath paper's) or ``deployment`` (a published micro-benchmark or deployment figure that tests
    the step-time model); ``tolerance`` is the factor a row's value is held within, with its reason in its module."""

    name: str
    source_section: str
    paper_value: float
    unit: str
    compute: Callable[[ValidateOptions], float]
    condition: tuple[Condition, ...] = ()
    needs_sim: bool = False
    kind: str = "paper"
    tolerance: float | None = None


@dataclass(frozen=True)
class Comparison:
    """A figure with our value; ``rel_error`` = ours / paper - 1 (None when ours could not be computed)."""

    figure: PaperFigure
    ours: float | None

    @property
    def rel_error(self) -> float | None:
        return None if self.ours is None else self.ours / self.figure.paper_value - 1.0


@dataclass(frozen=True)
class KernelFit:
    """One fitted step-time table of a shipped profile (``validate --kernels``): its rows, the error on the rows the
    fit used and on those it held out (every fifth), and the row it misses most."""

    profile: str
    table: str
    origin: str
    rows_fit: int
    mape_fit: float
    rows_held_out: int
    mape_held_out: float | None
    worst_where: str
    worst_error: float


@dataclass(frozen=True)
class Validation:
    """Every compared figure, the names of the rows left out (``skip_sim``), and the kernel fits (``kernels``;
    ``None`` when not asked for)."""

    rows: tuple[Comparison, ...]
    skipped: tuple[str, ...]
    kernels: tuple[KernelFit, ...] | None = None
