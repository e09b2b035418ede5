"""simulate --timeseries and --turns (report/timeseries.py): the windows tile the run and add up to its totals."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

import dualpath_plan as dp
from dualpath_plan.cli import main
from dualpath_plan.report import timeseries


@pytest.fixture(scope="module")
def sim():
    sc = dp.scenario("hopper", model="ds-27b", P=1, D=1, workload="agentic-32k", sets=["gpus_per_node=2"])
    return dp.simulate(sc, ["basic", "dualpath"], agents=24)


def test_the_windows_tile_the_run_and_their_turns_add_up_to_its_own(sim):
    for name, run in sim.runs.items():
        rows = timeseries.timeseries_rows(name, run, sim.trajectories)
        starts, ends = np.array([r["start_s"] for r in rows]), np.array([r["end_s"] for r in rows])
        assert starts[0] == 0.0 and ends[-1] == run.sim_s and np.array_equal(starts[1:], ends[:-1]) and np.all(ends > starts)
        assert sum(r["turns_per_s"] * (r["end_s"] - r["start_s"]) for r in rows) == pytest.approx(run.turns)


def test_the_windows_utilisation_averages_to_the_run_s(sim):
    for name, run in sim.runs.items():
        rows = timeseries.timeseries_rows(name, run, sim.trajectories)
        span = np.array([r["end_s"] - r["start_s"] for r in rows])
        for kind, value in run.utilization.items():
            mean = float(np.dot([r[f"{kind}_utilization_frac"] for r in rows], span)) / run.jct_s
            assert mean == pytest.approx(value, rel=1e-9, abs=1e-12), (name, kind)


def test_the_counts_at_each_window_s_end_are_whole_and_within_the_run(sim):
    for name, run in sim.runs.items():
        for r in timeseries.timeseries_rows(name, run, sim.trajectories):
            assert 0 <= r["running_agents"] <= run.agents and r["waiting_turns"] >= 0 and r["decoding_turns"] >= 0
            assert r["waiting_turns"] + r["decoding_turns"] <= run.turns
            assert (r["ttft_p50_s"] is None) == (r["ttft_p99_s"] is None) and (r["ttft_p50_s"] is None or r["ttft_p50_s"] <= r["ttft_p99_s"])
        last = timeseries.timeseries_rows(name, run, sim.trajectories)[-1]
        assert last["running_agents"] == 0 and last["waiting_turns"] == 0  # an offline run ends when every turn is done


def test_the_turns_file_holds_every_turn_s_times(sim, tmp_path):
    path = tmp_path / "turns.csv"
    timeseries.write_turns(sim.runs, sim.trajectories, path)
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 2 * sim.trajectories.n_rounds and tuple(rows[0]) == timeseries.TURN_FIELDS
    run, mine = sim.runs["dualpath"], [r for r in rows if r["policy"] == "dualpath"]
    for field, values in (("done_s", run.records.done), ("first_token_s", run.records.first), ("de_read_frac", run.records.de_frac)):
        read = np.array([float(r[field]) if r[field] else math.nan for r in mine])
        assert np.array_equal(read, values, equal_nan=True), field


@pytest.mark.slow
def test_the_command_writes_both_files_beside_its_json(tmp_path, capsys):
    ts, turns = tmp_path / "ts.csv", tmp_path / "turns.csv"
    code = main(["simulate", "--profile", "hopper", "--model", "ds-27b", "-P", "1", "-D", "1", "--set", "gpus_per_node=2", "--agents", "8",
                 "--engine", "python", "--timeseries", str(ts), "--turns", str(turns), "--json"])
    assert code == 0 and capsys.readouterr().out.startswith("{")
    assert ts.read_text().startswith("policy,start_s,end_s,turns_per_s,") and turns.read_text().startswith("policy,agent,round,")


@pytest.mark.parametrize("argv, needle", [
    (["--timeseries", "out.txt"], "--timeseries out.txt: the file name must end in .csv"),
    (["--turns", "same.csv", "--timeseries", "same.csv"], "--timeseries and --turns are both same.csv"),
    (["--turns", "t.csv", "--find-capacity"], "--turns not allowed with --find-capacity"),
])
def test_bad_output_requests_are_refused_before_any_run(tmp_path, monkeypatch, capsys, argv, needle):
    monkeypatch.chdir(tmp_path)
    code = main(["simulate", "--profile", "hopper", "--agents", "8", *argv])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1 and not list(tmp_path.iterdir())


def test_the_stage_columns_integrate_to_the_run_s_stage_times(sim):
    """Each window's mean occupancy of a stage times its length adds up to the stage's request- and token-seconds."""
    for name, run in sim.runs.items():
        rows = timeseries.timeseries_rows(name, run, sim.trajectories)
        span = np.array([r["end_s"] - r["start_s"] for r in rows])
        for k, stage in enumerate(run.stages_over_time.stages):
            for unit in ("requests", "tokens"):
                total = float(np.dot([r[f"{stage}_{unit}"] for r in rows], span))
                assert total == pytest.approx(getattr(run.stages_over_time, unit)[-1, k], rel=1e-9, abs=1e-9), (name, stage, unit)
        assert set(timeseries.timeseries_fields(run)) >= {f"{s}_requests" for s in run.stages_over_time.stages}
