"""This project's own trace files: v1 and v2 lines, line numbers in every refusal, and the writer."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import native
from dualpath_plan.model.trace.schema import Fork, session


def test_v1_and_v2_lines_mix_and_keep_their_line_numbers(tmp_path):
    path = tmp_path / "t.jsonl"
    v2 = session("agent", [100, 20], [10, 5], tool_s=[4.0, 0.0]).line()
    path.write_text("[[10, 1], [20, 2]]\n\n" + v2 + "\n")
    got = list(native.read(path))
    assert [(s.id, line) for s, line in got] == [("#1", 1), ("agent", 3)]
    assert got[0][0].append_tokens.tolist() == [10, 20] and got[1][0].tool_s.tolist() == [4.0, 0.0]


@pytest.mark.parametrize("text,words", [
    ('{"v": 2, "id": "a", "rounds": [{"append_tokens": 1, "gen_tokens": 1}]}\n{"v": 2, "id": "a", "rounds": [[1, 1]]}', "line 2"),
    ('{"append_tokens": 3, "gen_tokens": 1}', "JSON list of rounds"),
    ('{"v": 2, "id": "c", "fork": {"parent": "nobody", "round": 1, "tokens": 1}, "rounds": [{"append_tokens": 1, "gen_tokens": 1}]}',
     "fork parent 'nobody' does not exist"),
    ('[[1, 1]]\n[[1, ', "line 2: not JSON"),
])
def test_a_bad_line_is_one_refusal_naming_file_and_line(tmp_path, text, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        list(native.read(path))
    assert str(info.value).startswith(f"{path}: line ") and words in str(info.value) and info.value.exit_code == 2


def test_skip_lists_bad_lines_and_keeps_the_good_ones(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("[[1, 1]]\nnot json\n[[2, 2]]\n")
    skipped: list = []
    assert [s.id for s, _ in native.read(path, skipped)] == ["#1", "#3"] and [n for n, _ in skipped] == [2]


def test_the_writer_leaves_nothing_when_a_session_fails_on_the_way(tmp_path):
    out = tmp_path / "out.jsonl"

    def sessions():
        yield session("a", [1], [1])
        raise PlanError("a bad record", 2)

    with pytest.raises(PlanError):
        native.write(sessions(), out)
    assert list(tmp_path.iterdir()) == []
    native.write([session("a", [1], [1])], out)
    assert json.loads(out.read_text())["id"] == "a"


def _canonical_file(path, sessions, newline="\n"):
    path.write_text(newline.join(s.line() for s in sessions) + newline)
    return path


def test_a_bad_line_among_canonical_ones_is_named_by_its_number(tmp_path):
    good = [session(f"s{k}", [100, 20], [10, 5], tool_s=[4.0, 0.0]) for k in range(5)]
    path = _canonical_file(tmp_path / "t.jsonl", good)
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace('"gen_tokens":5', '"gen_tokens":5,"keep_tokens":999')  # keeps more than it holds
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PlanError, match=r"line 4: session s3 round 2: keep_tokens = 999 tokens is not allowed"):
        list(native.read(path))
    skipped: list = []
    assert [s.id for s, _ in native.read(path, skipped)] == ["s0", "s1", "s2", "s4"] and [n for n, _ in skipped] == [4]


def test_ids_and_forks_are_checked_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "BLOCK_BYTES", 64)  # a block a line or two
    parent = session("p", [100, 20], [10, 5])
    child = session("c", [7], [1], fork=Fork("p", 2, 120))
    path = _canonical_file(tmp_path / "t.jsonl", [parent, session("x", [1], [1]), child])
    assert [(s.id, line) for s, line in native.read(path)] == [("p", 1), ("x", 2), ("c", 3)]
    _canonical_file(path, [parent, session("x", [1], [1]), session("p", [1], [1])])
    with pytest.raises(PlanError, match="line 3: session id 'p' appears twice"):
        list(native.read(path))


def test_a_fork_may_follow_its_parent_in_the_same_block(tmp_path):
    parent = session("p", [100, 20], [10, 5])
    path = _canonical_file(tmp_path / "t.jsonl", [parent, session("c", [7], [1], fork=Fork("p", 2, 135))])
    (_, _), (c, _) = native.read(path)
    assert c.context_tokens().tolist() == [135]
    _canonical_file(path, [parent, session("c", [7], [1], fork=Fork("p", 2, 136))])
    with pytest.raises(PlanError, match="line 2: session c: fork tokens = 136 tokens is not allowed"):
        list(native.read(path))


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_carriage_returns_end_lines_as_in_text_mode(tmp_path, newline):
    path = _canonical_file(tmp_path / "t.jsonl", [session("a", [1], [1]), session("b", [2], [2])], newline)
    assert [(s.id, line) for s, line in native.read(path)] == [("a", 1), ("b", 2)]


def test_a_line_ending_in_a_form_feed_is_not_json_on_either_path(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(session("a", [5], [3]).line().encode() + b"\x0c\n")
    with pytest.raises(PlanError, match="line 1: not JSON"):
        list(native.read(path))


def test_a_damaged_gzip_stream_keeps_the_sessions_before_it_and_names_the_line(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "BLOCK_BYTES", 1 << 30)  # one block: the damage comes before it is full
    whole = gzip.compress("".join(session(f"s{k}", [k + 1], [1]).line() + "\n" for k in range(2000)).encode())
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(whole[: len(whole) * 3 // 4])
    got = []
    with pytest.raises(PlanError, match=r"line (\d+): not UTF-8 text or not readable \(EOFError\)") as info:
        got.extend(s.id for s, _ in native.read(path))
    number = int(str(info.value).split("line ")[1].split(":")[0])
    assert got and len(got) == number - 1 and got[-1] == f"s{number - 2}"


@pytest.mark.parametrize("text,words", [
    ("\ufeff" + session("a", [1], [1]).line(), "line 1: starts with a byte-order mark"),
    ('{"v":2,"id":"a', "line 1: not JSON (Unterminated string starting at column"),
    ('{"request_id": 7, "input_length": 10}', "--trace-format F"),
])
def test_refusals_say_what_to_do(tmp_path, text, words):
    path = tmp_path / "t.jsonl"
    path.write_text(text, encoding="utf-8")  # no newline after: an unterminated string ends at the file's end
    with pytest.raises(PlanError, match=re.escape(words)):
        list(native.read(path))


def test_a_directory_is_a_public_traces_and_named_so(tmp_path):
    from dualpath_plan.model.workload import load_jsonl

    with pytest.raises(PlanError, match="a directory; this project's own trace is one file"):
        load_jsonl(tmp_path)


def test_a_written_trace_has_the_user_s_usual_mode(tmp_path):
    """mkstemp makes its file 0600; the trace written through it gets 0666 less the umask, as every other output file."""
    import os

    old = os.umask(0o022)
    try:
        native.write_lines(["{}"], tmp_path / "out.jsonl")
    finally:
        os.umask(old)
    assert (tmp_path / "out.jsonl").stat().st_mode & 0o777 == 0o644
