"""Power and energy of a cluster (model/power.py) and electricity added to a rent (model/money.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dualpath_plan.model import power
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.money import PURCHASE, RENT, check_energy
from dualpath_plan.model.profiles import apply_overrides, catalog

CAT = catalog()
B200, H20 = CAT.get("hardware", "blackwell"), CAT.get("hardware", "h20")  # h20 gives no node_power_W
STORE = replace(CAT.get("storage", "3fs"), node_power_W=800.0)


def test_a_cluster_draws_its_nodes_power():
    watts, unknown = power.cluster_power_W(B200, B200, 2, 4, STORE, 10)
    assert watts == pytest.approx(6 * 14_300 + 10 * 800) and unknown == ()


def test_a_profile_without_power_makes_the_cluster_s_unknown_not_zero():
    assert power.cluster_power_W(B200, H20, 2, 4) == (None, ("h20",))
    assert power.cluster_power_W(B200, B200, 2, 4, CAT.get("storage", "3fs"), 3) == (None, ("3fs",))
    assert power.cluster_power_W(B200, B200, 2, 4, CAT.get("storage", "3fs"), 0)[0] == pytest.approx(6 * 14_300)  # no storage nodes bought


def test_energy_per_turn_and_per_output_token():
    e = power.energy(85_800.0, (), 200.0, 100.0)
    assert e.joules_per_turn == pytest.approx(429.0) and e.joules_per_output_token == pytest.approx(4.29) and e.power_kw == pytest.approx(85.8)
    assert power.energy(None, ("h20",), 200.0, 100.0).joules_per_turn is None
    assert power.energy(85_800.0, (), 0.0, 100.0).joules_per_turn is None  # nothing served


def test_electricity_is_refused_where_it_cannot_be_added():
    check_energy({}, [B200, B200], RENT, 0.10, chosen=False)  # a rent and a node power: nothing to refuse
    with pytest.raises(PlanError, match="not allowed on the purchase basis"):
        check_energy({}, [B200], PURCHASE, 0.10, chosen=True)
    with pytest.raises(PlanError, match="needs node_power_W for every priced node type; h20 has none"):
        check_energy({"h20": 40.0}, [H20], RENT, 0.10, chosen=True)


def test_electricity_without_any_rent_says_to_give_one():
    with pytest.raises(PlanError, match="adds power to rents, and h20 has no rent: give --rent h20=USD/h"):
        check_energy({}, [H20], PURCHASE, 0.10, chosen=False)  # h20 has neither price nor rent: counted in nodes
    with pytest.raises(PlanError, match="not allowed on the purchase basis"):  # --budget-usd chose the basis: no rent would do
        check_energy({}, [H20], PURCHASE, 0.10, chosen=True)


def test_a_node_s_power_in_kw_typed_as_w_is_refused():
    with pytest.raises(PlanError, match="node_power_W = 14.3 W is not allowed; must be a finite number >= 100"):
        apply_overrides(B200, "hardware", (("node_power_W", 14.3),))
