"""A procurement question, resolved and checked: candidate node types, budget, target and prices.

``plan`` answers a :class:`PlanRequest`; :func:`make_request` builds one from the values a user
typed (profile names, ``--nodes``/``--gpus``/``--budget-usd``/``--budget-usd-per-hour``,
``--target-turns-per-s`` or ``--target-agents-per-s``, ``--price``/``--rent``), refusing bad input with
one line naming the flag.

Candidates: every ordered (PE type, DE type) pair from ``--pe-profile`` (default: the
``--profile`` list) times ``--de-profile`` (default: the same list), so several ``--profile``
values also offer the mixed clusters. A question is priced on one ``money`` basis: **purchase**
(a profile's ``price_per_node_usd``, overridden by ``--price USD`` for every type or
``--price NAME=USD`` for one; ``--node-cost`` is the same flag) or **rent** (``rent_per_node_hour_usd``,
overridden by ``--rent``). A money budget or price flag names its basis; without one, a question is
priced on purchase when every candidate has a purchase price, else on rent when every candidate
has a rent, else counted in nodes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.fmt import has
from dualpath_plan.model.flags import FLAGS, check_flag
from dualpath_plan.model.money import BASES, PURCHASE, RENT, Basis, check_energy, money_basis
from dualpath_plan.model.power import energy_usd_per_hour
from dualpath_plan.model.workload import agent_turns
from dualpath_plan.model.profiles import Hardware, parse_override
from dualpath_plan.model.schema import did_you_mean
from dualpath_plan.model.scenario import DEFAULT_MODEL, DEFAULT_WORKLOAD, Scenario, build_scenario

BUDGET_UNITS = {"nodes": "nodes", "gpus": "GPUs", "usd": "USD", "usd_per_hour": "USD/h", "kw": "kW"}
BUDGET_KINDS = tuple(BUDGET_UNITS)
MONEY_KINDS = {"usd": PURCHASE.name, "usd_per_hour": RENT.name}  # a money budget's kind -> its basis
PLAN_MODES = ("basic", "dualpath")


@dataclass(frozen=True)
class Budget:
    """A spending limit: ``amount`` nodes, GPUs, USD, USD/h or kW.

    Attributes:
        kind: ``nodes``, ``gpus``, ``usd`` (bought), ``usd_per_hour`` (rented) or ``kw`` (the nodes' power at full load,
            ``--power-kw``: a hall's feed).
        amount: The limit in that unit: nodes, GPUs, USD, USD/h or kW.
    """

    kind: str
    amount: float

    def __post_init__(self) -> None:
        if self.kind not in BUDGET_KINDS:
            raise PlanError(f"budget kind {self.kind!r} is not allowed; must be one of {', '.join(BUDGET_KINDS)}", 2)
        if not _positive(self.amount):
            raise PlanError(f"budget = {self.amount!r} {self.kind} is not allowed; must be a finite number > 0", 2)


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: candidate scenarios (one per PE/DE pair), a budget and/or a target turns/s.

    ``PlanResult.request``: the request :func:`dualpath_plan.plan` checked and answered.

    Attributes:
        candidates: One :class:`~dualpath_plan.model.scenario.Scenario` per (PE type, DE type) pair offered.
        budget: The spending limit (:class:`Budget`: nodes, GPUs, USD or USD/h), or ``None`` for a target alone.
        target_turns_per_s: The throughput to reach, turns/s (``--target-agents-per-s`` arrives converted at the
            workload's turns per agent), or ``None`` for a budget question.
        node_prices: ``--price``/``--node-cost`` or ``--rent`` values: one node's price by profile name, in the basis'
            unit (USD or USD/h).
        options: The bound's options (:class:`~dualpath_plan.bounds.lp.BoundOptions`).
        alternatives: Runner-ups to list after the pick.
        modes: The modes answered, of ``basic`` and ``dualpath``.
        basis: ``purchase`` or ``rent`` (``model.money.BASES``).
        storage_rent_usd_per_hour: With ``--storage``, one storage node's rent per hour (its profile's, plus its power at
            ``--electricity-usd-per-kwh``), or ``None`` where it has none.
        electricity_usd_per_kwh: ``--electricity-usd-per-kwh``, which the node and storage rents include, or ``None``.
        power_twice: Node types whose rent is their profile's own (no ``--rent``, no ``--set`` of it) and got electricity
            added: the shipped profiles quote a cloud's on-demand rent, which includes power already.
        dram_price_per_GB: With ``--dram-tier``, what a GB of the tier's DRAM adds to a node's price on the request's basis
            (``--dram-price`` USD/GB, ``--dram-rent`` USD/GB/h); ``None``: not priced (required under a money budget; under a
            budget in nodes, GPUs or kW, whose weights the tier does not change, it only prices the costs shown).
    """

    candidates: tuple[Scenario, ...]
    budget: Budget | None = None
    target_turns_per_s: float | None = None
    node_prices: dict[str, float] = field(default_factory=dict)  # --price or --rent: per node by profile name, in money.unit (USD or USD/h)
    options: BoundOptions = field(default_factory=BoundOptions)
    alternatives: int = 3
    modes: tuple[str, ...] = PLAN_MODES
    basis: str = PURCHASE.name  # money.BASES: purchase or rent
    storage_rent_usd_per_hour: float | None = None  # --storage: one storage node's rent per hour, electricity added
    dram_price_per_GB: float | None = None  # --dram-price (USD/GB) or --dram-rent (USD/GB/h), on the basis' unit
    electricity_usd_per_kwh: float | None = None  # --electricity-usd-per-kwh, added to the rents (None: not given)
    power_twice: tuple[str, ...] = ()  # node types whose profile's own rent got electricity added (module money: it has power)

    @property
    def dram_tier_GB(self) -> float | None:
        """The DRAM tier's GB on every node of every candidate (``plan --dram-tier``), or ``None``."""
        return self.candidates[0].dram_tier_GB

    def without_tier(self) -> PlanRequest:
        """The same question with no DRAM tier: the same nodes at their own prices (``planning.tier.plan_tiers``)."""
        return replace(self, candidates=tuple(replace(sc, dram_tier_GB=None) for sc in self.candidates), dram_price_per_GB=None)

    @property
    def storage(self):
        """The storage profile every candidate buys storage nodes of (``plan --storage``), or ``None``."""
        return self.candidates[0].storage

    def storage_price(self) -> float | None:
        """One storage node's price on the request's basis (``None``: not priced, or no storage profile)."""
        if self.storage is None:
            return None
        return self.storage.price_usd if self.money is PURCHASE else self.storage_rent_usd_per_hour

    @property
    def money(self) -> Basis:
        return BASES[self.basis]

    def price(self, hw: Hardware) -> float | None:
        """One ``hw`` node's price on the request's basis: its ``--price``/``--rent``, else the profile's own (per side after
        pe./de. --set); with ``--electricity-usd-per-kwh``, plus its power an hour at that price (``hw``'s own
        ``node_power_W``, so per side); with a DRAM tier, plus the tier's GB at ``dram_price_per_GB``."""
        base = self.node_prices.get(hw.name, self.money.price(hw))
        if base is None:
            return None
        if self.electricity_usd_per_kwh is not None:
            base += energy_usd_per_hour(hw.node_power_W, self.electricity_usd_per_kwh)  # check_energy: present where priced
        if self.dram_tier_GB and self.dram_price_per_GB is not None:
            base += self.dram_tier_GB * self.dram_price_per_GB
        return base

    def unpriced(self) -> list[str]:
        """Candidate node types without a price (the storage profile too, with ``--storage``)."""
        missing = {hw.name for sc in self.candidates for hw in (sc.pe_hw, sc.de_hw) if self.price(hw) is None}
        if self.storage is not None and self.storage_price() is None:
            missing.add(self.storage.name)
        return sorted(missing)

    @property
    def inputs(self) -> str:
        """What the user asked, in one phrase for messages: node types, budget or target, model, workload, overrides."""
        first = self.candidates[0]
        ask = f"{self.budget.amount:g} {self.budget.kind}" if self.budget else f"{self.target_turns_per_s:g} turns/s"
        types = ", ".join(dict.fromkeys(sc.profile_label for sc in self.candidates))
        sets = (", " + " ".join(f"--set {text}" for text in first.overrides)) if first.overrides else ""
        return f"{types} for {ask}, {first.model.name} on {first.workload.name}{sets}"

    @property
    def cost_unit(self) -> str:
        """``USD`` (or ``USD/h`` rented) when every candidate node type has a price, else ``nodes``."""
        return "nodes" if self.unpriced() else self.money.unit

    @property
    def cost_kind(self) -> str:
        """What a cluster's cost counts, as a budget kind: ``usd``, ``usd_per_hour`` or ``nodes``."""
        return "nodes" if self.unpriced() else next(k for k, b in MONEY_KINDS.items() if b == self.basis)


def _positive(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def one_of(flags: dict[str, object], what: str) -> tuple[str, object] | None:
    given = [(name, value) for name, value in flags.items() if value is not None]
    if len(given) > 1:
        raise PlanError(f"{' and '.join(n for n, _ in given)} were both given; give at most one {what}", 2)
    return given[0] if given else None


_BUDGET_FLAGS = {"--nodes": "nodes", "--gpus": "gpus", "--budget-usd": "usd", "--budget-usd-per-hour": "usd_per_hour", "--power-kw": "kw"}


def _budget(nodes: int | None, gpus: int | None, budget_usd: float | None, budget_usd_per_hour: float | None,
            power_kw: float | None = None) -> Budget | None:
    picked = one_of({"--nodes": nodes, "--gpus": gpus, "--budget-usd": budget_usd, "--budget-usd-per-hour": budget_usd_per_hour,
                     "--power-kw": power_kw}, "budget")
    if picked is None:
        return None
    flag, value = picked
    return Budget(_BUDGET_FLAGS[flag], check_flag(flag, value))


def parse_node_costs(texts: Sequence[str], names: Sequence[str], basis: Basis = PURCHASE) -> dict[str, float]:
    """``--price USD`` (every type in ``names``) or ``--price NAME=USD`` (one of ``names``); ``--rent`` alike on the rent basis."""
    flag, unit = basis.price_flag, basis.unit
    out: dict[str, float] = {}
    seen: set[str] = set()
    for text in texts:
        name, sep, raw = text.rpartition("=") if "=" in text else ("", "", text)
        if (key := name.strip() if sep else "") in seen:
            raise PlanError(f"{flag} {key or unit} is given more than once; give each node type (and the plain {unit}) once", 2)
        seen.add(key)
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if math.isnan(value) or (sep and not name.strip()):
            raise PlanError(f"{flag} {text!r} is not allowed; give {unit} per node, as {unit} or NAME={unit}", 2)
        check_flag(flag, value, basis.price_flag_names + (f" {name.strip()}" if sep else ""))
        out.update({name.strip(): value} if sep else dict.fromkeys(names, value))
    if unknown := sorted(set(out) - set(names)):
        hint = did_you_mean(unknown[0], names)
        raise PlanError(f"{flag} names {', '.join(unknown)}, which is not a candidate profile{hint}; candidates: {', '.join(names)}", 2)
    return out


def _node_costs(candidates: Sequence[Scenario], node_costs: Sequence[str], basis: Basis) -> dict[str, float]:
    names = list(dict.fromkeys(hw.name for sc in candidates for hw in (sc.pe_hw, sc.de_hw)))
    return parse_node_costs(node_costs, names, basis)


def _unique(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _candidates(profiles: Sequence[str], pe_profiles: Sequence[str], de_profiles: Sequence[str], **scenario_args) -> tuple[Scenario, ...]:
    pe_names, de_names = _unique(pe_profiles or profiles), _unique(de_profiles or profiles)
    if not pe_names or not de_names:
        raise PlanError("--profile is required (or both --pe-profile and --de-profile)", 2)
    return tuple(
        build_scenario(None, pe_profile=pe, de_profile=de, P=1, D=1, **scenario_args)
        for pe in pe_names
        for de in de_names
    )


def _target(candidates: Sequence[Scenario], turns: float | None, agents: float | None) -> float | None:
    picked = one_of({"--target-turns-per-s": turns, "--target-agents-per-s": agents}, "target")
    if picked is None:
        return None
    flag, value = picked
    unit = "turns/s" if flag == "--target-turns-per-s" else "agents/s"
    check_flag(flag, value)
    # agents/s * turns per trajectory = turns/s (every candidate serves the same workload)
    return float(value) if unit == "turns/s" else float(value) * agent_turns(candidates[0].workload)  # type: ignore[arg-type]


def _profile_rents(candidates: Sequence[Scenario], given: dict[str, float]) -> tuple[str, ...]:
    """Node types whose rent, on some side, is their profile's own: not given with ``--rent`` (``given``) nor set with
    ``--set rent_per_node_hour_usd`` or its side's ``pe.``/``de.`` form."""
    out = {}
    for sc in candidates:
        keys = {parse_override(text)[0] for text in sc.overrides}  # checked when the scenario was built
        for side, hw in (("pe", sc.pe_hw), ("de", sc.de_hw)):
            own = not keys & {"rent_per_node_hour_usd", f"{side}.rent_per_node_hour_usd"}
            if hw.rent_per_node_hour_usd is not None and hw.name not in given and own:
                out[hw.name] = None
    return tuple(out)


def _storage_energy(store, rent: float | None, usd_per_kwh: float) -> float | None:
    """A storage node's rent with its power at ``usd_per_kwh`` added (``None``: no storage or no rent)."""
    if store is None or rent is None:
        return rent
    if store.node_power_W is None:
        raise PlanError(f"--electricity-usd-per-kwh needs storage_node_power_W in storage profile {store.name!r} (or --set "
                        "storage_node_power_W=W)", 2)
    return rent + energy_usd_per_hour(store.node_power_W, usd_per_kwh)


_STORAGE_KEYS = {"usd": "storage_node_price_usd", "usd_per_hour": "storage_node_rent_per_hour_usd", "kw": "storage_node_power_W"}


def _check_storage_question(request: PlanRequest) -> None:
    """``--storage`` plans storage nodes within a budget: a target question is refused, and a money or power budget needs
    the storage profile's price, rent or power (what one storage node counts against it)."""
    store, budget = request.storage, request.budget
    if budget is None:
        raise PlanError(f"--storage {store.name} is not allowed with a target (--target-turns-per-s or --target-agents-per-s); plan "
                        "buys storage nodes within a budget: give --nodes, --gpus, --budget-usd, --budget-usd-per-hour or --power-kw", 2)
    per_node = {"usd": store.price_usd, "usd_per_hour": request.storage_rent_usd_per_hour, "kw": store.node_power_W}.get(budget.kind, 0.0)
    if per_node is None:
        key = _STORAGE_KEYS[budget.kind]
        flag = next(f for f, k in _BUDGET_FLAGS.items() if k == budget.kind)
        raise PlanError(f"{flag} with --storage {store.name} needs {key} in the storage profile: what one storage node counts against the "
                        f"budget (add it to the profile, or --set {key}=...)", 2)


FLAG_UNIT = {flag: FLAGS[flag].unit for flag in ("--dram-price", "--dram-rent")}
_DRAM_FLAGS = {PURCHASE.name: ("--dram-price", "USD per GB"), RENT.name: ("--dram-rent", "USD per GB-hour")}


def _tier_price(request: PlanRequest, dram_price: float | None, dram_rent: float | None) -> PlanRequest:
    """``plan --dram-tier``: a budget question only (a target's MILP has no tier). Under a money budget, what a GB of the
    tier's DRAM adds to a node on the request's basis (``--dram-price`` or ``--dram-rent``) is required, so that the plans
    with and without the tier spend the same money; under a budget in nodes, GPUs or kW the tier counts nothing against
    it, and the flag, optional, only prices the costs shown. Either flag without ``--dram-tier``, on the other basis, or
    where the nodes have no price (costs counted in nodes) is refused."""
    tier, given = request.dram_tier_GB, {"--dram-price": dram_price, "--dram-rent": dram_rent}
    for flag, value in given.items():
        if value is not None:
            check_flag(flag, value)
            if not tier:
                raise PlanError(f"{flag} = {value:g} {FLAG_UNIT[flag]} is not allowed without --dram-tier: it prices the tier's DRAM", 2)
    if not tier:
        return request
    if request.budget is None:
        raise PlanError(f"--dram-tier = {tier:g} GB is not allowed with a target (--target-turns-per-s or --target-agents-per-s); plan "
                        "compares the tier with DualPath within a budget: give --nodes, --gpus, --budget-usd, --budget-usd-per-hour or --power-kw", 2)
    flag, noun = _DRAM_FLAGS[request.basis]
    for other, value in given.items():
        if value is None:
            continue
        if request.cost_kind not in MONEY_KINDS:
            raise PlanError(f"{other} = {value:g} {FLAG_UNIT[other]} is not allowed: this question's nodes have no price, so costs are "
                            f"counted in nodes; price them first ({request.money.price_flag} NAME={request.money.unit})", 2)
        if other != flag:
            raise PlanError(f"{other} = {value:g} {FLAG_UNIT[other]} is not allowed on the {request.basis} basis of this question "
                            f"(its nodes cost {request.money.unit}); give {flag} ({noun})", 2)
    if request.budget.kind in MONEY_KINDS and given[flag] is None:
        raise PlanError(f"--dram-tier = {tier:g} GB needs {flag} with a budget in {request.money.unit}: {noun} of the tier's DRAM on every "
                        "node, on top of the node's own (0 if its price already covers that DRAM), so that DualPath and the tier spend "
                        "the same money", 2)
    return replace(request, dram_price_per_GB=given[flag])


def _check_power_budget(candidates: Sequence[Scenario], kw: float, options: BoundOptions) -> None:
    """A power budget needs every candidate's ``node_power_W`` and room for one cluster: the fewest prefill nodes that
    serve (one instance) and one decode node."""
    if missing := sorted({hw.name for sc in candidates for hw in (sc.pe_hw, sc.de_hw) if hw.node_power_W is None}):
        every = "" if len(missing) == len({hw.name for sc in candidates for hw in (sc.pe_hw, sc.de_hw)}) else \
            ", which sets it on every profile of the command"
        raise PlanError(f"--power-kw needs node_power_W for every candidate; {', '.join(missing)} {has(missing)} none: add it to a copy of "
                        f"the profile (--profile-file), or --set node_power_W=W{every}", 2)
    store = candidates[0].storage
    copies = 0 if store is None or store.node_power_W is None else store.replicas  # the fewest storage nodes: one per copy
    storage_W = copies * store.node_power_W if copies else 0.0
    least = min((options.prefill_floor(sc.model, sc.pe_hw) * sc.pe_hw.node_power_W + sc.de_hw.node_power_W + storage_W) / 1e3 for sc in candidates)
    if kw < least:
        with_storage = f" and {copies} {store.name} storage node{'s' if copies > 1 else ''}, one per copy" if copies else ""
        raise PlanError(f"--power-kw = {kw:g} kW is not allowed; the smallest cluster that serves (one prefill instance and one decode "
                        f"node{with_storage}) draws {least:g} kW at full load", 2)


def make_request(
    profiles: Sequence[str] = (),
    pe_profiles: Sequence[str] = (),
    de_profiles: Sequence[str] = (),
    *,
    model: str = DEFAULT_MODEL,
    workload: str = DEFAULT_WORKLOAD,
    accounting: str = "exact",
    profile_files: tuple[Path, ...] = (),
    sets: tuple[str, ...] = (),
    nodes: int | None = None,
    gpus: int | None = None,
    budget_usd: float | None = None,
    budget_usd_per_hour: float | None = None,
    power_kw: float | None = None,
    electricity_usd_per_kwh: float | None = None,
    storage: str | None = None,
    storage_retention_s: float = 0.0,
    dram_tier_GB: float | None = None,
    dram_price: float | None = None,
    dram_rent: float | None = None,
    target_turns_per_s: float | None = None,
    target_agents_per_s: float | None = None,
    node_costs: Sequence[str] = (),
    rents: Sequence[str] = (),
    options: BoundOptions = BoundOptions(),
    alternatives: int = 3,
    modes: Sequence[str] = PLAN_MODES,
) -> PlanRequest:
    """Resolve and check a procurement question; every refusal names the flag at fault."""
    budget = _budget(nodes, gpus, budget_usd, budget_usd_per_hour, power_kw)
    check_flag("--alternatives", alternatives)
    bad = [m for m in modes if m not in PLAN_MODES]
    if bad or not modes:
        raise PlanError(f"--mode {', '.join(bad) or '(none)'} is not allowed; must be one of {', '.join(PLAN_MODES)}", 2)
    candidates = _candidates(profiles, pe_profiles, de_profiles, model=model, workload=workload, accounting=accounting, profile_files=profile_files, sets=sets,
                             storage=storage, storage_retention_s=storage_retention_s, dram_tier_GB=dram_tier_GB)
    target = _target(candidates, target_turns_per_s, target_agents_per_s)
    if budget is None and target is None:
        raise PlanError("give a budget (--nodes, --gpus, --budget-usd, --budget-usd-per-hour or --power-kw) or a target "
                        "(--target-turns-per-s or --target-agents-per-s)", 2)
    if budget is not None and budget.kind == "kw":
        _check_power_budget(candidates, budget.amount, options)
    kind = None if budget is None else budget.kind
    basis = money_basis(kind, node_costs, rents, [hw for sc in candidates for hw in (sc.pe_hw, sc.de_hw)])
    costs = _node_costs(candidates, (node_costs if basis is PURCHASE else rents), basis)
    store = candidates[0].storage
    storage_rent = None if store is None else store.rent_per_hour_usd
    twice: tuple[str, ...] = ()
    if electricity_usd_per_kwh is not None:
        check_flag("--electricity-usd-per-kwh", electricity_usd_per_kwh)
        check_energy(costs, [hw for sc in candidates for hw in (sc.pe_hw, sc.de_hw)], basis, electricity_usd_per_kwh,
                     chosen=bool(node_costs) or kind == "usd")
        twice = _profile_rents(candidates, costs)
        storage_rent = _storage_energy(store, storage_rent, electricity_usd_per_kwh)
    request = PlanRequest(candidates, budget, target, costs, options, alternatives, tuple(_unique(modes)), basis.name, storage_rent,
                          electricity_usd_per_kwh=electricity_usd_per_kwh, power_twice=twice)
    if store is not None:
        _check_storage_question(request)
    store = request.storage
    if (missing := [n for n in request.unpriced() if store is None or n != store.name]) and (node_costs or rents or kind in MONEY_KINDS):
        flag = basis.budget_flag if kind in MONEY_KINDS else basis.price_flag
        give = (f"{basis.price_flag} {missing[0]}={basis.unit}" if len(missing) == 1 else
                f"{basis.price_flag} NAME={basis.unit} for each (e.g. {basis.price_flag} {missing[0]}={basis.unit})")
        raise PlanError(f"{flag} needs a {basis.noun} per node for every candidate; {', '.join(missing)} {has(missing)} none: give {give}", 2)
    return _tier_price(request, dram_price, dram_rent)
