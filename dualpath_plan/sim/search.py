"""The capacity search's bracket: which arrival rates to probe next, and what a round of probes teaches.

The capacity is the highest agent arrival rate (APS) whose online run meets the SLO (paper section 7, online; notes
6.3). The search keeps a bracket ``(lo, hi]``: ``lo`` the highest rate seen within the SLO (0 before any), ``hi``
the lowest rate seen to break it (first the LP bound's rate: the search never probes above the bound). It ends
when the bracket is within ``rel_tol`` of its upper end, or after ``max_rounds`` rounds of probes (one probe a round
with one worker: ``find_capacity``'s ``max_probes``).

**Where it probes.** The runner is built to reach its bound (the scheduler keeps the bound's resources busy), so
the first probe goes where the answer usually is: at ``(1 - rel_tol)`` of the bound. If that rate meets the SLO
the bracket is already within the tolerance, and the search ends after one probe with the same guarantee as a
bisection from the middle; if it misses, its run stopped at the first window that broke the SLO, cheaper than
a full probe, and the search goes on below it. After that each round splits the bracket into ``width + 1``
equal parts and probes the ``width`` rates between them: bisection with one worker, a ``(width + 1)``-section
with more, so that workers running the probes side by side shorten the search (``log(1 / rel_tol) /
log(width + 1)`` rounds instead of ``log2``).

**The floor.** After :data:`FLOOR_AFTER` rounds of misses with none within the SLO, one probe at :data:`FLOOR_FRACTION`
of the bound, where the cluster is nearly idle: if that misses too, no rate meets the SLO and the search stops there
(else it goes on above it).

A round's rates are a pure function of the earlier rounds and the width asked, so a search replayed over the same
results with the same widths asks for the same rates again. Other widths probe other rates: the answer is the same
capacity within the tolerance, not the same number.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

FLOOR_AFTER = 3  # rounds of misses, with no probe within the SLO, before the floor probe
FLOOR_FRACTION = 1e-3  # the floor probe's rate, a fraction of the bound: the cluster is then nearly idle
FLOAT_SLACK = 1e-9  # relative: a bracket of exactly the tolerance is within it, whatever the last bit of a product


@dataclass(frozen=True)
class Bracket:
    """A capacity search's state: the bound's rate, the bracket ``(lo, hi]``, every probe so far in order and the rounds
    they came in."""

    bound_aps: float
    rel_tol: float = 0.05
    max_rounds: int = 12
    lo: float = 0.0
    hi: float | None = None  # None: the bound's rate
    probes: tuple[tuple[float, bool], ...] = ()
    rounds: int = 0
    floored: bool = False  # the floor probe was made and missed: no rate meets the SLO

    @property
    def top(self) -> float:
        return self.bound_aps if self.hi is None else self.hi

    @property
    def done(self) -> bool:
        return (self.floored or self.rounds >= self.max_rounds or not self.bound_aps > 0
                or self.top - self.lo <= self.rel_tol * self.top * (1 + FLOAT_SLACK))

    @property
    def met(self) -> bool:
        """Some probe met the SLO (``lo`` is a rate the cluster sustains)."""
        return self.lo > 0

    def rates(self, width: int = 1) -> tuple[float, ...]:
        """The next round's rates, at most ``width`` (none when the search is done)."""
        if self.done:
            return ()
        width = max(1, int(width))
        if not self.met and self.rounds >= FLOOR_AFTER:
            return (self.bound_aps * FLOOR_FRACTION,)
        if not self.probes:  # where the runner's design puts the answer, then the rest of the range below it
            first = self.top * (1 - self.rel_tol)
            return (first,) + tuple(self.lo + (first - self.lo) * i / width for i in range(width - 1, 0, -1))
        return tuple(self.lo + (self.top - self.lo) * i / (width + 1) for i in range(width, 0, -1))

    def after(self, results: Sequence[tuple[float, bool]]) -> Bracket:
        """The bracket once a round's probes ((rate, met the SLO) each, in the order asked) are in: ``hi`` the lowest
        rate that missed, ``lo`` the highest below it that met (a rate that met above one that missed is the draw's
        noise; the lower miss stands)."""
        hi = min([self.top] + [aps for aps, ok in results if not ok])
        lo = max([self.lo] + [aps for aps, ok in results if ok and aps < hi])
        floored = not self.met and self.rounds >= FLOOR_AFTER and lo == 0  # this round was the floor probe, and it missed
        return replace(self, lo=lo, hi=hi, probes=self.probes + tuple((float(a), bool(ok)) for a, ok in results), rounds=self.rounds + 1,
                       floored=floored)
