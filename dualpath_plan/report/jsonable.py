"""The ``--json`` payloads as JSON has them: plain dicts and lists, non-finite numbers as ``null``."""

from __future__ import annotations


def jsonable(value):
    """``value`` with every NaN or infinity replaced by ``None`` and tuples by lists (what ``--json`` prints)."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
