"""The paper's published figures next to ours (the rows that test the bandwidth model and the runner).

Each row is a :class:`PaperFigure`: the paper's value (a constant cited to its section: these are the
numbers we compare against, not results or parameters), its SI unit, and the function that computes our
value from the shipped profiles with nothing tuned. Rows:

1. The bottleneck-free P/D range of the paper's Hopper node under the paper's accounting, eq. (9), §4.2:
   ``1/7 <= P/D <= 7/2``, from :func:`bandwidth.pd_range`.
2. Table 1 (§3): the cache-compute ratio in GB/PFLOP at 16K and 64K context with 429 appended tokens, and
   DeepSeek-V3.2's ~22 GB/PFLOP at the trace average (32.7K context), from
   :func:`compute.cache_compute_ratio`, each model with the KV layout of its shipped profile. We read "16K"
   and "64K" as 16,384 and 65,536 tokens, as the workload profiles read Table 2's MaxLen.
3. The offline DualPath/Basic speed-up of DS 660B (DeepSeek-V3.2) on Hopper 2P4D with agentic-64k (§7,
   abstract: "up to 1.87x"): JCT of ``basic`` over JCT of ``dualpath`` from the fluid runner on the same
   agents, replayed from the workload's data set. It needs the simulator (slow): ``skip_sim`` leaves it out.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from dualpath_plan.bounds.bandwidth import pd_range
from dualpath_plan.bounds.compute import cache_compute_ratio
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.model.units import GB, PETA
from dualpath_plan.model.workload import replay
from dualpath_plan.validation.records import Condition, PaperFigure, ValidateOptions

TABLE1_APPEND_TOKENS = 429.0  # Table 1 (§3): "append length 429"
TRACE_CONTEXT_TOKENS = 32721.0  # §3 trace / Table 2 64K row: average context 32.7K (the V3.2 ~22 GB/PFLOP point)
CONTEXT_16K_TOKENS = 16 * 1024.0  # Table 1's "16K", read as 16,384 tokens (K = 1024, as the workload profiles)
CONTEXT_64K_TOKENS = 64 * 1024.0  # Table 1's "64K"
SPEEDUP_AGENTS = 2048  # [fig-read] the smaller agent group of the paper's DS 660B 64K panel (paper notes 1, Fig. 7)


def gb_per_pflop(value: float) -> float:
    """A ratio in GB/PFLOP (the paper's unit) -> bytes/FLOP."""
    return value * GB / PETA


def _paper_node_range():
    scenario = build_scenario("hopper", accounting="paper")
    return pd_range(scenario.cluster.pe, scenario.traffic)


def _pd_lower(_: ValidateOptions) -> float:
    return _paper_node_range().lower


def _pd_upper(_: ValidateOptions) -> float:
    return _paper_node_range().upper


def _ratio(model_name: str, context_tokens: float) -> Callable[[ValidateOptions], float]:
    def compute(_: ValidateOptions) -> float:
        model = catalog().get("model", model_name)
        return cache_compute_ratio(model, context_tokens, TABLE1_APPEND_TOKENS)

    return compute


def _kv_condition(model_name: str) -> tuple[Condition, ...]:
    model = catalog().get("model", model_name)
    indexer = " + indexer cache" if model.indexer_cache and model.indexer_bytes_per_token else ""
    return (("model", model.name, ""), ("KV layout", model.kv_layout + indexer, ""),
            ("KV", model.kv_bytes_per_token, "B/token"), ("append", TABLE1_APPEND_TOKENS, "tokens"))


def _offline_speedup(options: ValidateOptions) -> float:
    """JCT(basic) / JCT(dualpath): the fluid runner, offline, both policies on the same agents replayed from the
    workload's data set (§7 offline, A.3)."""
    from dualpath_plan.sim import runner  # imported only when this row runs

    scenario = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=2, D=4)
    traj = replay(scenario.workload, SPEEDUP_AGENTS, np.random.default_rng(options.seed))
    runs = runner.compare(scenario, traj, ["basic", "dualpath"], options=runner.SimOptions(seed=options.seed),
                         on_progress=options.on_progress)
    return runs["basic"].jct_s / runs["dualpath"].jct_s


# Table 1 (§3), paper notes 2.5: (model profile, paper name, GB/PFLOP at 16K, at 64K).
TABLE1 = (
    ("qwen2.5-32b", "Qwen2.5-32B", 117.0, 267.0),
    ("gpt-oss-120b", "GPT-OSS-120B", 47.0, 95.0),
    ("qwen3-235b-a22b", "Qwen3-235B-A22B", 39.0, 60.0),
    ("ds-v3.2", "DeepSeek-V3.2", 13.0, 36.0),
)


def _table1_rows() -> tuple[PaperFigure, ...]:
    rows = []
    for profile, label, at_16k, at_64k in TABLE1:
        for tag, context, value in (("16K", CONTEXT_16K_TOKENS, at_16k), ("64K", CONTEXT_64K_TOKENS, at_64k)):
            rows.append(PaperFigure(f"{label} {tag}", "Table 1", gb_per_pflop(value),
                                    "B/FLOP", _ratio(profile, context), _kv_condition(profile)))
    rows.append(PaperFigure("DeepSeek-V3.2 32.7K", "§3", gb_per_pflop(22.0), "B/FLOP",
                            _ratio("ds-v3.2", TRACE_CONTEXT_TOKENS), _kv_condition("ds-v3.2")))
    return tuple(rows)


def figures() -> tuple[PaperFigure, ...]:
    """The paper's rows, in display order."""
    paper_node = (("profile", "hopper", ""), ("accounting", "paper", ""))
    simulated = (("profile", "hopper", ""), ("model", "ds-v3.2", ""), ("workload", "agentic-64k", ""),
                 ("P", 2.0, ""), ("D", 4.0, ""), ("agents", float(SPEEDUP_AGENTS), ""), ("ratio", "JCT basic / JCT dualpath", ""))
    return (
        PaperFigure("P/D lower end", "§4.2 (9)", 1.0 / 7.0, "", _pd_lower, paper_node),
        PaperFigure("P/D upper end", "§4.2 (9)", 7.0 / 2.0, "", _pd_upper, paper_node),
        *_table1_rows(),
        PaperFigure("DualPath/Basic", "§7", 1.87, "x", _offline_speedup, simulated, True),
    )
