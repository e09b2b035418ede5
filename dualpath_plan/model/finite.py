"""Stage-boundary guards: nothing non-finite passes from one stage to the next.

Every input is range-checked (``profiles.RANGES``, ``flags.FLAGS``), so the arithmetic downstream should stay
finite. Should some mix of legal inputs still produce a NaN or an infinity, :func:`guard` stops it where one
stage hands its record to the next (scenario -> limits -> bound -> plan, sweep or runner): a domain error
(exit 1) in one line naming the stage, the first non-finite value's field and the inputs that caused it,
never a NaN in a table or a traceback further on.

Infinity is a value on purpose in two places, "no limit" (an offline run's TPOT SLO, an unbounded end of
the P/D range), named in
:data:`MAY_BE_INFINITE`; a missing number is ``None``, never NaN. Raw per-turn records (NaN for a time not
reached yet) are marked :data:`RAW` and passed through whole.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterator, TypeVar

import numpy as np

from dualpath_plan.model.errors import PlanError

T = TypeVar("T")

# Field names (the last part of a path) whose value may be +inf by design: "no limit" or "never".
MAY_BE_INFINITE = frozenset({"tpot_slo_s", "upper"})  # upper: a P/D range no link bounds from above (bandwidth.PdRange)
# A dataclass field with ``metadata={RAW: why}`` is not checked: raw per-turn times, where NaN means "not yet".
RAW = "raw"


def nonfinite(record: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """Every ``(field path, value)`` in ``record`` (dataclasses, dicts, tuples, lists, numpy arrays, numbers,
    nested) whose value is NaN, or infinite in a field not in :data:`MAY_BE_INFINITE`."""
    if isinstance(record, bool) or record is None or isinstance(record, (str, bytes, int)):
        return
    if isinstance(record, float) or isinstance(record, np.floating):
        value = float(record)
        if math.isnan(value) or (math.isinf(value) and path.rsplit(".", 1)[-1] not in MAY_BE_INFINITE):
            yield path, value
        return
    if isinstance(record, np.ndarray):
        yield from _array(record, path)
    elif dataclasses.is_dataclass(record) and not isinstance(record, type):
        for f in dataclasses.fields(record):
            if f.metadata.get(RAW) is None:
                yield from nonfinite(getattr(record, f.name), _join(path, f.name))
    elif isinstance(record, dict):
        for key, value in record.items():
            yield from nonfinite(value, _join(path, str(key)))
    elif isinstance(record, (tuple, list)):
        for i, value in enumerate(record):
            yield from nonfinite(value, f"{path}[{i}]")


def _array(values: np.ndarray, path: str) -> Iterator[tuple[str, float]]:
    if values.dtype.kind not in "fc" or values.size == 0:
        return
    bad = np.isnan(values) if path.rsplit(".", 1)[-1] in MAY_BE_INFINITE else ~np.isfinite(values)
    if bad.any():
        index = np.unravel_index(int(np.argmax(bad)), values.shape)
        yield f"{path}[{', '.join(map(str, index))}]", float(values[index])


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


_CHECKED: dict[type, tuple[str, ...]] = {}  # per dataclass: the fields that are checked (not RAW)


def _checked_fields(cls: type) -> tuple[str, ...]:
    names = _CHECKED.get(cls)
    if names is None:
        names = _CHECKED[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get(RAW) is None)
    return names


def _finite(record: Any, name: str) -> bool:
    """True exactly when :func:`nonfinite` finds nothing in ``record`` (whose field name is ``name``), without
    building any path: the guard's fast pass over every record, the slow one only naming what it found."""
    kind = type(record)
    if kind is float:
        return record - record == 0.0 or (record == math.inf and name in MAY_BE_INFINITE)  # NaN and inf give NaN
    if kind is int or kind is bool or kind is str or record is None:
        return True
    if kind is dict:
        return all(_finite(value, str(key)) for key, value in record.items())
    if kind is tuple or kind is list:
        return all(_finite(value, "") for value in record)  # an item's path ends in [i]: never a MAY_BE_INFINITE name
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return all(_finite(getattr(record, field), field) for field in _checked_fields(kind))
    return next(nonfinite(record, name), None) is None  # numpy values and arrays, subclasses: the full rules


def guard(record: T, stage: str, inputs: str) -> T:
    """``record`` unchanged when it is finite; else a domain error naming ``stage``, the first bad field and
    ``inputs`` (what the user gave: profiles, nodes, overrides)."""
    if _finite(record, ""):
        return record
    for path, value in nonfinite(record):
        raise PlanError(f"{stage} gave {path} = {value} for {inputs}: each input is inside its range, but together they "
                        "take the model's arithmetic past what a float holds; change one of them", 1)
    return record
