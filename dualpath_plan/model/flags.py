"""The plausible range of every numeric command-line flag, in the flag's own unit, with its reason.

Profile fields have theirs in :data:`dualpath_plan.model.profiles.RANGES`; this is the same table for the
flags, so that a value no real cluster or run has (``--aps 1e300``, ``--tpot-slo-ms 1e-300``) is refused in one
line before any arithmetic sees it. Each flag is checked where its value enters the model (the request, the
options, the run), so the Python API refuses the same values with the same line. A test keeps the table
complete: every numeric option of every command has a row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dualpath_plan.model.errors import PlanError

MAX_NODES = 8192  # nodes in one cluster (P + D): 65,536 GPUs of 8; larger clusters are units replicated
MAX_AGENTS = 1 << 18  # agents in one run: every agent's rounds are held in memory (about 7 GB at this many)
MAX_BUDGET_NODES = 4096  # nodes per side plan searches: it bounds every split of the budget's frontier (planning.plan)
MAX_SEED = 2**32 - 1  # a 32-bit seed: what numpy's legacy generator, C's srand and most tools take


@dataclass(frozen=True)
class FlagRange:
    """``low <= value <= high`` in ``unit`` (words for a person); ``whole``: an integer flag."""

    low: float
    high: float
    unit: str
    reason: str
    whole: bool = False

    def allowed_text(self) -> str:
        noun = "a whole number" if self.whole else "a finite number"
        return f"must be {noun} >= {_shown(self.low)} and <= {_shown(self.high)} ({self.reason})"


_CLUSTER = f"a cluster has at most {MAX_NODES:,} nodes here, 65,536 GPUs of 8: size a unit and replicate it"
_SERVE = "thousands of times what 8,192 nodes of any profile here serve"
FLAGS: dict[str, FlagRange] = {
    "-P": FlagRange(1, MAX_NODES - 1, "nodes", _CLUSTER, whole=True),
    "-D": FlagRange(1, MAX_NODES - 1, "nodes", _CLUSTER, whole=True),
    "--nodes": FlagRange(1, MAX_BUDGET_NODES + 1, "nodes", "plan searches at most 4,096 nodes per side, which "
                                                          "4,097 nodes (4,096 on one side and 1 on the other) reach; larger clusters: plan "
                                                          "a unit and replicate it, or use sweep", whole=True),
    "--gpus": FlagRange(1, MAX_NODES * 576, "GPUs", "up to 8,192 nodes of the largest NVLink domain, 576 GPUs", whole=True),
    "--budget-usd": FlagRange(1, 1e12, "USD", "$1 to $1 trillion: the largest announced AI build-out is about $0.5 trillion"),
    "--node-cost": FlagRange(1, 1e9, "USD", "$1 to $1 billion per node: the largest supercomputers cost about $0.6 billion"),
    "--budget-usd-per-hour": FlagRange(0.01, 1e7, "USD/h", "1 cent to $10 million an hour: 8,192 nodes, the most a sweep takes, rent for "
                                                           "about $0.6 million an hour at $70 each"),
    "--power-kw": FlagRange(0.01, 1e7, "kW", "10 W to 10 GW: the largest announced AI campuses draw a few GW"),
    "--electricity-usd-per-kwh": FlagRange(0.001, 10, "USD/kWh", "0.1 cent to $10 per kWh: industrial power costs 3 to 30 cents"),
    "--rent": FlagRange(0.01, 1e6, "USD/h", "1 cent to $1 million an hour per node: an 8-GPU node rents for $15 to $70 an hour in 2026"),
    "--target-turns-per-s": FlagRange(1e-3, 1e9, "turns/s", "one turn per 1,000 s to 1 G turns/s: " + _SERVE),
    "--target-agents-per-s": FlagRange(1e-5, 1e7, "agents/s", "about one agent a day to 10 M agents/s: " + _SERVE),
    "--alternatives": FlagRange(0, 100, "clusters", "0 to 100 runner-up clusters: more fill pages, not decisions", whole=True),
    "--tpot-slo-ms": FlagRange(1, 10_000, "ms", "1 ms to 10 s per output token: a decode step of a large model takes a few ms at "
                                              "least, and a token every 10 s serves no reader"),
    "--decode-instance-nodes": FlagRange(1, MAX_NODES, "nodes", _CLUSTER, whole=True),
    "--prefill-instance-nodes": FlagRange(1, MAX_NODES, "nodes", _CLUSTER, whole=True),
    "--mtp": FlagRange(0, 8, "draft tokens", "0 (off) to 8 drafts per step: DeepSeek-V3 trains one MTP module and serving stacks "
                                              "draft a few tokens with it; acceptance falls geometrically beyond that", whole=True),
    "--mtp-accepted": FlagRange(1, 9, "tokens", "1 to 9 tokens kept per step: at least the verified token, at most 8 drafts and it"),
    "--agents": FlagRange(1, MAX_AGENTS, "agents", "every agent's rounds are held in memory: about 7 GB at the most", whole=True),
    "--aps": FlagRange(1e-3, 1e5, "agents/s", "one agent per 1,000 s to 100,000 a second: 8,192 nodes of any profile here "
                                              "serve a few thousand"),
    "--ttft-slo-s": FlagRange(0.01, 3600, "s", "10 ms to an hour: a prefill pass takes tens of ms at least, and a first token "
                                               "after an hour serves no one"),
    "--seed": FlagRange(0, MAX_SEED, "", "a 32-bit seed, as most generators take", whole=True),
    "--seeds": FlagRange(1, 100, "seeds", "1 to 100 seeds: each is one more whole run", whole=True),
    "--check": FlagRange(1, 10, "runs", "1 to 10 runner checks: each is up to a minute on a large cluster", whole=True),
    "--lp-sample": FlagRange(1e-6, 1, "", "a share of the configurations: 1e-6 (one in a million) to 1 (every one)"),
    "--jobs": FlagRange(1, 1024, "processes", "1 to 1,024 worker processes on this machine: one per core is the most that helps", whole=True),
    "--dt-ms": FlagRange(1, 300, "ms", "a step must resolve one forward batch under the 300 ms attention quota (paper §6); "
                                       "below 1 ms, a 50th of the TPOT SLO, finer steps only cost time"),
    "--time-scale": FlagRange(0, 1e6, "", "0 (every session at once) to a million times the recorded timeline"),
    "--tool-scale": FlagRange(0, 1e6, "", "0 (no tool time, the paper's method) to a million times the recorded tool times"),
    "--dram-tier": FlagRange(1, 1e6, "GB", "1 GB to 1 PB of host DRAM per node: the largest servers hold 32 TB"),
    "--dram-price": FlagRange(0, 1000, "USD/GB", "0 where a node's price already covers the tier's DRAM; $1,000 per GB is far "
                                                 "above what any server DRAM sells for"),
    "--dram-rent": FlagRange(0, 1, "USD/GB/h", "0 where a node's rent already covers the tier's DRAM; at $1 per GB-hour 2 TB "
                                               "would rent for $2,048 an hour, where a whole 8-GPU node rents for $15 to $70"),
    "--storage-nodes": FlagRange(1, 100_000, "storage nodes", "1 to 100,000: the largest published KV-Cache storage cluster, 3FS's, has "
                                                               "180", whole=True),
    "--storage-retention-s": FlagRange(0, 1e8, "s", "0 (an agent's KV is dropped when it ends) to about three years"),
    "--max-context-tokens": FlagRange(2, 1e8, "tokens", "2 (a round holds at least an appended and a generated token) to 100 M: "
                                                        "the longest public windows are about 10 M", whole=True),
}


def check_flag(flag: str, value: object, label: str | None = None) -> float:
    """Refuse ``value`` of ``flag`` outside its range (exit 2, one line naming flag, value, unit and range);
    return it as a float (whole for integer flags). ``label``: what the message calls the flag, when not ``flag``
    (every name of a flag with several, and what the value was given for)."""
    rng = FLAGS[flag]
    number = _number(value)
    if number is None or not rng.low <= number <= rng.high or (rng.whole and not number.is_integer()):
        shown = (f"{value:g}" if float(f"{value:g}") == value or value != value else repr(value)) if isinstance(value, float) else \
            repr(value) if isinstance(value, str) else f"{value}"  # 1000000001 is not shown as 1e+09, which reads as in range
        unit = f" {rng.unit}" if rng.unit else ""
        raise PlanError(f"{label or flag} = {shown}{unit} is not allowed; {rng.allowed_text()}", 2)
    return number


def _shown(bound: float) -> str:
    return f"{int(bound)}" if float(bound).is_integer() and abs(bound) < 1e9 else f"{bound:g}"


def _number(value: object) -> float | None:
    if isinstance(value, (bool, np.bool_)):  # True is an int to Python, not a count to a person
        return None
    if not isinstance(value, (int, float, np.floating)):
        try:
            value = value.__index__()  # numpy integers
        except (AttributeError, TypeError):
            return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond a float's range
        return None
    return number if math.isfinite(number) else None
