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
