"""Procurement: the integer P, D (and node types) that a budget buys best, or that reach a target.

Two questions (DESIGN section 5; integer programs, ``scipy.optimize.milp`` with HiGHS, as the reference):

* **budget** (``nodes``, ``gpus``, ``usd``, ``usd_per_hour`` or ``kw``): maximise the turn throughput ``X`` over integer
  ``P, D >= 1`` with ``w_P*P + w_D*D <= budget``;
* **target**: minimise the cluster's cost (nodes, or USD or USD/h when every candidate node type has a
  price on the request's basis, ``money``) subject to ``X >= target`` (optionally within a budget too).

For a fixed (P, D) the MILP's constraints are exactly the LP of ``lp`` (every link, prefill compute,
decode), written with the node counts as variables: a link's capacity is ``P`` (or ``D``) times one
node's. Decode capacity is not linear in D when the weights spread over the whole decode side (the
``decode`` module), so in a budget MILP it is a table over ``d = 1..D_max`` picked by one-hot
binaries ``y_d``: ``D = sum d*y_d`` and ``X*gen <= sum cap(d)*y_d``. In a target MILP ``X`` is
fixed, and decode becomes the bound ``D >= D_min`` (the smallest D whose capacity carries the
target; capacity grows with D).

Several candidate node types give every (PE type, DE type) pair its own MILP. A budget question's
optimum and runner-ups come from ``frontier.budget_ranked``: a best-first search from the budget's
frontier down each P's decode count that meets the splits in the budget MILP's order (its objective,
the same tie-break), with the closed-form bound of each split it opens: HiGHS' branch and bound on the
one-hot decode table took ~10-50 ms a solve, the search a few ms for all of them. The LP relaxation
(integrality dropped, the best over all pairs) says how much the whole numbers cost; ``relax`` gives it in
closed form, so a budget question imports no solver. The budget MILP and HiGHS' relaxation of it stay the
reference property tests hold both to. A target question's runner-ups come from
re-solving its MILP with the best point cut off (four binaries per excluded (P, D): ``P <= p-1`` or
``P >= p+1`` or ``D <= d-1`` or ``D >= d+1``), merged across pairs best-first, so ``k`` alternatives
cost ``pairs + k`` solves.

The answer is the pick of the optimal set (``pick``: the splits within 1 % of the best, picked by the rule
``bottleneck`` and ``sweep`` share), drawn from the budget's frontier or the cheapest reaching splits
(``frontier``); the MILP finds the optimum the set is measured from and the runner-ups.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace

import numpy as np

from dualpath_plan.bounds.bandwidth import capacities, load_coefficients
from dualpath_plan.bounds.compute import MAX_PREFILL_NODES, flops_per_turn, prefill_flops_per_gpu, resolve_dtype
from dualpath_plan.bounds.decode import decode_capacity, decode_rate
from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import Bound, BoundOptions, limits_of
from dualpath_plan.model.cluster import Cluster
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.finite import guard
from dualpath_plan.model.flags import MAX_BUDGET_NODES
from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.power import W_PER_KW, Energy, cluster_power_W, energy
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.workload import served_turns
from dualpath_plan.planning.frontier import Cache, budget_frontier, budget_ranked, split_of, target_frontier, trimmed
from dualpath_plan.planning.pick import TOLERANCE_FRAC, OptimalSet, by_cost, by_throughput
from dualpath_plan.planning.relax import budget_relaxation
from dualpath_plan.planning.request import BUDGET_UNITS, MONEY_KINDS, Budget, PlanRequest
from dualpath_plan.planning.storage import planned_nodes

SPEND_TIEBREAK = 1e-7  # relative weight of cost against X in a budget MILP: only breaks ties
MIP_REL_GAP = 1e-9  # HiGHS relative MIP gap: optimal, not just within 0.01 % (the default)
# A budget question bounds every split of its frontier (about 1 ms each) and tables the decode capacity of every
# decode node count: 4,096 nodes take about 4 s here, so budgets stop at MAX_BUDGET_NODES per side, and so do targets
# (a target's frontier walks up to that many prefill and decode counts).
SIDE_UB = (float(MAX_BUDGET_NODES), float(MAX_BUDGET_NODES))
_X, _RP, _RD, _P, _D = range(5)


@dataclass(frozen=True)
class Choice:
    """One cluster: node types, P, D, its LP bound in one mode and its cost.

    Attributes:
        pe_profile: The prefill nodes' hardware profile.
        de_profile: The decode nodes' hardware profile.
        P: Prefill nodes.
        D: Decode nodes.
        nodes: ``P + D``.
        gpus: GPUs of the cluster.
        cost: Its cost in ``cost_unit``.
        cost_unit: ``USD`` (bought) or ``USD/h`` (rented) when every candidate node type has a price, else ``nodes``.
        bound: Its throughput bound, with binding limits and shadow prices (:class:`~dualpath_plan.bounds.lp.Bound`).
        energy: Its power at full load and joules per turn and per output token at its bound
            (:class:`~dualpath_plan.model.power.Energy`; ``None`` values where a profile gives no ``node_power_W``).
        storage_nodes: The storage nodes bought with it (``plan --storage``: the fewest that do not bind its bound, in
            its cost), or ``None`` without a storage profile.
    """

    pe_profile: str
    de_profile: str
    P: int
    D: int
    nodes: int
    gpus: int
    cost: float
    cost_unit: str
    bound: Bound
    energy: Energy | None = None
    storage_nodes: int | None = None

    @property
    def turns_per_s(self) -> float:
        return self.bound.turns_per_s


@dataclass(frozen=True)
class ModePlan:
    """The answer for one mode: the choice (the shared rule's pick in the optimal set), runner-ups, the LP
    relaxation's value, and the optimal set itself.

    Attributes:
        mode: ``basic`` or ``dualpath``.
        objective: ``max_turns_per_s`` (a budget question) or ``min_nodes``, ``min_usd``, ``min_usd_per_hour`` (a
            target question, by the cost's unit).
        best: The pick (:class:`Choice`).
        alternatives: The next best clusters, of any spend within the budget, at most the request's ``alternatives``.
        relaxation: The LP relaxation's optimum (integrality dropped, best over all node-type pairs): turns/s for a
            budget question, the cost in the request's cost unit for a target; ``None`` with a DRAM tier, whose pool puts
            ``P/(P + D)`` of its bytes on the prefill side, a product of the tier's rate and the node counts (no LP in them),
            and with storage nodes bought from a money or power budget: they grow with the throughput and, through the KV
            kept, with the decode side's rate, which the closed form (``relax``) does not hold (left out, the relaxation
            would count the storage's share of the budget as a whole-number gap).
        gap_frac: How far the whole numbers are from the relaxation, a fraction: ``1 - X/relaxation`` for a budget,
            ``1 - relaxation/cost`` for a target (``None`` without a relaxation).
        optimal: The optimal set the pick came from (:class:`~dualpath_plan.planning.pick.OptimalSet`).
        per_type: With several node-type pairs, each pair's own optimal set and pick; empty otherwise.
    """

    mode: str
    objective: str
    best: Choice
    alternatives: tuple[Choice, ...]
    relaxation: float | None
    gap_frac: float | None
    optimal: OptimalSet | None = None
    per_type: tuple[OptimalSet, ...] = ()  # with several node-type pairs: each pair's own optimal set and pick


@dataclass(frozen=True)
class _Pair:
    """One (PE type, DE type) candidate in MILP units."""

    scenario: Scenario
    io_rows: np.ndarray  # (K, 2) coefficients on r_p, r_d (turns/s) per node of capacity
    io_side: np.ndarray  # (K,) 3 for PE-side rows (P), 4 for DE-side rows (D)
    compute_coef: float  # F_turn / (one PE node's usable FLOP/s)
    gen: float
    prices: tuple[float | None, float | None]  # USD (or USD/h rented) per PE node, per DE node (None: unknown)
    p_min: int  # the fewest prefill nodes that serve: one prefill instance (BoundOptions.prefill_floor)
    storage_rent: float | None = None  # USD/h per storage node (its rent, electricity added: PlanRequest.storage_rent)

    def weights(self, kind: str) -> tuple[float, float]:
        """What one PE node and one DE node count against a ``kind`` budget or cost."""
        if kind == "nodes":
            return (1.0, 1.0)
        if kind == "gpus":
            return (float(self.scenario.pe_hw.g), float(self.scenario.de_hw.g))
        if kind == "kw":  # the request checked that every candidate gives its power
            return (self.scenario.pe_hw.node_power_W / W_PER_KW, self.scenario.de_hw.node_power_W / W_PER_KW)
        return self.prices

    def budget_weights(self, kind: str) -> tuple[float, ...]:
        """:meth:`weights`, and with a storage profile (``plan --storage``) what one storage node counts: its price, rent or
        power (the request checked it is given), 0 against a node or GPU budget, which counts compute nodes."""
        storage = self.scenario.storage
        if storage is None:
            return self.weights(kind)
        per_node = {"usd": storage.price_usd, "usd_per_hour": self.storage_rent,
                    "kw": None if storage.node_power_W is None else storage.node_power_W / W_PER_KW}.get(kind, 0.0)
        return (*self.weights(kind), per_node)  # type: ignore[return-value]  # usd, usd_per_hour: checked present by the request


def _pair(scenario: Scenario, options: BoundOptions, price: tuple[float | None, float | None]) -> _Pair:
    unit = capacities(Cluster(1, 1, scenario.cluster.pe, scenario.cluster.de))
    turn = scenario.turn
    h = turn.hit_tokens * scenario.model.kv_bytes_per_token
    coeffs = load_coefficients(scenario.traffic)
    names = list(coeffs)
    rows = np.array([[coeffs[n][0] * h / unit[n], coeffs[n][1] * h / unit[n]] for n in names])
    side = np.array([_P if n.startswith("pe") else _D for n in names])
    dtype = resolve_dtype(scenario.model, options.dtype)
    p_min = options.prefill_floor(scenario.model, scenario.pe_hw)  # refuses an instance that cannot hold the weights, before any mean
    turns = served_turns(scenario.workload)
    flops = flops_per_turn(scenario.model, turns)
    per_node = scenario.pe_hw.g * prefill_flops_per_gpu(scenario.model, turns, scenario.pe_hw, dtype, flops,
                                                        options.prefill_instance_nodes)  # independent of P
    compute = flops / per_node
    return _Pair(scenario, rows, side, compute, turn.gen_tokens, price, p_min)


def _decode_caps(pair: _Pair, options: BoundOptions, d_max: int) -> np.ndarray:
    sc = pair.scenario
    return np.array([decode_capacity(sc.model, sc.turn, sc.de_hw, d, options.decode) for d in range(1, d_max + 1)])


def _min_decode_nodes(pair: _Pair, options: BoundOptions, tokens_per_s: float) -> int | None:
    """Smallest D of at most :data:`MAX_BUDGET_NODES` whose decode capacity carries ``tokens_per_s`` (capacity grows
    with D), or None."""
    sc = pair.scenario
    cap = lambda d: decode_capacity(sc.model, sc.turn, sc.de_hw, d, options.decode)  # noqa: E731
    hi = 1
    while cap(hi) < tokens_per_s:
        if hi >= MAX_BUDGET_NODES:
            return None
        hi = min(2 * hi, MAX_BUDGET_NODES)
    lo = hi // 2  # cap(lo) < target (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if cap(mid) >= tokens_per_s else (mid, hi)
    return hi


@dataclass
class _Milp:
    """A MILP under construction: objective, integrality, bounds and rows ``lb <= A x <= ub``."""

    c: list[float]
    integrality: list[int]
    lb: list[float]
    ub: list[float]
    rows: list[tuple[dict[int, float], float, float]] = field(default_factory=list)

    def var(self, cost: float, integral: int, lb: float, ub: float) -> int:
        self.c.append(cost)
        self.integrality.append(integral)
        self.lb.append(lb)
        self.ub.append(ub)
        return len(self.c) - 1

    def row(self, coefs: dict[int, float], lb: float, ub: float) -> None:
        self.rows.append((coefs, lb, ub))

    def solve(self, relax: bool = False):
        from scipy.optimize import Bounds, LinearConstraint, milp  # only target questions (and the tests' reference) solve

        A = np.zeros((len(self.rows), len(self.c)))
        for i, (coefs, _, _) in enumerate(self.rows):
            for j, v in coefs.items():
                A[i, j] = v
        cons = LinearConstraint(A, [r[1] for r in self.rows], [r[2] for r in self.rows])
        integrality = np.zeros(len(self.c)) if relax else np.array(self.integrality)
        return milp(np.array(self.c), integrality=integrality, bounds=Bounds(self.lb, self.ub), constraints=cons, options={"mip_rel_gap": MIP_REL_GAP})


def _common(pair: _Pair, mode: str, costs: tuple[float, float, float], x_range: tuple[float, float], nodes_ub: tuple[float, float], d_lb: int = 1) -> _Milp:
    """Variables X, r_p, r_d, P, D (objective ``costs`` on X, P, D) and the rows both questions share."""
    m = _Milp([], [], [], [])
    m.var(costs[0], 0, *x_range)
    m.var(0.0, 0, 0.0, np.inf)
    m.var(0.0, 0, 0.0, 0.0 if mode == "basic" else np.inf)
    m.var(costs[1], 1, float(pair.p_min), nodes_ub[0])  # one prefill instance at least: the weights must fit
    m.var(costs[2], 1, float(d_lb), nodes_ub[1])
    for (a, b), side in zip(pair.io_rows, pair.io_side):
        m.row({_RP: a, _RD: b, int(side): -1.0}, -np.inf, 0.0)  # link load <= nodes * one node's capacity
    m.row({_X: pair.compute_coef, _P: -1.0}, -np.inf, 0.0)  # X * F_turn <= P * g * (a turn's FLOP over its saturated pass time)
    m.row({_RP: 1.0, _RD: 1.0, _X: -1.0}, 0.0, 0.0)  # R_p + R_d = X * hit bytes (turn units)
    return m


def _budget_row(m: _Milp, pair: _Pair, budget: Budget | None) -> None:
    if budget is not None:
        wp, wd = pair.weights(budget.kind)
        m.row({_P: wp, _D: wd}, -np.inf, budget.amount)


def _exclude(m: _Milp, points: list[tuple[int, int]], big: float) -> None:
    """Cut off each (p, d) in ``points``: at least one of P<=p-1, P>=p+1, D<=d-1, D>=d+1."""
    for p, d in points:
        z = [m.var(0.0, 1, 0.0, 1.0) for _ in range(4)]
        m.row({_P: 1.0, z[0]: big}, -np.inf, p - 1 + big)
        m.row({_P: -1.0, z[1]: big}, -np.inf, -(p + 1) + big)
        m.row({_D: 1.0, z[2]: big}, -np.inf, d - 1 + big)
        m.row({_D: -1.0, z[3]: big}, -np.inf, -(d + 1) + big)
        m.row({k: 1.0 for k in z}, 1.0, np.inf)


def _max_nodes(pair: _Pair, budget: Budget) -> tuple[int, int]:
    """The largest P and D the budget allows next to one node of the other side."""
    wp, wd = pair.weights(budget.kind)
    return int(np.floor((budget.amount - wd) / wp + 1e-9)), int(np.floor((budget.amount - wp) / wd + 1e-9))


def _budget_milp(pair: _Pair, mode: str, budget: Budget, caps: np.ndarray, spend_weight: float = 0.0) -> _Milp:
    """Maximise X within ``budget``; ``caps[d-1]`` is the decode capacity (tokens/s) of d nodes.

    ``spend_weight`` (turns/s per budget unit, tiny) breaks ties between equal X toward the
    cheaper cluster: nodes that add nothing are not bought. ``plan`` solves only this MILP's relaxation;
    the MILP itself, tie-break included, is the reference ``frontier.budget_ranked`` is tested against.
    """
    p_max, d_max = _max_nodes(pair, budget)
    wp, wd = pair.weights(budget.kind)
    m = _common(pair, mode, (-1.0, spend_weight * wp, spend_weight * wd), (0.0, np.inf), (p_max, d_max))
    _budget_row(m, pair, budget)
    ys = [m.var(0.0, 1, 0.0, 1.0) for _ in range(d_max)]
    m.row({_X: 1.0, **{y: -cap / pair.gen for y, cap in zip(ys, caps)}}, -np.inf, 0.0)  # X*gen <= cap(D)
    m.row({_D: 1.0, **{y: -float(d) for d, y in enumerate(ys, start=1)}}, 0.0, 0.0)  # D = sum d*y_d
    m.row({y: 1.0 for y in ys}, 1.0, 1.0)  # exactly one D
    return m


def _target_milp(
    pair: _Pair, mode: str, target: float, d_min: int, cost_kind: str,
    budget: Budget | None, nodes_ub: tuple[float, float], excluded: list[tuple[int, int]],
) -> _Milp:
    """Minimise the cost of reaching ``target`` turns/s with at least ``d_min`` decode nodes."""
    m = _common(pair, mode, (0.0, *pair.weights(cost_kind)), (target, target), nodes_ub, d_lb=d_min)
    _budget_row(m, pair, budget)
    _exclude(m, excluded, max(nodes_ub) + 2.0 if excluded else 0.0)
    return m


def _whole(value: float) -> int:
    return int(round(float(value)))


def _k_best(pairs: list[int], solve_one, maximize: bool, count: int) -> list[tuple[int, float, int, int]]:
    """The ``count`` best (pair, value, P, D) over all pairs, best first.

    ``solve_one(i, excluded)`` returns the best (value, P, D) of pair ``i`` outside ``excluded``
    or None. Each pair's solutions come out in order, so a heap over the pairs' next solutions
    yields the overall order with one re-solve per answer taken.
    """
    sign = -1.0 if maximize else 1.0
    excluded: dict[int, list[tuple[int, int]]] = {i: [] for i in pairs}
    heap = []
    for i in pairs:
        found = solve_one(i, [])
        if found is not None:
            heapq.heappush(heap, (sign * found[0], i, found))
    out = []
    while heap and len(out) < count:
        _, i, (value, P, D) = heapq.heappop(heap)
        out.append((i, value, P, D))
        excluded[i].append((P, D))
        if len(out) < count:
            found = solve_one(i, excluded[i])
            if found is not None:
                heapq.heappush(heap, (sign * found[0], i, found))
    return out


def _choice(request: PlanRequest, pair: _Pair, mode: str, P: int, D: int) -> Choice:
    """The full record (binding resources, shadow prices; the closed form's, as ``bottleneck`` reports them) of a cluster
    the search or a MILP found."""
    sc = pair.scenario.with_nodes(P, D)
    weights = pair.budget_weights(request.cost_kind)
    lim = limits_of(sc, request.options)
    bound = solve_closed(lim, mode)  # the closed form's binding set and prices, as bottleneck's
    nodes = planned_nodes(lim, bound)
    cost = P * weights[0] + D * weights[1] + (nodes * weights[2] if nodes is not None else 0.0)
    use = energy(*cluster_power_W(sc.pe_hw, sc.de_hw, P, D, sc.storage, nodes or 0), bound.turns_per_s, lim.gen_tokens_per_turn)
    return Choice(sc.pe_hw.name, sc.de_hw.name, P, D, P + D, P * sc.pe_hw.g + D * sc.de_hw.g, cost, request.cost_unit, bound, use, nodes)


def _plan_budget(request: PlanRequest, pairs: list[_Pair], mode: str, cache: Cache) -> ModePlan:
    budget = request.budget
    assert budget is not None  # the request builder guarantees a budget without a target
    sizes = {i: _max_nodes(p, budget) for i, p in enumerate(pairs)}
    if (largest := max(max(size) for size in sizes.values())) > MAX_BUDGET_NODES:  # before any table of that size is built
        raise PlanError(
            f"budget {_amount(budget)}{_kw_hint(budget)} allows up to {largest:,} nodes on one side; plan searches budgets of at most "
            f"{MAX_BUDGET_NODES:,} nodes per side (larger clusters: plan a unit and replicate it, or use sweep)", 1)
    p_min = {i: p.p_min for i, p in enumerate(pairs)}
    usable = [i for i, (pm, dm) in sizes.items() if pm >= p_min[i] and dm >= 1]
    if not usable:
        buy = 'rent' if budget.kind == 'usd_per_hour' else 'buy'
        if (chosen := request.options.prefill_instance_nodes) is not None:
            raise PlanError(f"a budget of {_amount(budget)} cannot {buy} one prefill instance of --prefill-instance-nodes = {chosen} nodes plus "
                            "one decode node; lower --prefill-instance-nodes or raise the budget", 1)
        need = "; ".join(f"{pairs[i].scenario.pe_hw.name}: " + (f"{n} prefill node(s) to hold the weights" if n < MAX_PREFILL_NODES else
                         "no number of prefill nodes holds the weights (the non-routed ones fill a GPU's HBM)") for i, n in p_min.items())
        raise PlanError(f"a budget of {_amount(budget)} cannot {buy} the prefill nodes that hold {pairs[0].scenario.model.name} plus one decode node ({need})", 1)
    spent = {i: budget_frontier(pairs[i].scenario, pairs[i].budget_weights(budget.kind), budget.amount, p_min[i], mode, request.options, cache)
             for i in usable}
    if request.dram_tier_GB or _storage_spends(request, budget):  # no relaxation in closed form (ModePlan.relaxation)
        relax = None
        scale = max((s.turns_per_s for splits in spent.values() for s in splits), default=0.0) or 1.0  # the tie-break's size only
    else:
        caps = {i: _decode_caps(pairs[i], request.options, sizes[i][1]) for i in usable}
        relax = scale = max(_relaxation(pairs[i], mode, budget, caps[i], p_min[i]) for i in usable)
    found = _budget_best(request, pairs, usable, p_min, mode, cache, scale, spent)
    if not found:
        if request.storage is not None and any(s.turns_per_s > 0 for i in usable for s in budget_frontier(  # compute alone would serve
                pairs[i].scenario, pairs[i].weights(budget.kind), budget.amount, p_min[i], mode, request.options, cache)):
            raise PlanError(f"no cluster within {_amount(budget)} can serve {pairs[0].scenario.model.name} and buy the {request.storage.name} "
                            "storage nodes its bound needs; raise the budget", 1)
        raise PlanError(f"no cluster within {_amount(budget)} can serve {pairs[0].scenario.model.name}: {_why_zero(request, pairs, sizes)}", 1)
    frontiers = {i: _costed(splits, pairs, request.cost_kind) for i, splits in spent.items()}
    optimal = by_throughput([s for i in usable for s in frontiers[i]], mode)
    if budget.kind in MONEY_KINDS:  # money is what is spent: do not buy nodes that add nothing
        optimal = _trim_pick(request, pairs, mode, optimal, cache)
    per_type = tuple(by_throughput(f, mode) for f in frontiers.values() if f) if len(pairs) > 1 else ()
    gap = None if relax is None else max(0.0, 1.0 - found[0][1] / relax)
    return _mode_plan(request, pairs, mode, "max_turns_per_s", found, optimal, relax, gap, cache, per_type)


def _storage_spends(request: PlanRequest, budget: Budget) -> bool:
    """Whether the storage nodes a split buys count against the budget (money or kW; a node or GPU budget counts compute
    nodes only)."""
    return request.storage is not None and budget.kind not in ("nodes", "gpus")


def _relaxation(pair: _Pair, mode: str, budget: Budget, caps: np.ndarray, p_min: int) -> float:
    """The budget MILP's LP relaxation (``relax``, in closed form; the MILP's ``solve(relax=True)`` is its reference)."""
    p_max, d_max = _max_nodes(pair, budget)
    return budget_relaxation(pair.io_rows, pair.io_side == _P, pair.compute_coef, pair.gen, caps, pair.weights(budget.kind),
                             budget.amount, (float(p_min), float(p_max)), float(d_max), mode != "basic")


def _budget_best(request: PlanRequest, pairs: list[_Pair], usable: list[int], p_min: dict[int, int], mode: str, cache: Cache,
                 scale: float, spent: dict[int, list]) -> list[tuple[int, float, int, int]]:
    """The optimum and runner-ups of a budget question as (pair, turns/s, P, D), best first: the budget MILP's
    answers (its objective ``X - eps * cost``, ``eps`` from ``SPEND_TIEBREAK`` and ``scale``, the relaxation, or with a
    DRAM tier the frontier's best bound), found by ``frontier.budget_ranked``'s search from each pair's frontier ``spent``."""
    budget = request.budget
    eps = SPEND_TIEBREAK * scale / budget.amount
    ranked = budget_ranked([(pairs[i].scenario, pairs[i].budget_weights(budget.kind), p_min[i]) for i in usable], budget.amount, mode,
                           request.options, cache, request.alternatives + 1, eps, scale, [spent[i] for i in usable])
    index = {(pairs[i].scenario.pe_hw.name, pairs[i].scenario.de_hw.name): i for i in usable}
    return [(index[(s.pe_profile, s.de_profile)], s.turns_per_s, s.P, s.D) for s in ranked]


def _trim_pick(request: PlanRequest, pairs: list[_Pair], mode: str, optimal: OptimalSet, cache: Cache) -> OptimalSet:
    pair = next(p for p in pairs if (p.scenario.pe_hw.name, p.scenario.de_hw.name) == (optimal.pick.pe_profile, optimal.pick.de_profile))
    pick = trimmed(optimal.pick, pair.scenario, pair.budget_weights(request.cost_kind), mode, request.options, cache)
    if pick is optimal.pick:
        return optimal
    members = tuple(sorted((*optimal.members, pick), key=lambda s: (s.pe_profile, s.de_profile, s.P, s.D)))
    return replace(optimal, pick=pick, members=members, ranked=(pick, *optimal.ranked))


def _costed(splits, pairs: list[_Pair], kind: str):
    """The splits with their cost in the request's cost unit (a GPU budget's frontier is costed in nodes or USD)."""
    weights = {(p.scenario.pe_hw.name, p.scenario.de_hw.name): p.budget_weights(kind) for p in pairs}
    return [replace(s, cost=_cost(s, weights[(s.pe_profile, s.de_profile)])) for s in splits]


def _cost(split, weights: tuple[float, ...]) -> float:
    """What ``split`` costs at ``weights`` (per PE node, per DE node and, with storage, per storage node)."""
    storage = split.storage_nodes * weights[2] if split.storage_nodes is not None and len(weights) > 2 else 0.0
    return split.P * weights[0] + split.D * weights[1] + storage


def _mode_plan(request: PlanRequest, pairs: list[_Pair], mode: str, objective: str, found, optimal: OptimalSet, relax: float | None, gap: float | None,
               cache: Cache, per_type: tuple[OptimalSet, ...] = ()) -> ModePlan:
    """The pick of the optimal set first, then the MILP's runner-ups that are not it; the set lists the same splits in the
    same order (``OptimalSet.listed``), which a runner check plays first."""
    index = {(p.scenario.pe_hw.name, p.scenario.de_hw.name): i for i, p in enumerate(pairs)}
    pick = optimal.pick
    best = _choice(request, pairs[index[(pick.pe_profile, pick.de_profile)]], mode, pick.P, pick.D)
    rest = [(i, P, D) for i, _, P, D in found if (pairs[i].scenario.pe_hw.name, pairs[i].scenario.de_hw.name, P, D) != (pick.pe_profile, pick.de_profile, pick.P, pick.D)]
    alternatives = tuple(_choice(request, pairs[i], mode, P, D) for i, P, D in rest[:request.alternatives])
    listed = tuple(split_of(pairs[i].scenario, P, D, pairs[i].budget_weights(request.cost_kind), mode, request.options, cache)
                   for i, P, D in rest[:request.alternatives])
    return ModePlan(mode, objective, best, alternatives, relax, gap, replace(optimal, listed=(pick, *listed)), per_type)


def _why_zero(request: PlanRequest, pairs: list[_Pair], sizes: dict[int, tuple[int, int]]) -> str:
    """Why every cluster in budget makes zero turns/s: the decode side at its largest makes no tokens."""
    reasons = []
    for i, pair in enumerate(pairs):
        sc = pair.scenario
        wp, wd = pair.weights(request.budget.kind)
        d_left = int((request.budget.amount - wp * pair.p_min) // wd)  # next to the fewest prefill nodes
        rate = decode_rate(sc.model, sc.turn, sc.de_hw, max(1, min(d_left, sizes[i][1])), request.options.decode)
        reasons.append(f"{sc.de_hw.name} decode: {rate.limited_by.replace('_', ' ')}")
    return "; ".join(dict.fromkeys(reasons))


def _alt_nodes_ub(pair: _Pair, best_cost: float, kind: str, count: int) -> tuple[float, float]:
    """Node bounds that keep every runner-up: (p*+j, d*) for j <= count all reach the target, so
    the count-th best costs at most ``best_cost + count * max(weights)``."""
    wp, wd = pair.weights(kind)
    limit = best_cost + count * max(wp, wd)
    return (np.floor((limit - wd) / wp + 1e-9), np.floor((limit - wp) / wd + 1e-9))


def _plan_target(request: PlanRequest, pairs: list[_Pair], mode: str, cache: Cache) -> ModePlan | None:
    """The cheapest clusters reaching the target in ``mode``; None when no candidate reaches it."""
    target, budget = request.target_turns_per_s, request.budget
    kind = request.cost_kind
    d_mins = {i: _min_decode_nodes(p, request.options, target * p.gen) for i, p in enumerate(pairs)}
    usable = [i for i, d in d_mins.items() if d is not None and (budget is None or d <= _max_nodes(pairs[i], budget)[1])]
    best_cost: dict[int, float] = {}

    def one(i: int, excluded: list[tuple[int, int]]):
        ub = SIDE_UB if not excluded else tuple(min(a, b) for a, b in zip(_alt_nodes_ub(pairs[i], best_cost[i], kind, request.alternatives),
                                                                           SIDE_UB))
        if budget is not None:
            ub = tuple(min(a, b) for a, b in zip(ub, _max_nodes(pairs[i], budget)))
        res = _target_milp(pairs[i], mode, target, d_mins[i], kind, budget, ub, excluded).solve()
        if res.x is None:
            return None
        best_cost.setdefault(i, float(res.fun))
        return (float(res.fun), _whole(res.x[_P]), _whole(res.x[_D]))

    found = _k_best(usable, one, False, request.alternatives + 1)
    if not found:
        return None
    relax = min(float(_target_milp(pairs[i], mode, target, d_mins[i], kind, budget, SIDE_UB, []).solve(relax=True).fun) for i in usable)
    def reaching(i: int, cap: float) -> list:
        p_min = pairs[i].p_min
        return [s for s in target_frontier(pairs[i].scenario, pairs[i].weights(kind), cap, p_min, target, mode, request.options, cache,
                                           MAX_BUDGET_NODES, d_mins[i]) if _within(pairs[i], s, budget)]

    cap = found[0][1] * (1 + TOLERANCE_FRAC)
    # the MILP's answers stand in when the closed form puts every frontier split a hair below the target
    splits = [s for i in usable for s in reaching(i, cap)] or [
        split_of(pairs[i].scenario, P, D, pairs[i].weights(kind), mode, request.options, cache) for i, _, P, D in found]
    per_type = tuple(by_cost(f, mode) for i in usable if i in best_cost and (f := reaching(i, best_cost[i] * (1 + TOLERANCE_FRAC)))) \
        if len(pairs) > 1 else ()
    return _mode_plan(request, pairs, mode, f"min_{kind}", found, by_cost(splits, mode), relax, max(0.0, 1.0 - relax / found[0][1]), cache,
                      per_type)


def _within(pair: _Pair, split, budget: Budget | None) -> bool:
    if budget is None:
        return True
    wp, wd = pair.weights(budget.kind)
    return split.P * wp + split.D * wd <= budget.amount * (1 + 1e-9)


def _unreachable(request: PlanRequest, pairs: list[_Pair], modes: list[str]) -> PlanError:
    """The one-line answer for a target some mode cannot reach, with the best reachable values."""
    wanted = fmt(request.target_turns_per_s, "turns/s")
    if request.budget is None:
        most, cache = MAX_BUDGET_NODES, {}  # one cluster's limits per pair, shared by the modes
        best = [f"{mode} {p.scenario.pe_hw.name} {fmt(split_of(p.scenario, most, most, (1.0, 1.0), mode, request.options, cache).turns_per_s, 'turns/s')}"
                for mode in modes for p in pairs]
        return PlanError(f"target {wanted} is not reachable with {pairs[0].scenario.model.name} in {', '.join(modes)} with at most {most:,} "
                         f"nodes per side, the most plan searches (there: {'; '.join(best)}); larger clusters: plan a unit for a share "
                         "of the target and replicate it", 1)
    best = []
    for mode in request.modes:
        b = _plan_budget(request, pairs, mode, {}).best
        best.append(f"{mode} {fmt(b.turns_per_s, 'turns/s')} (P = {b.P} {b.pe_profile}, D = {b.D} {b.de_profile})")
    return PlanError(f"target {wanted} is not reachable within {_amount(request.budget)} in {', '.join(modes)}; best reachable: {'; '.join(best)}", 1)


def _kw_hint(budget: Budget) -> str:
    """`` (--power-kw is in kW: 171.6 MW)`` for a power budget, which a watt figure typed as kW makes a thousand times too
    large; nothing for other budgets."""
    return f" (--power-kw is in kW: {fmt(budget.amount * W_PER_KW, 'W')})" if budget.kind == "kw" else ""


def _amount(budget: Budget) -> str:
    unit = BUDGET_UNITS[budget.kind]
    return fmt(budget.amount, unit[:-1] if budget.amount == 1 and not unit.startswith("USD") else unit)


def plan(request: PlanRequest) -> dict[str, ModePlan]:
    """Answer ``request`` for each of its modes (``basic``, ``dualpath``)."""
    pairs = [replace(_pair(sc, request.options, (request.price(sc.pe_hw), request.price(sc.de_hw))), storage_rent=request.storage_rent_usd_per_hour)
             for sc in request.candidates]
    cache: Cache = {}  # limits per cluster, shared by the modes
    if request.target_turns_per_s is None:
        return guard({mode: _plan_budget(request, pairs, mode, cache) for mode in request.modes}, "the plan", request.inputs)
    answers = {mode: _plan_target(request, pairs, mode, cache) for mode in request.modes}
    missed = [mode for mode, a in answers.items() if a is None]
    if missed:
        raise _unreachable(request, pairs, missed)
    return guard(answers, "the plan", request.inputs)  # type: ignore[arg-type]  # no None left
