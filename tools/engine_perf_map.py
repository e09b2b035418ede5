"""Profile the compiled engine with Linux perf: run one simulation in this process, then name its kernels for perf.

numba's kernels are machine code perf sees only as ``[JIT]`` addresses (numba registers them with no profiler when
it loads them from its cache). After the run this script reads every compiled function's address from the
engine's numba libraries and writes ``/tmp/perf-<pid>.map`` (perf's map of JIT code: start, size and name per
line; a function's size is the distance to the next function), so that ``perf report`` names each kernel.

Run: perf record -F 999 -o perf.data python tools/engine_perf_map.py -P 24 -D 48
     perf report -i perf.data --stdio --sort sym

The simulation is ``simulate --profile hopper --model ds-v3.2 --workload agentic-64k --policy dualpath --seed 1``
with 2,048 agents per 6 nodes unless ``--agents`` says otherwise (the scale benchmark's runs).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from dualpath_plan import api as dp


def demangle(symbol: str) -> str:
    """``module.function`` of a numba symbol (Itanium-style length-prefixed names, as ``_ZN13dualpath_plan3sim...``);
    a symbol outside the package comes back cut to 60 characters. Python wrappers get a ``cpython.`` prefix."""
    i = symbol.find("dualpath_plan")
    if i < 0:
        return symbol[:60]
    while i > 0 and symbol[i - 1].isdigit():
        i -= 1
    parts = []
    while i < len(symbol) and symbol[i].isdigit():
        j = i
        while symbol[j].isdigit():
            j += 1
        n = int(symbol[i:j])
        parts.append(symbol[j:j + n])
        i = j + n
    return ("cpython." if symbol.startswith("cpython") else "") + ".".join(parts[-2:])


def map_lines(addresses: dict[int, str], last_size: int = 4096) -> list[str]:
    """perf map lines (hex start, hex size, name) for ``addresses`` (start -> symbol), in address order."""
    starts = sorted(addresses)
    ends = [*starts[1:], starts[-1] + last_size] if starts else []
    return [f"{a:x} {min(end - a, 1 << 20):x} {demangle(addresses[a])}" for a, end in zip(starts, ends)]


def compiled_addresses() -> dict[int, str]:
    """Start address -> symbol of every function defined in the compiled engine's loaded numba libraries."""
    from numba.core.registry import CPUDispatcher

    from dualpath_plan.sim.compiled import engine, loop, policies, queues, share, tier

    found: dict[int, str] = {}
    for module in (engine, loop, policies, queues, share, tier):
        for value in vars(module).values():
            if not isinstance(value, CPUDispatcher):
                continue
            for cres in value.overloads.values():
                library = cres.library
                modules = [m for m in (getattr(library, "_final_module", None), getattr(library, "_shared_module", None)) if m is not None]
                for fn in (f for m in modules for f in m.functions if not f.is_declaration):
                    address = library.get_pointer_to_function(fn.name)
                    if address:
                        found[address] = fn.name
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-P", type=int, default=24, help="prefill nodes (default 24)")
    parser.add_argument("-D", type=int, default=48, help="decode nodes (default 48)")
    parser.add_argument("--agents", type=int, help="agents (default: 2,048 per 6 nodes)")
    args = parser.parse_args()
    agents = args.agents or round(2048 * (args.P + args.D) / 6)
    start = time.perf_counter()
    sim = dp.simulate(dp.scenario("hopper", P=args.P, D=args.D), "dualpath", agents=agents, seed=1, engine="compiled")
    lines = map_lines(compiled_addresses())
    target = Path(f"/tmp/perf-{os.getpid()}.map")
    target.write_text("".join(line + "\n" for line in lines))
    print(f"{args.P}P{args.D}D, {agents:,} agents: runner {sim.runs['dualpath'].wall_s:.1f} s, in all {time.perf_counter() - start:.1f} s; "
          f"{len(lines)} functions mapped in {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
