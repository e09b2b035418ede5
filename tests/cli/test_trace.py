"""``trace import``, ``trace stats``, ``profiles workload-from-trace`` and ``--trace`` on every command: what they print,
and every bad input as one line, exit 1 or 2, nothing half written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dualpath_plan.cli import main
from dualpath_plan.model.trace import native
from dualpath_plan.model.trace.schema import Fork, SharedPrefix, session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
MOONCAKE = FIXTURES / "mooncake" / "conversation_trace_excerpt.jsonl"
BAILIAN = FIXTURES / "bailian" / "coder_synth.jsonl"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trace-example.jsonl"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _v2(tmp_path):
    path = tmp_path / "agents.jsonl"
    native.write([session("p", [3000, 400, 300], [200, 150, 100], tool_s=[20.0, 40.0, 0.0], start_s=0.0, shared_prefix=SharedPrefix("sys", 2000)),
                  session("c", [500, 200], [100, 80], fork=Fork("p", 1, 3000, 1.0)),
                  session("q", [2500, 600], [180, 90], tool_s=[30.0, 0.0], start_s=5.0)], path)
    return path


def test_import_writes_v2_and_reports_how_hits_and_tool_time_were_found(capsys, tmp_path):
    out = tmp_path / "mc.jsonl"
    code, stdout, err = run(capsys, "trace", "import", "--format", "mooncake", "-o", out, MOONCAKE, "--json")
    assert code == 0 and err == ""
    rep = json.loads(stdout)
    assert rep["output"] == str(out) and rep["sessions"] == 7 and rep["format"] == "mooncake" and "512" in rep["hits_from"]
    assert all(json.loads(line)["v"] == 2 for line in out.read_text().splitlines())
    code, stdout, _ = run(capsys, "trace", "import", "--format", "mooncake", "-o", tmp_path / "b.jsonl", MOONCAKE)
    assert code == 0 and "wrote" in stdout and "hits:" in stdout


def test_stats_json_has_the_issues_keys_and_the_kv_a_turn_reads(capsys, tmp_path):
    code, stdout, err = run(capsys, "trace", "stats", _v2(tmp_path), "--model", "ds-v3.2", "--json")
    assert code == 0 and err == ""
    d = json.loads(stdout)
    for key in ("sessions", "rounds", "hit_share", "mean_context_tokens", "mean_append_tokens", "mean_gen_tokens", "mean_tool_s"):
        assert key in d
    assert (d["sessions"], d["rounds"], d["forks"]) == (3, 7, 1) and d["mean_tool_s"] == pytest.approx((20 + 40 + 0 + 30) / 4)
    assert d["kv_bytes_per_turn"] > 0 and [r["workload"] for r in d["table2_rows"]] == ["agentic-32k", "agentic-48k", "agentic-64k"]


def test_stats_table2_says_how_each_column_is_averaged(capsys, tmp_path):
    code, stdout, _ = run(capsys, "trace", "stats", _v2(tmp_path))
    text = " ".join(stdout.split())
    assert code == 0 and "Table 2's columns, computed as the paper's" in text
    assert "total: what a session holds at its end, the mean over sessions; context: the mean over turns" in text


@pytest.mark.slow
def test_stats_reads_a_public_format_without_an_import_and_draws_its_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "dist.png"
    code, stdout, _ = run(capsys, "trace", "stats", BAILIAN, "--format", "bailian", "--plot", png)
    assert code == 0 and "Table 2" in stdout and png.stat().st_size > 0


@pytest.mark.slow
def test_every_command_takes_a_trace_and_the_bound_uses_its_turns(capsys, tmp_path):
    trace = _v2(tmp_path)
    code, stdout, _ = run(capsys, "bottleneck", "--profile", "hopper", "--trace", trace, "--json")
    assert code == 0 and json.loads(stdout)["workload"] == "trace agents.jsonl"
    assert run(capsys, "plan", "--profile", "hopper", "--nodes", "12", "--trace", trace)[0] == 0
    assert run(capsys, "sweep", "--profile", "hopper", "--nodes", "12", "--trace", trace, "--trace", MOONCAKE, "--trace-format", "jsonl")[0] in (0, 2)
    assert run(capsys, "compare", "--profile", "hopper", "--profile", "blackwell", "--trace", BAILIAN, "--trace-format", "bailian")[0] == 0
    code, stdout, _ = run(capsys, "simulate", "--profile", "hopper", "-P", "2", "-D", "4", "--trace", trace, "--tool-scale", "0.5", "--json",
                          "--engine", "python")
    assert code == 0 and json.loads(stdout)["turns"] == 7


@pytest.mark.slow
def test_workload_from_trace_writes_a_profile_every_command_loads(capsys, tmp_path):
    out = tmp_path / "mine.toml"
    code, stdout, _ = run(capsys, "profiles", "workload-from-trace", EXAMPLE, "-o", out, "--json")
    assert code == 0 and json.loads(stdout)["values"]["turns"] == pytest.approx(17 / 4)
    assert run(capsys, "bottleneck", "--profile", "hopper", "--profile-file", out, "--workload", "mine")[0] == 0


@pytest.mark.slow
def test_workload_from_trace_refuses_a_trace_the_synthetic_rule_cannot_draw_and_writes_nothing(capsys, tmp_path):
    trace = _v2(tmp_path)  # a 2,000-token shared prefix and three sessions: no synthetic set has its columns
    code, _, err = run(capsys, "profiles", "workload-from-trace", trace, "-o", tmp_path / "mine.toml")
    assert code == 1 and "replay the trace itself with --trace" in err and not (tmp_path / "mine.toml").exists()


@pytest.mark.parametrize("argv,words,exit_code", [
    (["trace", "import", "--format", "csv", "-o", "{tmp}/o.jsonl", str(MOONCAKE)], "--format 'csv' is not allowed; must be one of", 2),
    (["trace", "stats", "--format", "jsnol", str(MOONCAKE)], "--format 'jsnol' (did you mean 'jsonl'?) is not allowed; must be one of jsonl, weka", 2),
    (["bottleneck", "--profile", "hopper", "--trace", str(MOONCAKE), "--trace-format", "mooncak"],
     "--trace-format 'mooncak' (did you mean 'mooncake'?) is not allowed; must be one of jsonl, weka", 2),
    (["trace", "stats", "{tmp}/seconds.jsonl"], "line 1: session s round 1 tool_s = '3s' is not a finite number of seconds", 2),
    (["trace", "import", "--format", "weka", "-o", "{tmp}/o.jsonl", str(MOONCAKE)], "line", 2),
    (["trace", "import", "--format", "mooncake", "-o", "{tmp}/o.jsonl", str(BAILIAN)], "line 1", 2),
    (["trace", "import", "--format", "mooncake", "-o", "{tmp}/o.jsonl", "{tmp}/truncated.jsonl"], "line 2", 2),
    (["trace", "import", "--format", "mooncake", "-o", "{tmp}/o.jsonl", "{tmp}/absent.jsonl"], "not found", 2),
    (["trace", "stats", "{tmp}/fork-orphan.jsonl"], "line 1: session c: fork parent 'p' does not exist", 2),
    (["trace", "stats", "{tmp}/negative.jsonl"], "line 1: session n start_s = -3 s", 2),
    (["bottleneck", "--profile", "hopper", "--model", "ds-v3.2", "--trace", "{tmp}/long.jsonl"], "line 1: round 2 holds", 1),
    (["bottleneck", "--profile", "hopper", "--workload", "agentic-32k", "--trace", "{tmp}/long.jsonl"], "not allowed together", 2),
    (["bottleneck", "--profile", "hopper", "--tool-scale", "2"], "--tool-scale = 2.0 is not allowed without --trace", 2),
    (["trace", "import", "--format", "mooncake", "--max-context-tokens", "1000", "--model", "ds-v3", "-o", "{tmp}/o.jsonl", str(MOONCAKE)],
     "not allowed together", 2),
])
def test_bad_input_is_one_line_with_file_and_line_and_nothing_half_written(capsys, tmp_path, argv, words, exit_code):
    (tmp_path / "truncated.jsonl").write_text(MOONCAKE.read_text().splitlines()[0] + "\n" + '{"timestamp": 5, "input_')
    (tmp_path / "fork-orphan.jsonl").write_text('{"v": 2, "id": "c", "fork": {"parent": "p", "round": 1, "tokens": 4}, '
                                                 '"rounds": [{"append_tokens": 1, "gen_tokens": 1}]}\n')
    (tmp_path / "seconds.jsonl").write_text('{"v": 2, "id": "s", "rounds": [{"append_tokens": 1, "gen_tokens": 1, "tool_s": "3s"}]}\n')
    (tmp_path / "negative.jsonl").write_text('{"v": 2, "id": "n", "start_s": -3, "rounds": [{"append_tokens": 1, "gen_tokens": 1}]}\n')
    native.write([session("a", [100_000, 40_000], [100, 100])], tmp_path / "long.jsonl")
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == exit_code and words in err and err.count("\n") == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


DYNAMO = FIXTURES / "dynamo" / "agentic_synth.jsonl"


@pytest.mark.parametrize("text,words", [
    ('{"v":2,"id":"a","rounds":[{"append_tokens":5,"gen_tokens":1,"tool_s":1' + "0" * 400 + '}]}', "tool_s = "),
    ('{"v": 2, "id": "a", "rounds": [{"append_tokens": 5, "gen_tokens": 1, "keep_tokens": -1}]}', "keep_tokens = -1 tokens"),
    ('{"v":2,"id":"a","fork":{"parent":"b","round":1,"tokens":1,"delay_s":1' + "0" * 400 + '},"rounds":[[1,1]]}', "line 1"),
])
def test_hostile_numbers_in_a_v2_line_are_one_line(capsys, tmp_path, text, words):
    path = tmp_path / "t.jsonl"
    path.write_text(text + "\n")
    code, _, err = run(capsys, "trace", "stats", path)
    assert code == 2 and words in err and err.count("\n") == 1


def test_a_corrupt_gzip_and_a_huge_timestamp_are_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(200)))
    code, _, err = run(capsys, "trace", "import", "--format", "mooncake", "-o", tmp_path / "o.jsonl", bad)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    huge = tmp_path / "huge.jsonl"
    huge.write_text('{"timestamp": 1' + "0" * 400 + ', "input_length": 10, "output_length": 1, "hash_ids": [1]}\n')
    code, _, err = run(capsys, "trace", "import", "--format", "mooncake", "-o", tmp_path / "o.jsonl", huge)
    assert code == 2 and "line 1" in err and err.count("\n") == 1


def test_an_import_with_no_session_leaves_an_existing_output_as_it_was(capsys, tmp_path):
    out = tmp_path / "keep.jsonl"
    out.write_text("precious\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, _, err = run(capsys, "trace", "import", "--format", "dynamo", "-o", out, empty)
    assert code == 1 and "no session left to write" in err and out.read_text() == "precious\n"


def test_several_files_of_a_format_with_per_file_ids_import_together(capsys, tmp_path):
    other = tmp_path / "again.jsonl"
    other.write_text(DYNAMO.read_text())
    out = tmp_path / "both.jsonl"
    assert run(capsys, "trace", "import", "--format", "dynamo", "-o", out, DYNAMO, other)[0] == 0
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert len(ids) == len(set(ids)) and {i.split("/")[0] for i in ids} == {"f0", "f1"}


@pytest.mark.slow
def test_a_trace_takes_no_workload_set_and_a_typed_trace_name_is_checked(capsys, tmp_path):
    code, _, err = run(capsys, "bottleneck", "--profile", "hopper", "--trace", EXAMPLE, "--set", "tool_time_s=50")
    assert code == 2 and "--set tool_time_s is not allowed with --trace" in err
    assert run(capsys, "bottleneck", "--profile", "hopper", "--trace", EXAMPLE, "--set", "hit_rate_frac=0.5")[0] == 0
    name = 'trace:["' + str(EXAMPLE) + '", "jsonl", -1, 1]'
    code, _, err = run(capsys, "bottleneck", "--profile", "hopper", "--workload", name)
    assert code == 2 and "--time-scale = -1" in err and err.count("\n") == 1


@pytest.mark.parametrize("name", ["out.csv", "picture"])
def test_stats_refuses_a_picture_name_it_cannot_write_before_reading(capsys, tmp_path, name):
    """The fuzz campaign: trace stats --plot out.csv (or a name with no suffix, /dev/full) was a matplotlib traceback
    after the whole trace was read."""
    fifo = tmp_path / "never.jsonl"
    os.mkfifo(fifo)  # read before the check, it would block
    code = main(["trace", "stats", str(fifo), "--plot", str(tmp_path / name)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "the file name must end in .png or .svg" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["never.jsonl"]


def test_import_cuts_this_projects_own_trace_at_a_window_and_keeps_its_forks_rules(capsys, tmp_path):
    src = _v2(tmp_path)  # p holds 5,200, 5,750, 6,150 tokens; c forks p after round 1; q holds 2,680 then 3,370
    out = tmp_path / "cut.jsonl"
    code, stdout, err = run(capsys, "trace", "import", "--format", "jsonl", "--max-context-tokens", "6000", "-o", out, src, "--json")
    rep = json.loads(stdout)
    assert code == 0 and err == "" and (rep["sessions_cut"], rep["rounds_over_window"], rep["sessions"]) == (1, 1, 3)
    assert [(s.id, s.n_rounds) for s, _ in native.read(out)] == [("p", 2), ("c", 2), ("q", 2)]
    code, stdout, _ = run(capsys, "trace", "import", "--format", "jsonl", "--max-context-tokens", "5000", "-o", out, src, "--json")
    rep = json.loads(stdout)  # p's first round passes: p dropped, and c, its fork, with it
    assert (rep["sessions_over_window"], rep["sessions"], rep["forks"]) == (1, 1, 0) and [s.id for s, _ in native.read(out)] == ["q"]
    code, _, err = run(capsys, "trace", "import", "--format", "jsonl", "-o", tmp_path / "x.jsonl", src)
    assert code == 2 and "give --max-context-tokens N or --model M" in err and not (tmp_path / "x.jsonl").exists()


def test_the_import_report_counts_one_as_one():
    from dualpath_plan.model.trace.convert import Report

    lines = Report("weka", forks=1, sessions_cut=2).lines()
    assert "1 session is a sub-agent fork" in lines and "2 sessions cut at the context window" in lines


def test_trace_takes_a_public_traces_directory_and_refuses_a_bare_one(capsys, tmp_path):
    import shutil

    folder = tmp_path / "weka"
    folder.mkdir()
    for f in (FIXTURES / "weka").glob("*.json"):
        shutil.copy(f, folder / f.name)
    code, out, err = run(capsys, "bottleneck", "--profile", "hopper", "--trace", folder, "--trace-format", "weka", "--json")
    assert code == 0 and json.loads(out)["workload"] == "trace weka (weka)"
    code, _, err = run(capsys, "bottleneck", "--profile", "hopper", "--trace", folder)
    assert code == 2 and "a directory; this project's own trace is one file" in err and err.count("\n") == 1


def test_a_window_that_drops_every_session_says_so(capsys, tmp_path):
    """Every session of the v2 example starts with a first round past 8,000 tokens: the refusal says the window left
    nothing, and writes nothing."""
    out = tmp_path / "cut.jsonl"
    code, stdout, err = run(capsys, "trace", "import", "--format", "jsonl", "--max-context-tokens", "8000", "-o", out,
                            EXAMPLE.with_name("trace-v2-example.jsonl"))
    assert code == 1 and stdout == "" and len(err.strip().splitlines()) == 1 and not out.exists()
    assert "no session left to write (3 records read; 3 of them start past the context window" in err
