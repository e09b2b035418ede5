"""Money: the two bases, what a turn costs on each, and the rents the shipped profiles carry."""

from __future__ import annotations

import re

import pytest

from dualpath_plan.model.money import BASES, PURCHASE, RENT
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.money import money_basis
from dualpath_plan.model.errors import PlanError

RENTED = {"ampere": 21.60, "h100-dgx": 49.24, "h200": 50.44, "blackwell": 68.80, "gb200": 42.00, "mi300x": 15.92}


def test_a_bought_cluster_costs_usd_per_turn_per_second():
    assert PURCHASE.per_turn(3_000_000.0, 600.0) == pytest.approx(5_000.0)
    assert PURCHASE.per_turn_shown(3_000_000.0, 600.0) == pytest.approx(5_000.0)


def test_a_rented_turn_costs_the_rent_of_the_seconds_it_takes():
    # 900 USD/h at 500 turns/s: 1.8 M turns an hour, 0.0005 USD a turn, 500 USD per million turns
    assert RENT.per_turn(900.0, 500.0) == pytest.approx(900.0 / 1.8e6)
    assert RENT.per_turn_shown(900.0, 500.0) == pytest.approx(500.0)


@pytest.mark.parametrize("basis", list(BASES.values()))
def test_nothing_served_or_no_price_costs_nothing_known(basis):
    assert basis.per_turn(100.0, 0.0) is None and basis.per_turn(None, 10.0) is None


def test_shipped_rents_are_the_cited_ones_and_each_source_is_dated_and_warns_that_prices_move():
    cat = catalog(())
    for name in cat.names("hardware"):
        hw = cat.get("hardware", name)
        assert hw.rent_per_node_hour_usd == RENTED.get(name), name
        assert hw.price_per_node_usd is None, name  # no public list price found for any shipped node
        if name in RENTED:
            source = dict(hw.sources)["rent_per_node_hour_usd"]
            assert re.search(r"20\d\d", source) and "prices move" in source and f"${RENTED[name]:.2f}" in source, name


def test_a_question_is_priced_on_the_basis_its_flags_name():
    cat = catalog(())
    rented, mixed = [cat.get("hardware", "h100-dgx")], [cat.get("hardware", "h100-dgx"), cat.get("hardware", "hopper")]
    assert money_basis("usd_per_hour", (), (), ()) is RENT and money_basis(None, ("5",), (), rented) is PURCHASE
    assert money_basis(None, (), (), rented) is RENT  # only rents known: priced on rent
    assert money_basis(None, (), (), mixed) is PURCHASE  # hopper has no rent: counted in nodes
    with pytest.raises(PlanError, match="price a question on one basis"):
        money_basis("usd", (), ("40",), rented)
