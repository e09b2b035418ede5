"""The closed-form bandwidth model in sympy: the single source of truth for every formula.

Symbols (the paper's, section 4.2 of arXiv 2602.21548):

======  =====================================================  ==========
symbol  meaning                                                unit
======  =====================================================  ==========
P, D    prefill / decode nodes                                 nodes
g       GPUs (engines) per node, one CNIC each                 GPUs
B       CNIC bandwidth per GPU, each direction                 bytes/s
s       SNIC bandwidth per node divided by B (SNIC = s*B)      1
M       host DRAM bandwidth per node, reads + writes           bytes/s
R_p     hit-KV rate read from storage on the PE path           bytes/s
R_d     hit-KV rate read from storage on the DE path           bytes/s
mu      miss-KV bytes per hit-KV byte (exact accounting)       1
omega   written-back KV bytes per hit-KV byte (exact)          1
r       P/D                                                    1
N_s     storage nodes behind the SNICs                         nodes
S_r     KV one storage node serves to readers                  bytes/s
S_w     new KV one storage node's share persists               bytes/s
n_s     storage nodes per decode node (N_s / D)                1
R_m     hit-KV rate served by a DRAM tier (``--dram-tier``)    bytes/s
sigma   the DRAM tier's share on prefill nodes, P / (P + D)    1
======  =====================================================  ==========

The link loads are *built* from per-hop path tables (the paper's Fig. 4 labels, restated in
``reference/dualpath-paper.md`` section 3): each hop lists the resources one byte crosses. Summing
the hops gives the load of every resource as a linear function of ``R_p`` and ``R_d``; with both
SNICs saturated the loads give eq. (1)-(8) and the range (9), derived here by sympy, not typed in.

``paper`` accounting counts hit KV only (mu = omega = 0). ``exact`` adds the miss-token KV computed
on the PE and shipped to the DE buffer (both paths) and the decode-side write-back of new KV to
storage (DE HBM -> DE CNIC -> DE DRAM -> DE SNIC out).

This module imports sympy and is never on the path of a plain ``bottleneck`` call: the numeric
twin lives in ``_generated.py``, written by ``python -m dualpath_plan.bounds.symbolic`` and kept in step
by a test.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

import sympy as sp

P, D, g, B, s, M = sp.symbols("P D g B s M", positive=True)
R_p, R_d = sp.symbols("R_p R_d", nonnegative=True)
mu, omega = sp.symbols("mu omega", nonnegative=True)
r = sp.symbols("r", positive=True)
N_s, S_r, S_w, n_s = sp.symbols("N_s S_r S_w n_s", positive=True)
R_m, sigma = sp.symbols("R_m sigma", nonnegative=True)

RESOURCES = (
    "pe_snic",
    "de_snic",
    "de_snic_write",
    "pe_cnic_read",
    "pe_cnic_write",
    "de_cnic_read",
    "de_cnic_write",
    "pe_dram",
    "de_dram",
)
SIDE = {name: name[:2] for name in RESOURCES}
# What one unit of a resource is: a node's SNIC direction (s*B), a GPU's CNIC direction (B, g per
# node), or a node's DRAM (M).
UNIT_CAPACITY = {
    "pe_snic": s * B,
    "de_snic": s * B,
    "de_snic_write": s * B,
    "pe_cnic_read": g * B,
    "pe_cnic_write": g * B,
    "de_cnic_read": g * B,
    "de_cnic_write": g * B,
    "pe_dram": M,
    "de_dram": M,
}
# How many units a resource is reported per: per node or per GPU (the DESIGN table).
PER = {name: ("GPU" if "cnic" in name else "node") for name in RESOURCES}


@dataclass(frozen=True)
class Hop:
    """One hop of a read path: the paper's step labels, what moves, and the resources it loads.

    ``loads`` maps a resource to bytes crossing it per byte moved by the hop.
    """

    steps: str
    what: str
    loads: tuple[tuple[str, int], ...]


# PE read path, per byte of hit KV (Fig. 4a).
PE_PATH = (
    Hop("1-2", "storage -> PE SNIC -> PE buffer", (("pe_snic", 1), ("pe_dram", 1))),
    Hop("3", "PE buffer -> PE CNIC (DMA read of host DRAM)", (("pe_dram", 1), ("pe_cnic_read", 1))),
    Hop("4", "PE CNIC loopback -> PE HBM (H2D write)", (("pe_cnic_write", 1),)),
    Hop("5-7", "PE HBM -> PE CNIC -> network -> DE CNIC -> DE buffer", (("pe_cnic_read", 1), ("de_cnic_write", 1), ("de_dram", 1))),
    Hop("8-9", "DE buffer -> DE CNIC -> DE HBM (H2D at decode start)", (("de_dram", 1), ("de_cnic_read", 1), ("de_cnic_write", 1))),
)
# DE read path, per byte of hit KV (Fig. 4b).
DE_PATH = (
    Hop("1-2", "storage -> DE SNIC -> DE buffer", (("de_snic", 1), ("de_dram", 1))),
    Hop("3-5", "DE buffer -> DE CNIC -> network -> PE CNIC -> PE HBM", (("de_dram", 1), ("de_cnic_read", 1), ("pe_cnic_write", 1))),
    Hop("6-7", "DE buffer -> DE CNIC -> DE HBM (H2D at decode start)", (("de_dram", 1), ("de_cnic_read", 1), ("de_cnic_write", 1))),
)
# Miss-token KV computed on the PE, per byte, on either path (exact accounting only).
MISS_PATH = (
    Hop("5-7 / unlabelled", "PE HBM -> PE CNIC -> network -> DE CNIC -> DE buffer", (("pe_cnic_read", 1), ("de_cnic_write", 1), ("de_dram", 1))),
    Hop("8-9 / 6-7", "DE buffer -> DE CNIC -> DE HBM", (("de_dram", 1), ("de_cnic_read", 1), ("de_cnic_write", 1))),
)
# New KV (miss + generated tokens) persisted from the decode node, per byte (exact only).
WRITEBACK_PATH = (
    Hop("D2H", "DE HBM -> DE CNIC -> DE buffer (D2H through the CNIC)", (("de_cnic_read", 1), ("de_cnic_write", 1), ("de_dram", 1))),
    Hop("persist", "DE buffer -> DE SNIC -> storage", (("de_dram", 1), ("de_snic_write", 1))),
)


# A DRAM cache tier (Mooncake-style: host DRAM of every compute node pooled and served over the CNICs, ``--dram-tier``).
# A byte of the pool sits on a prefill node with probability sigma = P/(P + D) (equal DRAM per node), so its DRAM and
# CNIC load split sigma : 1 - sigma between the sides.
_POOL_READ = (("pe_dram", sigma), ("de_dram", 1 - sigma), ("pe_cnic_read", sigma), ("de_cnic_read", 1 - sigma))
_POOL_WRITE = (("pe_cnic_write", sigma), ("de_cnic_write", 1 - sigma), ("pe_dram", sigma), ("de_dram", 1 - sigma))
# A tier hit, per byte: RDMA from the pool into the PE GPU's HBM, then on to the DE as the PE path's hops 5-9.
TIER_PATH = (
    Hop("tier", "pool DRAM -> pool CNIC -> network -> PE CNIC -> PE HBM", (*_POOL_READ, ("pe_cnic_write", 1))),
    Hop("5-7", "PE HBM -> PE CNIC -> network -> DE CNIC -> DE buffer", (("pe_cnic_read", 1), ("de_cnic_write", 1), ("de_dram", 1))),
    Hop("8-9", "DE buffer -> DE CNIC -> DE HBM (H2D at decode start)", (("de_dram", 1), ("de_cnic_read", 1), ("de_cnic_write", 1))),
)
# What the tier caches (an LRU keeps every block it is asked for): each byte read from storage, from the buffer it was
# read into, and each byte of new KV, from the DE buffer it is written back from.
INSERT_PE_PATH = (Hop("insert", "PE buffer -> PE CNIC -> network -> pool CNIC -> pool DRAM", (("pe_dram", 1), ("pe_cnic_read", 1), *_POOL_WRITE)),)
INSERT_DE_PATH = (Hop("insert", "DE buffer -> DE CNIC -> network -> pool CNIC -> pool DRAM", (("de_dram", 1), ("de_cnic_read", 1), *_POOL_WRITE)),)


def path_sum(path: tuple[Hop, ...]) -> dict[str, sp.Integer]:
    """Bytes on every resource per byte carried along ``path`` (sum of its hops)."""
    totals = {name: sp.Integer(0) for name in RESOURCES}
    for hop in path:
        for name, count in hop.loads:
            totals[name] += count
    return totals


def loads() -> dict[str, sp.Expr]:
    """Aggregate load on every resource (bytes/s over the whole cluster), linear in R_p, R_d.

    load = R_p*pe_path + R_d*de_path + mu*(R_p+R_d)*miss_path + omega*(R_p+R_d)*writeback_path.
    """
    pe, de = path_sum(PE_PATH), path_sum(DE_PATH)
    miss, back = path_sum(MISS_PATH), path_sum(WRITEBACK_PATH)
    total = R_p + R_d
    return {
        name: sp.expand(
            R_p * pe[name]  # hit KV read on the PE path
            + R_d * de[name]  # hit KV read on the DE path
            + mu * total * miss[name]  # miss KV shipped to the DE buffer and loaded to HBM
            + omega * total * back[name]  # new KV written back to storage
        )
        for name in RESOURCES
    }


# The storage cluster behind the storage NICs (present only when a storage profile is given): every byte a SNIC
# carries is served or persisted by the storage nodes, so their read side carries what the SNICs read and their
# write side what the SNICs write back.
STORAGE_RESOURCES = ("storage_read", "storage_write")
STORAGE_OF = {"storage_read": ("pe_snic", "de_snic"), "storage_write": ("de_snic_write",)}
STORAGE_UNIT = {"storage_read": S_r, "storage_write": S_w}


def storage_loads() -> dict[str, sp.Expr]:
    """Aggregate load on the storage cluster's read and write sides (bytes/s): the SNIC loads they serve."""
    link = loads()
    return {name: sp.expand(sum((link[snic] for snic in STORAGE_OF[name]), sp.Integer(0))) for name in STORAGE_RESOURCES}


def storage_capacities() -> dict[str, sp.Expr]:
    """Aggregate capacity of the storage cluster's two sides: ``N_s`` nodes of ``S_r`` (read) or ``S_w`` (write)."""
    return {name: N_s * STORAGE_UNIT[name] for name in STORAGE_RESOURCES}


@functools.cache
def storage_linear_forms() -> dict[str, tuple[sp.Expr, sp.Expr]]:
    """The storage sides' constraints with both SNICs saturated, ``P = r*D`` and ``N_s = n_s*D``, divided by
    ``D*B``: ``a*r + b <= 0`` (the storage end of range (9): ``r <= n_s*S_r/(s*B) - 1`` when only reads count)."""
    forms = {}
    caps = storage_capacities()
    for name, load in storage_loads().items():
        expr = (load - caps[name]).subs({R_p: P * s * B, R_d: D * s * B}).subs({P: r * D, N_s: n_s * D})
        expr = sp.expand(expr / (D * B))
        forms[name] = (sp.simplify(expr.coeff(r, 1)), sp.simplify(expr.coeff(r, 0)))
    return forms


def storage_pd_bound(name: str, accounting: str = "paper") -> sp.Expr | None:
    """The P/D value where storage side ``name`` reaches capacity with both SNICs saturated (an upper bound), or
    ``None`` where it carries nothing (the write side under ``paper`` accounting)."""
    a, b = (account(x, accounting) for x in storage_linear_forms()[name])
    if a == 0:
        return None
    return sp.simplify(-b / a)


def tier_loads() -> dict[str, sp.Expr]:
    """:func:`loads` with a DRAM tier serving ``R_m`` of the hit KV: the tier's path, what it caches (every byte read
    from storage and every byte of new KV), and the miss and write-back terms over the whole hit ``R_p + R_d + R_m``."""
    pe, de, tier = path_sum(PE_PATH), path_sum(DE_PATH), path_sum(TIER_PATH)
    miss, back = path_sum(MISS_PATH), path_sum(WRITEBACK_PATH)
    ins_pe, ins_de = path_sum(INSERT_PE_PATH), path_sum(INSERT_DE_PATH)
    total = R_p + R_d + R_m
    return {
        name: sp.expand(
            R_p * (pe[name] + ins_pe[name]) + R_d * (de[name] + ins_de[name]) + R_m * tier[name]
            + mu * total * miss[name] + omega * total * (back[name] + ins_de[name])
        )
        for name in RESOURCES
    }


def tier_storage_loads() -> dict[str, sp.Expr]:
    """:func:`storage_loads` with a DRAM tier: the storage serves what the SNICs read (``R_p + R_d``) and persists every
    byte of new KV, the tier's hits' included."""
    link = tier_loads()
    return {name: sp.expand(sum((link[snic] for snic in STORAGE_OF[name]), sp.Integer(0))) for name in STORAGE_RESOURCES}


def capacities() -> dict[str, sp.Expr]:
    """Aggregate capacity of every resource: nodes of its side times one node's capacity."""
    return {name: (P if SIDE[name] == "pe" else D) * UNIT_CAPACITY[name] for name in RESOURCES}


def per_unit_loads(accounting: str = "exact") -> dict[str, sp.Expr]:
    """Load per GPU (CNIC) or per node (SNIC, DRAM), as in the DESIGN table (eq. (1)-(8) forms)."""
    units = {name: (P if SIDE[name] == "pe" else D) * (g if PER[name] == "GPU" else 1) for name in RESOURCES}
    return {name: sp.simplify(account(expr, accounting) / units[name]) for name, expr in loads().items()}


def account(expr: sp.Expr, accounting: str) -> sp.Expr:
    """``paper`` accounting is ``exact`` with the miss and write-back terms set to zero."""
    return expr.subs({mu: 0, omega: 0}) if accounting == "paper" else expr


def saturated_linear_forms() -> dict[str, tuple[sp.Expr, sp.Expr]]:
    """With both SNICs saturated (R_p = P*s*B, R_d = D*s*B) and P = r*D, each constraint
    ``load <= capacity`` divided by D*B is ``a*r + b <= 0``. Returns ``{resource: (a, b)}`` (a new dict; derived
    once a process, as every bound and condition reads it)."""
    return dict(_saturated_linear_forms())


@functools.cache
def _saturated_linear_forms() -> dict[str, tuple[sp.Expr, sp.Expr]]:
    forms = {}
    caps = capacities()
    for name, load in loads().items():
        expr = (load - caps[name]).subs({R_p: P * s * B, R_d: D * s * B}).subs(P, r * D)
        expr = sp.expand(expr / (D * B))
        forms[name] = (sp.simplify(expr.coeff(r, 1)), sp.simplify(expr.coeff(r, 0)))
    return forms


def pd_bound(name: str, accounting: str = "paper") -> sp.Expr | None:
    """The P/D value where resource ``name`` reaches capacity with both SNICs saturated.

    ``None`` when the constraint does not depend on P/D (then it is a condition on g, s, B, M, or
    holds by construction). Whether it is a lower or an upper bound is the sign of ``a``.
    """
    a, b = (account(x, accounting) for x in saturated_linear_forms()[name])
    if a == 0 or b == 0:
        return None
    return sp.simplify(-b / a)


def paper_equations() -> dict[str, sp.Expr]:
    """The paper's printed bounds (3), (5), (7), (8), for tests to compare the derivation with."""
    return {
        "pe_cnic_write": s / (g - s),  # eq. (3), lower bound
        "de_cnic_read": (g - 2 * s) / s,  # eq. (5)
        "de_cnic_write": (g - s) / (2 * s),  # eq. (7)
        "de_dram": (M / (B * s) - 3) / 2,  # eq. (8)
    }


def conditions(accounting: str = "paper") -> dict[str, sp.Expr]:
    """Constraints independent of P/D, as ``expr <= 0``: e.g. eq. (1) gives 2*s - g <= 0 (s <= g/2)."""
    out = {}
    for name, (a, b) in saturated_linear_forms().items():
        a, b = account(a, accounting), account(b, accounting)
        expr = a if (b == 0 and a != 0) else b if (a == 0 and b != 0) else None
        if expr is not None and not expr.is_nonpositive:  # drop conditions true for all positive symbols
            out[name] = expr
    return out


def _pycode(expr: sp.Expr) -> str:
    return sp.pycode(expr, fully_qualified_modules=False)


def generate_numeric_source() -> str:
    """Python source of ``_generated.py``: the numeric twin of this module, no sympy needed."""
    lines = [
        '"""Generated by ``python -m dualpath_plan.bounds.symbolic`` from the sympy model. Do not edit.',
        "",
        "A test regenerates this text and fails if it drifts from ``symbolic.py``.",
        '"""',
        "",
        f"RESOURCES = {RESOURCES!r}",
        "",
        "# Load per hit-KV byte on each resource: (on R_p, on R_d), functions of mu and omega.",
        "LOAD_COEFFS = {",
    ]
    for name, load in loads().items():
        cp, cd = (sp.expand(load).coeff(sym) for sym in (R_p, R_d))
        lines.append(f"    {name!r}: (lambda mu, omega: {_pycode(cp)}, lambda mu, omega: {_pycode(cd)}),")
    lines += ["}", "", "# Capacity of one node of the resource's side, from that side's g, B, s, M.", "UNIT_CAPACITY = {"]
    for name, unit in UNIT_CAPACITY.items():
        lines.append(f"    {name!r}: lambda g, B, s, M: {_pycode(unit)},")
    lines += ["}", "", "# Saturated-SNIC linear forms a*r + b <= 0 with r = P/D (eq. (1)-(8)).", "PD_FORMS = {"]
    for name, (a, b) in saturated_linear_forms().items():
        lines.append(f"    {name!r}: (lambda g, B, s, M, mu, omega: {_pycode(a)}, lambda g, B, s, M, mu, omega: {_pycode(b)}),")
    lines += ["}", "", f"STORAGE_RESOURCES = {STORAGE_RESOURCES!r}", "",
              "# Load per hit-KV byte on the storage cluster's read and write sides: (on R_p, on R_d).", "STORAGE_LOAD_COEFFS = {"]
    for name, load in storage_loads().items():
        cp, cd = (sp.expand(load).coeff(sym) for sym in (R_p, R_d))
        lines.append(f"    {name!r}: (lambda mu, omega: {_pycode(cp)}, lambda mu, omega: {_pycode(cd)}),")
    lines += ["}", "", "# With a DRAM tier: load per hit-KV byte on each link and storage side (on R_p, on R_d, on R_m), functions of mu,",
              "# omega and sigma (the tier's share on prefill nodes).", "TIER_LOAD_COEFFS = {"]
    for name, load in {**tier_loads(), **tier_storage_loads()}.items():
        cp, cd, cm = (sp.expand(load).coeff(sym) for sym in (R_p, R_d, R_m))
        lines.append(f"    {name!r}: (lambda mu, omega, sigma: {_pycode(cp)}, lambda mu, omega, sigma: {_pycode(cd)}, "
                     f"lambda mu, omega, sigma: {_pycode(cm)}),")
    lines += ["}", "", "# Saturated-SNIC linear forms a*r + b <= 0 of the storage sides, n_s storage nodes per decode node.",
              "STORAGE_PD_FORMS = {"]
    for name, (a, b) in storage_linear_forms().items():
        args = "g, B, s, M, mu, omega, n_s, S_r, S_w"
        lines.append(f"    {name!r}: (lambda {args}: {_pycode(a)}, lambda {args}: {_pycode(b)}),")
    lines += ["}", ""]
    return "\n".join(lines)


GENERATED_PATH = Path(__file__).with_name("_generated.py")


def main(argv: list[str] | None = None) -> int:
    """Write ``_generated.py`` (``--check``: exit 1 if it differs instead)."""
    args = sys.argv[1:] if argv is None else argv
    text = generate_numeric_source()
    if "--check" in args:
        return 0 if GENERATED_PATH.read_text() == text else 1
    GENERATED_PATH.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


@dataclass(frozen=True)
class FormulaSheet:
    """Everything ``formulas`` prints, as sympy expressions (render with str or latex).

    What :func:`dualpath_plan.formulas` returns. The symbols are the paper's (``P``, ``D`` nodes; ``g`` GPUs per node;
    ``B``, ``s*B``, ``M`` bytes/s; ``R_p``, ``R_d`` hit-KV bytes/s; ``mu``, ``omega`` bytes per hit byte).

    Attributes:
        accounting: ``paper`` or ``exact``.
        per_unit_loads: Per resource, its load on one unit (a node's SNIC or DRAM, a GPU's CNIC direction), bytes/s.
        capacities: Per resource, one unit's capacity, bytes/s (``B*s``, ``B`` or ``M``).
        bounds: Per resource that bounds P/D with both SNICs saturated: ``lower`` or ``upper`` and the bound on P/D.
        conditions: Per resource that gives no bound on P/D, a condition ``expr <= 0`` on the node (eq. (1):
            ``2*s - g <= 0``).
        lower: Range (9)'s lower end, the largest lower bound.
        upper: Range (9)'s upper end, the smallest upper bound.
        storage_bounds: Per side of a storage cluster of ``n_s`` storage nodes per decode node (``S_r``, ``S_w`` bytes/s
            each), the upper bound on P/D it sets with both SNICs saturated: range (9)'s storage end, which joins
            ``upper`` when a storage cluster is given.
    """

    accounting: str
    per_unit_loads: dict[str, sp.Expr]
    capacities: dict[str, sp.Expr]
    bounds: dict[str, tuple[str, sp.Expr]]
    conditions: dict[str, sp.Expr]
    lower: sp.Expr
    upper: sp.Expr
    storage_bounds: dict[str, sp.Expr]


def formula_sheet(accounting: str = "paper") -> FormulaSheet:
    """Derive the per-unit loads, each resource's P/D bound and the range (9) for ``accounting``.

    A bound is ``lower`` when the resource's ``a`` (coefficient of r) is negative for the paper's
    regime (s < g), ``upper`` otherwise; the range is the max of the lowers and min of the uppers.
    """
    forms = saturated_linear_forms()
    bounds: dict[str, tuple[str, sp.Expr]] = {}
    for name in RESOURCES:
        bound = pd_bound(name, accounting)
        if bound is None:
            continue
        a = account(forms[name][0], accounting)
        sample = {g: 8, s: 1, M: 10 * B, mu: sp.Rational(1, 100), omega: sp.Rational(1, 50)}
        bounds[name] = ("lower" if a.subs(sample) < 0 else "upper", bound)
    lowers = [b for kind, b in bounds.values() if kind == "lower"]
    uppers = [b for kind, b in bounds.values() if kind == "upper"]
    units = {n: (B if PER[n] == "GPU" else UNIT_CAPACITY[n]) for n in RESOURCES}
    return FormulaSheet(
        accounting=accounting,
        per_unit_loads=per_unit_loads(accounting),
        capacities=units,
        bounds=bounds,
        conditions=conditions(accounting),
        lower=sp.Max(*lowers) if len(lowers) > 1 else lowers[0],
        upper=sp.Min(*uppers),
        storage_bounds={name: bound for name in STORAGE_RESOURCES if (bound := storage_pd_bound(name, accounting)) is not None},
    )
