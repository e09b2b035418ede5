"""A sweep's rows (report.grid): CSV and JSON round-trip, rows agree with the grid, atomic writes, and --resume after a
killed run gives the same file as a run straight through."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest

from dualpath_plan.cli import main
from dualpath_plan.planning.gridsweep import build, make_axes
from dualpath_plan.report import grid as rows

SMALL = ["sweep", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k"]


def _value(text: str):
    """A CSV cell as the JSON file holds it."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if text.lstrip("-").isdigit() else number


@pytest.mark.slow
def test_csv_and_json_hold_the_same_rows(tmp_path):
    s = build(make_axes(("hopper", "h200"), workloads=("agentic-32k", "agentic-64k"), budgets={"nodes": "4..7"}, sets=("snic_Gbps=400,800",)))
    rows.write_csv(s, tmp_path / "r.csv")
    rows.write_json(s, tmp_path / "r.json")
    with open(tmp_path / "r.csv", newline="") as handle:
        from_csv = [{k: _value(v) for k, v in row.items()} for row in csv.DictReader(handle)]
    from_json = json.loads((tmp_path / "r.json").read_text())
    assert len(from_csv) == len(from_json) == s.grid.size * 3 and list(from_json[0]) == list(rows.columns(s))
    for a, b in zip(from_csv, from_json):
        assert {k: str(v) for k, v in a.items()} == {k: str(v) for k, v in b.items()}
    assert sorted(os.listdir(tmp_path)) == ["r.csv", "r.json"]  # no temporary file left


def test_rows_carry_the_grid_numbers_and_the_group_keys(tmp_path):
    s = build(make_axes(("hopper",), budgets={"gpus": "48,96"}, sets=("snic_Gbps=400,800",)))
    rows.write_json(s, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    first = data[3 * 1 + 1]  # configuration 1 (2P4D of 48 GPUs at 400 Gb/s), dualpath
    assert (first["P"], first["D"], first["mode"], first["budget_gpus"], first["set_snic_Gbps"]) == (2, 4, "dualpath", 48, 400)
    assert math.isclose(first["turns_per_s"], float(s.grid.modes["dualpath"].turns_per_s[1]), rel_tol=0, abs_tol=0)
    assert first["picked"] and first["in_optimal_set"] and first["binding"] == "pe_snic de_snic"
    assert {r["set_snic_Gbps"] for r in data} == {400, 800} and {r["budget_gpus"] for r in data} == {48, 96}


def _journal_runs(path) -> int:
    try:
        return max(0, sum(1 for _ in open(path)) - 1)
    except FileNotFoundError:
        return 0


def _ctrl_c_as_at_a_terminal() -> None:
    """The child takes Ctrl-C as a command at a terminal does, even when this suite runs with SIGINT ignored (a shell
    starts a background job, ``pytest &``, so, and a child inherits it: Python then installs no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_and_stop(argv, target, sig):
    """Start ``argv`` writing ``target`` in a child process, and send ``sig`` once its journal holds two runs."""
    proc = subprocess.Popen([sys.executable, "-m", "dualpath_plan", *argv, "--csv", str(target)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_as_at_a_terminal)
    journal = rows.journal_path([target])
    deadline = time.monotonic() + 120
    while _journal_runs(journal) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(sig)
    _, err = proc.communicate()
    return proc.returncode, err, journal


STOPPED = [*SMALL, "--nodes", "2..5", "--check", "2"]  # 14 runs of about 0.4 s (7 configurations, each in both modes)


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The row file of :data:`STOPPED` run straight through in one process, and how many runner checks it played."""
    import dualpath_plan.planning.executor as executor

    ran, original = [], executor.run_task
    executor.run_task = lambda task: ran.append(task.key) or original(task)
    try:
        target = tmp_path_factory.mktemp("straight") / "straight.csv"
        assert main([*STOPPED, "--csv", str(target)]) == 0
    finally:
        executor.run_task = original
    return target.read_bytes(), len(ran)


@pytest.mark.slow
def test_ctrl_c_with_two_workers_keeps_the_finished_runs_for_resume(tmp_path, straight):
    target = tmp_path / "stopped.csv"
    code, err, journal = _start_and_stop([*STOPPED, "--jobs", "2"], target, signal.SIGINT)
    assert code == 130 and err.count("\n") == 1 and "runner checks finished" in err and "--resume" in err
    assert not target.exists() and _journal_runs(journal) >= 2
    assert main([*STOPPED, "--jobs", "2", "--csv", str(target), "--resume"]) == 0
    assert target.read_bytes() == straight[0] and not journal.exists()  # two workers write what one process wrote


def test_a_journal_left_by_an_interrupted_run_is_not_overwritten_without_resume(tmp_path, capsys):
    target = tmp_path / "r.csv"
    rows.journal_path([target]).write_text('{"dualpath_plan": "sweep journal", "version": 1}\n')
    assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target)]) == 2
    assert "holds the runs of an interrupted sweep (0 of them): add --resume" in capsys.readouterr().err


@pytest.mark.slow
def test_resume_after_a_killed_run_writes_the_file_of_a_run_straight_through(tmp_path, straight):
    text, total = straight
    target = tmp_path / "resumed.csv"
    _, _, journal = _start_and_stop(STOPPED, target, signal.SIGKILL)
    kept = _journal_runs(journal)
    assert total >= 12 and not target.exists() and 2 <= kept < total  # killed part way: the journal holds what finished, no output yet
    ran = []
    import dualpath_plan.planning.executor as executor

    original = executor.run_task
    executor.run_task = lambda task: ran.append(task.key) or original(task)
    try:
        assert main([*STOPPED, "--csv", str(target), "--resume"]) == 0
    finally:
        executor.run_task = original
    assert target.read_bytes() == text and len(ran) == total - kept and not journal.exists()


@pytest.mark.slow
def test_resume_with_nothing_to_resume_from_says_so(tmp_path, capsys, remembered_runs):
    target = tmp_path / "fresh.csv"
    assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target), "--resume"]) == 0
    assert f"note: --resume found no journal and no earlier {target}: every check runs" in " ".join(capsys.readouterr().err.split())


@pytest.mark.slow
def test_resume_from_a_finished_file_runs_only_the_new_configurations(tmp_path, monkeypatch):
    import dualpath_plan.planning.executor as executor

    target = tmp_path / "r.json"
    assert main([*SMALL, "--nodes", "2,3", "--check", "2", "--json-file", str(target)]) == 0
    ran = []
    original = executor.run_task
    monkeypatch.setattr(executor, "run_task", lambda task: ran.append(task.key) or original(task))
    assert main([*SMALL, "--nodes", "2,3,4", "--check", "2", "--json-file", str(target), "--resume"]) == 0
    assert len(ran) == 4 and all("|nodes=4.0|" in k for k in ran)  # only the new budget's two best, in both modes
    checked = [r for r in json.loads(target.read_text()) if r["check_key"]]
    assert len(checked) == 10


@pytest.mark.parametrize("argv, needle", [
    ([*SMALL, "--nodes", "2", "--resume", "--check", "1"], "--resume continues a sweep's --csv or --json-file output"),
    ([*SMALL, "--nodes", "2", "--resume", "--csv", "x.csv"], "--resume is not allowed without --check"),
    ([*SMALL, "--model", "ds-27b", "--nodes", "2..4", "--plot", "x.png"], "also differ by model, workload or --set value"),
    ([*SMALL, "--nodes", "2", "--seeds", "2"], "--seeds = 2 is not allowed without --check"),
    ([*SMALL, "--pe-profile", "h20"], "--pe-profile is given 1 time(s) and --de-profile 0"),
    ([*SMALL, "--nodes", "2", "--lp-sample", "2"], "--lp-sample = 2 is not allowed"),
    ([*SMALL, "--nodes", "0..3"], "--nodes = 0 nodes is not allowed"),
    ([*SMALL, "--gpus", "8..4"], "below its start"),
    ([*SMALL, "--set", "hit_rate_frac=0.5..0.9"], "give a..b:n"),
    ([*SMALL, "--nodes", "2", "--check", "1", "--engine", "fast"], "--engine 'fast' is not allowed"),
    ([*SMALL, "--nodes", "2", "--jobs", "2"], "--jobs 2 is not allowed without --check"),
    ([*SMALL, "--nodes", "2", "--check", "1", "--executor", "local", "--address", "auto"], "--address auto is not allowed with --executor local"),
])
@pytest.mark.slow
def test_bad_sweep_input_is_one_line(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1 and not os.listdir(tmp_path)


def test_a_group_that_serves_nothing_picks_nothing(tmp_path):
    s = build(make_axes(("hopper",), budgets={"nodes": "3"}))  # ds-v3.2's prefill weights need 2 nodes: 1P2D and 2P1D serve nothing
    rows.write_json(s, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert all(r["turns_per_s"] == 0 and not r["picked"] and not r["in_optimal_set"] for r in data)


@pytest.mark.parametrize("journal, needle", [
    ("garbage\n", "not a journal of dualpath-plan sweep"),
    ('{"dualpath_plan": "sweep journal", "version": 1}\n{"key": "other|seed=0", "steady_turns_per_s": 1.0, "turns_per_s": 1.0, '
     '"jct_s": 1.0, "bound_turns_per_s": 1.0, "engine": "python"}\n', "the journal's 1 runs are all of another sweep"),
])
def test_resume_refuses_a_journal_it_did_not_write(tmp_path, capsys, journal, needle):
    target = tmp_path / "r.csv"
    rows.journal_path([target]).write_text(journal)
    assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target), "--resume"]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and rows.journal_path([target]).read_text() == journal


def test_resume_over_a_dangling_journal_link_is_one_line_refusing_it(tmp_path, capsys):
    """A journal that is a link to nowhere is refused as not a regular file, with no note that no journal was found
    before it (a fuzz finding: the note took the dangling link for no journal)."""
    target = tmp_path / "r.csv"
    rows.journal_path([target]).symlink_to(tmp_path / "nowhere.partial")
    assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "must be a regular file" in err and err.count("\n") == 1 and not (tmp_path / "nowhere.partial").exists()


@pytest.mark.parametrize("value", ["NaN", '"nan"', "1e400", "-1", "true", "1" * 401])
def test_a_journal_line_with_a_value_no_run_gives_is_not_a_run(tmp_path, value):
    """NaN, infinite, negative or non-number values went into the new rows before (or an OverflowError came out)."""
    path = tmp_path / "j.partial"
    good = {"key": "k|seed=0", "steady_turns_per_s": 1.0, "turns_per_s": 1.0, "jct_s": 2.0, "bound_turns_per_s": 1.0, "engine": "python"}
    lines = [json.dumps({"dualpath_plan": "sweep journal", "version": 1}), json.dumps(good)]
    for field in ("steady_turns_per_s", "jct_s", "agents"):
        lines.append(json.dumps(good | {"key": f"{field}|seed=0"})[:-1] + f', "{field}": {value}}}'.replace(f'"{field}": 1.0, ', ""))
    lines.append("[" * 100_000 + "]" * 100_000)  # a RecursionError before
    path.write_text("\n".join(lines) + "\n")
    assert set(rows.read_journal(path, strict=True)) == {"k|seed=0"}


@pytest.fixture(scope="module")
def checked_rows(tmp_path_factory) -> str:
    """The row file of a finished ``--nodes 2 --check 1`` sweep."""
    target = tmp_path_factory.mktemp("checked") / "r.csv"
    assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target)]) == 0
    return target.read_text()


@pytest.mark.parametrize("column, cell", [("check_jct_s", "nan"), ("check_jct_s", "-1"), ("check_jct_s", "inf"), ("check_jct_s", "1" * 401),
                                          ("check_steady_turns_per_s", "")])  # an empty measure: a TypeError in the ranking before
@pytest.mark.slow
def test_a_row_file_whose_check_is_not_a_finite_number_is_refused_on_resume(tmp_path, capsys, checked_rows, column, cell):
    target = tmp_path / "r.csv"
    text = checked_rows.splitlines()
    head = text[0].split(",")
    at = head.index(column)
    row = next(i for i, line in enumerate(text) if i > 0 and line.split(",")[at] != "")
    fields = text[row].split(",")
    fields[at] = cell
    text[row] = ",".join(fields)
    target.write_text("\n".join(text) + "\n")
    assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "holds a check whose columns are not finite numbers >= 0, or leave one empty" in err and err.count("\n") == 1


def test_a_json_row_file_nested_too_deep_is_refused_on_resume(tmp_path, capsys):
    target = tmp_path / "r.json"
    target.write_text("[" * 100_000 + "]" * 100_000)  # a RecursionError before
    assert main([*SMALL, "--nodes", "2", "--check", "1", "--json-file", str(target), "--resume"]) == 2
    assert "its JSON is nested too deep to be rows" in capsys.readouterr().err


def test_resume_refuses_to_overwrite_a_file_it_did_not_write(tmp_path, capsys):
    target = tmp_path / "r.csv"
    target.write_text("a,b\n1,2\n")
    assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target), "--resume"]) == 2
    assert "not a row file of dualpath-plan sweep" in capsys.readouterr().err and target.read_text() == "a,b\n1,2\n"


def test_the_json_summary_gives_each_groups_optimal_set_in_brief(tmp_path):
    from dualpath_plan.report.gridview import full_json

    s = build(make_axes(("hopper", "h200"), budgets={"nodes": "3,6,12"}))
    summary = full_json(s)
    rows.write_json(s, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    for group in summary["groups"]:
        own = [r for r in data if r["profile"] == group["profile"] and r["budget_nodes"] == group["budget"] and r["mode"] == "dualpath"
               and r["in_optimal_set"]]
        brief = group["optimal_sets"]["dualpath"]
        if not own:
            assert brief is None and group["budget"] == 3  # 3 Hopper nodes cannot hold ds-v3.2's prefill weights on 1 or 2
            continue
        assert (brief["splits"], brief["P_low"], brief["P_high"]) == (len(own), min(r["P"] for r in own), max(r["P"] for r in own))


def test_a_sweep_without_a_check_leaves_another_sweeps_journal_alone(tmp_path):
    target = tmp_path / "r.csv"
    journal = rows.journal_path([target])
    journal.write_text('{"dualpath_plan": "sweep journal", "version": 1}\n')
    assert main([*SMALL, "--nodes", "2,3", "--csv", str(target)]) == 0
    assert target.exists() and journal.exists()


@pytest.mark.slow
def test_all_groups_shows_every_group_and_the_default_says_how(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["sweep", "--profile", "hopper", "--nodes", "6..50"]) == 0
    out = capsys.readouterr().out
    assert "... 5 more groups (--all-groups shows them)" in out and "50 nodes" not in out
    assert main(["sweep", "--profile", "hopper", "--nodes", "6..50", "--all-groups"]) == 0
    out = capsys.readouterr().out
    assert "more groups" not in out and "50 nodes" in out


def test_a_bad_value_of_a_set_axis_names_the_axis_as_typed(capsys):
    assert main(["sweep", "--profile", "hopper", "--nodes", "6", "--set", "hit_rate_frac=0.9..1.2:4"]) == 2
    err = capsys.readouterr().err
    assert "hit_rate_frac = 1 is not allowed" in err and "(a value of --set hit_rate_frac=0.9..1.2:4)" in err and err.count("\n") == 1


@pytest.mark.parametrize("resume", [False, True])
def test_a_journal_that_is_a_fifo_is_refused_not_waited_on(tmp_path, capsys, resume):
    """`sweep --check 2 --csv F` blocked forever when F.partial was a FIFO."""
    target = tmp_path / "r.csv"
    os.mkfifo(rows.journal_path([target]))
    if resume:
        assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target)]) == 2  # a first run: the same refusal
        capsys.readouterr()
        target.write_text("")
    argv = [*SMALL, "--nodes", "2", "--check", "1", "--csv", str(target), *(["--resume"] if resume else [])]
    assert main(argv) == 2
    assert "the sweep's journal must be a regular file" in capsys.readouterr().err


@pytest.mark.slow
def test_resume_keeps_the_journal_of_whichever_row_file_the_interrupted_sweep_named_first(tmp_path, monkeypatch):
    """After an interrupted `--json-file J`, `--json-file J --csv C --resume` ignored J.partial, ran everything again and left it."""
    import dualpath_plan.planning.executor as executor
    from dualpath_plan.planning.gridsweep import checked

    argv = [*SMALL, "--nodes", "2", "--check", "1"]
    sweep = build(make_axes(("hopper",), models=("llama-3.1-8b",), workloads=("agentic-32k",), budgets={"nodes": "2"}))
    made = []
    checked(sweep, 1, on_done=made.append)
    journal = rows.journal_path([tmp_path / "j.json"])
    journal.write_text("\n".join(json.dumps(x) for x in [{"dualpath_plan": "sweep journal", "version": 1}, *(o.as_json() for o in made)]) + "\n")
    ran = []
    original = executor.run_task
    monkeypatch.setattr(executor, "run_task", lambda task: ran.append(task.key) or original(task))
    assert main([*argv, "--json-file", str(tmp_path / "j.json"), "--csv", str(tmp_path / "c.csv"), "--resume"]) == 0
    assert ran == [] and not journal.exists() and (tmp_path / "c.csv").exists()


@pytest.mark.slow
def test_a_sweep_into_a_device_makes_no_journal_beside_it(tmp_path):
    """An interrupted `--csv /dev/null` left /dev/null.partial."""
    made = []
    original = rows.Journal.add
    rows.Journal.add = lambda self, outcome: made.append(self.path) or original(self, outcome)
    try:
        assert main([*SMALL, "--nodes", "2", "--check", "1", "--csv", "/dev/null"]) == 0
    finally:
        rows.Journal.add = original
    assert made == [] and rows.journal_path([os.devnull]) is None


def test_resume_refuses_two_journals_beside_its_row_files(tmp_path, capsys):
    """Merged, another sweep's journal would pass the check as this one's and be removed with it."""
    head = '{"dualpath_plan": "sweep journal", "version": 1}\n'
    for name in ("j.json", "c.csv"):
        rows.journal_path([tmp_path / name]).write_text(head)
    argv = [*SMALL, "--nodes", "2", "--check", "1", "--json-file", str(tmp_path / "j.json"), "--csv", str(tmp_path / "c.csv"), "--resume"]
    assert main(argv) == 2
    assert "both hold the runs of an interrupted sweep" in capsys.readouterr().err
    assert all(rows.journal_path([tmp_path / n]).exists() for n in ("j.json", "c.csv"))


def test_a_journal_stands_beside_a_regular_file_anywhere_but_not_beside_a_fifo(tmp_path):
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    assert rows.journal_paths([fifo]) == [] and rows.journal_paths([tmp_path / "new.csv"]) == [tmp_path / "new.csv.partial"]


def test_a_configuration_that_serves_nothing_has_no_binding_limit_and_no_rank(tmp_path):
    target = tmp_path / "z.csv"
    assert main(["sweep", "--profile", "hopper", "--nodes", "5", "--csv", str(target)]) == 0
    rows = list(csv.DictReader(target.open()))
    empty = [r for r in rows if r["serves_nothing_because"]]
    assert empty and all(r["binding"] == "" and r["rank_in_group"] == "" and float(r["turns_per_s"]) == 0 for r in empty)
    assert all(r["binding"] and r["rank_in_group"] for r in rows if not r["serves_nothing_because"])


def test_a_grid_under_a_node_budget_says_where_its_costs_are(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["sweep", "--profile", "hopper", "--profile", "h200", "--nodes", "6,12"]) == 0
    out = capsys.readouterr().out
    assert ("note: a budget in nodes or GPUs shows no costs here; what each configuration costs on the rent basis is in the row files "
            "(--csv FILE, --json-file FILE: cost_usd_per_hour, usd_per_turn); hopper has no rent") in out
    assert main(["sweep", "--profile", "hopper", "--nodes", "6,12"]) == 0  # nothing priced: nothing to point to
    assert "shows no costs here" not in capsys.readouterr().out
