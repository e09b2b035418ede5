"""The one domain exception. The CLI turns it into a single line on stderr and an exit code."""

from __future__ import annotations

import reprlib

from dualpath_plan.model.units import UNIT_WORDS

_ECHO = reprlib.Repr()  # how a refusal echoes a value it was given: a few levels, a few items, a few dozen characters
_ECHO.maxlevel, _ECHO.maxlist, _ECHO.maxdict, _ECHO.maxstring, _ECHO.maxother, _ECHO.maxlong = 2, 4, 4, 60, 60, 40


def shown(value: object) -> str:
    """``value`` as a refusal echoes it: its repr cut to a readable line, however deep or long it is (a value nested
    1,500 deep has no full repr: building one exceeds Python's recursion limit)."""
    return _ECHO.repr(value)


class PlanError(Exception):
    """A bad input or an impossible request, described in one line.

    ``exit_code`` is 2 for usage errors (unknown name, malformed flag) and 1 for domain errors
    (a valid request the model cannot satisfy).
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def field_error(where: str, key: str, value: object, unit: str, allowed: str, exit_code: int = 2) -> PlanError:
    """Build the standard message: where, which field, which value and unit, what is allowed."""
    unit_text = f" {UNIT_WORDS.get(unit, unit)}" if unit else ""
    return PlanError(f"{where}: {key} = {value!r}{unit_text} is not allowed; {allowed}", exit_code)
