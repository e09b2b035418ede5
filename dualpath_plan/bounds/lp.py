"""Throughput bounds: a linear program over the turn rate and the two read paths (DESIGN section 5).

Variables: the turn throughput ``X`` (agent turns/s) and the hit-KV rates ``R_p``, ``R_d`` (bytes/s)
read from storage on the PE and the DE path. Constraints, each ``load <= capacity``:

* every link of the bandwidth model (section 4.2 of the paper, eq. (1)-(8) generalised; the load
  coefficients of ``paper`` or ``exact`` accounting): ``alpha_i*R_p + beta_i*R_d <= C_i``;
* the KV a turn needs: ``R_p + R_d = X * hit_tokens * kv_bytes_per_token``;
* prefill compute: ``X * F_turn <= P * g * rate``, ``rate`` a turn's FLOP over its saturated pass time
  (``compute.prefill_flops_per_gpu``, ``steptime.PrefillPass``);
* decode: ``X * gen_tokens <= D * g * decode_tokens_per_gpu_s`` (``decode``: the step time at the best batch);
* with a storage cluster of a given size (``--storage``, ``--storage-nodes``; ``bounds.storage``): its read side
  ``R_p + R_d <= N_s*S_r``, its write side ``omega*(R_p + R_d) <= N_s*S_w`` and its capacity ``X*k <= N_s*U`` (the
  KV kept for live agents, Little's law). Without one the storage is unlimited, the paper's model;
* with a DRAM tier (``--dram-tier``; ``bounds.lru``): a third rate ``R_m``, the hit KV the tier serves, with
  ``R_p + R_d + R_m = X*h``, its own path's loads on the links (``symbolic.tier_loads``: every byte read from storage
  and every byte of new KV is also cached) and the LRU's cap ``R_m * k_w / h <= C`` (the working set the served hits
  need within the tier's bytes). The scheduler may leave a hit unread from the tier, so the tier is an option.

Modes: ``basic`` (``R_d = 0``: the PE path only), ``dualpath`` (the split is free), ``oracle`` (no
I/O constraint at all, the paper's Oracle that bypasses reads, H2D/D2H and PD transfers: compute
and decode only; the storage rows too). Maximise ``X``; among equal ``X`` the least DE-path traffic is preferred.

The LP is solved by HiGHS (``scipy.optimize.linprog``), scaled so that every row reads
``load/capacity <= 1`` and ``X`` is measured against an upper bound ``x_ref`` (so coefficients are
O(1)). Shadow prices come from the solver's row duals: ``dX/dC_i = -x_ref * m_i / C_i``, reported
per unit the resource is bought in (per node for SNIC and DRAM, per GPU for CNIC, compute and
decode). At a degenerate vertex (two resources binding at one tie) a dual is one of several valid
prices; the price then bounds the gain of adding that resource alone from above. Where several
splits reach the optimum (another limit binds first) the least DE-path traffic is reported, as in
``bandwidth``.

Many configurations of one mode are solved as one block-diagonal LP (:func:`solve_many`): the
objective is a sum of independent blocks, so each block's optimum and duals are those of its own
LP. That is how sweeps reach thousands of solves per second.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from dualpath_plan.bounds._generated import STORAGE_RESOURCES, TIER_LOAD_COEFFS
from dualpath_plan.bounds.bandwidth import RESOURCE_WORDS, RESOURCES, capacities, load_coefficients, storage_capacities, storage_coefficients
from dualpath_plan.bounds.compute import DTYPES, MAX_PREFILL_NODES, prefill_instance_gpus, prefill_instance_nodes, prefill_rates, resolve_dtype
from dualpath_plan.bounds.decode import DEFAULT_TPOT_SLO_MS, DecodeOptions, DecodeRate, decode_rate
from dualpath_plan.bounds.steptime import prefill_comm
from dualpath_plan.bounds.lru import served_cap_Bps
from dualpath_plan.bounds.storage import kept_bytes_s_per_turn
from dualpath_plan.model.cluster import Cluster, Traffic
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.finite import guard
from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.units import GB
from dualpath_plan.model.profiles import Hardware, Model
from dualpath_plan.model.workload import TurnSet, served_turns
from dualpath_plan.model.scenario import Scenario

MODES = ("basic", "dualpath", "oracle")
COMPUTE = "prefill_compute"
DECODE = "decode"
LIMIT_NAMES = (*RESOURCES, COMPUTE, DECODE)  # every bound's limits; a sized storage cluster adds STORAGE_LIMITS
STORAGE_CAPACITY = "storage_capacity"
STORAGE_LIMITS = (*STORAGE_RESOURCES, STORAGE_CAPACITY)
DRAM_TIER = "dram_tier"
WORDS = {
    **RESOURCE_WORDS,
    COMPUTE: "prefill-GPU forward passes (GEMMs, attention, all-to-all)",
    DECODE: "decode-GPU steps (attention, GEMMs and weight reads, all-to-all; tokens within the TPOT SLO)",
    "storage_read": "storage nodes, read side (their ports at the measured share of line rate, and SSDs)",
    "storage_write": "storage nodes, write side (ports and SSDs, every copy)",
    STORAGE_CAPACITY: "storage nodes' capacity (the KV kept for live agents)",
    DRAM_TIER: "DRAM-tier capacity (the working set its hits need)",
}
BINDING_TOL = 1e-6  # relative: a resource at >= 1 - 1e-6 of capacity is binding (HiGHS feasibility 1e-7)
_BATCH = 400  # configurations per block-diagonal LP


@dataclass(frozen=True)
class BoundOptions:
    """Choices the bound needs beyond the scenario: GEMM dtype (``None``: the model's) and decode.

    What :func:`dualpath_plan.bound_options` returns; every bound and run takes one.

    Attributes:
        dtype: The prefill and decode GEMMs' dtype (``fp8``, ``bf16`` or ``fp4``; ``--dtype``), or ``None`` for the
            model profile's own.
        decode: The decode side's choices (:class:`~dualpath_plan.bounds.decode.DecodeOptions`): TPOT SLO, instance
            size, multi-token prediction.
        prefill_instance_nodes: Prefill nodes one expert-parallel instance spans (``--prefill-instance-nodes``), or
            ``None`` for the fewest that hold the weights (``compute.prefill_instance_nodes``).
    """

    dtype: str | None = None
    decode: DecodeOptions = field(default_factory=DecodeOptions)
    prefill_instance_nodes: int | None = None

    @classmethod
    def parse(cls, dtype: str | None = None, tpot_slo_ms: float = DEFAULT_TPOT_SLO_MS, decode_instance_nodes: int | None = None,
              mtp: int = 0, mtp_accepted: float | None = None, prefill_instance_nodes: int | None = None) -> BoundOptions:
        """Validate the flag values (``--dtype``, ``--tpot-slo-ms``, ``--decode-instance-nodes``, ``--mtp``, ``--mtp-accepted``,
        ``--prefill-instance-nodes``)."""
        if dtype is not None and dtype not in DTYPES:
            raise PlanError(f"--dtype {dtype!r} is not allowed; must be one of {', '.join(DTYPES)}", 2)
        if prefill_instance_nodes is not None:
            check_flag("--prefill-instance-nodes", prefill_instance_nodes)
        return cls(dtype, DecodeOptions.parse(tpot_slo_ms, decode_instance_nodes, mtp, mtp_accepted), prefill_instance_nodes)

    def prefill_floor(self, model: Model, hw: Hardware) -> int:
        """The fewest prefill nodes of ``hw`` that serve ``model``: one instance (``compute.prefill_instance_nodes``).
        A chosen instance too small to hold the weights is refused in one line (exit 2)."""
        nodes, fewest = self.prefill_instance_nodes, prefill_instance_nodes(model, hw)
        if nodes is not None and nodes < fewest:
            need = (f"which takes at least {fewest} nodes of its HBM" if fewest < MAX_PREFILL_NODES else
                    "and its non-routed weights alone fill a GPU's HBM, so no number of nodes holds them")
            raise PlanError(f"--prefill-instance-nodes = {nodes} nodes is not allowed for {model.name} on {hw.name}: one instance must hold "
                            f"the weights, {need}", 2)
        return fewest if nodes is None else nodes


@dataclass(frozen=True)
class Limits:
    """One cluster's LP data in SI: per-turn demands and per-GPU compute and decode rates."""

    cluster: Cluster
    traffic: Traffic
    hit_bytes_per_turn: float
    flops_per_turn: float
    gen_tokens_per_turn: float
    turns_per_trajectory: float
    prefill_flops_per_gpu: float
    decode_tokens_per_gpu_s: float
    dtype: str = "fp8"
    decode: DecodeRate | None = None
    prefill_instance: tuple[int, str] = (0, "none")  # (GPUs, all-to-all path) of one prefill instance (compute.prefill_instance_gpus)
    prefill_why: str = "prefill_weights_do_not_fit"  # why a prefill side of no capacity has none
    inputs: str = field(default="these limits", compare=False, repr=False)  # Scenario.inputs, for messages
    derate: tuple[tuple[str, float], ...] = ()  # (limit, factor): that limit's capacity scaled (a what-if: planning.pick)
    kept_bytes_s_per_turn: float = 0.0  # k: KV bytes the storage keeps per turn/s (bounds.storage), byte-seconds per turn
    tier_bytes: float = 0.0  # C: a DRAM tier's bytes over every node (0: no tier)
    tier_sigma: float = 0.0  # the tier's share on prefill nodes, P / (P + D)
    working_bytes_s_per_turn: float = 0.0  # k_w: the live agents' KV per turn/s, the tier's working set (bounds.lru)

    @property
    def tier(self) -> bool:
        """Whether a DRAM tier serves part of the hit KV."""
        return self.tier_bytes > 0

    @cached_property
    def _tier_coeffs(self) -> dict[str, tuple[float, float, float]]:
        mu, omega, sigma = self.traffic.mu, self.traffic.omega, self.tier_sigma
        return {name: tuple(float(fn(mu, omega, sigma)) for fn in fns) for name, fns in TIER_LOAD_COEFFS.items()}

    @cached_property
    def tier_read_coefficients(self) -> dict[str, float]:
        """Load per byte the DRAM tier serves, on each link and storage side (empty without a tier)."""
        if not self.tier:
            return {}
        names = (*RESOURCES, *(STORAGE_RESOURCES if self.cluster.storage_limits else ()))
        return {name: self._tier_coeffs[name][2] for name in names}

    @property
    def tier_cap_Bps(self) -> float:
        """The most hit KV the tier serves, bytes/s (``bounds.lru.served_cap_Bps``)."""
        return served_cap_Bps(self.tier_bytes, self.hit_bytes_per_turn, self.working_bytes_s_per_turn)

    @cached_property
    def coefficients(self) -> dict[str, tuple[float, float]]:
        """Load per hit-KV byte on each link, on the PE path and on the DE path (``bandwidth``; with a DRAM tier,
        ``symbolic.tier_loads``' own, which add the tier's caching)."""
        if self.tier:
            return {name: self._tier_coeffs[name][:2] for name in RESOURCES}
        return load_coefficients(self.traffic)

    @cached_property
    def storage_coefficients(self) -> dict[str, tuple[float, float]]:
        """Load per hit-KV byte on the storage cluster's read and write sides (empty without a sized storage cluster)."""
        if not self.cluster.storage_limits:
            return {}
        return {name: self._tier_coeffs[name][:2] for name in STORAGE_RESOURCES} if self.tier else storage_coefficients(self.traffic)

    def capacities(self) -> dict[str, float]:
        """Aggregate capacity of every limit: I/O in B/s, compute FLOP/s, decode tokens/s."""
        return self._capacities

    @property
    def serves_nothing_because(self) -> tuple[str, ...]:
        """Why a side has no capacity at all: ``prefill_weights_do_not_fit`` (fewer prefill nodes than
        the weights need), ``prefill_instance_exceeds_prefill_side`` (fewer than a chosen prefill instance spans),
        ``decode_weights_do_not_fit``, ``decode_weights_exceed_slo`` or ``decode_instance_exceeds_decode_side``; empty if
        none."""
        out = (self.prefill_why,) if self.prefill_flops_per_gpu == 0 else ()
        if self.decode_tokens_per_gpu_s == 0 and self.decode is not None:
            out += (f"decode_{self.decode.limited_by}",)
        return out

    @cached_property
    def _capacities(self) -> dict[str, float]:
        c = self.cluster
        caps = {
            **capacities(c),
            COMPUTE: c.P * c.pe.g * self.prefill_flops_per_gpu,
            DECODE: c.D * c.de.g * self.decode_tokens_per_gpu_s,
        }
        if c.storage_limits:
            caps.update(storage_capacities(c.storage) | {STORAGE_CAPACITY: c.storage.nodes * c.storage.usable_bytes})
        if self.tier:
            caps[DRAM_TIER] = self.tier_bytes
        for name, factor in self.derate:
            caps[name] *= factor
        return caps

    def derated(self, name: str, factor: float) -> Limits:
        """The same limits with ``name``'s capacity times ``factor`` (e.g. one resource 10 % short)."""
        return replace(self, derate=(*self.derate, (name, factor)))

    def units(self) -> dict[str, tuple[int, str, str]]:
        """For each limit: (how many units, ``node`` or ``GPU``, the SI unit of one unit's capacity)."""
        c, out = self.cluster, {}
        for name in RESOURCES:
            nodes, g = (c.P, c.pe.g) if name.startswith("pe") else (c.D, c.de.g)
            out[name] = (nodes * g, "GPU", "B/s") if "cnic" in name else (nodes, "node", "B/s")
        out[COMPUTE] = (c.P * c.pe.g, "GPU", "FLOP/s")
        out[DECODE] = (c.D * c.de.g, "GPU", "tokens/s")
        if c.storage_limits:
            n = c.storage.nodes
            out.update({"storage_read": (n, "storage node", "B/s"), "storage_write": (n, "storage node", "B/s"), STORAGE_CAPACITY: (n, "storage node", "B")})
        if self.tier:
            out[DRAM_TIER] = (c.P + c.D, "node", "B")
        return out


def decode_side_rate(scenario: Scenario, options: BoundOptions = BoundOptions(), turns: TurnSet | None = None) -> DecodeRate:
    """The decode rate :func:`limits_of` uses for ``scenario``'s ``D`` decode nodes (the mean turn of ``turns``)."""
    turns = served_turns(scenario.workload) if turns is None else turns
    return decode_rate(scenario.model, turns.mean_turn(scenario.workload), scenario.de_hw, scenario.D, options.decode)


def limits_of(scenario: Scenario, options: BoundOptions = BoundOptions(), turns: TurnSet | None = None,
              rate: DecodeRate | None = None) -> Limits:
    """Gather the LP data of ``scenario`` (compute on the PE hardware, decode on the DE hardware) for the mean of
    ``turns``: by default the turns of the workload's replay data set (``model.workload.served_turns``), which
    every run replays, so agents/s count the data set's turns per agent; a run passes its own turns. ``rate``:
    the decode side's :func:`decode_rate` when the caller has it already (it depends on ``D``, not on ``P``)."""
    turns = served_turns(scenario.workload) if turns is None else turns
    model, work = scenario.model, turns.mean_turn(scenario.workload)
    dtype = resolve_dtype(model, options.dtype)
    rate = decode_side_rate(scenario, options, turns) if rate is None else rate
    floor = options.prefill_floor(model, scenario.pe_hw)  # refuses a chosen instance that cannot hold the weights, before any mean
    flops, per_gpu = prefill_rates(model, turns, scenario.pe_hw, dtype, options.prefill_instance_nodes)
    storage = scenario.cluster.storage
    kept = kept_bytes_s_per_turn(model, work, rate, turns.turns_per_agent, storage.retention_s) if storage is not None else 0.0
    tier = (scenario.P + scenario.D) * scenario.dram_tier_GB * GB if scenario.dram_tier_GB else 0.0
    working = kept_bytes_s_per_turn(model, work, rate, turns.turns_per_agent, 0.0) if tier else 0.0  # an ended agent is asked for no more
    return guard(Limits(
        cluster=scenario.cluster,
        traffic=Traffic.of(work, scenario.accounting),
        hit_bytes_per_turn=work.hit_tokens * model.kv_bytes_per_token,
        flops_per_turn=flops,
        gen_tokens_per_turn=work.gen_tokens,
        turns_per_trajectory=turns.turns_per_agent,
        # Fewer prefill nodes than one instance (which holds the weights) compute nothing.
        prefill_flops_per_gpu=per_gpu if scenario.P >= floor else 0.0,
        decode_tokens_per_gpu_s=rate.tokens_per_gpu_s,
        dtype=dtype,
        decode=rate,
        prefill_instance=_instance(model, scenario.pe_hw, options.prefill_instance_nodes),
        prefill_why=prefill_short_why(model, scenario.pe_hw, scenario.P),
        inputs=scenario.inputs,
        kept_bytes_s_per_turn=kept,
        tier_bytes=tier,
        tier_sigma=scenario.P / (scenario.P + scenario.D) if tier else 0.0,
        working_bytes_s_per_turn=working,
    ), "the bound's inputs", scenario.inputs)


def prefill_short_why(model: Model, hw: Hardware, P: int) -> str:
    """Why ``P`` prefill nodes below one prefill instance serve nothing: the weights do not fit in them, or (P holds the
    weights) the chosen instance spans more nodes than the side has."""
    return "prefill_weights_do_not_fit" if P < prefill_instance_nodes(model, hw) else "prefill_instance_exceeds_prefill_side"


def _instance(model, hw, nodes: int | None) -> tuple[int, str]:
    """(GPUs, all-to-all path) of one prefill instance of ``model`` on ``hw``."""
    gpus = prefill_instance_gpus(model, hw, nodes)
    return gpus, prefill_comm(model, hw, gpus)[2]


@dataclass(frozen=True)
class ShadowPrice:
    """Turns/s gained per extra unit of one resource's capacity on every node (or GPU) of its side.

    ``elasticity`` is the same price without units: the fractional gain of ``X`` per fractional
    gain of the resource's capacity (``dX/dC * C / X``), so resources of different units compare.

    Attributes:
        resource: The binding limit: a link or DRAM of the bandwidth model (``pe_snic``, ..., ``de_dram``),
            ``prefill_compute``, ``decode``, or a side of a sized storage cluster (``storage_read``, ``storage_write``,
            ``storage_capacity``).
        turns_per_s_per_unit: Turns/s gained per unit of ``unit`` added to every ``per`` of the limit's side, SI:
            turns/s per B/s (links, DRAM, storage sides), per FLOP/s (prefill compute), per tokens/s (decode) or per
            byte (storage capacity).
        unit: The SI unit of one unit's capacity: ``B/s``, ``FLOP/s``, ``tokens/s`` or ``B``.
        per: What the unit is added to: ``node`` (storage NICs, DRAM), ``GPU`` (compute NICs, prefill compute,
            decode) or ``storage node``.
        elasticity: ``dX/dC * C / X``, dimensionless: 1 % more capacity gives ``elasticity`` % more turns/s.
    """

    resource: str
    turns_per_s_per_unit: float
    unit: str
    per: str
    elasticity: float


@dataclass(frozen=True)
class Bound:
    """The LP optimum of one mode: throughput, KV rates (B/s), split, binding limits and prices.

    What :func:`dualpath_plan.bound` returns, and each mode's entry in ``Analysis.bounds``.

    Attributes:
        mode: ``basic`` (the PE read path only), ``dualpath`` (the split is free) or ``oracle`` (no I/O limit).
        turns_per_s: The bound ``X``, agent turns per second.
        agents_per_s: ``turns_per_s`` over the mean turns per agent of the turns bounded (the workload's data set's,
            157 for agentic-64k), agents per second.
        kv_Bps: Hit KV read from storage at the bound, ``R_p + R_d``, bytes/s (``X`` times the hit bytes per turn; for
            ``oracle`` the KV its turns would load, though it reads nothing).
        R_p_Bps: Hit KV read on the PE path, bytes/s (0 for ``oracle``).
        R_d_Bps: Hit KV read on the DE path, bytes/s (0 for ``basic`` and ``oracle``).
        R_m_Bps: Hit KV served by a DRAM tier, bytes/s (0 without one, and for ``oracle``).
        de_read_fraction: ``R_d / (R_p + R_d)``, a fraction from 0 to 1 (0 when nothing is read); among equal bounds
            the least DE-path traffic.
        binding: The limits at capacity (load within a relative 1e-6 of it), by name.
        utilization: Load over capacity of every limit at the bound, a fraction by name (the nine links and DRAMs,
            ``prefill_compute``, ``decode``, and with a sized storage cluster its three limits; links and storage are 0
            for ``oracle``).
        shadow_prices: Per binding limit of some capacity, its :class:`ShadowPrice` (a limit of none, a side that serves
            nothing, has no price: no added unit mends it).
    """

    mode: str
    turns_per_s: float
    agents_per_s: float
    kv_Bps: float
    R_p_Bps: float
    R_d_Bps: float
    de_read_fraction: float
    binding: tuple[str, ...]
    utilization: dict[str, float]
    shadow_prices: dict[str, ShadowPrice]
    R_m_Bps: float = 0.0


@dataclass(frozen=True)
class _Rows:
    """Scaled rows of one configuration: ``A @ [x, rho_p, rho_d] <= rhs``; ``scale`` maps duals to SI."""

    names: tuple[str, ...]
    A: np.ndarray
    rhs: np.ndarray
    scale: np.ndarray
    x_ref: float


def _si_rows(lim: Limits, mode: str) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Rows ``coef @ [X, r_p, r_d] <= cap`` with the path rates in turns/s of hit KV."""
    caps, h = lim.capacities(), lim.hit_bytes_per_turn
    names, coefs = [], []
    if mode != "oracle":
        for name, (a, b) in {**lim.coefficients, **lim.storage_coefficients}.items():
            names.append(name)
            coefs.append((0.0, a * h, b * h))
    names += [COMPUTE, DECODE]
    coefs += [(lim.flops_per_turn, 0.0, 0.0), (lim.gen_tokens_per_turn, 0.0, 0.0)]
    if mode != "oracle" and lim.cluster.storage_limits:
        names.append(STORAGE_CAPACITY)
        coefs.append((lim.kept_bytes_s_per_turn, 0.0, 0.0))
    return tuple(names), np.array(coefs), np.array([caps[n] for n in names])


def _rows(lim: Limits, mode: str) -> _Rows:
    names, coef, cap = _si_rows(lim, mode)
    zero = cap <= 0
    scale = np.where(zero, coef.max(axis=1), cap)  # a zero-capacity row reads coef/coef * X <= 0
    A, rhs = coef / scale[:, None], np.where(zero, 0.0, 1.0)
    # Each row alone caps X at 1 / (its smallest coefficient over the allowed directions).
    reach = A[:, 1] if mode == "basic" else np.minimum(A[:, 1], A[:, 2])
    per_row = np.where(A[:, 0] > 0, A[:, 0], reach)
    x_ref = 1.0 / float(per_row[~zero].max()) if (~zero).any() else 1.0  # every row closed: X = 0
    return _Rows(names, A * x_ref, rhs, scale, x_ref)


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise PlanError(f"mode {mode!r} is not allowed; must be one of {', '.join(MODES)}", 2)


def _bounds(mode: str) -> list[tuple[float, float | None]]:
    return [(0.0, None), (0.0, None), (0.0, 0.0 if mode in ("basic", "oracle") else None)]


def _record(lim: Limits, mode: str, rows: _Rows, x: np.ndarray, marginals: np.ndarray) -> Bound:
    """Turn a scaled solution and its row duals into a :class:`Bound` in SI."""
    if mode == "dualpath":
        x = _least_de_split(rows, x)
    X = max(float(x[0]) * rows.x_ref, 0.0)
    h = lim.hit_bytes_per_turn
    R_p, R_d = (max(float(x[1]), 0.0) * rows.x_ref * h, max(float(x[2]), 0.0) * rows.x_ref * h) if mode != "oracle" else (0.0, 0.0)
    dX_dC = {name: max(-rows.x_ref * float(marginals[i]) / rows.scale[i], 0.0) for i, name in enumerate(rows.names)}
    return make_bound(lim, mode, X, R_p, R_d, dX_dC)


def make_bound(lim: Limits, mode: str, X: float, R_p: float, R_d: float, dX_dC: dict[str, float], R_m: float = 0.0) -> Bound:
    """A :class:`Bound` from an optimal point (``X`` turns/s, path rates in B/s, ``R_m`` served by a DRAM tier) and the
    price ``dX/dC`` (turns/s per unit of aggregate capacity, SI) of every limit; binding limits get prices, except one of
    no capacity at all: that is a side that serves nothing (``Limits.serves_nothing_because``: its weights do not fit, or
    its instance does not), which no added unit of the resource mends (the reports then name no binding limit)."""
    util = _utilization(lim, X, R_p, R_d, mode != "oracle", R_m)
    binding = tuple(n for n, u in util.items() if u >= 1 - BINDING_TOL)
    units, caps = lim.units(), lim.capacities()
    prices = {}
    for name in (n for n in binding if caps[n] > 0):
        count, per, unit = units[name]
        price = dX_dC.get(name, 0.0)
        prices[name] = ShadowPrice(name, price * count, unit, per, price * caps[name] / X if X > 0 else 0.0)
    total = R_p + R_d
    bound = Bound(mode, X, X / lim.turns_per_trajectory, X * lim.hit_bytes_per_turn, R_p, R_d, R_d / total if total > 0 else 0.0, binding, util,
                  prices, R_m)
    return guard(bound, f"the {mode} bound", lim.inputs)


def _utilization(lim: Limits, X: float, R_p: float, R_d: float, io: bool, R_m: float = 0.0) -> dict[str, float]:
    caps, out, tier = lim.capacities(), {}, lim.tier_read_coefficients
    for name, (a, b) in {**lim.coefficients, **lim.storage_coefficients}.items():
        out[name] = (a * R_p + b * R_d + tier.get(name, 0.0) * R_m) / caps[name] if io else 0.0
    for name, load in ((COMPUTE, X * lim.flops_per_turn), (DECODE, X * lim.gen_tokens_per_turn)):
        out[name] = load / caps[name] if caps[name] > 0 else 1.0
    if lim.cluster.storage_limits:
        out[STORAGE_CAPACITY] = X * lim.kept_bytes_s_per_turn / caps[STORAGE_CAPACITY] if io else 0.0
    if lim.tier:
        out[DRAM_TIER] = R_m * lim.working_bytes_s_per_turn / lim.hit_bytes_per_turn / caps[DRAM_TIER] if io else 0.0
    return out


def _objective(n: int) -> np.ndarray:
    return np.tile([-1.0, 0.0, 0.0], n)


def _least_de_split(rows: _Rows, x: np.ndarray) -> np.ndarray:
    """Among the optimal splits at the solver's ``x``, the one with the least DE-path traffic.

    With ``rho_p = x - rho_d`` a link row reads ``a*x + (b - a)*rho_d <= rhs``: rows with b < a give
    a lower limit on ``rho_d``; the answer is the largest of them (or 0). Any optimal dual stays
    optimal at any optimal primal point (complementary slackness), so the prices do not change.
    """
    a, b = rows.A[:, 1], rows.A[:, 2]
    falling = b < a
    with np.errstate(divide="ignore", invalid="ignore"):
        lows = np.where(falling, (a * x[0] - rows.rhs) / (a - b), 0.0)
    rho_d = float(np.clip(lows.max(initial=0.0), 0.0, max(float(x[0]), 0.0)))
    return np.array([x[0], x[0] - rho_d, rho_d])


def solve(lim: Limits, mode: str) -> Bound:
    """The throughput bound of one cluster in ``mode`` (one HiGHS solve)."""
    from scipy.optimize import linprog  # imported here: scipy.optimize costs ~1 s of start-up

    _check_mode(mode)
    if lim.tier and mode != "oracle":
        return _solve_tier(lim, mode)
    rows = _rows(lim, mode)
    res = linprog(
        _objective(1), A_ub=rows.A, b_ub=rows.rhs, A_eq=np.array([[-1.0, 1.0, 1.0]]), b_eq=[0.0],
        bounds=_bounds(mode), method="highs",
    )
    _check_status(res)
    return _record(lim, mode, rows, res.x, res.ineqlin.marginals)


def _solve_tier(lim: Limits, mode: str) -> Bound:
    """The bound with a DRAM tier (module docstring): variables ``[X, r_p, r_d, r_m]``, the rates in turns/s of hit KV,
    each row scaled to ``load/capacity <= 1``; among equal ``X`` the most served by the tier (as an LRU serves its hits)."""
    from scipy.optimize import linprog

    names, coef, cap = _si_rows(lim, mode)
    h, tier = lim.hit_bytes_per_turn, lim.tier_read_coefficients
    rm = np.array([tier.get(n, 0.0) * h for n in names])
    names, coef = (*names, DRAM_TIER), np.vstack([np.column_stack([coef, rm]), [0.0, 0.0, 0.0, lim.working_bytes_s_per_turn]])
    cap = np.append(cap, lim.capacities()[DRAM_TIER])
    scale = np.where(cap > 0, cap, coef.max(axis=1))
    A, rhs = coef / scale[:, None], np.where(cap > 0, 1.0, 0.0)
    bounds = [(0.0, None), (0.0, None), (0.0, 0.0 if mode == "basic" else None), (0.0, None)]
    eq = np.array([[-1.0, 1.0, 1.0, 1.0]])
    best = linprog([-1.0, 0.0, 0.0, 0.0], A_ub=A, b_ub=rhs, A_eq=eq, b_eq=[0.0], bounds=bounds, method="highs")
    _check_status(best)
    X = float(best.x[0])  # then the most r_m at that X (a second solve with X held)
    most = linprog([0.0, 0.0, 0.0, -1.0], A_ub=A, b_ub=rhs, A_eq=eq, b_eq=[0.0], method="highs",
                   bounds=[(X * (1 - 1e-9), X), *bounds[1:]])
    x = most.x if most.status == 0 else best.x
    dX_dC = {name: max(-float(best.ineqlin.marginals[i]) / scale[i], 0.0) for i, name in enumerate(names)}
    return make_bound(lim, mode, X, float(x[1]) * h, float(x[2]) * h, dX_dC, float(x[3]) * h)


def _check_status(res) -> None:
    if res.status != 0:
        raise PlanError(f"the throughput LP has no solution (HiGHS status {res.status}: {res.message})", 1)


def solve_many(limits: list[Limits], mode: str) -> list[Bound]:
    """Bounds of many clusters in one mode, solved as block-diagonal HiGHS LPs of ``_BATCH`` blocks."""
    _check_mode(mode)
    if any(lim.tier for lim in limits):  # the tier's LP has a fourth rate: solved one by one
        return [solve(lim, mode) for lim in limits]
    out: list[Bound] = []
    for start in range(0, len(limits), _BATCH):
        out += _solve_block(limits[start : start + _BATCH], mode)
    return out


def _solve_block(limits: list[Limits], mode: str) -> list[Bound]:
    import scipy.sparse as sps
    from scipy.optimize import linprog

    rows = [_rows(lim, mode) for lim in limits]
    n, k = len(rows), len(rows[0].names)
    A = np.stack([r.A for r in rows])  # (n, k, 3)
    row_idx = np.repeat(np.arange(n * k), 3)
    col_idx = (np.arange(n)[:, None, None] * 3 + np.arange(3)[None, None, :]).repeat(k, axis=1).ravel()
    A_ub = sps.csr_matrix((A.ravel(), (row_idx, col_idx)), shape=(n * k, 3 * n))
    eq_cols = np.arange(3 * n)
    A_eq = sps.csr_matrix((np.tile([-1.0, 1.0, 1.0], n), (eq_cols // 3, eq_cols)), shape=(n, 3 * n))
    res = linprog(
        _objective(n), A_ub=A_ub, b_ub=np.concatenate([r.rhs for r in rows]), A_eq=A_eq, b_eq=np.zeros(n),
        bounds=_bounds(mode) * n, method="highs",
    )
    _check_status(res)
    duals = res.ineqlin.marginals.reshape(n, k)
    x = res.x.reshape(n, 3)
    return [_record(lim, mode, r, x[i], duals[i]) for i, (lim, r) in enumerate(zip(limits, rows))]


def next_purchase(bound: Bound) -> ShadowPrice | None:
    """The binding resource whose extra capacity raises ``X`` the most per fraction added."""
    best = max(bound.shadow_prices.values(), key=lambda p: p.elasticity, default=None)
    return best if best is not None and best.elasticity > 0 else None


def bounds(scenario: Scenario, options: BoundOptions = BoundOptions()) -> dict[str, Bound]:
    """The bound of every mode for one scenario."""
    lim = limits_of(scenario, options)
    return {mode: solve(lim, mode) for mode in MODES}
