"""The vectorised grid (planning.grid) against the per-split sweep and single bottleneck calls, its frontiers and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import dualpath_plan as dp
from dualpath_plan.bounds.lp import MODES
from dualpath_plan.model.axes import Axes
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import catalog
from dualpath_plan.planning import grid
from dualpath_plan.planning.gridsweep import build, make_axes
from dualpath_plan.planning.sweep import sweep

PROFILES = tuple(catalog(()).names("hardware"))


@pytest.mark.parametrize("gpus", [48, 216, 360])
@pytest.mark.slow
def test_every_row_and_pick_equals_the_per_split_sweep(gpus):
    """The same bits of the bound, and the same split, binding set, optimal-set flag and pick as ``planning.sweep``, for
    every profile: odd node counts too, where splits tie to within rounding and the rule's order rests on the bits."""
    families = grid.families_of(Axes(profiles=PROFILES, budget_kind="gpus", budgets=(gpus,)))
    g = grid.evaluate(families, grid.groups_of(families, "gpus", (gpus,)))
    old = sweep([f.scenario for f in families], gpus)
    points = {(p.profile, p.mode, p.P, p.D): p for p in old.points}
    assert g.size * len(MODES) == len(old.points)
    for r in range(g.size):
        name = families[g.groups[int(g.group[r])].family].pe_profile
        for mode in MODES:
            p, cols = points[(name, mode, int(g.P[r]), int(g.D[r]))], g.modes[mode]
            assert cols.turns_per_s[r] == p.bound.turns_per_s
            assert cols.de_read_fraction[r] == pytest.approx(p.bound.de_read_fraction, abs=1e-9)
            assert set(g.binding_names(mode, r)) == set(p.bound.binding)
            assert bool(cols.in_optimal_set[r]) == old.in_optimal_set(p)
            assert g.nothing_names(r) == p.serves_nothing_because
            assert (cols.rank[r] == 0) == ((p.P, p.D) == (old.best[name][mode].P, old.best[name][mode].D))


@pytest.mark.slow
@pytest.mark.parametrize(("instance", "prefill"), [(None, None), (2, None), (None, 4)])
def test_rows_agree_with_single_bottleneck_calls_across_axes(instance, prefill):
    """Pairs, several workloads, a --set axis, decode and prefill instances: a sample of rows, each equal to ``bottleneck``
    on that cluster, and why a split serves nothing as ``lp.Limits`` says it."""
    from dualpath_plan.bounds.lp import limits_of

    axes = make_axes(("hopper",), (("h20", "hopper"),), (), ("agentic-32k", "agentic-64k"), {"nodes": "2..9"}, ("snic_Gbps=400,800",))
    options = dp.bound_options(decode_instance_nodes=instance, prefill_instance_nodes=prefill)
    s = build(axes, options)
    rng = np.random.default_rng(3)
    short = (s.grid.D < (instance or 1)) | (s.grid.P < (prefill or 1))  # bottleneck refuses a side smaller than an instance
    whole = np.flatnonzero(~short)  # the grid serves nothing there
    assert np.all(s.grid.modes["dualpath"].turns_per_s[short] == 0)
    for r in np.flatnonzero(short)[:40]:  # and says why as the LP's data do
        fam = s.grid.families[s.grid.groups[int(s.grid.group[r])].family]
        assert s.grid.nothing_names(int(r)) == limits_of(fam.scenario.with_nodes(int(s.grid.P[r]), int(s.grid.D[r])), options).serves_nothing_because
    for r in rng.choice(whole, 25, replace=False):
        fam = s.grid.families[s.grid.groups[int(s.grid.group[r])].family]
        sc = fam.scenario.with_nodes(int(s.grid.P[r]), int(s.grid.D[r]))
        bounds = dp.bottleneck(sc, options).bounds
        assert s.grid.nothing_names(int(r)) == limits_of(sc, options).serves_nothing_because
        for mode in MODES:
            assert s.grid.modes[mode].turns_per_s[r] == pytest.approx(bounds[mode].turns_per_s, rel=1e-12, abs=1e-300)
            assert set(s.grid.binding_names(mode, int(r))) == set(bounds[mode].binding)


def test_a_gpu_budget_of_mixed_node_sizes_is_its_frontier():
    """h20 (8 GPUs) prefill with gb200 (4 GPUs) decode in 40 GPUs: D = floor((40 - 8P) / 4) for P = 1..4."""
    families = grid.families_of(Axes(pairs=(("h20", "gb200"),), budget_kind="gpus", budgets=(40,)))
    P, D = grid.frontier(grid.groups_of(families, "gpus", (40,))[0])
    assert P.tolist() == [1, 2, 3, 4] and D.tolist() == [8, 6, 4, 2]


def test_a_rent_budget_buys_whole_nodes_without_rounding_one_away():
    families = grid.families_of(Axes(profiles=("h100-dgx",), budget_kind="usd_per_hour", budgets=(0.3,)))
    group = grid.groups_of(families, "usd_per_hour", (0.3,), {"h100-dgx": 0.1})[0]
    P, D = grid.frontier(group)
    assert (P + D).tolist() == [3, 3]


def test_a_money_budget_prices_every_row():
    s = build(make_axes(("h100-dgx", "blackwell"), budgets={"usd_per_hour": "500,1000"}))
    cost = s.money_cost()
    assert s.basis == "rent" and np.all(cost <= np.repeat([g.amount for g in s.grid.groups], np.bincount(s.grid.group)) + 1e-9)
    assert np.all(np.isfinite(cost))


def test_groups_that_buy_no_split_are_skipped_and_said():
    s = build(make_axes(("hopper",), budgets={"gpus": "8,48"}))
    assert s.grid.skipped and "--gpus = 8 GPUs buys no prefill and decode node" in s.grid.skipped[0][1]
    with pytest.raises(PlanError, match="no budget of the sweep buys one prefill and one decode node"):
        build(make_axes(("hopper",), budgets={"gpus": "8"}))


def test_a_grid_too_large_is_refused_before_it_is_bounded(monkeypatch):
    monkeypatch.setattr(grid, "MAX_CONFIGS", 100)
    with pytest.raises(PlanError, match="the sweep has 1,176 configurations; at most 100"):
        build(make_axes(("hopper",), budgets={"nodes": "2..49"}))


def test_one_source_per_axis(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('nodes = "6..8"\nworkloads = ["agentic-32k"]\n')
    with pytest.raises(PlanError, match="--workload is given both in --scenario"):
        make_axes(workloads=("agentic-64k",), scenario=path)
    with pytest.raises(PlanError, match="--nodes and --gpus were both given"):
        make_axes(budgets={"nodes": "6", "gpus": "48"})
    axes = make_axes(("hopper",), scenario=path)
    assert axes.budget_kind == "nodes" and axes.budgets == (6, 7, 8) and axes.workloads == ("agentic-32k",)


def test_each_set_key_is_its_own_axis_from_the_file_or_the_flags(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[set]\nsnic_Gbps = [400, 800]\n')
    axes = make_axes(("hopper",), sets=("dram_GBps=300",), scenario=path)
    assert [key for key, _ in axes.sets] == ["snic_Gbps", "dram_GBps"]
    with pytest.raises(PlanError, match="--set snic_Gbps is given both in --scenario .* and on the command line; give each key once"):
        make_axes(("hopper",), sets=("snic_Gbps=200",), scenario=path)


def test_the_lp_sample_agrees_with_highs():
    s = build(make_axes(("hopper", "blackwell"), budgets={"nodes": "2..30"}), lp_sample=0.05)
    assert s.lp.samples == round(s.grid.size * 0.05) and s.lp.max_rel_diff < 1e-9 and s.lp.binding_mismatches == 0


def test_a_price_axis_prices_each_group_at_its_own_price():
    s = build(make_axes(("hopper",), budgets={"usd": "2e6"}, sets=("price_per_node_usd=100000,250000",)))
    cost, nodes = s.money_cost(), s.grid.P + s.grid.D
    first = s.grid.group == 0
    assert np.all(cost <= 2e6) and set(nodes[first]) == {20} and set(nodes[~first]) == {8}
    assert np.allclose(cost[first], 20 * 100000) and np.allclose(cost[~first], 8 * 250000)


def test_a_storage_axis_buys_its_storage_nodes_first_from_a_rent_budget():
    """Each storage node count is a group; under a rent budget its storage nodes' rent comes off the budget first, so every
    configuration's compute nodes and storage nodes together stay within it."""
    axes = make_axes(("blackwell",), budgets={"usd_per_hour": (1000.0,)}, sets=("storage_node_rent_per_hour_usd=20",), storage="3fs",
                     storage_nodes=(5, 10))
    s = build(axes)
    assert [grp.storage_nodes for grp in s.grid.groups] == [5, 10]
    for r in range(s.grid.size):
        grp = s.grid.groups[int(s.grid.group[r])]
        assert s.grid.cost[r] == pytest.approx(68.8 * (s.grid.P[r] + s.grid.D[r]) + 20 * grp.storage_nodes)
        assert s.grid.cost[r] <= 1000.0 * (1 + 1e-9)
    assert s.grid.size == sum(grid.frontier_size(grp) for grp in s.grid.groups)


def test_a_storage_size_every_split_shares_leaves_the_grid_s_pick_to_the_next_worst_shortfall():
    """The grid orders the set as pick._pick does (leximin): behind the 43 3fs nodes 40 Blackwell nodes need, the storage's
    read side 10 % short ties every split, and the pick is the planned storage's, 20P20D (pick's test holds the same)."""
    s = build(make_axes(("blackwell",), budgets={"nodes": (40,)}, storage="3fs", storage_nodes=(43,)))
    picked = np.flatnonzero((s.grid.modes["dualpath"].rank == 0) & s.grid.modes["dualpath"].in_optimal_set)
    assert [(int(s.grid.P[r]), int(s.grid.D[r])) for r in picked] == [(20, 20)]


def test_without_a_storage_axis_the_storage_is_planned_and_uncounted():
    plain = build(make_axes(("hopper",), budgets={"nodes": (12,)}))
    planned = build(make_axes(("hopper",), budgets={"nodes": (12,)}, storage="3fs"))
    for mode in MODES:
        assert np.array_equal(plain.grid.modes[mode].turns_per_s, planned.grid.modes[mode].turns_per_s)
        assert np.all(plain.grid.modes[mode].storage_nodes == -1) and np.all(planned.grid.modes[mode].storage_nodes >= 1)


@pytest.mark.parametrize("kwargs,needle", [
    ({"storage_nodes": (5,)}, "--storage-nodes is not allowed without --storage"),
    ({"storage": "3fs", "budgets": {"usd_per_hour": (900.0,)}}, "--budget-usd-per-hour with --storage 3fs needs --storage-nodes"),
    ({"storage": "3fs", "storage_nodes": (5,), "budgets": {"usd_per_hour": (900.0,)}}, "needs storage_node_rent_per_hour_usd"),
    ({"storage": "3fs", "storage_nodes": (0,)}, "--storage-nodes = 0 storage nodes is not allowed"),
    ({"storage": "3fs", "storage_nodes": (2, 8)}, r"--storage-nodes = 2 storage nodes is not allowed; 3fs keeps 3 copies of every byte"),
    ({"storage": "3fs", "storage_nodes": (4,), "sets": ("replicas=3,5",)},
     r"--storage-nodes = 4 storage nodes is not allowed; 3fs keeps 5 copies .* \(a value of --set replicas=3,5\)"),
])
def test_storage_axes_a_sweep_cannot_take_are_refused(kwargs, needle):
    with pytest.raises(PlanError, match=needle):
        build(make_axes(("blackwell",), **{"budgets": {"nodes": (8,)}, **kwargs}))


def test_a_scenario_file_names_the_storage_axis(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('profiles = ["hopper"]\nnodes = [12]\nstorage = "3fs"\nstorage_nodes = "2..4"\n')
    axes = make_axes(scenario=path)
    assert axes.storage == "3fs" and axes.storage_nodes == (2, 3, 4) and axes.count == 3
    with pytest.raises(PlanError, match=f"--scenario {path}: --storage-nodes = 2 storage nodes is not allowed; 3fs keeps 3 copies"):
        build(axes)  # the file's counts are read as given; fewer than the copies are refused where the profile is known


def test_a_bad_set_key_from_the_scenario_file_names_the_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[set]\nsnic_gbps = 400\n')
    with pytest.raises(PlanError, match=r"unknown key 'snic_gbps' \(did you mean 'snic_Gbps'\?\).*\(a value of --set snic_gbps=400 in --scenario "):
        build(make_axes(("hopper",), scenario=path))


@pytest.mark.parametrize(("text", "message"), [
    ('profiles = ["hopperx"]\n', r"unknown hardware profile 'hopperx' \(did you mean 'hopper'\?\)"),
    ('pairs = [["h20", "hoper"]]\n', r"unknown hardware profile 'hoper'"),
    ('models = ["ds-v9"]\n', r"unknown model profile 'ds-v9'"),
    ('workloads = ["agentic-1k"]\n', r"unknown workload profile 'agentic-1k'"),
    ('accounting = "bogus"\n', r"accounting 'bogus' is not allowed; must be one of exact, paper"),
    ('storage = "3fz"\n', r"unknown storage profile '3fz'"),
])
def test_a_bad_name_from_the_scenario_file_names_the_file(tmp_path, text, message):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(PlanError, match=rf"^--scenario {path}: {message}"):
        make_axes(("hopper",) if "profiles" not in text and "pairs" not in text else (), scenario=path)


def test_a_trace_workload_in_the_scenario_file_is_read_as_a_trace(tmp_path):
    from dualpath_plan.model.workload import trace_name

    name = trace_name("examples/trace-v2-example.jsonl")
    path = tmp_path / "s.toml"
    path.write_text(f"workloads = [{name!r}]\nnodes = [6]\n".replace("'", "'''"))
    assert make_axes(("hopper",), scenario=path).workloads == (name,)
