"""Sweep axes: a flag's list or range of values, and a scenario file holding the same axes.

A value list is ``a,b,c``; a range is ``a..b`` (every whole number from ``a`` to ``b``) or ``a..b:n`` (``n`` evenly
spaced values from ``a`` to ``b``, both ends included; whole numbers stay whole when every step is whole).
``--set KEY=LIST`` or ``--set KEY=RANGE`` makes that profile field an axis: ``--set snic_Gbps=400,800``,
``--set hit_rate_frac=0.9..0.99:5``. A plain value is an axis of one value.

A scenario file (``--scenario F.toml``) holds the same axes under the flags' names::

    profiles = ["hopper", "blackwell"]        # or pairs = [["h20", "hopper"]] (PE type, DE type)
    models = ["ds-v3.2"]
    workloads = ["agentic-64k", "agentic-32k"]
    nodes = "6..144"                          # or gpus, budget_usd, budget_usd_per_hour: a list or a range text
    accounting = "exact"
    storage = "3fs"                           # a storage profile behind the storage NICs
    storage_nodes = "60..180:5"               # its node counts: an axis (absent: each split's planned count)
    [set]
    snic_Gbps = [400, 800]                    # a list, a range text or one value
    hit_rate_frac = "0.9..0.99:5"

An axis given both in the file and as a flag is refused: one source per axis.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualpath_plan.model.errors import PlanError, shown
from dualpath_plan.model.inputs import MAX_PROFILE_BYTES, check_shape, read_regular
from dualpath_plan.model.profiles import parse_override

MAX_AXIS_VALUES = 10_000  # values one axis may take: more is a typo (a range's count or ends)


@dataclass(frozen=True)
class BudgetAxis:
    """One kind of budget: its scenario-file key, flag, unit and row-file column."""

    kind: str
    key: str
    flag: str
    unit: str
    column: str


BUDGETS = {b.kind: b for b in (BudgetAxis("nodes", "nodes", "--nodes", "nodes", "budget_nodes"),
                               BudgetAxis("gpus", "gpus", "--gpus", "GPUs", "budget_gpus"),
                               BudgetAxis("usd", "budget_usd", "--budget-usd", "USD", "budget_usd"),
                               BudgetAxis("usd_per_hour", "budget_usd_per_hour", "--budget-usd-per-hour", "USD/h", "budget_usd_per_hour"))}
FILE_KEYS = ("profiles", "pairs", "models", "workloads", "accounting", *(b.key for b in BUDGETS.values()), "storage", "storage_nodes", "set")


@dataclass(frozen=True)
class Axes:
    """Every axis of a sweep: hardware (``profiles``, or ``pairs`` of (PE type, DE type)), models, workloads, one budget
    axis (``budget_kind``: nodes, gpus, usd or usd_per_hour), the ``--set`` axes as (key, value texts), and a storage
    profile behind the storage NICs (``storage``) with its node counts as an axis (``storage_nodes``; empty: each
    split's planned count) and the retention of an idle agent's KV."""

    profiles: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    models: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    accounting: str | None = None
    budget_kind: str | None = None
    budgets: tuple[float, ...] = ()
    sets: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())
    typed_sets: tuple[tuple[str, str], ...] = ()  # (key, the --set text as typed) of each --set axis, for messages
    storage: str | None = None
    storage_nodes: tuple[int, ...] = ()
    storage_retention_s: float = 0.0
    storage_nodes_file: str | None = None  # the scenario file the storage node counts came from (None: the flag), for messages

    @property
    def count(self) -> int:
        """Groups (one per combination of every axis value)."""
        hardware = len(self.profiles) + len(self.pairs)
        return hardware * max(1, len(self.models)) * max(1, len(self.workloads)) * max(1, len(self.budgets)) * \
            math.prod(len(v) for _, v in self.sets) * max(1, len(self.storage_nodes))


def _number(flag: str, text: str, whole: bool) -> float | int:
    """One number of an axis, written as people write numbers: ASCII digits, no ``_`` (Python's ``float`` also reads
    Arabic-Indic and full-width digits, and ``6_0`` as 60)."""
    try:
        if not text.isascii() or "_" in text:
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise PlanError(f"{flag} {text!r} is not a number; give a number, a list a,b,c or a range a..b or a..b:n", 2) from None
    if not math.isfinite(value):
        raise PlanError(f"{flag} = {text} is not allowed; must be a finite number", 2)
    if whole:
        if value != int(value):
            raise PlanError(f"{flag} = {text} is not allowed; must be a whole number", 2)
        return int(value)
    return int(value) if value == int(value) and "." not in text and "e" not in text.lower() else value


def spread_values(flag: str, text: str, whole: bool = False) -> tuple[float | int, ...]:
    """The numbers ``text`` names: one number, a list ``a,b,c``, a range ``a..b`` (whole numbers) or ``a..b:n``."""
    text = text.strip()
    if ".." not in text:
        values = tuple(_number(flag, part.strip(), whole) for part in text.split(","))
    else:
        ends, _, count = text.partition(":")
        lo_text, _, hi_text = ends.partition("..")
        lo, hi = _number(flag, lo_text.strip(), whole and not count), _number(flag, hi_text.strip(), whole and not count)
        if hi < lo:
            raise PlanError(f"{flag} {text!r}: the range ends at {hi_text.strip()}, below its start {lo_text.strip()}; give a..b with a <= b", 2)
        values = _range(flag, text, lo, hi, count, whole)
    if len(values) > MAX_AXIS_VALUES:
        raise PlanError(f"{flag} {text!r} names {len(values):,} values; an axis takes at most {MAX_AXIS_VALUES:,}", 2)
    if len(set(values)) < len(values):
        raise PlanError(f"{flag} {text!r} names a value twice; give each value once", 2)
    return values


def _range(flag: str, text: str, lo: float, hi: float, count: str, whole: bool) -> tuple[float | int, ...]:
    if not count:
        if lo != int(lo) or hi != int(hi):
            raise PlanError(f"{flag} {text!r}: a range a..b steps by whole numbers; give a..b:n for n values between fractions", 2)
        if hi - lo + 1 > MAX_AXIS_VALUES:
            raise PlanError(f"{flag} {text!r} names {int(hi - lo + 1):,} values; an axis takes at most {MAX_AXIS_VALUES:,}", 2)
        return tuple(range(int(lo), int(hi) + 1))
    n = _number(f"{flag} {text!r}: the count after ':'", count.strip(), True)
    if not 1 <= n <= MAX_AXIS_VALUES or (n == 1 and lo != hi):
        raise PlanError(f"{flag} {text!r}: the count {n} is not allowed; must be >= 2 (1 when a = b) and <= {MAX_AXIS_VALUES:,}", 2)
    step = (hi - lo) / (n - 1) if n > 1 else 0.0
    if not math.isfinite(step):
        raise PlanError(f"{flag} {text!r}: the range is wider than a number can hold; give ends of a real quantity", 2)
    values = [lo + i * step for i in range(n - 1)] + [hi]
    if all(v == round(v) for v in values) and lo == int(lo) and step == int(step):
        return tuple(int(round(v)) for v in values)
    if whole:
        raise PlanError(f"{flag} {text!r}: {n} values from {lo:g} to {hi:g} are not whole numbers; pick a count that steps by whole numbers", 2)
    return tuple(round(v, 12) for v in values)


def set_axis(text: str) -> tuple[str, tuple[str, ...]]:
    """One ``--set KEY=VALUE|LIST|RANGE`` as (key, the ``KEY=value`` texts of its values). A TOML list (``[...]``) or
    a quoted text stays one value; a bare ``a,b`` or ``a..b[:n]`` is an axis."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key or not raw or raw[0] in "[\"'{" or ("," not in raw and ".." not in raw):
        parse_override(text)  # one value: checked as --set always is
        return key, (text.strip(),)
    if ".." in raw:
        values = [_shown(v) for v in spread_values(f"--set {key}", raw)]
    else:
        values = [part.strip() for part in raw.split(",")]
        if any(not v for v in values):
            raise PlanError(f"--set {key}={raw}: an empty value in the list; give KEY=a,b,c", 2)
        if len(set(values)) < len(values):
            raise PlanError(f"--set {key}={raw} names a value twice; give each value once", 2)
    texts = tuple(f"{key}={v}" for v in values)
    for each in texts:
        parse_override(each)
    return key, texts


def _shown(value: float | int) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def read_scenario(path: Path) -> dict[str, Any]:
    """The axes of a scenario file, as the flags would give them (``--set`` texts, budget texts); refused in one line
    when it cannot be read, is not TOML, or holds a key or value no axis takes."""
    try:
        raw = read_regular(Path(path), "scenario file", MAX_PROFILE_BYTES)  # a regular file within the profiles' limits
    except PlanError as exc:
        raise PlanError(f"--scenario {exc}", exc.exit_code) from None
    try:
        text = raw.decode("utf-8")
        check_shape(text, f"--scenario {path}")
        data = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PlanError(f"--scenario {path}: not a TOML file ({str(exc).splitlines()[0]})", 2) from None
    if unknown := sorted(set(data) - set(FILE_KEYS)):
        raise PlanError(f"--scenario {path}: key {unknown[0]!r} is not allowed; the keys are {', '.join(FILE_KEYS)}", 2)
    out: dict[str, Any] = {}
    for key in ("profiles", "models", "workloads"):
        if key in data:
            out[key] = _words(path, key, data[key])
    if "pairs" in data:
        pairs = data["pairs"]
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p) for p in pairs):
            raise PlanError(f"--scenario {path}: pairs must be a list of [PE profile, DE profile] pairs of names", 2)
        out["pairs"] = tuple((a, b) for a, b in pairs)
    if "accounting" in data:
        if not isinstance(data["accounting"], str):
            raise PlanError(f"--scenario {path}: accounting must be a word (exact or paper)", 2)
        out["accounting"] = data["accounting"]
    if "storage" in data:
        if not isinstance(data["storage"], str):
            raise PlanError(f"--scenario {path}: storage must be the name of a storage profile", 2)
        out["storage"] = data["storage"]
    if "storage_nodes" in data:
        out["storage_nodes"] = _axis_text(path, "storage_nodes", data["storage_nodes"])
    budgets = [b.key for b in BUDGETS.values() if b.key in data]
    if len(budgets) > 1:
        raise PlanError(f"--scenario {path}: {budgets[0]} and {budgets[1]} are both given; a sweep has one budget axis", 2)
    for key in budgets:
        out[key] = _axis_text(path, key, data[key])
    if "set" in data:
        if not isinstance(data["set"], dict):
            raise PlanError(f"--scenario {path}: [set] must be a table of KEY = value, list or range", 2)
        out["set"] = tuple(f"{key}={_axis_text(path, f'set.{key}', value)}" for key, value in _flat_sets(data["set"]))
    return out


def _flat_sets(table: dict[str, Any]) -> list[tuple[str, Any]]:
    """``[set]``'s keys, with ``pe.KEY = ...`` and ``de.KEY = ...`` (TOML reads them as tables ``pe`` and ``de``) as the
    dotted ``--set`` keys they stand for."""
    out = []
    for key, value in table.items():
        if key in ("pe", "de") and isinstance(value, dict):
            out += [(f"{key}.{inner}", v) for inner, v in value.items()]
        else:
            out.append((key, value))
    return out


def _words(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise PlanError(f"--scenario {path}: {key} must be a name or a list of names", 2)
    return tuple(value)


def _axis_text(path: Path, key: str, value: Any) -> str:
    """A file's value as a flag's text: a list ``[a, b]`` becomes ``a,b``; a range text stays as it is."""
    if isinstance(value, bool) or isinstance(value, (dict, list)) and not value:
        raise PlanError(f"--scenario {path}: {key} = {shown(value)} is not allowed; give a number, a word, a list or a range text", 2)
    if isinstance(value, list):
        if not all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in value):
            raise PlanError(f"--scenario {path}: {key} must be a list of numbers or words", 2)
        return ",".join(str(v) for v in value)
    if isinstance(value, (int, float, str)):
        return str(value)
    raise PlanError(f"--scenario {path}: {key} = {shown(value)} is not allowed; give a number, a word, a list or a range text", 2)
