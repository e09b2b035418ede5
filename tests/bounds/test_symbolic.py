"""The sympy model (symbolic.py): eq. (1)-(9) derived from the path tables, and its numeric twin."""

from __future__ import annotations

import pytest

import sympy as sp

from dualpath_plan.bounds import symbolic as S


@pytest.mark.slow
def test_paper_loads_match_the_design_table():
    loads = S.per_unit_loads("paper")
    expected = {
        "pe_snic": S.R_p / S.P,
        "de_snic": S.R_d / S.D,
        "pe_cnic_read": 2 * S.R_p / (S.P * S.g),
        "pe_cnic_write": (S.R_p + S.R_d) / (S.P * S.g),
        "de_cnic_read": (S.R_p + 2 * S.R_d) / (S.D * S.g),
        "de_cnic_write": (2 * S.R_p + S.R_d) / (S.D * S.g),
        "pe_dram": 2 * S.R_p / S.P,
        "de_dram": (2 * S.R_p + 3 * S.R_d) / S.D,
        "de_snic_write": sp.Integer(0),
    }
    for name, expr in expected.items():
        assert sp.simplify(loads[name] - expr) == 0, name


@pytest.mark.slow
def test_derived_bounds_equal_the_papers_eq_3_5_7_8():
    for name, printed in S.paper_equations().items():
        assert sp.simplify(S.pd_bound(name, "paper") - printed) == 0, name


@pytest.mark.slow
def test_eq_1_needs_s_at_most_half_g():
    assert sp.simplify(S.conditions("paper")["pe_cnic_read"] - (2 * S.s - S.g)) == 0


def test_pe_dram_condition_is_the_papers_2sB_le_M():
    assert sp.simplify(S.conditions("paper")["pe_dram"] - (2 * S.s - S.M / S.B)) == 0


def test_exact_with_miss_and_writeback_zero_is_paper():
    for name, load in S.loads().items():
        assert sp.simplify(load.subs({S.mu: 0, S.omega: 0}) - S.account(load, "paper")) == 0, name
        assert S.account(load, "exact") == load


def test_exact_adds_positive_terms_only():
    for name, load in S.loads().items():
        extra = sp.expand(load - S.account(load, "paper"))
        for term in sp.Add.make_args(extra):
            assert term == 0 or term.is_nonnegative, (name, term)


@pytest.mark.slow
def test_paper_range_on_the_papers_node_is_one_seventh_to_seven_halves():
    sheet = S.formula_sheet("paper")
    node = {S.g: 8, S.s: 1, S.B: 50, S.M: 500}
    assert sheet.lower.subs(node) == sp.Rational(1, 7)
    assert sheet.upper.subs(node) == sp.Rational(7, 2)


@pytest.mark.slow
def test_generated_module_has_not_drifted():
    assert S.GENERATED_PATH.read_text() == S.generate_numeric_source()


def test_every_hop_names_known_resources():
    for path in (S.PE_PATH, S.DE_PATH, S.MISS_PATH, S.WRITEBACK_PATH):
        for hop in path:
            assert {name for name, _ in hop.loads} <= set(S.RESOURCES)


def test_the_storage_sides_carry_what_the_snics_read_and_write():
    """The storage cluster serves every byte the SNICs read (R_p + R_d) and persists what they write back."""
    loads = S.storage_loads()
    assert sp.simplify(loads["storage_read"] - (S.R_p + S.R_d)) == 0
    assert sp.simplify(loads["storage_write"] - S.omega * (S.R_p + S.R_d)) == 0


def test_range_9_gains_a_storage_end():
    """With both SNICs saturated, (P + D)*s*B <= N_s*S_r gives P/D <= n_s*S_r/(s*B) - 1; the write side divides by omega."""
    assert sp.simplify(S.storage_pd_bound("storage_read") - (S.n_s * S.S_r / (S.s * S.B) - 1)) == 0
    assert S.storage_pd_bound("storage_write", "paper") is None  # nothing is written back under paper accounting
    assert sp.simplify(S.storage_pd_bound("storage_write", "exact") - (S.n_s * S.S_w / (S.omega * S.s * S.B) - 1)) == 0
    assert set(S.formula_sheet("exact").storage_bounds) == {"storage_read", "storage_write"}
