"""A scenario: the frozen bundle every command evaluates (hardware per side, model, workload, P, D).

This is the one resolver of configuration precedence: ``--set`` overrides, then the profile
files (``--profile-file``, then ``DUALPATH_PLAN_PROFILES``, then the shipped ones), then nothing
else: there are no hidden defaults beyond the CLI's documented option defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dualpath_plan.model.cluster import Cluster, NodeSpec, StorageSide, Traffic, check_node
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import MAX_NODES, check_flag
from dualpath_plan.model.profiles import Catalog, Hardware, Model, Storage, Workload, apply_overrides, catalog, check_override_keys, parse_override, settable_keys
from dualpath_plan.model.units import Bps_to_gbps
from dualpath_plan.model.workload import check_window, is_trace_name, mean_turn, workload_of_trace

DEFAULT_MODEL = "ds-v3.2"
DEFAULT_WORKLOAD = "agentic-64k"
DEFAULT_P = 2
DEFAULT_D = 4


# The most nodes of one cluster: every command then answers in seconds (bottleneck's best split bounds
# every split of P + D; sweep every split of a GPU budget; the cluster is 16x the paper's 48P96D).

@dataclass(frozen=True)
class Scenario:
    """Prefill nodes of ``pe_hw``, decode nodes of ``de_hw``, serving ``model`` on ``workload``.

    What :func:`dualpath_plan.scenario` returns and every command starts from. The profiles are the loaded records,
    in SI (``dualpath-plan profiles show NAME`` prints a profile's values with their sources).

    Attributes:
        pe_hw: The prefill nodes' hardware profile (``model.profiles.Hardware``), after ``--set`` and ``pe.`` overrides.
        de_hw: The decode nodes' hardware profile, after ``--set`` and ``de.`` overrides (equal to ``pe_hw`` for one
            node type).
        model: The model profile (``model.profiles.Model``).
        workload: The workload profile (:class:`~dualpath_plan.model.profiles.Workload`), or a trace standing for one.
        P: Prefill nodes, a count.
        D: Decode nodes, a count.
        accounting: ``exact`` (miss KV and write-back counted) or ``paper`` (the paper's hit-KV-only accounting).
        overrides: The ``--set KEY=VALUE`` texts applied, as given, for reports.
        storage: The storage profile behind the storage NICs (``--storage``; ``model.profiles.Storage``), or ``None``:
            unlimited storage, the paper's model.
        storage_nodes: Storage nodes (``--storage-nodes``), or ``None``: as many as the bound needs (planned).
        storage_retention_s: Seconds an agent's KV is kept after its last turn (``--storage-retention-s``).
        dram_tier_GB: GB of host DRAM on every compute node pooled as a KV cache (``--dram-tier``), or ``None``: none.
    """

    pe_hw: Hardware
    de_hw: Hardware
    model: Model
    workload: Workload
    P: int
    D: int
    accounting: str
    overrides: tuple[str, ...] = ()  # the --set KEY=VALUE texts applied, for reports
    storage: Storage | None = None
    storage_nodes: int | None = None
    storage_retention_s: float = 0.0
    dram_tier_GB: float | None = None

    @property
    def homogeneous(self) -> bool:
        return self.pe_hw == self.de_hw

    @property
    def cluster(self) -> Cluster:
        side = None if self.storage is None else StorageSide.of(self.storage, self.storage_nodes, self.storage_retention_s)
        return Cluster(self.P, self.D, NodeSpec.of(self.pe_hw), NodeSpec.of(self.de_hw), side)

    @property
    def turn(self) -> Workload:
        """The mean of the turns the workload's data set serves (``workload.mean_turn``): what one turn costs."""
        return mean_turn(self.workload)

    @property
    def traffic(self) -> Traffic:
        return Traffic.of(self.turn, self.accounting)

    @property
    def profile_label(self) -> str:
        return self.pe_hw.name if self.homogeneous else f"{self.pe_hw.name}+{self.de_hw.name}"

    @property
    def inputs(self) -> str:
        """What the user gave, in one phrase for messages: profiles, nodes, model, workload and overrides."""
        sets = (", " + " ".join(f"--set {text}" for text in self.overrides)) if self.overrides else ""
        return f"{self.profile_label} {self.P}P{self.D}D, {self.model.name} on {self.workload.name}, {self.accounting} accounting{sets}"

    def with_nodes(self, P: int, D: int) -> Scenario:
        """The same scenario on ``P`` prefill and ``D`` decode nodes."""
        return replace(self, P=P, D=D)

    def with_storage_nodes(self, nodes: int | None) -> Scenario:
        """The same scenario with ``nodes`` storage nodes (``None``: planned)."""
        return replace(self, storage_nodes=nodes)


def split_side(overrides: tuple[tuple[str, Any], ...], side: str) -> tuple[tuple[str, Any], ...]:
    """Overrides for one side: plain keys apply to both sides, ``pe.key``/``de.key`` to one and win over
    the plain key whatever the order they were given in (the side's own keys are applied last)."""
    plain = [(key, value) for key, value in overrides if "." not in key]
    own = [(key.partition(".")[2], value) for key, value in overrides if key.startswith(f"{side}.")]
    return tuple(plain + own)


def parse_overrides(texts: list[str] | tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    """Parse and check every ``--set key=value`` (``pe.``/``de.`` prefixes allowed)."""
    parsed = tuple(parse_override(text) for text in texts)
    keys = [key for key, _ in parsed]
    if twice := sorted({key for key in keys if keys.count(key) > 1}):
        raise PlanError(f"--set {twice[0]} is given more than once; give each key once", 2)
    known = settable_keys()
    for key, raw in parsed:
        value = str(raw).lower() if isinstance(raw, bool) else raw  # as typed (TOML)
        prefix, dot, rest = key.partition(".")
        if dot and prefix not in ("pe", "de"):
            raise PlanError(f"--set {key}={value}: unknown prefix {prefix!r}; use pe.KEY or de.KEY", 2)
        check_override_keys(((key, raw),))
        if dot and known[rest] != "hardware":
            raise PlanError(f"--set {key}={value}: {rest!r} is a {known[rest]} key, the same for both sides; "
                            f"pe./de. apply only to hardware keys (use --set {rest}={value})", 2)
    return parsed


def _hardware(cat: Catalog, name: str, overrides: tuple[tuple[str, Any], ...], side: str) -> Hardware:
    hw = apply_overrides(cat.get("hardware", name), "hardware", split_side(overrides, side))
    check_node(NodeSpec.of(hw), f"hardware profile {hw.name!r}", (Bps_to_gbps(hw.snic_Bps), Bps_to_gbps(hw.cnic_Bps)))
    return hw


def build_scenario(
    profile: str | None,
    *,
    model: str = DEFAULT_MODEL,
    workload: str = DEFAULT_WORKLOAD,
    P: int = DEFAULT_P,
    D: int = DEFAULT_D,
    accounting: str = "exact",
    pe_profile: str | None = None,
    de_profile: str | None = None,
    profile_files: tuple[Path, ...] = (),
    sets: tuple[str, ...] = (),
    storage: str | None = None,
    storage_nodes: int | None = None,
    storage_retention_s: float = 0.0,
    dram_tier_GB: float | None = None,
) -> Scenario:
    """Load, override and validate everything a command needs, in one place."""
    pe_name, de_name = pe_profile or profile, de_profile or profile
    if pe_name is None or de_name is None:
        raise PlanError("--profile is required (or both --pe-profile and --de-profile)", 2)
    for name, value in (("-P", P), ("-D", D)):
        check_flag(name, value)
    if P + D > MAX_NODES:
        raise PlanError(f"-P + -D = {P + D} nodes is not allowed; a cluster has at most {MAX_NODES} nodes here "
                        "(larger clusters: size a unit and replicate it)", 2)
    overrides = parse_overrides(sets)
    cat = catalog(tuple(profile_files))
    plain = split_side(overrides, "")
    if is_trace_name(workload):
        _trace_sets(plain)
    scenario = Scenario(
        pe_hw=_hardware(cat, pe_name, overrides, "pe"),
        de_hw=_hardware(cat, de_name, overrides, "de"),
        model=apply_overrides(cat.get("model", model), "model", plain),
        workload=apply_overrides(workload_of_trace(workload) if is_trace_name(workload) else cat.get("workload", workload), "workload", plain),
        P=P,
        D=D,
        accounting=accounting,
        overrides=tuple(sets),
        **_storage(cat, storage, storage_nodes, storage_retention_s, plain),
    )
    if dram_tier_GB is not None:
        scenario = replace(scenario, dram_tier_GB=_dram_tier(dram_tier_GB, scenario))
    scenario.traffic  # validates the accounting name
    check_window(scenario.model, scenario.workload)
    return scenario


def _storage(cat: Catalog, name: str | None, nodes: int | None, retention_s: float, plain: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The storage fields of a scenario from ``--storage``, ``--storage-nodes``, ``--storage-retention-s`` and the
    ``--set`` keys of storage profiles; the two flags and those keys need ``--storage``."""
    keys = settable_keys()
    if name is None:
        if nodes is not None:
            raise PlanError(f"--storage-nodes = {nodes} is not allowed without --storage; name a storage profile "
                            f"({', '.join(cat.names('storage'))})", 2)
        if retention_s:
            raise PlanError(f"--storage-retention-s = {retention_s:g} s is not allowed without --storage; name a storage profile "
                            f"({', '.join(cat.names('storage'))})", 2)
        for key, value in plain:
            if keys.get(key) == "storage":
                raise PlanError(f"--set {key}={value}: {key!r} is a storage profile key, and no --storage is given; name a storage "
                                f"profile ({', '.join(cat.names('storage'))})", 2)
        return {}
    if nodes is not None:
        check_flag("--storage-nodes", nodes)
    check_flag("--storage-retention-s", retention_s)
    profile = apply_overrides(cat.get("storage", name), "storage", plain)
    if nodes is not None:
        check_storage_nodes(int(nodes), profile)
    return {"storage": profile, "storage_nodes": None if nodes is None else int(nodes), "storage_retention_s": float(retention_s)}


def check_storage_nodes(nodes: int, storage: Storage) -> None:
    """Refuse fewer storage nodes than ``storage`` keeps copies of a byte: each copy lives on its own node
    (``bounds.storage.nodes_needed``)."""
    if nodes < storage.replicas:
        raise PlanError(f"--storage-nodes = {nodes} storage nodes is not allowed; {storage.name} keeps {storage.replicas} copies of every "
                        f"byte, each on its own storage node: give at least {storage.replicas}", 2)


def _dram_tier(gb: float, scenario: Scenario) -> float:
    """``--dram-tier GB`` checked: in range, and below every node's host DRAM (``dram_GB``, which the profile must give)."""
    check_flag("--dram-tier", gb)
    if (why := dram_tier_refusal(gb, scenario)) is not None:
        raise PlanError(f"--dram-tier = {gb:g} GB is not allowed: {why}", 2)
    return float(gb)


def dram_tier_refusal(gb: float, scenario: Scenario) -> str | None:
    """Why ``scenario``'s nodes cannot hold a DRAM tier of ``gb`` GB (naming the profile and what to change), or ``None``."""
    for hw in (scenario.pe_hw, scenario.de_hw):
        if hw.dram_bytes is None:
            return f"hardware profile {hw.name!r} gives no dram_GB (the host DRAM of a node); add it to the profile (or --set dram_GB=GB)"
        if gb * 1e9 >= hw.dram_bytes:
            return (f"a {hw.name} node has dram_GB = {hw.dram_bytes / 1e9:g} GB of host DRAM, and the tier must stay below it (the DualPath "
                    "buffer and the host need some)")
    return None


def _trace_sets(plain: tuple[tuple[str, Any], ...]) -> None:
    """Refuse ``--set`` of a workload column with a trace: the trace's own sessions are the workload, so the value
    would change only what is printed (``hit_rate_frac``, a what-if of the bounds, applies to a trace too)."""
    keys = settable_keys()
    for key, _ in plain:
        if keys.get(key) == "workload" and key != "hit_rate_frac":
            raise PlanError(f"--set {key} is not allowed with --trace; the trace's own sessions are the workload "
                            "(--tool-scale and --time-scale rescale its times)", 2)
