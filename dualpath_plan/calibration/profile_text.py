"""A calibrated hardware profile as TOML text: the base profile's file, its fitted keys replaced, their sources
saying where each number came from and how well it fits.

The base file's leading comment lines, key order and every value it does not fit are kept as written; a fitted
key the base lacks (an optional BF16 table) goes after the key it belongs with. Writing the same fit onto its own
output gives the same bytes, so a shipped profile regenerated from the database is reproducible byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

from dualpath_plan.calibration.fits import Fit, Report
from dualpath_plan.model.inputs import MAX_PROFILE_BYTES, read_regular
from dualpath_plan.model.profiles import parse_file

HEADER = "# Step-time tables fitted by dualpath-plan calibrate: each fitted key's source names its measurements and fit error."
AFTER = {"bf16_gemm_dense_frac": "gemm_grouped_frac", "bf16_gemm_grouped_frac": "bf16_gemm_dense_frac",
         "fp4_gemm_dense_frac": "bf16_gemm_grouped_frac", "fp4_gemm_grouped_frac": "fp4_gemm_dense_frac",
         "ep_normal_nvlink_GBps": "ep_nvlink_intercept_us", "ep_normal_nvlink_intercept_us": "ep_normal_nvlink_GBps"}


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {v!r}")


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def source_text(origin: str, report: Report) -> str:
    """The ``[sources]`` line of a fitted key: where its rows came from and how the fit meets them."""
    held = f", {report.rows_held_out} held out ({_percent(report.mape_held_out)})" if report.rows_held_out else ""
    dropped = f"; {report.dropped} rows faster than the datasheet left out" if report.dropped else ""
    note = f"; {report.note}" if report.note else ""
    return (f"dualpath-plan calibrate, {report.table} from {origin}: {report.rows_fit} rows fitted (mean absolute error "
            f"{_percent(report.mape_fit)}){held}; worst {100 * report.worst_error:+.0f} % at {report.worst_where}{dropped}{note}")


def _header(base: Path) -> list[str]:
    lines = []
    for line in read_regular(base, "profile file", MAX_PROFILE_BYTES).decode("utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines if HEADER in lines else lines + [HEADER]


def _ordered(keys: list[str], new: list[str]) -> list[str]:
    out = list(keys)
    for key in new:
        if key not in out:
            anchor = AFTER.get(key)
            out.insert(out.index(anchor) + 1 if anchor in out else len(out), key)
    return out


def profile_text(base: Path, fit: Fit, origins: dict[str, str]) -> str:
    """The text of ``base`` with ``fit``'s values and sources (``origins``: report table -> where its rows came from)."""
    data = parse_file(base)
    sources = dict(data.pop("sources", {}))
    order = _ordered(list(data), list(fit.values))
    values = {**data, **fit.values}
    for report in fit.reports:
        for key in fit.keys_of.get(report.table, ()):
            sources[key] = source_text(origins[report.table], report)
    lines = _header(base) + [f"{key} = {_value(values[key])}" for key in order]
    source_order = [k for k in order if k in sources] + [k for k in sources if k not in order]
    lines += ["", "[sources]"] + [f"{json.dumps(k) if '.' in k else k} = {_value(sources[k])}" for k in source_order]
    return "\n".join(lines) + "\n"
