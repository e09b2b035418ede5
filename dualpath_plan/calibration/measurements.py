"""Kernel measurements: one timed kernel call per row, and the CSV a user writes them in.

The CSV (``examples/calibration.csv`` ships one) has a header and these columns, one measurement per line:

========== ======================================================================================================
column     meaning
========== ======================================================================================================
op         ``gemm``, ``grouped_gemm``, ``mla_decode``, ``mla_prefill``, ``a2a_ll_dispatch``, ``a2a_ll_combine``,
           ``a2a_normal_dispatch`` or ``a2a_normal_combine`` (the low-latency kernels serve decode, the normal ones
           prefill)
dtype      ``fp8``, ``bf16`` or ``fp4``: the GEMM's inputs; for ``mla_*`` the KV cache's; for ``a2a_*`` ``fp8`` (unused)
shape      ``gemm``: ``NxK`` (output columns x reduction); ``grouped_gemm``: ``HxIxExk`` (hidden, one expert's
           intermediate size, experts, experts per token); ``mla_*``: the query heads; ``a2a_*``: ``Hxk``
tokens     ``gemm``: rows M; ``grouped_gemm``: tokens this GPU routes, on average (all its experts' GEMMs of one MoE layer);
           ``mla_decode``: sequences in the batch; ``mla_prefill``: prompts in the batch; ``a2a_*``: tokens per GPU
ep_size    GPUs in the expert-parallel group (``grouped_gemm``: experts spread over them; ``a2a_*``); 1 otherwise
path       ``nvlink`` or ``rdma`` for ``a2a_*`` (inside one NVLink domain or across); ``-`` otherwise
context    ``mla_decode``: KV tokens each sequence attends to; ``mla_prefill``: prompt tokens; 0 otherwise
latency_us the measured time of one call (one layer), microseconds
========== ======================================================================================================

MLA rows are DeepSeek's geometry (latent 512, RoPE 64, nope 128, V 128 per head): decode kernels run the absorbed
form, prefill kernels the MHA form, and an FP8 cache holds 576 bytes per key and layer, a BF16 one 1,152 (``fits``
counts their FLOPs and bytes; a kernel reading FlashMLA's 656-byte FP8 layout is credited 12 % less bandwidth). Every field is checked; a bad one is
one line naming the file, the line number and the field (exit 2).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from dualpath_plan.model.errors import PlanError, shown
from dualpath_plan.model.inputs import read_regular

OPS = ("gemm", "grouped_gemm", "mla_decode", "mla_prefill", "a2a_ll_dispatch", "a2a_ll_combine", "a2a_normal_dispatch", "a2a_normal_combine")
DTYPES = ("fp8", "bf16", "fp4")
PATHS = ("nvlink", "rdma")
COLUMNS = ("op", "dtype", "shape", "tokens", "ep_size", "path", "context", "latency_us")
SHAPE_PARTS = {"gemm": 2, "grouped_gemm": 4, "mla_decode": 1, "mla_prefill": 1}  # a2a_*: 2 (H x k)
MAX_CSV_BYTES = 1 << 26  # 64 MiB: a whole GPU's database is a few hundred thousand short lines
MAX_VALUE = 1e9  # tokens, sizes and contexts: far above any kernel call


@dataclass(frozen=True)
class Measurement:
    """One timed kernel call (module docstring), SI: ``latency_s`` in seconds; ``where`` names its origin."""

    op: str
    dtype: str
    shape: tuple[int, ...]
    tokens: float
    ep_size: int
    path: str
    context: float
    latency_s: float
    where: str

    @property
    def key(self) -> tuple:
        """What makes two rows the same measurement."""
        return (self.op, self.dtype, self.shape, self.tokens, self.ep_size, self.path, self.context)

    def csv_row(self) -> list[str]:
        return [self.op, self.dtype, "x".join(map(str, self.shape)), f"{self.tokens:g}", str(self.ep_size), self.path,
                f"{self.context:g}", f"{self.latency_s * 1e6:.9g}"]


def _bad(where: str, field: str, value: str, allowed: str) -> PlanError:
    return PlanError(f"{where}: {field} = {shown(value)} is not allowed; {allowed}", 2)


def _number(where: str, field: str, text: str, low: float, unit: str = "", whole: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        hint = f" (a number of {unit}; the unit is in the column name)" if unit else ""
        raise _bad(where, field, text, f"must be a number{hint}") from None
    if not math.isfinite(value) or value < low or value > MAX_VALUE or (whole and not value.is_integer()):
        noun = "a whole number" if whole else "a finite number"
        raise _bad(where, field, text, f"must be {noun} >= {low:g} and <= {MAX_VALUE:g}" + (f" {unit}" if unit else ""))
    return value


def _shape(where: str, op: str, text: str) -> tuple[int, ...]:
    parts = 2 if op.startswith("a2a_") else SHAPE_PARTS[op]
    pieces = text.lower().split("x")
    form = {"gemm": "NxK", "grouped_gemm": "HxIxExk", "mla_decode": "heads", "mla_prefill": "heads"}.get(op, "Hxk")
    if len(pieces) != parts or not all(p.isdigit() and 0 < int(p) <= MAX_VALUE for p in pieces):
        raise _bad(where, "shape", text, f"must be {form} for op {op}: {parts} whole number{'s' if parts > 1 else ''} >= 1 joined by 'x'")
    shape = tuple(int(p) for p in pieces)
    if op == "grouped_gemm" and shape[3] > shape[2]:
        raise _bad(where, "shape", text, "must have experts per token k <= experts E (HxIxExk)")
    return shape


def parse_row(fields: dict[str, str], where: str) -> Measurement:
    """One CSV line as a :class:`Measurement`, every field checked (module docstring)."""
    op = fields["op"].strip()
    if op not in OPS:
        raise _bad(where, "op", op, f"must be one of {', '.join(OPS)}")
    dtype = fields["dtype"].strip()
    if dtype not in DTYPES:
        raise _bad(where, "dtype", dtype, f"must be one of {', '.join(DTYPES)}")
    shape = _shape(where, op, fields["shape"].strip())
    tokens = _number(where, "tokens", fields["tokens"].strip(), 0 if op == "grouped_gemm" else 1, whole=op == "gemm")
    if tokens <= 0:  # a GPU of a wide expert-parallel group may route a fraction of a token per call on average
        raise _bad(where, "tokens", fields["tokens"].strip(), "must be > 0 tokens")
    ep = int(_number(where, "ep_size", fields["ep_size"].strip(), 1, whole=True))
    path = fields["path"].strip()
    if op.startswith("a2a_") and path not in PATHS:
        raise _bad(where, "path", path, f"must be one of {', '.join(PATHS)} for op {op}")
    if not op.startswith("a2a_") and path not in ("-", ""):
        raise _bad(where, "path", path, f"must be '-' for op {op} (only a2a_* ops have a path)")
    context = _number(where, "context", fields["context"].strip(), 1 if op.startswith("mla_") else 0)
    latency = _number(where, "latency_us", fields["latency_us"].strip(), 0, unit="microseconds")
    if latency <= 0:
        raise _bad(where, "latency_us", fields["latency_us"].strip(), "must be > 0 microseconds")
    return Measurement(op, dtype, shape, tokens, ep, path if op.startswith("a2a_") else "-", context, latency * 1e-6, where)


def read_csv(path: Path) -> tuple[Measurement, ...]:
    """Every measurement of the CSV at ``path``; a missing column, a bad field or a repeated measurement is one
    line naming the line number and the field."""
    data = read_regular(path, "measurement CSV", MAX_CSV_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); give a CSV of measurements", 2) from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise PlanError(f"{path}: empty; give a header line ({','.join(COLUMNS)}) and one measurement per line", 2)
    names = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise PlanError(f"{path}, line 1: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
                        f"the header must name {','.join(COLUMNS)}", 2)
    extra = [n for n in names if n not in COLUMNS]
    if extra:
        raise PlanError(f"{path}, line 1: unknown column {shown(extra[0])}; the columns are {','.join(COLUMNS)}", 2)
    rows, seen = [], {}
    for number, values in enumerate(reader, start=2):
        if not values or all(not v.strip() for v in values):
            continue
        where = f"{path}, line {number}"
        if len(values) != len(names):
            raise PlanError(f"{where}: {len(values)} fields; the header has {len(names)} ({','.join(names)})", 2)
        row = parse_row(dict(zip(names, values)), where)
        if row.key in seen:
            raise PlanError(f"{where}: repeats the measurement of line {seen[row.key]} (same op, dtype, shape, tokens, ep_size, "
                            "path and context); keep one", 2)
        seen[row.key] = number
        rows.append(row)
    if not rows:
        raise PlanError(f"{path}: no measurements after the header; give one per line", 2)
    return tuple(rows)


def write_csv(rows: tuple[Measurement, ...]) -> str:
    """The rows as the CSV :func:`read_csv` reads (the header first)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(row.csv_row())
    return out.getvalue()
