"""A procurement question, resolved and checked: candidate node types, budget, target and prices.

``plan`` answers a :class:`PlanRequest`; :func:`make_request` builds one from the values a user
typed (profile names, ``--nodes``/``--gpus``/``--budget-usd``, ``--target-turns-per-s`` or
``--target-agents-per-s``, ``--node-cost``), refusing bad input with one line naming the flag.

Candidates: every ordered (PE type, DE type) pair from ``--pe-profile`` (default: the
``--profile`` list) times ``--de-profile`` (default: the same list), so several ``--profile``
values also offer the mixed clusters. Prices per node come from a hardware profile's
``price_per_node_usd`` and are overridden by ``--node-cost USD`` (every type) or
``--node-cost NAME=USD`` (one type).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.flags import check_flag
from dualpath_plan.model.workload import agent_turns
from dualpath_plan.model.profiles import Hardware
from dualpath_plan.model.scenario import DEFAULT_MODEL, DEFAULT_WORKLOAD, Scenario, build_scenario

BUDGET_KINDS = ("nodes", "gpus", "usd")
PLAN_MODES = ("basic", "dualpath")


@dataclass(frozen=True)
class Budget:
    """A spending limit: ``amount`` nodes, GPUs or USD."""

    kind: str
    amount: float

    def __post_init__(self) -> None:
        if self.kind not in BUDGET_KINDS:
            raise PlanError(f"budget kind {self.kind!r} is not allowed; must be one of {', '.join(BUDGET_KINDS)}", 2)
        if not _positive(self.amount):
            raise PlanError(f"budget = {self.amount!r} {self.kind} is not allowed; must be a finite number > 0", 2)


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: candidate scenarios (one per PE/DE pair), a budget and/or a target turns/s."""

    candidates: tuple[Scenario, ...]
    budget: Budget | None = None
    target_turns_per_s: float | None = None
    node_costs_usd: dict[str, float] = field(default_factory=dict)  # --node-cost: USD per node by profile name
    options: BoundOptions = field(default_factory=BoundOptions)
    alternatives: int = 3
    modes: tuple[str, ...] = PLAN_MODES

    def price(self, hw: Hardware) -> float | None:
        """USD per node of ``hw``: its ``--node-cost``, else the profile's own (per side after pe./de. --set)."""
        return self.node_costs_usd.get(hw.name, hw.price_per_node_usd)

    def unpriced(self) -> list[str]:
        """Candidate node types without a price."""
        return sorted({hw.name for sc in self.candidates for hw in (sc.pe_hw, sc.de_hw) if self.price(hw) is None})

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
        """``USD`` when every candidate node type has a price, else ``nodes``."""
        return "nodes" if self.unpriced() else "USD"


def _positive(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _one_of(flags: dict[str, object], what: str) -> tuple[str, object] | None:
    given = [(name, value) for name, value in flags.items() if value is not None]
    if len(given) > 1:
        raise PlanError(f"{' and '.join(n for n, _ in given)} were both given; give at most one {what}", 2)
    return given[0] if given else None


def _budget(nodes: int | None, gpus: int | None, budget_usd: float | None) -> Budget | None:
    picked = _one_of({"--nodes": nodes, "--gpus": gpus, "--budget-usd": budget_usd}, "budget")
    if picked is None:
        return None
    flag, value = picked
    unit = {"--nodes": "nodes", "--gpus": "gpus", "--budget-usd": "usd"}[flag]
    return Budget(unit, check_flag(flag, value))


def parse_node_costs(texts: Sequence[str], names: Sequence[str]) -> dict[str, float]:
    """``--node-cost USD`` (every type in ``names``) or ``--node-cost NAME=USD`` (one type)."""
    out: dict[str, float] = {}
    seen: set[str] = set()
    for text in texts:
        name, sep, raw = text.rpartition("=") if "=" in text else ("", "", text)
        if (key := name.strip() if sep else "") in seen:
            raise PlanError(f"--node-cost {key or 'USD'} is given more than once; give each node type (and the plain USD) once", 2)
        seen.add(key)
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if math.isnan(value) or (sep and not name.strip()):
            raise PlanError(f"--node-cost {text!r} is not allowed; give USD per node, as USD or NAME=USD", 2)
        check_flag("--node-cost", value)
        out.update({name.strip(): value} if sep else dict.fromkeys(names, value))
    return out


def _node_costs(candidates: Sequence[Scenario], node_costs: Sequence[str]) -> dict[str, float]:
    names = list(dict.fromkeys(hw.name for sc in candidates for hw in (sc.pe_hw, sc.de_hw)))
    extra = parse_node_costs(node_costs, names)
    unknown = sorted(set(extra) - set(names))
    if unknown:
        raise PlanError(f"--node-cost names {', '.join(unknown)}, which is not a candidate profile; candidates: {', '.join(names)}", 2)
    return extra


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
    picked = _one_of({"--target-turns-per-s": turns, "--target-agents-per-s": agents}, "target")
    if picked is None:
        return None
    flag, value = picked
    unit = "turns/s" if flag == "--target-turns-per-s" else "agents/s"
    check_flag(flag, value)
    # agents/s * turns per trajectory = turns/s (every candidate serves the same workload)
    return float(value) if unit == "turns/s" else float(value) * agent_turns(candidates[0].workload)  # type: ignore[arg-type]


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
    target_turns_per_s: float | None = None,
    target_agents_per_s: float | None = None,
    node_costs: Sequence[str] = (),
    options: BoundOptions = BoundOptions(),
    alternatives: int = 3,
    modes: Sequence[str] = PLAN_MODES,
) -> PlanRequest:
    """Resolve and check a procurement question; every refusal names the flag at fault."""
    budget = _budget(nodes, gpus, budget_usd)
    check_flag("--alternatives", alternatives)
    bad = [m for m in modes if m not in PLAN_MODES]
    if bad or not modes:
        raise PlanError(f"--mode {', '.join(bad) or '(none)'} is not allowed; must be one of {', '.join(PLAN_MODES)}", 2)
    candidates = _candidates(profiles, pe_profiles, de_profiles, model=model, workload=workload, accounting=accounting, profile_files=profile_files, sets=sets)
    target = _target(candidates, target_turns_per_s, target_agents_per_s)
    if budget is None and target is None:
        raise PlanError("give a budget (--nodes, --gpus or --budget-usd) or a target (--target-turns-per-s or --target-agents-per-s)", 2)
    request = PlanRequest(candidates, budget, target, _node_costs(candidates, node_costs), options, alternatives, tuple(_unique(modes)))
    if (missing := request.unpriced()) and (node_costs or (budget is not None and budget.kind == "usd")):
        flag = "--budget-usd" if budget is not None and budget.kind == "usd" else "--node-cost"
        raise PlanError(f"{flag} needs a price per node for every candidate; {', '.join(missing)} has none: give --node-cost NAME=USD", 2)
    return request
