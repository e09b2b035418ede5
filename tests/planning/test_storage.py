"""The storage nodes bottleneck plans, and whether the ones given bind (planning/storage.py)."""

from __future__ import annotations

import pytest

from dualpath_plan.bounds.lp import BoundOptions
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning.analysis import analyze
from dualpath_plan.planning.storage import check_runner_storage


def _analysis(nodes=None, **kw):
    return analyze(build_scenario("hopper", P=2, D=4, storage="3fs", storage_nodes=nodes, **kw), BoundOptions())


def test_without_storage_the_analysis_has_none_and_the_same_bounds():
    plain = analyze(build_scenario("hopper", P=2, D=4), BoundOptions())
    planned = _analysis()
    assert plain.storage is None
    assert planned.bounds == plain.bounds and planned.pd_range == plain.pd_range


def test_the_planned_nodes_are_the_fewest_that_do_not_bind():
    """At the planned size no storage limit binds and the bound is the unlimited one; one node fewer lowers it."""
    planned = _analysis()
    need = planned.storage
    assert need.planned and need.nodes == max(need.needed.values()) and not need.binding
    at = _analysis(need.nodes)
    assert not at.storage.binding and at.bounds["dualpath"].turns_per_s == pytest.approx(planned.bounds["dualpath"].turns_per_s, rel=1e-12)
    below = _analysis(need.nodes - 1)
    assert below.storage.binding and below.bounds["dualpath"].turns_per_s < planned.bounds["dualpath"].turns_per_s


def test_the_read_side_needs_what_the_snics_read():
    """2P4D hopper reads (2 + 4) x 50 GB/s at the DualPath bound when its SNICs bind: 300 GB/s over 40.3 GB/s a node."""
    need = _analysis().storage
    dual = analyze(build_scenario("hopper", P=2, D=4), BoundOptions()).bounds["dualpath"]
    assert need.read_Bps == pytest.approx(dual.kv_Bps)
    assert need.needed["storage_read"] == -(-dual.kv_Bps // 40.3e9)


def test_retention_raises_the_kv_kept():
    assert _analysis(storage_retention_s=3600.0).storage.kept_bytes > _analysis().storage.kept_bytes


def test_the_runner_check_is_refused_with_a_sized_storage_cluster():
    with pytest.raises(PlanError, match=r"--check = 2 is not allowed with --storage-nodes = 3"):
        check_runner_storage(build_scenario("hopper", storage="3fs", storage_nodes=3), 2)
    check_runner_storage(build_scenario("hopper", storage="3fs"), 2)  # planned: the bound has no storage limit
