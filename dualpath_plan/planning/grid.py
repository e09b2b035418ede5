"""A sweep over any axes, bounded in closed form over the whole grid at once.

A **family** is everything but the budget: one hardware pair, model, workload and ``--set`` combination
(``model.axes``). A **group** is a family at one budget (nodes, GPUs, USD or USD/h): its configurations are
the budget's frontier, every ``P >= 1`` with ``D = floor((budget - w_P*P) / w_D) >= 1`` (``frontier``; for a
homogeneous node or GPU budget, every split ``P + D = n``). Each configuration is bounded in every mode.

With a storage profile (``--storage``), a storage axis (``--storage-nodes``) makes each family a group per node count:
the storage nodes are bought first (under a money budget at their price or rent) and the frontier spends the rest, and
the storage cluster's read and write sides join the links and its capacity the limits, as in ``lp``. Without the axis
each configuration reports the storage nodes its bound needs (``planning.storage.planned_nodes``), uncounted.

The closed form of ``closed_bound`` is vectorised over every configuration of a family. A family's
constants do not depend on P or D: each link's load coefficients ``alpha_i``, ``beta_i`` and one node's
capacity (eq. (1)-(8) via ``bandwidth``), a turn's hit bytes ``h`` and FLOP, one prefill node's FLOP/s and the
fewest prefill nodes that hold the weights, and the decode capacity of ``d`` nodes for every ``d`` (a table:
it is not linear in ``d``, ``decode``). So for N configurations

    X = min( 1 / (h * H*(P, D)),  P*g*rate / F_turn,  cap(D) / gen )

with ``H*`` the envelope minimum of ``bandwidth.envelope`` on an (N, K) array, as ``closed_bound.solve_closed``
computes it for one. The optimal set of each group and mode (every configuration within
``pick.TOLERANCE_FRAC`` of the group's best) and the order of ``pick.RULE`` (robustness: the bounds under single 10 %
capacity shortfalls from the worst up, leximin, then the bound, the cost, fewer prefill nodes) are vectorised the same
way, so ``rank == 0`` is the split ``sweep`` and ``bottleneck`` pick. The batched HiGHS LP stays the
reference (:func:`lp_reference`; a property test holds the two equal on a sample of the grid).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from dualpath_plan.bounds._generated import STORAGE_RESOURCES
from dualpath_plan.bounds.bandwidth import RESOURCES, capacities, coefficient_arrays, envelope, storage_coefficients
from dualpath_plan.bounds.compute import prefill_instance_nodes, prefill_rates, resolve_dtype
from dualpath_plan.bounds.decode import decode_rate
from dualpath_plan.bounds.lp import BINDING_TOL, COMPUTE, DECODE, MODES, STORAGE_CAPACITY, BoundOptions, limits_of
from dualpath_plan.bounds.storage import kept_bytes_s_per_turn
from dualpath_plan.model.axes import BUDGETS, Axes
from dualpath_plan.model.cluster import Cluster, StorageSide, Traffic
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.finite import guard
from dualpath_plan.model.flags import MAX_NODES
from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.money import PURCHASE, RENT
from dualpath_plan.model.scenario import DEFAULT_MODEL, DEFAULT_WORKLOAD, Scenario, build_scenario, check_storage_nodes
from dualpath_plan.model.workload import served_turns
from dualpath_plan.planning.pick import DERATE_FRAC, SAME_FRAC, TOLERANCE_FRAC
from dualpath_plan.planning.sweep import node_price

MAX_CONFIGS = 2_000_000  # configurations in one grid: about 1 GB of columns at the most, 10 s of closed form here
MAX_FAMILIES = 2_000  # hardware x model x workload x --set combinations: each is resolved once (~5 ms), 10 s at the most
MAX_GROUPS = 200_000  # families x budgets
_CHUNK = 20_000  # configurations per envelope call (bounds the (N, falling, rising) work array to ~30 MB)
# The limits a grid row's binding bits and utilisation columns name, in order: the links, the storage cluster's read and
# write sides, prefill compute, decode and the storage capacity (the storage ones only ever bind with storage nodes given).
GRID_LIMITS = (*RESOURCES, *STORAGE_RESOURCES, COMPUTE, DECODE, STORAGE_CAPACITY)
_N_LIMITS = len(GRID_LIMITS)
_I_COMPUTE, _I_DECODE, _I_KEPT = (GRID_LIMITS.index(n) for n in (COMPUTE, DECODE, STORAGE_CAPACITY))


@dataclass(frozen=True)
class Family:
    """One hardware pair, model, workload and ``--set`` combination (``sets``: the axis texts applied)."""

    scenario: Scenario
    sets: tuple[str, ...] = ()

    @property
    def pe_profile(self) -> str:
        return self.scenario.pe_hw.name

    @property
    def de_profile(self) -> str:
        return self.scenario.de_hw.name


@dataclass(frozen=True)
class Group:
    """A family at one budget of ``kind`` (nodes, gpus, usd, usd_per_hour); ``weights``: what one PE and one DE node
    count against it; with a storage axis, ``storage_nodes`` storage nodes of ``storage_weight`` each (their price or
    rent under a money budget, 0 under a node or GPU budget, which counts compute nodes), bought first."""

    family: int
    kind: str
    amount: float
    weights: tuple[float, float]
    storage_nodes: int | None = None  # None: no storage axis (no storage profile, or each split's planned count)
    storage_weight: float = 0.0

    @property
    def compute_amount(self) -> float:
        """What the budget leaves for compute nodes once the storage nodes are bought."""
        return self.amount - (self.storage_nodes or 0) * self.storage_weight


@dataclass(frozen=True)
class ModeColumns:
    """One mode's bound of every configuration: turns/s, DE-read fraction, binding limits (a bit per
    :data:`GRID_LIMITS` entry), the optimal-set flag, the robust bound, the place in the rule's order and the storage
    nodes (given on the axis, or planned from the bound; -1 without a storage profile)."""

    turns_per_s: np.ndarray
    de_read_fraction: np.ndarray
    binding: np.ndarray
    in_optimal_set: np.ndarray
    robust_turns_per_s: np.ndarray  # the bound under the worst single 10 % shortfall (members of the set only; else NaN)
    rank: np.ndarray  # 0: the group's pick; the set in the rule's order, then the rest by bound
    storage_nodes: np.ndarray  # given or planned storage nodes; -1 without a storage profile


@dataclass(frozen=True)
class Grid:
    """Every configuration of every group, group after group in the axes' order, P ascending within a group."""

    families: tuple[Family, ...]
    groups: tuple[Group, ...]
    group: np.ndarray
    P: np.ndarray
    D: np.ndarray
    cost: np.ndarray  # in the budget's unit
    gpus: np.ndarray
    hit_bytes: np.ndarray  # per turn, per configuration's family: kv at the bound is X times this
    turns_per_agent: np.ndarray
    nothing: np.ndarray  # a bit per reason a side serves nothing (NOTHING_WHY)
    modes: dict[str, ModeColumns]
    skipped: tuple[tuple[int, str], ...] = ()  # (family, why) for groups that buy no split
    options: BoundOptions = field(default_factory=BoundOptions)

    @property
    def size(self) -> int:
        return len(self.P)

    def scenario_of(self, row: int) -> Scenario:
        """Configuration ``row`` as a scenario: its family's, on its P and D and its group's storage nodes."""
        grp = self.groups[int(self.group[row])]
        sc = self.families[grp.family].scenario.with_nodes(int(self.P[row]), int(self.D[row]))
        return sc if grp.storage_nodes is None else sc.with_storage_nodes(grp.storage_nodes)

    def binding_names(self, mode: str, row: int) -> tuple[str, ...]:
        bits = int(self.modes[mode].binding[row])
        return tuple(name for i, name in enumerate(GRID_LIMITS) if bits >> i & 1)

    def nothing_names(self, row: int) -> tuple[str, ...]:
        bits = int(self.nothing[row])
        return tuple(name for i, name in enumerate(NOTHING_WHY) if bits >> i & 1)


NOTHING_WHY = ("prefill_weights_do_not_fit", "prefill_instance_exceeds_prefill_side", "decode_weights_do_not_fit",
               "decode_weights_exceed_slo", "decode_instance_exceeds_decode_side")  # lp.Limits.serves_nothing_because's words (decode.DecodeRate.limited_by)


def families_of(axes: Axes, profile_files: tuple = (), fixed_sets: tuple[str, ...] = ()) -> tuple[Family, ...]:
    """Every family of ``axes`` in order: hardware, then model, workload and the ``--set`` axes (the last fastest)."""
    hardware = [(p, p) for p in axes.profiles] + list(axes.pairs)
    count = len(hardware) * max(1, len(axes.models)) * max(1, len(axes.workloads)) * math.prod(len(v) for _, v in axes.sets)
    if count > MAX_FAMILIES:
        raise PlanError(f"the sweep has {count:,} combinations of hardware, model, workload and --set values; at most {MAX_FAMILIES:,} "
                        "(narrow an axis)", 2)
    if axes.count > MAX_GROUPS:
        raise PlanError(f"the sweep has {axes.count:,} groups (combinations with a budget); at most {MAX_GROUPS:,} (narrow an axis)", 2)
    combos = itertools.product(*(texts for _, texts in axes.sets)) if axes.sets else [()]
    out = []
    for (pe, de), model, workload, sets in itertools.product(hardware, axes.models or (DEFAULT_MODEL,), axes.workloads or (DEFAULT_WORKLOAD,),
                                                            list(combos)):
        try:
            sc = build_scenario(None, pe_profile=pe, de_profile=de, model=model, workload=workload, accounting=axes.accounting or "exact",
                                profile_files=tuple(profile_files), sets=(*fixed_sets, *sets), storage=axes.storage,
                                storage_retention_s=axes.storage_retention_s)
        except PlanError as exc:  # a value an axis made: say which axis as typed
            raise PlanError(f"{exc}{_made_by(axes, sets)}", exc.exit_code) from None
        try:
            for nodes in axes.storage_nodes if sc.storage is not None else ():
                check_storage_nodes(nodes, sc.storage)
        except PlanError as exc:
            where = "" if axes.storage_nodes_file is None else f"--scenario {axes.storage_nodes_file}: "
            raise PlanError(f"{where}{exc}{_made_by(axes, sets)}", exc.exit_code) from None
        out.append(Family(sc, tuple(sets)))
    return tuple(out)


def _made_by(axes: Axes, sets: tuple[str, ...]) -> str:
    """`` (a value of --set KEY=...)`` naming the ``--set`` axes as typed that made ``sets``, or nothing."""
    typed = [f"--set {text}" for key, text in axes.typed_sets if any(s.startswith(f"{key}=") for s in sets)]
    from_file = any(" in --scenario " in text for text in typed)  # a file's axis is named even when it has one value
    return f" (a value of {', '.join(typed)})" if typed and (axes.count > 1 or from_file) else ""


def groups_of(families: tuple[Family, ...], kind: str, amounts: tuple[float, ...], prices: dict[str, float] | None = None,
              storage_nodes: tuple[int, ...] = ()) -> tuple[Group, ...]:
    """Every family at every budget and storage node count (families outermost); ``prices`` per node by profile name for
    a money budget (else each profile's own price or rent)."""
    if kind not in BUDGETS:
        raise PlanError(f"budget kind {kind!r} is not allowed; must be one of {', '.join(BUDGETS)}", 2)
    weights = [_weights(f.scenario, kind, prices or {}) for f in families]
    store = [_storage_weight(f.scenario, kind, bool(storage_nodes)) for f in families]
    return tuple(Group(i, kind, float(a), w, n, s) for i, (w, s) in enumerate(zip(weights, store)) for a in amounts for n in (storage_nodes or (None,)))


def _storage_weight(sc: Scenario, kind: str, sized: bool) -> float:
    """What one storage node counts against a ``kind`` budget: its price or rent under a money budget (the storage
    profile must give it), nothing under a node or GPU budget. Planned storage (no ``--storage-nodes`` axis) is
    refused under a money budget: its cost would follow each split's bound, which ``plan --storage`` weighs."""
    if sc.storage is None or kind in ("nodes", "gpus"):
        return 0.0
    flag = BUDGETS[kind].flag
    if not sized:
        raise PlanError(f"{flag} with --storage {sc.storage.name} needs --storage-nodes (an axis of storage node counts); plan --storage "
                        "buys each split's planned storage within a money budget", 2)
    value, key = (sc.storage.price_usd, "storage_node_price_usd") if kind == "usd" else (sc.storage.rent_per_hour_usd, "storage_node_rent_per_hour_usd")
    if value is None:
        raise PlanError(f"{flag} with --storage {sc.storage.name} needs {key} in the storage profile (or --set {key}=...)", 2)
    return float(value)


def _weights(sc: Scenario, kind: str, prices: dict[str, float]) -> tuple[float, float]:
    if kind == "nodes":
        return (1.0, 1.0)
    if kind == "gpus":
        return (float(sc.pe_hw.g), float(sc.de_hw.g))
    basis = PURCHASE if kind == "usd" else RENT
    return (float(node_price(sc.pe_hw, prices, basis)), float(node_price(sc.de_hw, prices, basis)))


def frontier_size(group: Group) -> int:
    """How many splits :func:`frontier` holds (every P up to the largest that leaves one decode node), without making it."""
    wp, wd = group.weights
    return max(0, math.floor((group.compute_amount - wd) / wp * (1 + 1e-12)))


def frontier(group: Group) -> tuple[np.ndarray, np.ndarray]:
    """The budget's frontier: every P >= 1 with D = floor((amount - w_P*P) / w_D) >= 1 (a hair of slack: 0.3 USD/h buys
    three nodes at 0.1 USD/h, not two by rounding); ``amount`` net of the group's storage nodes."""
    wp, wd = group.weights
    P = np.arange(1, frontier_size(group) + 1)
    D = np.floor((group.compute_amount - wp * P) / wd * (1 + 1e-12)).astype(np.int64)
    keep = D >= 1
    return P[keep], D[keep]


@dataclass(frozen=True)
class _Constants:
    """A family's bound inputs that do not depend on P or D (with a storage profile, its node's capacities, the storage
    sides' coefficients and the KV kept per turn/s for every decode count)."""

    alpha: np.ndarray
    beta: np.ndarray
    unit: np.ndarray  # one node's capacity of each link, B/s
    on_pe: np.ndarray
    h: float
    flops: float
    g_pe: int
    per_gpu: float  # one prefill GPU's usable FLOP/s (the saturated pass rate)
    p_min: int  # one prefill instance (BoundOptions.prefill_floor)
    p_fewest: int  # the fewest prefill nodes that hold the weights (compute.prefill_instance_nodes)
    gen: float
    turns_per_agent: float
    decode_caps: np.ndarray  # tokens/s of d decode nodes at [d - 1]
    decode_why: np.ndarray  # NOTHING_WHY bits of d decode nodes that make no tokens
    storage: bool = False  # a storage profile behind the SNICs
    st_alpha: np.ndarray = field(default_factory=lambda: np.zeros(0))  # storage sides' load per hit byte on the PE path
    st_beta: np.ndarray = field(default_factory=lambda: np.zeros(0))  # and on the DE path
    st_unit: np.ndarray = field(default_factory=lambda: np.zeros(0))  # one storage node's read and write side, B/s
    usable: float = 0.0  # one storage node's usable bytes
    replicas: int = 1  # the storage profile's copies, each on its own node (bounds.storage.nodes_needed)
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0))  # KV kept per turn/s of d decode nodes at [d - 1], byte-seconds


def _constants(sc: Scenario, options: BoundOptions, d_values: np.ndarray) -> _Constants:
    """As ``lp.limits_of`` gathers them for one cluster (the same calls), once per family; decode for the decode-node
    counts ``d_values`` its configurations have (the table holds 0 elsewhere, never read)."""
    turns = served_turns(sc.workload)
    work = turns.mean_turn(sc.workload)
    model = sc.model
    traffic = Traffic.of(work, sc.accounting)
    alpha, beta = coefficient_arrays(traffic)
    one = capacities(Cluster(1, 1, sc.cluster.pe, sc.cluster.de))
    p_min = options.prefill_floor(model, sc.pe_hw)  # refuses a chosen instance that cannot hold the weights, before any mean
    flops, per_gpu = prefill_rates(model, turns, sc.pe_hw, resolve_dtype(model, options.dtype), options.prefill_instance_nodes)
    caps, why, kept = (np.zeros(int(d_values.max())), np.zeros(int(d_values.max()), dtype=np.int64), np.zeros(int(d_values.max())))
    for d in d_values.tolist():
        rate = decode_rate(model, work, sc.de_hw, d, options.decode)
        caps[d - 1] = d * sc.de_hw.g * rate.tokens_per_gpu_s  # (D * g) * rate, as lp.Limits multiplies it
        why[d - 1] = 0 if rate.tokens_per_gpu_s > 0 else 1 << NOTHING_WHY.index(f"decode_{rate.limited_by}")
        if sc.storage is not None:
            kept[d - 1] = kept_bytes_s_per_turn(model, work, rate, turns.turns_per_agent, sc.storage_retention_s)
    base = _Constants(alpha, beta, np.array([one[n] for n in RESOURCES]), np.array([n.startswith("pe") for n in RESOURCES]),
                      work.hit_tokens * model.kv_bytes_per_token, flops, sc.pe_hw.g, per_gpu, p_min, prefill_instance_nodes(model, sc.pe_hw),
                      work.gen_tokens, turns.turns_per_agent, caps, why)
    if sc.storage is None:
        return base
    coeffs, side = storage_coefficients(traffic), StorageSide.of(sc.storage, None)
    return replace(base, storage=True, st_alpha=np.array([coeffs[n][0] for n in STORAGE_RESOURCES]),
                   st_beta=np.array([coeffs[n][1] for n in STORAGE_RESOURCES]), st_unit=np.array([side.read_Bps, side.write_Bps]),
                   usable=side.usable_bytes, replicas=side.replicas, kept=kept)


def evaluate(families: tuple[Family, ...], groups: tuple[Group, ...], options: BoundOptions = BoundOptions()) -> Grid:
    """Bound every configuration of every group in every mode, in closed form (module docstring)."""
    total = sum(frontier_size(g) for g in groups)  # counted before any frontier is made
    if total > MAX_CONFIGS:
        raise PlanError(f"the sweep has {total:,} configurations; at most {MAX_CONFIGS:,} (narrow an axis)", 2)
    frontiers = [frontier(g) for g in groups]
    total = sum(len(P) for P, _ in frontiers)
    for g, (P, D) in zip(groups, frontiers):
        if len(P) and (nodes := int((P + D).max())) > MAX_NODES:
            raise PlanError(f"{BUDGETS[g.kind].flag} = {fmt(g.amount, BUDGETS[g.kind].unit)} gives {families[g.family].scenario.profile_label} "
                            f"{nodes:,} nodes; a sweep takes at most {MAX_NODES:,} per cluster", 2)
    skipped = tuple((g.family, f"{BUDGETS[g.kind].flag} = {fmt(g.amount, BUDGETS[g.kind].unit)}" + _storage_words(g) + " buys no prefill and decode node")
                    for g, (P, _) in zip(groups, frontiers) if not len(P))
    if total == 0:
        raise PlanError(f"no budget of the sweep buys one prefill and one decode node: {skipped[0][1]}", 1)
    by_family: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        if len(frontiers[i][0]):
            by_family.setdefault(g.family, []).append(i)
    parts = [_family_block(families[fam].scenario, own, [groups[i] for i in own], [frontiers[i] for i in own], options)
             for fam, own in sorted(by_family.items())]
    cat = lambda key: np.concatenate([p[key] for p in parts])  # noqa: E731
    modes = {m: ModeColumns(*(np.concatenate([p["modes"][m][k] for p in parts]) for k in range(7))) for m in MODES}
    return Grid(families, groups, cat("group"), cat("P"), cat("D"), cat("cost"), cat("gpus"), cat("h"), cat("tpa"), cat("nothing"), modes,
                skipped, options)


def _storage_words(group: Group) -> str:
    return "" if not group.storage_nodes else f" with {group.storage_nodes:,} storage nodes"


def _family_block(sc: Scenario, ids: list[int], groups: list[Group], fronts: list[tuple[np.ndarray, np.ndarray]], options: BoundOptions) -> dict:
    P = np.concatenate([f[0] for f in fronts])
    D = np.concatenate([f[1] for f in fronts])
    group = np.concatenate([np.full(len(f[0]), i) for i, f in zip(ids, fronts)])
    wp = np.concatenate([np.full(len(f[0]), g.weights[0]) for g, f in zip(groups, fronts)])
    wd = np.concatenate([np.full(len(f[0]), g.weights[1]) for g, f in zip(groups, fronts)])
    Ns = np.concatenate([np.full(len(f[0]), g.storage_nodes or 0) for g, f in zip(groups, fronts)])  # 0: no storage axis
    ws = np.concatenate([np.full(len(f[0]), g.storage_weight) for g, f in zip(groups, fronts)])
    c = _constants(sc, options, np.unique(D))
    cost = P * wp + D * wd + Ns * ws
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    short = np.where(P < c.p_fewest, 1, 1 << NOTHING_WHY.index("prefill_instance_exceeds_prefill_side"))
    nothing = np.where(P < c.p_min, short, 0) | c.decode_why[D - 1]
    modes = {m: _mode(c, m, P, D, Ns, cost, group, starts) for m in MODES}
    for m, cols in modes.items():  # as lp.make_bound guards every bound: a float overflow is one line, not a silent inf
        if not np.all(np.isfinite(cols[0])):
            r = int(np.flatnonzero(~np.isfinite(cols[0]))[0])
            guard(limits_of(sc.with_nodes(int(P[r]), int(D[r])), options), "the bound's inputs", sc.with_nodes(int(P[r]), int(D[r])).inputs)
            raise PlanError(f"the {m} bound of {sc.with_nodes(int(P[r]), int(D[r])).inputs} is {cols[0][r]}: together the inputs take "
                            "the model's arithmetic past what a float holds; change one of them", 1)
    n = len(P)
    return {"group": group, "P": P, "D": D, "cost": cost, "gpus": P * sc.pe_hw.g + D * sc.de_hw.g, "h": np.full(n, c.h),
            "tpa": np.full(n, c.turns_per_agent), "nothing": nothing, "modes": modes}


@dataclass(frozen=True)
class _Io:
    """The I/O lines of N configurations: coefficients on R_p and R_d (K,) and capacities (N, K), the links and, with
    storage nodes given, the storage cluster's read and write sides."""

    alpha: np.ndarray
    beta: np.ndarray
    caps: np.ndarray


def _io(c: _Constants, P: np.ndarray, D: np.ndarray, Ns: np.ndarray, scale: np.ndarray | None = None) -> _Io:
    caps = np.where(c.on_pe[None, :], P[:, None], D[:, None]) * c.unit[None, :]
    alpha, beta = c.alpha, c.beta
    if c.storage and Ns.any():  # a storage axis: every configuration of the family has its storage nodes given
        caps = np.concatenate([caps, Ns[:, None] * c.st_unit[None, :]], axis=1)
        alpha, beta = np.concatenate([alpha, c.st_alpha]), np.concatenate([beta, c.st_beta])
    if scale is not None:
        caps = caps * scale[:, :caps.shape[1]]
    return _Io(alpha, beta, caps)


def _terms(c: _Constants, mode: str, P: np.ndarray, D: np.ndarray, Ns: np.ndarray, scale: np.ndarray | None = None) -> tuple:
    """(x_io, x_compute, x_decode, x_kept, I/O lines) turns/s; ``scale`` (N, limits) multiplies each limit's capacity."""
    io = _io(c, P, D, Ns, scale)
    cap_c = _compute_caps(c, P)
    cap_d = c.decode_caps[D - 1]
    cap_k = Ns * c.usable
    if scale is not None:
        cap_c, cap_d, cap_k = cap_c * scale[:, _I_COMPUTE], cap_d * scale[:, _I_DECODE], cap_k * scale[:, _I_KEPT]
    with np.errstate(divide="ignore", invalid="ignore"):
        x_c = cap_c / c.flops if c.flops > 0 else np.full(len(P), np.inf)
        x_d = cap_d / c.gen
        kept = c.kept[D - 1] if c.storage else np.zeros(len(P))
        x_k = np.where((Ns > 0) & (kept > 0) & (mode != "oracle"), cap_k / np.where(kept > 0, kept, 1.0), np.inf)
        if mode == "oracle":
            x_io = np.full(len(P), np.inf)
        else:
            H = np.concatenate([envelope(io.alpha / io.caps[s], (io.beta - io.alpha) / io.caps[s], mode == "dualpath")[0]
                                for s in _chunks(len(P))]) if len(P) else np.zeros(0)
            x_io = 1.0 / H / c.h  # as closed_bound divides: the same bits, so ties break the same way
    return x_io, x_c, x_d, x_k, io


def _compute_caps(c: _Constants, P: np.ndarray) -> np.ndarray:
    """Prefill FLOP/s of P nodes, ``(P * g) * rate`` as ``lp.Limits`` multiplies it; none below the fewest that hold the weights."""
    return np.where(P >= c.p_min, (P * c.g_pe) * c.per_gpu, 0.0)


def _chunks(n: int):
    return (slice(s, s + _CHUNK) for s in range(0, n, _CHUNK))


def _mode(c: _Constants, mode: str, P: np.ndarray, D: np.ndarray, Ns: np.ndarray, cost: np.ndarray, group: np.ndarray, starts: np.ndarray) -> tuple:
    x_io, x_c, x_d, x_k, io = _terms(c, mode, P, D, Ns)
    X = np.minimum(np.minimum(np.minimum(x_io, x_c), x_d), x_k)
    f = _least_de_fraction(io, X * c.h) if mode == "dualpath" else np.zeros(len(P))
    util = _utilization(c, mode, P, D, Ns, X, f, io)
    binding = ((util >= 1 - BINDING_TOL) * (1 << np.arange(_N_LIMITS))).sum(axis=1)
    lengths = np.diff(np.r_[starts, len(P)])
    top = np.repeat(np.maximum.reduceat(X, starts), lengths)
    member = X >= top * (1 - TOLERANCE_FRAC)
    falls = np.zeros((len(P), _N_LIMITS))  # each member's bounds under the single shortfalls, from the worst up (0: not a member)
    falls[member] = _shortfalls(c, mode, P[member], D[member], Ns[member], X[member], util[member])
    robust = np.where(member, falls[:, 0], np.nan)
    x_step = np.where(top > 0, SAME_FRAC * top, 1.0)  # pick.grains: equal to within rounding is equal
    dear = np.repeat(np.maximum.reduceat(np.where(member, np.abs(cost), 0.0), starts), lengths)
    cost_step = np.where(dear > 0, SAME_FRAC * dear, 1.0)
    leximin = [-np.rint(falls[:, k] / x_step) for k in range(_N_LIMITS - 1, -1, -1)]  # pick._pick's order: the worst sorts first
    order = np.lexsort((P, np.rint(cost / cost_step), -np.rint(X / x_step), *leximin, ~member, group))  # the last key sorts first
    rank = np.empty(len(P), dtype=np.int64)
    rank[order] = np.arange(len(P)) - np.repeat(starts, lengths)  # the groups stay contiguous and in order
    return X, f, binding, member, robust, rank, _storage_nodes(c, mode, D, Ns, X, f)


def _storage_nodes(c: _Constants, mode: str, D: np.ndarray, Ns: np.ndarray, X: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Each configuration's storage nodes: as given on the axis, else the fewest that do not bind its bound
    (``planning.storage.planned_nodes``, vectorised), or -1 without a storage profile."""
    if not c.storage:
        return np.full(len(X), -1, dtype=np.int64)
    if Ns.any():
        return Ns.astype(np.int64)
    R_p, R_d = ((1 - f) * X * c.h, f * X * c.h) if mode != "oracle" else (np.zeros(len(X)), np.zeros(len(X)))  # make_bound's split
    loads = [c.st_alpha[k] * R_p + c.st_beta[k] * R_d for k in range(2)] + [X * c.kept[D - 1]]
    per_node = (c.st_unit[0], c.st_unit[1], c.usable)
    need = [np.ceil(load / cap * (1 - 1e-9)) for load, cap in zip(loads, per_node)]  # bounds.storage._whole
    return np.maximum(np.maximum(np.maximum(need[0], need[1]), need[2]), c.replicas).astype(np.int64)  # and the copies


def _least_de_fraction(io: _Io, R: np.ndarray) -> np.ndarray:
    """The smallest DE-read fraction at which every line carries the hit-KV rate ``R`` (``closed_bound._least_de_fraction``)."""
    falling = io.beta < io.alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        lows = np.where(falling[None, :], (io.alpha * R[:, None] - io.caps) / ((io.alpha - io.beta) * R[:, None]), 0.0)
    f = np.clip(np.nan_to_num(lows, nan=0.0, posinf=1.0, neginf=0.0).max(axis=1, initial=0.0), 0.0, 1.0)
    return np.where(R > 0, f, 0.0)


def _utilization(c: _Constants, mode: str, P: np.ndarray, D: np.ndarray, Ns: np.ndarray, X: np.ndarray, f: np.ndarray, io: _Io) -> np.ndarray:
    """Load over capacity of every limit (N, GRID_LIMITS), as ``lp.make_bound`` measures it (a limit of no capacity
    reads 1; the storage limits 0 without storage nodes given)."""
    out = np.zeros((len(P), _N_LIMITS))
    if mode != "oracle":
        R_p, R_d = (1 - f) * X * c.h, f * X * c.h
        out[:, :io.caps.shape[1]] = (io.alpha[None, :] * R_p[:, None] + io.beta[None, :] * R_d[:, None]) / io.caps
        if c.storage and Ns.any():
            out[:, _I_KEPT] = X * c.kept[D - 1] / (Ns * c.usable)
    cap_c = _compute_caps(c, P)
    cap_d = c.decode_caps[D - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        out[:, _I_COMPUTE] = np.where(cap_c > 0, X * c.flops / cap_c, 1.0)
        out[:, _I_DECODE] = np.where(cap_d > 0, X * c.gen / cap_d, 1.0)
    return out


def _shortfalls(c: _Constants, mode: str, P: np.ndarray, D: np.ndarray, Ns: np.ndarray, X: np.ndarray, util: np.ndarray) -> np.ndarray:
    """``pick.shortfalls`` vectorised, (N, GRID_LIMITS): the bound under each single ``DERATE_FRAC`` shortfall, from the
    worst up; a limit loaded at most ``1 - DERATE_FRAC`` (which cannot lower it) leaves the bound, as ``pick._pick`` pads."""
    out = np.repeat(X[:, None], _N_LIMITS, axis=1)
    for j in range(_N_LIMITS):
        rows = np.flatnonzero(util[:, j] > 1 - DERATE_FRAC)
        if not len(rows):
            continue
        scale = np.ones((len(rows), _N_LIMITS))
        scale[:, j] = 1 - DERATE_FRAC
        x_io, x_c, x_d, x_k, _ = _terms(c, mode, P[rows], D[rows], Ns[rows], scale)
        out[rows, j] = np.minimum(X[rows], np.minimum(np.minimum(np.minimum(x_io, x_c), x_d), x_k))
    return np.sort(out, axis=1)


@dataclass(frozen=True)
class LpCheck:
    """The closed form against HiGHS on a sample: configurations solved, the largest relative difference of X, and
    how many binding sets differ."""

    samples: int
    max_rel_diff: float
    binding_mismatches: int


MAX_LP_SAMPLES = 100_000  # configurations HiGHS solves again: about 25 s here (0.24 ms each, in every mode)


def sample_rows(grid: Grid, fraction: float, seed: int = 0) -> np.ndarray:
    """A reproducible share ``fraction`` of the grid's configurations (at least one, at most :data:`MAX_LP_SAMPLES`)."""
    count = max(1, int(round(grid.size * fraction)))
    if count > MAX_LP_SAMPLES:
        raise PlanError(f"--lp-sample = {fraction:g} is {count:,} configurations of {grid.size:,}; HiGHS solves at most "
                        f"{MAX_LP_SAMPLES:,} again (about 25 s here): give a smaller share", 2)
    return np.sort(np.random.default_rng(seed).choice(grid.size, size=min(count, grid.size), replace=False))


def lp_reference(grid: Grid, rows: np.ndarray) -> LpCheck:
    """Solve ``rows`` of the grid with the batched HiGHS LP (``lp.solve_many``) in every mode and compare."""
    from dualpath_plan.bounds.lp import solve_many

    limits = [limits_of(grid.scenario_of(int(r)), grid.options) for r in rows]
    worst, mismatched = 0.0, 0
    for mode in MODES:
        for r, bound in zip(rows, solve_many(limits, mode)):
            mine = float(grid.modes[mode].turns_per_s[r])
            scale = max(abs(bound.turns_per_s), abs(mine), 1e-300)
            worst = max(worst, abs(bound.turns_per_s - mine) / scale)
            mismatched += set(bound.binding) != set(grid.binding_names(mode, int(r)))
    return LpCheck(len(rows), worst, mismatched)
