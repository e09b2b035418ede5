"""Strict field schemas for the profile data files, and the checks every value must pass.

A schema maps each data-file key (which names its unit: ``cnic_Gbps``) to a :class:`Field` that
says its type, unit, range, the SI attribute it becomes and what it means. A value that breaks a
rule raises :class:`~dualpath_plan.model.errors.PlanError` naming the file, key, value, unit and the rule.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

from dualpath_plan.model.errors import PlanError, field_error
from dualpath_plan.model.units import TO_SI, UNIT_WORDS


@dataclass(frozen=True)
class Field:
    """One key of a data file.

    ``kind`` is ``float``, ``int``, ``str``, ``bool``, ``table`` (a string -> number map, numbers
    in ``unit``) or ``float_or_table`` (either: a number is one value for every key, a table a value per key).
    ``attr`` is the SI attribute name on the loaded profile. Numbers must be finite
    and ``> 0``; ``allow_zero`` relaxes that to ``>= 0``; ``min_value`` and ``max_value`` are the
    inclusive plausible range in the file's unit, and ``reason`` says in one line why (physics or the
    largest real system). ``choices`` restricts strings. A field with ``required=False`` takes
    ``default`` when absent.
    """

    kind: str
    attr: str
    unit: str = ""
    doc: str = ""
    allow_zero: bool = False
    min_value: float | None = None
    max_value: float | None = None
    reason: str = ""
    choices: tuple[str, ...] = ()
    required: bool = True
    default: Any = None

    @property
    def si_factor(self) -> float:
        return TO_SI.get(self.unit, 1.0)

    def allowed_text(self) -> str:
        """The rule, in words, for error messages."""
        if self.kind == "str":
            return f"must be one of {', '.join(self.choices)}" if self.choices else "must be a string"
        if self.kind == "bool":
            return "must be true or false"
        if self.kind in ("table", "float_or_table"):
            within = f" from {self.min_value:g} to {self.max_value:g}" if self.min_value is not None and self.max_value is not None else " > 0"
            either = "a finite number or " if self.kind == "float_or_table" else ""
            return f"must be {either}a table of names to finite numbers{within} ({self.unit})" + (f"; {self.reason}" if self.reason else "")
        at_least = self.min_value is not None and (self.min_value > 0 or self.allow_zero)  # else zero itself is refused
        low = f">= {self.min_value:g}" if at_least else (">= 0" if self.allow_zero else "> 0")
        high = f" and <= {self.max_value:g}" if self.max_value is not None else ""
        noun = "a whole number" if self.kind == "int" else "a finite number"
        return f"must be {noun} {low}{high}" + (f" ({self.reason})" if self.reason else "")


def _check_number(where: str, key: str, field: Field, value: Any) -> float:
    unit = field.unit
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        words = UNIT_WORDS.get(unit, unit)
        hint = "" if not (isinstance(value, str) and unit) else f" {words}" if words.startswith("(") else f" (the number alone, in {words})"
        raise field_error(where, key, value, "", field.allowed_text() + hint)
    if field.kind == "int" and not (isinstance(value, int) or float(value).is_integer()):
        raise field_error(where, key, value, unit, field.allowed_text())
    number = float(value)
    if not math.isfinite(number) or not math.isfinite(number * field.si_factor):  # 1e308 Gb/s overflows in B/s
        raise field_error(where, key, value, unit, field.allowed_text())
    too_low = (number < 0 if field.allow_zero else number <= 0) or (field.min_value is not None and number < field.min_value)
    too_high = field.max_value is not None and number > field.max_value
    if too_low or too_high:
        raise field_error(where, key, value, unit, field.allowed_text())
    return number


def check_value(where: str, key: str, field: Field, value: Any) -> Any:
    """Validate one value against its field and return it converted to SI."""
    if field.kind == "str":
        if not isinstance(value, str) or (field.choices and value not in field.choices):
            raise field_error(where, key, value, field.unit, field.allowed_text())
        return value
    if field.kind == "bool":
        if not isinstance(value, bool):
            raise field_error(where, key, value, field.unit, field.allowed_text())
        return value
    if field.kind == "table" or field.kind == "float_or_table" and isinstance(value, dict):
        if not isinstance(value, dict) or not value:
            raise field_error(where, key, value, field.unit, field.allowed_text())
        return {str(k): _check_number(where, f"{key}.{k}", field, v) * field.si_factor for k, v in value.items()}
    number = _check_number(where, key, field, value)
    return int(number) if field.kind == "int" else number * field.si_factor


def did_you_mean(word: str, choices) -> str:
    """`` (did you mean 'hopper'?)`` for a near miss, else nothing: the same name in another case, else the names that
    begin with it (``h100`` -> ``h100-dgx``; up to three), else the closest spelling (a typo), case aside."""
    lower = {c.lower(): c for c in choices}
    key = word.lower()
    if key in lower:
        close = [lower[key]]
    elif len(key) >= 2 and (starts := sorted(c for k, c in lower.items() if k.startswith(key))):
        close = starts[:3]
    else:
        close = [lower[k] for k in difflib.get_close_matches(key, list(lower), n=1, cutoff=0.75)]
    if not close:
        return ""
    return f" (did you mean {close[0]!r}?)" if len(close) == 1 else f" (did you mean one of {', '.join(map(repr, close))}?)"


def check_table(where: str, data: dict[str, Any], schema: dict[str, Field]) -> dict[str, Any]:
    """Validate a whole parsed file against ``schema``; return ``{attr: SI value}``.

    Unknown keys and missing required keys are refused; ``sources`` (a table of strings citing
    where each value comes from) and ``kind`` are handled by the caller.
    """
    for key in data:
        if key not in schema:
            known = ", ".join(sorted(schema))
            raise PlanError(f"{where}: unknown key {key!r}{did_you_mean(key, schema)}; known keys: {known}", 2)
    missing = [key for key, field in schema.items() if field.required and key not in data]
    out: dict[str, Any] = {}
    for key, field in schema.items():
        if key in data:
            out[field.attr] = check_value(where, key, field, data[key])
        elif field.required:
            continue
        else:
            out[field.attr] = field.default
    if missing:
        listed = ", ".join(f"{key} ({schema[key].unit or schema[key].kind})" for key in missing)
        raise PlanError(f"{where}: missing required keys: {listed}; a shipped profile of this kind has every key "
                        "(`dualpath-plan profiles list` names them; `profiles show NAME` lists a profile's keys, units and sources)", 2)
    return out
