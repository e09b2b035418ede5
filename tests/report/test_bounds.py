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


def test_a_limit_at_capacity_with_no_price_is_named_apart_from_what_binds():
    from dualpath_plan.model.scenario import build_scenario
    from dualpath_plan.planning.analysis import analyze
    from dualpath_plan.report.bounds import binds_text

    dual = analyze(build_scenario("hopper", sets=("snic_Gbps=800",))).bounds["dualpath"]
    assert set(dual.binding) == {"pe_snic", "decode"} and dual.shadow_prices["pe_snic"].turns_per_s_per_unit == 0  # a degenerate optimum
    text = binds_text(dual)
    assert text.startswith("bound by decode-GPU steps") and text.endswith(
        "; prefill-node storage NICs also at capacity, but more of it alone gains nothing")
    paper = analyze(build_scenario("hopper")).bounds["dualpath"]
    assert binds_text(paper) == "bound by prefill-node storage NICs + decode-node storage NICs"


def test_weights_that_fit_neither_side_are_said_once():
    from dualpath_plan.report.bounds import why_words

    assert why_words(("prefill_weights_do_not_fit", "decode_weights_do_not_fit")) == "weights fit neither side"
    assert why_words(("prefill_weights_do_not_fit", "decode_weights_exceed_slo")) == "prefill weights do not fit; decode weights exceed slo"
    assert why_words(("prefill_weights_do_not_fit", "decode_weights_do_not_fit", "decode_instance_exceeds_decode_side")) == (
        "weights fit neither side; decode instance exceeds decode side")
