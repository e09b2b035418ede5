"""This project's own trace files: v1 and v2 lines, line numbers in every refusal, and the writer."""

from __future__ import annotations

import json

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import native
from dualpath_plan.model.trace.schema import session


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
