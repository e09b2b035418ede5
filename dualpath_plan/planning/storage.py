"""How many storage nodes a cluster needs, and whether the ones given bind (``bottleneck --storage``).

The storage cluster's three limits (``bounds.storage``: its read side, its write side, the KV it keeps) are loaded
at the DualPath bound of the same cluster with unlimited storage (the paper's model): read ``R_p + R_d``, write
``omega*(R_p + R_d)``, kept ``X*k``. Each limit needs that load over one storage node's capacity, rounded up to
whole nodes; the cluster needs the largest, which is the size ``bottleneck`` plans when ``--storage-nodes`` is not
given. With the nodes given, the bound itself carries the three limits (``bounds.lp``), and the storage binds when
one of them is at capacity there.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualpath_plan.bounds.bandwidth import storage_coefficients
from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import STORAGE_LIMITS, Bound, BoundOptions, Limits, limits_of
from dualpath_plan.bounds.storage import nodes_needed
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import Scenario


@dataclass(frozen=True)
class StorageNeed:
    """The storage side of one cluster.

    Attributes:
        profile: The storage profile's name.
        nodes: Storage nodes: as given (``--storage-nodes``), or planned (the most any limit needs).
        planned: Whether ``nodes`` was planned.
        needed: Per storage limit (``storage_read``, ``storage_write``, ``storage_capacity``), the storage nodes it needs at
            the DualPath bound with unlimited storage, a count; and under ``copies`` (not a limit) the nodes the profile's
            copies need, one each (``bounds.storage.nodes_needed``).
        binding: Whether a storage limit binds the DualPath bound (always ``False`` when planned).
        read_Bps: KV read from storage at the unlimited DualPath bound, bytes/s.
        write_Bps: New KV written back to storage there, bytes/s.
        kept_bytes: KV kept for live agents there, bytes.
        kept_bytes_s_per_turn: ``k``, the KV kept per turn/s of throughput, byte-seconds per turn.
        node_read_Bps: One storage node's read side, bytes/s.
        node_write_Bps: One storage node's write side (over its copies), bytes/s.
        node_usable_bytes: One storage node's usable capacity, bytes.
        retention_s: Seconds an agent's KV is kept after its last turn.
    """

    profile: str
    nodes: int
    planned: bool
    needed: dict[str, int]
    binding: bool
    read_Bps: float
    write_Bps: float
    kept_bytes: float
    kept_bytes_s_per_turn: float
    node_read_Bps: float
    node_write_Bps: float
    node_usable_bytes: float
    retention_s: float


def storage_need(scenario: Scenario, options: BoundOptions, lim: Limits, dualpath: Bound) -> StorageNeed | None:
    """The storage side of ``scenario`` (``None`` without ``--storage``); ``lim`` and ``dualpath``: its LP data and its
    DualPath bound."""
    side = scenario.cluster.storage
    if side is None:
        return None
    if side.sized:  # the loads are those of the same cluster with unlimited storage
        lim = limits_of(scenario.with_storage_nodes(None), options)
        free = solve_closed(lim, "dualpath")
    else:
        free = dualpath
    read, write, kept = storage_loads(lim, free)
    needed = nodes_needed(side, read, write, kept)
    return StorageNeed(
        profile=side.name, nodes=side.nodes if side.sized else max(needed.values()), planned=not side.sized, needed=needed,
        binding=side.sized and any(name in dualpath.binding for name in STORAGE_LIMITS), read_Bps=read, write_Bps=write,
        kept_bytes=kept, kept_bytes_s_per_turn=lim.kept_bytes_s_per_turn, node_read_Bps=side.read_Bps, node_write_Bps=side.write_Bps,
        node_usable_bytes=side.usable_bytes, retention_s=side.retention_s,
    )


def storage_loads(lim: Limits, bound: Bound) -> tuple[float, float, float]:
    """What ``bound`` (of ``lim``, unlimited storage) asks of the storage: read and write bytes/s, KV kept in bytes."""
    coeffs = storage_coefficients(lim.traffic)
    read, write = (coeffs[name][0] * bound.R_p_Bps + coeffs[name][1] * bound.R_d_Bps for name in ("storage_read", "storage_write"))
    return read, write, bound.turns_per_s * lim.kept_bytes_s_per_turn


def planned_nodes(lim: Limits, bound: Bound) -> int | None:
    """The fewest storage nodes of ``lim``'s storage profile that do not bind ``bound`` (``None`` without a storage
    profile): each limit's load over one node's capacity, rounded up, the largest."""
    side = lim.cluster.storage
    return None if side is None else max(nodes_needed(side, *storage_loads(lim, bound)).values())


def check_runner_storage(scenario: Scenario, check: int | None) -> None:
    """Refuse ``--check`` with a sized storage cluster: the runner reads from unlimited storage, so it would be held to
    a bound that the storage limits lower and it does not model."""
    if check is not None and scenario.cluster.storage_limits:
        raise PlanError(f"--check = {check} is not allowed with --storage-nodes = {scenario.storage_nodes}; the runner reads from "
                        "unlimited storage, so check without --storage-nodes (the bound then plans the storage nodes)", 2)
