"""Small fluid-run cases shared by the fluid tests: a tiny cluster and hand-built trajectories.

The cluster is the paper's Hopper node cut to 2 GPUs per node (``gpus_per_node=2``) serving the
paper's DS 27B on one prefill and two decode nodes; ``snic_Gbps=50`` makes storage reads the binding
resource (as with DS 660B on the full node), so that the second read path matters, in runs of
well under a second.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.model.workload import Trajectories

TINY_SETS = ("gpus_per_node=2", "snic_Gbps=50")


def tiny_scenario(P: int = 1, D: int = 2, accounting: str = "exact", sets: tuple[str, ...] = TINY_SETS):
    return build_scenario("hopper", model="ds-27b", workload="agentic-32k", P=P, D=D, accounting=accounting, sets=sets)


def tiny_traj(agents: int, rounds: int, prefix: int = 2000, seed: int = 1) -> Trajectories:
    """``agents`` trajectories of ``rounds`` rounds: a first round of ``prefix`` tokens, then appends of
    200-699 and generations of 50-299 tokens (about Table 2's per-round means)."""
    rng = np.random.default_rng(seed)
    append = rng.integers(200, 700, size=agents * rounds)
    gen = rng.integers(50, 300, size=agents * rounds)
    append[::rounds], gen[::rounds] = prefix, 1
    return Trajectories(append, gen, np.arange(0, agents * rounds + 1, rounds), f"tiny ({agents} agents x {rounds} rounds)")


def v2_traj(agents: int, rounds: int, tool_mean_s: float = 2.0, seed: int = 1, start_spread_s: float = 3.0) -> Trajectories:
    """``tiny_traj`` with schema v2's additions: tool time after every round (exponential, mean ``tool_mean_s``),
    recorded start times over ``start_spread_s``, a compaction in every third agent, and one fork per two agents
    (a sub-agent of the agent before it, from its context after round 1, with a short delay)."""
    base = tiny_traj(agents, rounds, seed=seed)
    rng = np.random.default_rng(seed + 100)
    tool = rng.exponential(tool_mean_s, base.n_rounds)
    keep = np.full(base.n_rounds, -1)
    for a in range(0, agents, 3):
        r = int(base.offsets[a]) + rounds // 2
        keep[r] = int(base.held_tokens[r]) // 3
    append, gen, offsets = list(base.append_tokens), list(base.gen_tokens), list(base.offsets)
    prefix, start, fork_round, delay = [0] * agents, list(rng.uniform(0, start_spread_s, agents)), [-1] * agents, [0.0] * agents
    tools, keeps = list(tool), list(keep)
    held = base.held_tokens
    for a in range(0, agents - 1, 2):  # a sub-agent of agent a, forked after its first round
        parent_round = int(base.offsets[a])
        append += [300, 250]
        gen += [80, 120]
        tools += [0.5, 0.0]
        keeps += [-1, -1]
        offsets.append(offsets[-1] + 2)
        prefix.append(int(held[parent_round]) // 2)
        start.append(np.nan)
        fork_round.append(parent_round)
        delay.append(0.2)
    return Trajectories(np.array(append), np.array(gen), np.array(offsets), f"v2 ({agents} agents x {rounds} rounds, forks)",
                        tool_s=np.array(tools), keep_tokens=np.array(keeps), prefix_tokens=np.array(prefix),
                        start_s=np.array(start), fork_round=np.array(fork_round), fork_delay_s=np.array(delay))
