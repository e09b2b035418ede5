"""tools/engine_perf_map.py: numba's symbols named for perf, and its map lines."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "engine_perf_map.py"
_spec = importlib.util.spec_from_file_location("engine_perf_map", SCRIPT)
perf_map = importlib.util.module_from_spec(_spec)
sys.modules["engine_perf_map"] = perf_map
_spec.loader.exec_module(perf_map)


def test_a_numba_symbol_is_named_by_its_module_and_function():
    symbol = "_ZN13dualpath_plan3sim8compiled5share4fillB2v1B46c8tJTIeFIjxB2IKSgI4CrvSCKg1MMbCQQPKkLTj8NAE_3dE5ArrayIxLi1E1C7mutable7alignedE"
    assert perf_map.demangle(symbol) == "share.fill"
    assert perf_map.demangle("cpython." + symbol) == "cpython.share.fill"
    assert perf_map.demangle("memcpy") == "memcpy"


def test_the_map_gives_each_function_up_to_the_next_one_in_address_order():
    lines = perf_map.map_lines({0x2000: "_ZN13dualpath_plan3sim8compiled4loop7advanceB2v1", 0x1000: "x"}, last_size=16)
    assert lines == ["1000 1000 x", "2000 10 loop.advance"]
    assert perf_map.map_lines({}) == []


def test_the_engines_loaded_functions_have_addresses():
    """After a compiled run every kernel the run called has an address (the engine is loaded from numba's cache)."""
    from dualpath_plan import api as dp

    dp.simulate(dp.scenario("hopper", P=2, D=4), "dualpath", agents=8, seed=1, engine="compiled")
    names = {perf_map.demangle(s) for s in perf_map.compiled_addresses().values()}
    assert {"loop.run_chunk", "share.fill", "engine.batch_done"} <= names
