"""The cluster's symbols as frozen records: one node's ``g``, ``B``, ``s``, ``M``; a ``P``/``D`` cluster; the
traffic the exact accounting adds per hit-KV byte (``mu``, ``omega``).

These are the inputs of the bandwidth model (paper section 3, eq. (1)-(9)); they live in the model layer
because a :class:`~dualpath_plan.model.scenario.Scenario` is built from them and checked with
:func:`check_node` before any bound is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import Hardware, Storage, Workload

Accounting = Literal["exact", "paper"]
ACCOUNTINGS = ("exact", "paper")


@dataclass(frozen=True)
class NodeSpec:
    """One node's symbols (the paper's section 4.2): g GPUs, B bytes/s per CNIC direction, SNIC = s*B, DRAM M bytes/s.

    Attributes:
        g: GPUs (engines) per node, one compute NIC each.
        B: Usable compute-NIC bandwidth per GPU, each direction, bytes/s.
        s: The node's usable storage-NIC bandwidth over ``B``, dimensionless (SNIC = ``s*B`` bytes/s).
        M: Usable host DRAM bandwidth per node, reads and writes together, bytes/s.
    """

    g: int
    B: float
    s: float
    M: float

    @classmethod
    def of(cls, hw: Hardware) -> NodeSpec:
        """The symbols of a hardware profile (efficiency factors applied)."""
        return cls(g=hw.g, B=hw.B, s=hw.s, M=hw.M)


@dataclass(frozen=True)
class StorageSide:
    """The storage cluster behind the storage NICs: ``nodes`` storage nodes of one profile (``None``: as many as the
    bound needs, planned by ``planning.storage``) and how long an idle agent's KV is kept.

    Attributes:
        name: The storage profile's name.
        nodes: Storage nodes, a count, or ``None`` (planned: no storage limit in the bound).
        read_Bps: KV one storage node serves to readers, bytes/s (``Storage.read_Bps``: S_r).
        write_Bps: New KV one storage node's share persists, bytes/s (``Storage.write_Bps``: S_w).
        usable_bytes: KV one storage node holds, bytes (``Storage.usable_bytes``).
        retention_s: Seconds an agent's KV is kept after its last turn (``--storage-retention-s``).
        replicas: Copies kept of every byte, each on its own storage node (``Storage.replicas``), so the cluster has
            at least this many nodes.
    """

    name: str
    nodes: int | None
    read_Bps: float
    write_Bps: float
    usable_bytes: float
    retention_s: float = 0.0
    replicas: int = 1

    @classmethod
    def of(cls, storage: Storage, nodes: int | None, retention_s: float = 0.0) -> StorageSide:
        """The storage side of ``nodes`` nodes of profile ``storage``."""
        return cls(storage.name, nodes, storage.read_Bps, storage.write_Bps, storage.usable_bytes, retention_s, storage.replicas)

    @property
    def sized(self) -> bool:
        """Whether the node count is given (then the storage limits enter the bound)."""
        return self.nodes is not None

    def with_nodes(self, nodes: int | None) -> StorageSide:
        return replace(self, nodes=nodes)


@dataclass(frozen=True)
class Cluster:
    """P prefill nodes of spec ``pe`` and D decode nodes of spec ``de``, and the storage cluster behind their storage NICs
    (``None``: unlimited, the paper's model)."""

    P: int
    D: int
    pe: NodeSpec
    de: NodeSpec
    storage: StorageSide | None = None

    def __post_init__(self) -> None:
        for name, value in (("P", self.P), ("D", self.D)):
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise PlanError(f"{name} = {value!r} nodes is not allowed; must be a whole number >= 1", 2)

    @property
    def storage_limits(self) -> bool:
        """Whether a storage cluster of a given size limits the bound."""
        return self.storage is not None and self.storage.sized

    @property
    def homogeneous(self) -> bool:
        return self.pe == self.de


@dataclass(frozen=True)
class Traffic:
    """Bytes per hit-KV byte that the exact accounting adds: ``mu`` miss KV, ``omega`` write-back."""

    accounting: str
    mu: float
    omega: float

    @classmethod
    def of(cls, workload: Workload, accounting: str) -> Traffic:
        """``mu = miss/hit``, ``omega = (miss + generated)/hit`` tokens per turn; zero for ``paper``."""
        if accounting not in ACCOUNTINGS:
            raise PlanError(f"--accounting {accounting!r} is not allowed; must be one of {', '.join(ACCOUNTINGS)}", 2)
        if accounting == "paper":
            return cls("paper", 0.0, 0.0)
        hit = workload.hit_tokens
        return cls("exact", workload.miss_tokens / hit, (workload.miss_tokens + workload.gen_tokens) / hit)


def check_node(node: NodeSpec, where: str, line_rates_Gbps: tuple[float, float] | None = None) -> None:
    """Refuse a node outside the model's assumptions: the PE CNIC read side needs s <= g/2 (eq. (1)).

    ``line_rates_Gbps``: the profile's (snic_Gbps, cnic_Gbps), to state the limit in the fields a user sets."""
    if node.s <= node.g / 2:
        return
    if line_rates_Gbps is not None:
        snic, cnic = line_rates_Gbps
        raise PlanError(f"{where}: snic_Gbps = {snic:g} Gb/s is not allowed with cnic_Gbps = {cnic:g} Gb/s and {node.g} GPUs; "
                        f"must be <= {snic * (node.g / 2) / node.s:.4g} Gb/s (eq. (1): s = SNIC / CNIC <= g/2 = {node.g / 2:g}; "
                        f"here s = {node.s:.4g})", 1)
    raise PlanError(
        f"{where}: s = {node.s:g} (SNIC / CNIC bandwidth) is not allowed; eq. (1) needs s <= g/2 = {node.g / 2:g} "
        "(the paper's text says s <= g, the algebra gives g/2)",
        1,
    )
