"""compare (compare.py): each generation's I/O per FLOP, worked by hand, and bounds equal to the sweep's."""

from __future__ import annotations

import json

import pytest

import dualpath_plan as dp
from dualpath_plan.cli import main
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.report import plots


@pytest.fixture(scope="module")
def generations():
    return dp.compare(["ampere", "hopper", "blackwell-ultra"], gpus=96)


def test_hopper_s_storage_nic_per_flop_worked_by_hand(generations):
    hopper = generations.generations[1]
    # one 400 Gb/s SNIC (50 GB/s, used in full) over 8 GPUs x 1,979 TFLOP/s of FP8 (DeepSeek-V3.2 runs FP8)
    assert hopper.snic_bytes_per_flop == pytest.approx(50e9 / (8 * 1979e12)) and hopper.dtype == "fp8"
    assert hopper.pcie_bytes_per_flop == pytest.approx(64e9 / 1979e12) and hopper.node_flops == pytest.approx(8 * 1979e12)


def test_the_need_is_bottleneck_s_per_turn_bytes_over_its_per_turn_flops(generations):
    analysis = dp.bottleneck(build_scenario("ampere"))  # the first generation; its "Per turn: ... GB of hit KV, ... TFLOP"
    lim = analysis.limits
    assert generations.cache_compute_bytes_per_flop == pytest.approx(lim.hit_bytes_per_turn / lim.flops_per_turn)


def test_the_bounds_are_the_sweep_s_picks_at_the_same_budget(generations):
    swept = dp.sweep(["ampere", "hopper", "blackwell-ultra"], gpus=96)
    for g in generations.generations:
        for mode in ("basic", "dualpath"):
            mine, theirs = getattr(g, mode), swept.best[g.profile][mode]
            assert (mine.P, mine.D, mine.bound.turns_per_s) == (theirs.P, theirs.D, theirs.bound.turns_per_s)
        assert g.speedup == pytest.approx(g.dualpath.bound.turns_per_s / g.basic.bound.turns_per_s)


def test_compute_grew_faster_than_storage_from_ampere_to_blackwell_ultra(generations):
    a, b = generations.generations[0], generations.generations[-1]
    assert b.node_flops > a.node_flops and b.snic_bytes_per_flop < a.snic_bytes_per_flop  # the paper's trend, in the profiles


@pytest.mark.slow
def test_the_command_prints_the_table_json_and_picture(tmp_path, capsys):
    picture = tmp_path / "trend.svg"
    assert main(["compare", "--profile", "ampere", "--profile", "hopper", "--plot", str(picture)]) == 0
    out = capsys.readouterr().out
    assert "Hardware generations at 48 GPUs" in out and "From ampere to hopper" in " ".join(out.split())
    assert picture.read_text().lstrip().startswith("<?xml")
    assert main(["compare", "--profile", "hopper", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpus"] == 48 and data["generations"][0]["profile"] == "hopper" and data["generations"][0]["dualpath"]["P"] == 2


@pytest.mark.slow
def test_the_picture_draws_each_generation_s_ratios(generations):
    fig = plots.compare_figure(generations)
    io = {line.get_label(): line for line in fig.axes[0].get_lines()}
    _, y = io["storage NIC, per node"].get_data()
    assert list(y) == pytest.approx([g.snic_bytes_per_flop * 1e6 for g in generations.generations])
    plots.pyplot().close(fig)


@pytest.mark.slow
def test_profiles_are_compared_once_each_and_by_compute_when_none_are_named():
    twice = dp.compare(["hopper", "ampere", "hopper"])
    assert [g.profile for g in twice.generations] == ["hopper", "ampere"]  # the order given, each once
    every = dp.compare()
    flops = [g.node_flops for g in every.generations]
    assert flops == sorted(flops) and len(every.generations) == 10


@pytest.mark.slow
def test_a_budget_that_serves_nothing_says_why(capsys):
    assert main(["compare", "--profile", "hopper", "--gpus", "20", "--json"]) == 0  # 2 nodes: the prefill weights do not fit on 1
    dualpath = json.loads(capsys.readouterr().out)["generations"][0]["dualpath"]
    assert dualpath["turns_per_s"] == 0 and "prefill_weights_do_not_fit" in dualpath["serves_nothing_because"]
    assert main(["compare", "--profile", "hopper", "--gpus", "20"]) == 0
    assert "none:" in capsys.readouterr().out


def test_a_dram_tier_bounds_each_generation_again_on_the_same_gpus():
    c = dp.compare(["hopper", "h20", "gb200"], gpus=48, dram_tier_GB=100)
    hopper, h20, gb200 = c.generations
    assert c.dram_tier_GB == 100 and h20.tier is None and "gives no dram_GB" in h20.tier_refused
    for g in (hopper, gb200):
        assert g.tier_refused is None and {p.gpus for p in g.tier.values()} <= {48}
        assert g.tier["dualpath"].bound.R_m_Bps > 0
    # the plain picks unchanged, and the tier's those of the sweep of the profiles that hold it
    plain = dp.compare(["hopper", "h20", "gb200"], gpus=48)
    assert [g.dualpath for g in plain.generations] == [g.dualpath for g in c.generations]
    assert hopper.tier["dualpath"] == c.tier_sweep.best["hopper"]["dualpath"]


def test_a_tier_can_cost_more_than_it_serves():
    """GB200 at 48 GPUs: the tier's inserts (every storage read and all new KV, over the compute NICs into the pool) load
    the decode GPUs' NICs that DualPath's reads use, so both reach less than DualPath alone."""
    gb200 = dp.compare(["gb200"], gpus=48, dram_tier_GB=100).generations[0]
    assert gb200.tier["dualpath"].bound.turns_per_s < gb200.dualpath.bound.turns_per_s
    assert {"de_cnic_read", "de_cnic_write"} <= set(gb200.tier["dualpath"].bound.binding)


def test_a_budget_of_part_nodes_says_what_the_picks_spend(capsys):
    assert main(["compare", "--profile", "hopper", "--gpus", "50"]) == 0  # 8-GPU nodes: 48 of the 50
    assert "fewer GPUs than the 50 budgeted (whole nodes): hopper 48" in " ".join(capsys.readouterr().out.split())
    assert main(["compare", "--profile", "hopper", "--gpus", "48"]) == 0
    assert "fewer GPUs" not in capsys.readouterr().out
