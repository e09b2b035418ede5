"""Kernel measurements from NVIDIA's AIConfigurator database (the ``aiconfigurator-core`` package, Apache-2.0).

The package ships parquet tables under ``systems/data/<system>/<op>/<backend>/<framework version>/``; they are
read directly with pyarrow (steadier across releases than the package's query API, which moved between versions).
Each table becomes :class:`~dualpath_plan.calibration.measurements.Measurement` rows (latencies in the tables are
milliseconds, DeepEP's microseconds):

* ``gemm/gemm_perf.parquet``: one GEMM by (m, n, k); FP8 rows are the block-scaled kernels (``fp8_block``,
  DeepGEMM's format) where the table has them, else per-tensor ``fp8``; BF16 rows ``bfloat16``; FP4 rows ``nvfp4``
  (Blackwell). Shapes with
  ``1,024 <= n, k <= 16,384`` (a model's projections) are kept; of several kernels for one shape the fastest.
* ``moe/wideep_{generation,context}_moe_perf.parquet`` (DeepEP-MoE under wide expert parallelism, uniform routing)
  for FP8 expert GEMMs where present, else ``moe/moe_perf.parquet`` (balanced routing), and ``moe_perf`` for BF16
  and FP4 (``nvfp4``);
  DeepSeek-V3's expert shape (H 7168, I 2048, 256 experts, top 8). ``num_tokens`` counts the tokens of the whole
  expert-parallel group (AIConfigurator's MoE query multiplies a GPU's tokens by the attention-data-parallel size,
  ``aic-core/rust/aiconfigurator-core/src/operators/moe_expert_compute.rs``), so a GPU routes ``num_tokens / ep``.
* ``mla/generation_mla_perf.parquet`` and ``mla/context_mla_perf.parquet``: the MLA attention kernels alone (the
  ``wideep_*_mla`` tables time the whole module with its projections, which the step-time model counts as GEMMs),
  every head count measured without tensor parallelism (a kernel's FLOPs grow with the heads and its KV reads do
  not, which is what tells its compute rate from its bandwidth); a decode row's context is ``isl + step`` KV tokens.
* ``comm/wideep_deepep_{ll,normal}_perf.parquet`` (SGLang's DeepEP collections): hidden 7168, top 8, 256 experts;
  one node is the NVLink path, several nodes RDMA with ``nodes x g`` GPUs in the group; the normal kernels' time
  is the transmit time at the fastest SM setting.

Framework versions: every table comes from the newest version folder that has rows for it (``--version`` pins
one); which version each table came from is part of the result.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from dualpath_plan.calibration.measurements import Measurement
from dualpath_plan.model.errors import PlanError

PACKAGE = "aiconfigurator_core"
INSTALL = ("AIConfigurator's kernel database (calibrate --from aiconfigurator, validate --kernels) needs the 'calibrate' extra "
           "(aiconfigurator-core, pandas, pyarrow), which is not installed here: pip install 'dualpath-plan[calibrate]' (from a "
           "checkout: pip install '.[calibrate]')")
BACKENDS = ("sglang", "trtllm", "vllm")
DEEPSEEK_MOE = (7168, 2048, 256, 8)  # hidden, expert intermediate, experts, top-k
GEMM_SIDES = (1024, 16384)


def _package():
    try:
        import aiconfigurator_core
    except ImportError:
        raise PlanError(INSTALL, 2) from None
    return aiconfigurator_core


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    _package()
    try:
        return version("aiconfigurator-core")
    except PackageNotFoundError:  # imported from a source tree
        return "unknown"


def data_root() -> Path:
    return Path(_package().__file__).resolve().parent / "systems" / "data"


def systems() -> list[str]:
    return sorted(p.name for p in data_root().iterdir() if p.is_dir())


def _version_key(text: str) -> tuple:
    return tuple(int(n) for n in re.findall(r"\d+", text))


def versions(system: str, backend: str) -> list[str]:
    """Every framework version folder of ``system`` and ``backend`` over all ops, newest first."""
    found = {v.name for op in (data_root() / system).iterdir() if (op / backend).is_dir() for v in (op / backend).iterdir() if v.is_dir()}
    return sorted(found, key=_version_key, reverse=True)


def check_choice(system: str, backend: str, version: str | None) -> None:
    """Refuse an unknown system, backend or version, listing the ones the installed package has."""
    known = systems()
    if system not in known:
        raise PlanError(f"--system {system!r} is not in aiconfigurator-core {package_version()}; systems: {', '.join(known)}", 2)
    have = [b for b in BACKENDS if any((op / b).is_dir() for op in (data_root() / system).iterdir())]
    if backend not in have:
        raise PlanError(f"--backend {backend!r} has no data for {system}; backends with data: {', '.join(have) or '(none)'}", 2)
    if version is not None and version not in versions(system, backend):
        raise PlanError(f"--version {version!r} is not a {backend} version of {system}; versions: {', '.join(versions(system, backend))}", 2)


def _tables(system: str, backend: str, op: str, name: str, version: str | None):
    """(version, path) of table ``name`` of ``op``, newest first (only ``version`` when pinned)."""
    base = data_root() / system / op / backend
    if not base.is_dir():
        return []
    found = [(v.name, v / name) for v in base.iterdir() if (v / name).is_file() and (version is None or v.name == version)]
    return sorted(found, key=lambda vp: _version_key(vp[0]), reverse=True)


@functools.lru_cache(maxsize=4)  # one table feeds several fits (the GEMM table: FP8 and BF16)
def _read(path: Path):
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pandas()


@dataclass(frozen=True)
class Source:
    """Where one group of rows came from: the table, its framework version and how many rows it gave."""

    what: str
    table: str
    version: str
    rows: int


def _where(system: str, backend: str, version: str, table: str) -> str:
    return f"aiconfigurator-core {package_version()} {system}/{backend}/{version}/{table}"


def _first(system, backend, op, name, version, build, what) -> tuple[list[Measurement], Source | None]:
    """The rows ``build(frame, where)`` makes of the newest table ``name`` that gives any; ``what`` names the fit
    they feed (a report's table, or its start)."""
    for ver, path in _tables(system, backend, op, name, version):
        rows = build(_read(path), _where(system, backend, ver, name))
        if rows:
            return rows, Source(what, name, ver, len(rows))
    return [], None


def _rows(frame, *names: str):
    """The frame's row labels and columns ``names``, row by row, as Python values (a column at a time: pandas'
    own row iteration walks Arrow-backed columns cell by cell)."""
    return zip(frame.index.tolist(), *(frame[name].to_numpy().tolist() for name in names))


def _fastest(frame, keys: list[str]):
    return frame.loc[frame.groupby(keys)["latency"].idxmin()]


def _gemm(dtype: str):
    def build(frame, where):
        wanted = {"fp8": ("fp8_block", "fp8"), "bf16": ("bfloat16",), "fp4": ("nvfp4",)}[dtype]
        chosen = next((d for d in wanted if (frame["gemm_dtype"] == d).any()), None)
        if chosen is None:
            return []
        low, high = GEMM_SIDES
        f = frame[(frame["gemm_dtype"] == chosen) & frame["n"].between(low, high) & frame["k"].between(low, high) & (frame["latency"] > 0)]
        f = _fastest(f, ["m", "n", "k"])
        return [Measurement("gemm", dtype, (int(n), int(k)), float(m), 1, "-", 0.0, float(latency) * 1e-3, f"{where} row {i}")
                for i, m, n, k, latency in _rows(f, "m", "n", "k", "latency")]
    return build


def _moe(dtype: str, names: tuple[str, ...]):
    def build(frame, where):
        h, inter, e, k = DEEPSEEK_MOE
        f = frame[(frame["hidden_size"] == h) & (frame["inter_size"] == inter) & (frame["num_experts"] == e) & (frame["topk"] == k)
                  & (frame["moe_tp_size"] == 1) & (frame["moe_dtype"] == names[0]) & frame["distribution"].isin(names[1:]) & (frame["latency"] > 0)]
        f = _fastest(f, ["num_tokens", "moe_ep_size"])
        return [Measurement("grouped_gemm", dtype, DEEPSEEK_MOE, float(tokens) / int(ep), int(ep), "-", 0.0, float(latency) * 1e-3,
                            f"{where} row {i}") for i, tokens, ep, latency in _rows(f, "num_tokens", "moe_ep_size", "latency")]
    return build


def _mla(op: str):
    def build(frame, where):
        f = frame[(frame["tp_size"] == 1) & frame["kv_cache_dtype"].isin(["fp8", "bfloat16"]) & (frame["latency"] > 0)]
        f = _fastest(f, ["kv_cache_dtype", "num_heads", "batch_size", "isl", "step"])
        rows = []
        for i, isl, step, kv, heads, batch, latency in _rows(f, "isl", "step", "kv_cache_dtype", "num_heads", "batch_size", "latency"):
            context = float(isl + step) if op == "mla_decode" else float(isl)
            dtype = "fp8" if kv == "fp8" else "bf16"
            rows.append(Measurement(op, dtype, (int(heads),), float(batch), 1, "-", context, float(latency) * 1e-3, f"{where} row {i}"))
        return rows
    return build


def _deepep(kernel: str, g: int, rdma: bool):
    def build(frame, where):
        h, _, e, k = DEEPSEEK_MOE
        f = frame[(frame["hidden_size"] == h) & (frame["num_topk"] == k) & (frame["num_experts"] == e)]
        f = f[f["node_num"] > 1] if rdma else f[f["node_num"] == 1]
        path = "rdma" if rdma else "nvlink"
        rows = []
        if kernel == "ll":
            for i, tokens, nodes, dispatch, combine in _rows(f, "num_token", "node_num", "dispatch_avg_t_us", "combine_avg_t_us"):
                for part, value in (("dispatch", dispatch), ("combine", combine)):
                    rows.append(Measurement(f"a2a_ll_{part}", "fp8", (h, k), float(tokens), g * int(nodes), path, 0.0, float(value) * 1e-6,
                                            f"{where} row {i}"))
            return [m for m in rows if m.latency_s > 0]
        for part in ("dispatch", "combine"):
            col = f"{part}_transmit_us"
            best = f.loc[f.groupby(["node_num", "num_token"])[col].idxmin()]
            rows += [Measurement(f"a2a_normal_{part}", "fp8", (h, k), float(tokens), g * int(nodes), path, 0.0, float(value) * 1e-6,
                                 f"{where} row {i}") for i, tokens, nodes, value in _rows(best, "num_token", "node_num", col)]
        return [m for m in rows if m.latency_s > 0]
    return build


def load(system: str, backend: str, version: str | None, g: int,
         families: tuple[str, ...] | None = None) -> tuple[tuple[Measurement, ...], tuple[Source, ...]]:
    """Every measurement the database has for ``system`` on ``backend`` (module docstring), with the tables they came
    from; only the tables of ``families`` (``fits.FAMILIES`` names) when given. ``g``: GPUs per node, for the EP size
    of a multi-node all-to-all row."""
    check_choice(system, backend, version)
    wanted = lambda what: families is None or what.split()[0] in families  # noqa: E731  (a table's fit names its family first)
    plan = [("gemm", "gemm_perf.parquet", _gemm(dtype), f"gemm {dtype}") for dtype in ("fp8", "bf16", "fp4")]
    wideep = [("moe", name, _moe("fp8", ("fp8_block", "uniform")), "grouped_gemm fp8")
              for name in ("wideep_generation_moe_perf.parquet", "wideep_context_moe_perf.parquet")]
    plan += [("mla", "generation_mla_perf.parquet", _mla("mla_decode"), "mla_decode"), ("mla", "context_mla_perf.parquet", _mla("mla_prefill"), "mla_prefill")]
    plan += [("comm", f"wideep_deepep_{kernel}_perf.parquet", _deepep(kernel, g, rdma), f"a2a_{kernel} {'rdma' if rdma else 'nvlink'}")
             for kernel in ("ll", "normal") for rdma in (False, True)]
    every_table = [(op, name, what) for op, name, _, what in plan + wideep] + [("moe", "moe_perf.parquet", "grouped_gemm")]
    plan, wideep = [step for step in plan if wanted(step[3])], [step for step in wideep if wanted(step[3])]
    rows, sources = [], []
    for op, name, build, what in plan:
        got, source = _first(system, backend, op, name, version, build, what)
        rows += got
        sources += [source] if source else []
    fp8_moe = [_first(system, backend, op, name, version, build, what) for op, name, build, what in wideep]
    if wideep and not any(got for got, _ in fp8_moe):
        fp8_moe = [_first(system, backend, "moe", "moe_perf.parquet", version, _moe("fp8", ("fp8_block", "balanced")), "grouped_gemm fp8")]
    others = [_first(system, backend, "moe", "moe_perf.parquet", version, _moe(dtype, (name, "balanced")), f"grouped_gemm {dtype}")
              for dtype, name in (("bf16", "bfloat16"), ("fp4", "nvfp4")) if wanted("grouped_gemm")]
    for got, source in fp8_moe + others:
        rows += got
        sources += [source] if source else []
    if not rows and families is not None:  # the flag asks for what this system lacks: say what it has (its files; none read)
        present = sorted({what.split()[0] for op, name, what in every_table if _tables(system, backend, op, name, version)})
        raise PlanError(f"no measurement of {', '.join(families)} to fit; {system} on {backend} has tables of "
                        f"{', '.join(present) or 'nothing'}", 2)
    if not rows:
        raise PlanError(f"aiconfigurator-core has no measurement this project reads for {system} on {backend}"
                        f"{'' if version is None else ' ' + version}", 1)
    return tuple(rows), tuple(sources)

