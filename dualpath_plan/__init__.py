"""dualpath-plan: size prefill/decode-disaggregated LLM clusters that load KV-Cache from storage.

The package is layered, and data flows one way (``docs/architecture.md``): ``model`` (profiles, units,
the scenario) -> ``bounds`` (closed-form link loads, the throughput LP) -> ``sim`` (the fluid runner and
its two engines) -> ``planning`` (the bottleneck analysis, procurement, sweeps) -> ``validation`` ->
``report`` (tables and JSON) -> ``api`` (this package's functions) -> ``cli``.

The API, for notebooks and scripts (each returns the record its command renders; :func:`to_dict` gives
the command's ``--json``)::

    import dualpath_plan as dp
    sc = dp.scenario("hopper", P=2, D=4)
    analysis = dp.bottleneck(sc)          # dualpath-plan bottleneck
    dp.to_dict(analysis)                  # ... --json

Names are loaded on first use, so ``import dualpath_plan`` imports no solver, sympy or numba.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = [
    "scenario", "bound_options", "bottleneck", "bound", "plan", "sweep", "grid_sweep", "check_grid", "write_rows", "compare", "check", "check_modes", "check_online", "simulate", "find_capacity", "validate",
    "formulas", "calibrate", "profiles", "trace_workload", "trace_import", "trace_stats", "workload_from_trace", "to_dict", "PlanResult", "Simulation", "CapacitySearch", "PlanError",
]


def __getattr__(name: str):
    if name in __all__:
        from dualpath_plan import api

        return getattr(api, name)
    raise AttributeError(f"module 'dualpath_plan' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
