"""A part of a computation run in a second thread beside the rest, so that a whole command uses both cores of a
small machine where its parts do not depend on each other.

Only parts whose time is spent outside the GIL gain: numpy's copies into large arrays (and the kernel giving the
process the fresh pages they first write), llvmlite's calls while numba loads the compiled engine from its cache.
The part computes the same values in the same order either way, so results do not change.
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")

BIG_ROWS = 1 << 20  # rows worth a second thread (writing them takes milliseconds; starting a thread, tens of microseconds)


class Beside(Generic[T]):
    """``fn(*args)`` started in a second thread; :meth:`result` waits for it and returns its value or raises what it
    raised."""

    def __init__(self, fn: Callable[..., T], *args: object) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="dualpath-plan beside")
        self._thread.start()

    def _run(self, fn: Callable[..., T], args: tuple) -> None:
        try:
            self._value = fn(*args)
        except BaseException as error:  # noqa: BLE001 (handed to the caller by result)
            self._error = error

    def result(self) -> T:
        """The part's value, once it has finished; what it raised is raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def in_halves(n: int, write: Callable[[int, int], None]) -> None:
    """``write(0, n)`` as ``write(0, n // 2)`` in a second thread beside ``write(n // 2, n)`` when ``n`` is over
    ``BIG_ROWS`` (the two must write disjoint rows)."""
    if n <= BIG_ROWS:
        write(0, n)
        return
    first = Beside(write, 0, n // 2)
    try:
        write(n // 2, n)
    finally:
        first.result()


def begun(big: bool, fn: Callable[..., T], *args: object) -> Callable[[], T]:
    """``fn(*args)`` begun now in a second thread when ``big`` (the returned call waits for it), else computed when the
    returned call is made."""
    if not big:
        return lambda: fn(*args)
    return Beside(fn, *args).result
