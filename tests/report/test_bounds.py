"""report/bounds.py: the shadow prices' words name the nodes a unit is added to."""

import pytest

from dualpath_plan.bounds.lp import ShadowPrice
from dualpath_plan.report.bounds import price_text


@pytest.mark.parametrize(("resource", "unit", "per", "where"), [
    ("pe_snic", "B/s", "node", "every prefill node"),
    ("prefill_compute", "FLOP/s", "GPU", "every prefill GPU"),
    ("de_cnic_read", "B/s", "GPU", "every decode GPU"),
    ("decode", "tokens/s", "GPU", "every decode GPU"),
    ("storage_read", "B/s", "storage node", "every storage node"),
    ("dram_tier", "B", "node", "every node"),  # the tier sits on both sides' nodes
])
def test_price_names_the_nodes_of_its_side(resource, unit, per, where):
    text = price_text(ShadowPrice(resource, 1e-9, unit, per, 0.5))
    assert text.endswith(f"added to {where}")
