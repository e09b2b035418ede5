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
    """A published figure with our value.

    Attributes:
        figure: The figure (``validation.records.PaperFigure``: name, source, the published value in SI ``unit``, the
            conditions it holds under, ``paper`` or ``deployment``).
        ours: Our value in the figure's unit, or ``None`` when it could not be computed.
    """

    figure: PaperFigure
    ours: float | None

    @property
    def rel_error(self) -> float | None:
        return None if self.ours is None else self.ours / self.figure.paper_value - 1.0


@dataclass(frozen=True)
class KernelFit:
    """One fitted step-time table of a shipped profile (``validate --kernels``).

    Attributes:
        profile: The shipped profile.
        table: The fitted table.
        origin: Where its rows came from.
        rows_fit: Rows the fit used.
        mape_fit: Mean absolute relative error on them, a fraction.
        rows_held_out: Rows held out (every fifth).
        mape_held_out: Mean absolute relative error on those, a fraction; ``None`` with none.
        worst_where: The row it misses most.
        worst_error: That row's signed relative error, a fraction.
    """

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
    """Every compared figure, the rows left out, and the kernel fits.

    What :func:`dualpath_plan.validate` returns.

    Attributes:
        rows: Every figure next to ours (:class:`Comparison`; ``rel_error`` = ours / published - 1), the paper's first,
            then the deployments'.
        skipped: The names of the rows left out (``skip_sim``: the simulated speed-up).
        kernels: Each shipped profile's fitted tables against their measurements (:class:`KernelFit`), or ``None`` when
            not asked for (``kernels``).
    """

    rows: tuple[Comparison, ...]
    skipped: tuple[str, ...]
    kernels: tuple[KernelFit, ...] | None = None
