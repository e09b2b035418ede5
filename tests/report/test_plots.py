"""The pictures (report/plots.py): the data they draw, and files that are valid PNG or SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import dualpath_plan as dp
from dualpath_plan.cli import main
from dualpath_plan.report import plots
from dualpath_plan.report.timeseries import timeseries_rows
from dualpath_plan.sim.stages import WAITS
from dualpath_plan.sim.stages import WORDS as STAGE_WORDS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def swept():
    return dp.sweep(["hopper", "blackwell"], gpus=96)


def _lines(fig) -> dict:
    return {line.get_label(): line for line in fig.axes[0].get_lines()}


def test_the_sweep_draws_every_mode_against_p_over_d(swept):
    fig = plots.sweep_figure(swept)
    lines = _lines(fig)
    for prof in ("hopper", "blackwell"):
        for mode in ("basic", "dualpath", "oracle"):
            pts = sorted((p for p in swept.points if p.profile == prof and p.mode == mode), key=lambda p: p.P / p.D)
            x, y = lines[f"{prof} {mode}"].get_data()
            served = [p.bound.turns_per_s if p.bound.turns_per_s > 0 else np.nan for p in pts]  # nothing served: a gap
            assert np.allclose(x, [p.P / p.D for p in pts]) and np.allclose(y, served, equal_nan=True)
    assert fig.axes[0].get_xscale() == "log"
    plots.pyplot().close(fig)


def test_the_sweep_marks_the_optimal_set_the_pick_and_bars_the_bottleneck_free_range(swept):
    fig = plots.sweep_figure(swept)
    lines = _lines(fig)
    pick = swept.best["hopper"]["dualpath"]
    star = next(line for label, line in lines.items() if label.startswith("hopper pick "))
    assert star.get_label() == f"hopper pick {pick.P}P{pick.D}D ({', '.join(pick.bound.binding)})"
    assert np.allclose(star.get_data(), ([pick.P / pick.D], [pick.bound.turns_per_s]))
    ring_x, _ = lines["hopper dualpath optimal set"].get_data()
    members = [p.P / p.D for p in swept.points if p.profile == "hopper" and p.mode == "dualpath" and swept.in_optimal_set(p)]
    assert sorted(ring_x) == sorted(members)
    rng = swept.pd_ranges["hopper"]
    low, high = fig.axes[0].get_xlim()
    ratios = [p.P / p.D for p in swept.points]
    assert low == pytest.approx(min(ratios) / 1.25) and high == pytest.approx(max(ratios) * 1.25)  # the splits' span (issue 26)
    (x0, x1), _ = lines["hopper: P/D where no NIC or DRAM binds (eq. (9))"].get_data()  # a bar, not a band that hides the next
    assert x0 == pytest.approx(max(rng.lower, low)) and x1 == pytest.approx(min(rng.upper, high))
    assert fig.legends and not fig.axes[0].get_legend()  # the legend stands outside the axes
    plots.pyplot().close(fig)


@pytest.mark.slow
def test_compare_s_bounds_start_at_zero_and_the_left_legend_clears_the_right_panel():
    """compare --plot: the left legend covered the right panel's y-label and a tick; that axis started at 95 unsaid."""
    fig = plots.compare_figure(dp.compare(["hopper", "h200", "blackwell"]))  # bounds far from zero: autoscale would not start there
    io, bounds = fig.axes
    assert bounds.get_ylim()[0] == 0.0 and min(min(line.get_ydata()) for line in bounds.get_lines()) > 50
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = io.get_legend().get_window_extent(renderer)
    right = [bounds.get_window_extent(renderer), bounds.yaxis.label.get_window_extent(renderer),
             *(t.get_window_extent(renderer) for t in bounds.get_yticklabels() if t.get_text())]
    assert not any(legend.overlaps(box) for box in right)
    assert not any(legend.overlaps(t.get_window_extent(renderer)) for t in io.get_xticklabels())  # nor its own panel's names
    plots.pyplot().close(fig)


@pytest.mark.slow
def test_a_simulation_draws_its_windows_per_policy():
    sc = dp.scenario("hopper", model="ds-27b", P=1, D=1, workload="agentic-32k", sets=["gpus_per_node=2"])
    sim = dp.simulate(sc, ["basic", "dualpath"], agents=16)
    fig = plots.simulate_figure(sim.runs, sim.trajectories, plots.cluster_name(sc))
    assert len(fig.axes) == 8 and fig._suptitle.get_text().startswith("hopper 1P1D serving ds-27b: ")  # the title names them (issue 26)
    axes = np.array(fig.axes).reshape(4, len(sim.runs))
    for col, (name, run) in enumerate(sim.runs.items()):
        rows = timeseries_rows(name, run, sim.trajectories)
        people = {line.get_label(): line for line in axes[1][col].get_lines()}
        x, y = people["running agents"].get_data()
        assert np.allclose(x, [r["end_s"] for r in rows]) and np.allclose(y, [r["running_agents"] for r in rows])
        use = {line.get_label(): line for line in axes[0][col].get_lines()}
        assert np.allclose(use["prefill_compute"].get_data()[1], [r["prefill_compute_utilization_frac"] * 100 for r in rows])
        assert all(max(r[f"{k}_utilization_frac"] for r in rows) >= plots.SHOWN_FRAC for k in use)  # only kinds that were used
        waits = {line.get_label(): line for line in axes[2][col].get_lines()}  # the stages where turns wait, as --timeseries has them
        assert waits and set(waits) <= {STAGE_WORDS[stage] for stage in WAITS}
        for stage in WAITS:
            if STAGE_WORDS[stage] in waits:
                assert np.allclose(waits[STAGE_WORDS[stage]].get_data()[1], [r[f"{stage}_requests"] for r in rows])
    plots.pyplot().close(fig)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
@pytest.mark.slow
def test_the_commands_write_valid_pictures(tmp_path, capsys, suffix):
    sweep_out, sim_out = tmp_path / f"sweep{suffix}", tmp_path / f"sim{suffix}"
    assert main(["sweep", "--profile", "hopper", "--plot", str(sweep_out)]) == 0
    assert main(["simulate", "--profile", "hopper", "--model", "ds-27b", "-P", "1", "-D", "1", "--set", "gpus_per_node=2", "--agents", "8",
                 "--engine", "python", "--plot", str(sim_out)]) == 0
    capsys.readouterr()
    for path in (sweep_out, sim_out):
        data = path.read_bytes()
        if suffix == ".png":
            assert data.startswith(PNG_MAGIC)
        else:
            assert ET.fromstring(data).tag.endswith("svg")


def test_a_picture_of_another_format_is_refused_before_any_work(tmp_path, capsys):
    code = main(["simulate", "--profile", "hopper", "--agents", "8", "--plot", str(tmp_path / "p.jpg")])
    err = capsys.readouterr().err
    assert code == 2 and "--plot" in err and "must end in .png or .svg" in err and not list(tmp_path.iterdir())


def _checked_picks(sweep, steady_of):
    """``sweep`` with a made-up runner check of every group's pick in both modes (steady turns/s ``steady_of(row, mode)``)."""
    from dataclasses import replace

    from dualpath_plan.planning.gridcheck import RowCheck

    g, checks = sweep.grid, {}
    for mode in ("dualpath", "basic"):
        for r in np.flatnonzero(g.modes[mode].rank == 0):
            checks[(int(r), mode)] = RowCheck(f"{r}|{mode}", 64, 1, steady_of(int(r), mode), 1.0, 1.0, None, 0)
    return replace(sweep, checks=checks)


def test_a_node_range_sweep_draws_each_modes_best_bound_and_the_runner_at_each_pick():
    from dualpath_plan.report.gridplots import grid_figure

    sweep = _checked_picks(dp.grid_sweep(["hopper"], nodes="6,12,24"), lambda r, mode: 10.0 * r + (mode == "basic"))
    g = sweep.grid
    fig = grid_figure(sweep)
    ax = fig.axes[0]
    for mode in ("dualpath", "basic"):
        x, y = _lines(fig)[f"hopper {mode} bound (best split)"].get_data()
        best = [float(g.modes[mode].turns_per_s[g.group == k].max()) for k in range(3)]
        assert list(x) == [6, 12, 24] and np.allclose(y, best)
        runner = next(c for c in ax.containers if c.get_label() == f"hopper {mode}: runner at the pick, steady")
        picks = [int(r) for r in np.flatnonzero(g.modes[mode].rank == 0)]
        assert np.allclose(runner.lines[0].get_data()[1], [10.0 * r + (mode == "basic") for r in picks])
    plots.pyplot().close(fig)


def test_one_budgets_picture_puts_the_runners_checks_at_their_p_over_d():
    from dualpath_plan.report.gridplots import runner_points

    sweep = _checked_picks(dp.grid_sweep(["hopper"], gpus=[96]), lambda r, mode: 100.0)
    fig = plots.sweep_figure(dp.sweep(["hopper"], gpus=96), runner_points(sweep))
    runner = next(c for c in fig.axes[0].containers if c.get_label() == "hopper dualpath: runner, steady")
    pick = next(p for p in runner_points(sweep) if p.mode == "dualpath")
    assert np.allclose(runner.lines[0].get_data()[0], [pick.P / pick.D]) and np.allclose(runner.lines[0].get_data()[1], [100.0])
    plots.pyplot().close(fig)


def test_a_picture_with_steady_runner_points_says_what_they_are_measured_on():
    """A steady point can stand above its line (its window's turns can cost less than the workload's mean turn): the
    figure says so; a figure of bounds alone has no such note."""
    from dualpath_plan.report.gridplots import grid_figure, runner_points

    note = lambda fig: [t.get_text() for t in fig.texts if "steady window" in t.get_text()]  # noqa: E731
    checked = _checked_picks(dp.grid_sweep(["hopper"], gpus=[96]), lambda r, mode: 100.0)
    for fig in (plots.sweep_figure(dp.sweep(["hopper"], gpus=96), runner_points(checked)),
                grid_figure(_checked_picks(dp.grid_sweep(["hopper"], nodes="6,12"), lambda r, mode: 10.0))):
        assert len(note(fig)) == 1 and "workload's mean turn" in " ".join(note(fig)[0].split())
        plots.pyplot().close(fig)
    bare = plots.sweep_figure(dp.sweep(["hopper"], gpus=96))
    assert note(bare) == []
    plots.pyplot().close(bare)


@pytest.mark.slow
def test_compare_check_plays_each_generation_and_draws_the_runner_beside_the_bounds(tmp_path, capsys):
    out = tmp_path / "c.png"
    code = main(["compare", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k", "--gpus", "16", "--check", "1",
                 "--plot", str(out), "--json"])
    import json

    data = json.loads(capsys.readouterr().out)["runner_check"]
    assert code == 0 and out.read_bytes().startswith(PNG_MAGIC)
    assert set(data) == {"hopper"} and set(data["hopper"]) >= {"dualpath", "basic", "modes"}


@pytest.mark.slow
def test_compare_check_leaves_out_a_generation_with_nothing_to_play_and_says_so(capsys):
    """On 16 GPUs an H100 node pair cannot hold DeepSeek-V3.2's decode weights; an H200 pair can."""
    import json

    code = main(["compare", "--profile", "hopper", "--profile", "h200", "--gpus", "16", "--check", "1", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and list(json.loads(out)["runner_check"]) == ["h200"]
    assert err.count("\n") == 1 and err.startswith("note: hopper: --check has nothing to play")
    code = main(["compare", "--profile", "hopper", "--gpus", "16", "--check", "1"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "--check has nothing to play" in err


def test_a_profile_without_a_range_bar_says_why_in_the_legend():
    fig = plots.sweep_figure(dp.sweep(["h200", "gb200"], gpus=48))  # GB200's eq. (9) range is empty on ds-v3.2
    labels = {line.get_label() for line in fig.axes[0].get_lines()}
    assert "gb200: no bar: eq. (9)'s range is empty" in labels and "h200: P/D where no NIC or DRAM binds (eq. (9))" in labels
    plots.pyplot().close(fig)


def test_compare_s_io_panel_keeps_colours_apart_from_the_modes():
    fig = plots.compare_figure(dp.compare(["h200", "blackwell"]))
    io, bounds = fig.axes
    left = {line.get_color() for line in io.get_lines() if not line.get_label().startswith("_")}
    right = {line.get_color() for line in bounds.get_lines() if not line.get_label().startswith("_")}
    assert not left & right
    plots.pyplot().close(fig)


def test_the_sweep_marks_basics_pick_beside_dualpaths(swept):
    fig = plots.sweep_figure(swept)
    lines = _lines(fig)
    basic = swept.best["hopper"]["basic"]
    diamond = lines[f"hopper basic pick {basic.P}P{basic.D}D"]
    assert diamond.get_marker() == "D" and np.allclose(diamond.get_data(), ([basic.P / basic.D], [basic.bound.turns_per_s]))
    plots.pyplot().close(fig)
