"""Rendering of profiles (``profiles list`` / ``profiles show``), in the data files' own units."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.profiles import KINDS, SCHEMAS, Catalog, Profile

_UNIT_WORDS = {"Gbps": "Gb/s", "GBps": "GB/s", "TBps": "TB/s", "TFLOPS": "TFLOP/s", "frac": "", "params": "", "usd": "USD", "usd_per_hour": "USD/h"}


def file_values(kind: str, profile: Profile) -> dict[str, object]:
    """The profile's values keyed and scaled as in its data file (SI divided back out)."""
    out = {}
    for key, field in SCHEMAS[kind].items():
        value = getattr(profile, field.attr)
        if isinstance(value, (int, float)) and field.kind in ("float", "float_or_table"):
            value = value / field.si_factor
        elif isinstance(value, dict) and field.kind in ("table", "float_or_table"):
            value = {k: v / field.si_factor for k, v in value.items()}
        out[key] = value
    return out


def show_json(kind: str, profile: Profile) -> dict:
    return {"kind": kind, "name": profile.name, "path": profile.path, "values": file_values(kind, profile), "sources": dict(profile.sources)}


def list_json(cat: Catalog) -> dict:
    return {kind: {name: str(cat.files[kind][name]) for name in cat.names(kind)} for kind in KINDS}


def render_list(cat: Catalog, console: Console) -> None:
    for kind in KINDS:
        table = Table(title=f"{kind} profiles", title_justify="left")
        table.add_column("name")
        table.add_column("description")
        for name in cat.names(kind):
            table.add_row(name, cat.get(kind, name).description)
        console.print(table)


def _value_text(value: object, unit: str) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} = {fmt(v, unit)}" for k, v in value.items())
    if isinstance(value, bool) or isinstance(value, str) or value is None:
        return "not set" if value is None else str(value).lower() if isinstance(value, bool) else value
    return fmt(float(value), unit, digits=6)


def render_show(kind: str, profile: Profile, console: Console) -> None:
    sources = dict(profile.sources)
    table = Table(title=f"{kind} profile {profile.name} ({profile.path})", title_justify="left", show_lines=False)
    for col in ("key", "value", "source"):
        table.add_column(col, overflow="fold")
    for key, value in file_values(kind, profile).items():
        unit = _UNIT_WORDS.get(SCHEMAS[kind][key].unit, SCHEMAS[kind][key].unit)
        table.add_row(key, _value_text(value, unit), sources.get(key, ""))
    console.print(table)
