"""When turns start besides back to back (schema v2, ``model.trace.schema``), shared by both engines and the runner.

A round with tool time ``d`` > 0 ends, and its agent's next turn arrives ``d`` later: the agent waits with no turn in
flight and its KV in storage, so the next turn loads it again (DualPath's regime). With ``d`` = 0 the next turn
arrives the moment the write-back ends, the paper's method (A.3). A fork (a sub-agent) arrives its delay after its
parent's round ends. Both engines keep the waiting agents in a heap ordered by (arrival time, agent): the same order,
so both start them in the same order.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.model.workload import Trajectories


def fork_children(traj: Trajectories) -> tuple[np.ndarray, np.ndarray]:
    """The forks each round releases, as CSR over rounds: round ``r`` releases ``agents[ptr[r]:ptr[r + 1]]``
    (in agent order). int64 arrays; both empty for a set without forks (the engines then skip the release)."""
    if not traj.n_forks:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    forks = np.flatnonzero(traj.fork_round >= 0)
    rounds = traj.fork_round[forks]
    order = np.lexsort((forks, rounds))
    counts = np.bincount(rounds, minlength=traj.n_rounds)
    ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return ptr, forks[order].astype(np.int64)


def start_times(traj: Trajectories, arrivals: np.ndarray | None) -> np.ndarray:
    """Each agent's arrival: a fork never arrives on its own (inf: its parent releases it); a root arrives at the
    online run's Poisson ``arrivals`` (one per root, in agent order), else at its recorded ``start_s`` (0 without one;
    ``Trajectories.rescaled`` scales them). An offline v1 set thus starts every agent at t = 0."""
    times = np.full(traj.n_agents, np.inf)
    roots = traj.fork_round < 0
    if arrivals is not None:
        times[roots] = arrivals[: int(np.count_nonzero(roots))]
    else:
        times[roots] = np.nan_to_num(traj.start_s[roots], nan=0.0)
    return times


def root_order(arrivals: np.ndarray) -> np.ndarray:
    """The agents that arrive on their own (a finite arrival), in arrival order (stable), as both engines take them."""
    roots = np.flatnonzero(np.isfinite(arrivals))
    return roots[np.argsort(arrivals[roots], kind="stable")]
