"""The Bailian converter on its synthesised fixture (the public format, 16-token blocks), against hand counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import formats
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.formats import ImportOptions, bailian
from dualpath_plan.model.trace.schema import NO_KEEP, Fork, SharedPrefix

FIXTURES = Path(__file__).parents[2] / "fixtures" / "traces"
TRACE = FIXTURES / "bailian" / "coder_synth.jsonl"


def run(path: Path, opts: ImportOptions = ImportOptions()):
    report = Report("bailian")
    return list(formats.sessions("bailian", [path], opts, report)), report


def row(chat: int, parent: int, t: float, in_tokens: int, out_tokens: int, ids: list[int], **extra) -> str:
    record = {"chat_id": chat, "parent_chat_id": parent, "timestamp": t, "input_length": in_tokens,
              "output_length": out_tokens, "type": "text", "turn": 1, "hash_ids": ids}
    record.update(extra)
    return json.dumps({k: v for k, v in record.items() if v is not None})


def refused(tmp_path: Path, lines: list[str], name: str = "bailian") -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PlanError) as info:
        list(formats.sessions(name, [path], ImportOptions(), Report(name)))
    return str(info.value)


def by_id():
    return {s.id: s for s in run(TRACE)[0]}


def test_sessions_in_first_line_order():
    sessions, _ = run(TRACE)
    assert [(s.id, s.n_rounds) for s in sessions] == [("coder_synth-1", 3), ("coder_synth-2", 2), ("coder_synth-6", 2),
                                                      ("coder_synth-9", 1)]


def test_chain_with_a_repeat_and_a_compaction():
    s = by_id()["coder_synth-1"]  # chat 1 -> 3 -> 5 (repeat of 3, dropped) -> 7 (keeps blocks 1-2 only)
    assert s.start_s == 0.0 and s.shared_prefix is None and s.fork is None
    assert s.append_tokens.tolist() == [40, 70 - 48, 50 - 32]  # 3 keeps 40 + 8: its hit covers 40 to a block (32)
    assert s.gen_tokens.tolist() == [8, 10, 5]
    assert s.tool_s.tolist() == [2.5, 26.0 - 12.5, 0.0]  # gaps between starts; the repeat at 20.0 is dropped
    assert s.keep_tokens.tolist() == [NO_KEEP, 32, NO_KEEP]


def test_cross_session_shared_prefix():
    s = by_id()["coder_synth-2"]
    assert s.shared_prefix == SharedPrefix("coder_synth-block-2", 32)
    assert (s.start_s, s.append_tokens.tolist(), s.gen_tokens.tolist(), s.tool_s.tolist()) == (1.0, [13, 8], [7, 4], [4.0, 0.0])


def test_branch_is_a_fork_at_its_parents_round():
    s = by_id()["coder_synth-6"]  # chat 6's parent 3 already has child 5
    assert s.fork == Fork("coder_synth-1", 2, 80, 22.0 - 12.5)
    assert s.start_s is None and s.shared_prefix is None
    assert (s.append_tokens.tolist(), s.gen_tokens.tolist(), s.tool_s.tolist()) == ([90 - 80, 110 - 99], [9, 3], [8.0, 0.0])


def test_root_without_hit_starts_from_the_earliest_timestamp():
    s = by_id()["coder_synth-9"]
    assert (s.start_s, s.shared_prefix, s.append_tokens.tolist()) == (21.0, None, [20])


def test_report_counts():
    _, report = run(TRACE)
    assert (report.records, report.sessions, report.rounds) == (9, 4, 8)
    assert (report.repeats_dropped, report.shrinks, report.trims, report.upper_bound_tool, report.overlaps) == (1, 1, 0, 4, 0)
    assert (report.forks, report.shared_prefixes) == (1, 1)
    assert report.hits_from == bailian.HITS_FROM


def test_context_window_cuts_the_fork():
    sessions, report = run(TRACE, ImportOptions(max_context_tokens=100))  # the fork holds 99 then 113 tokens
    assert [s.n_rounds for s in sessions] == [3, 2, 1, 1]
    assert (report.sessions_cut, report.rounds_over_window, report.rounds) == (1, 1, 7)


def test_missing_field(tmp_path):
    message = refused(tmp_path, [row(1, -1, 0.0, 20, 2, [1, 2], output_length=None)])
    assert "bad.jsonl: line 1: not a bailian trace: no 'output_length' field" in message


def test_truncated_json(tmp_path):
    message = refused(tmp_path, [row(1, -1, 0.0, 20, 2, [1, 2]), row(2, 1, 1.0, 40, 2, [1, 2, 3])[:-20]])
    assert "bad.jsonl: line 2:" in message and "not JSON" in message


def test_decreasing_times_in_a_session(tmp_path):
    message = refused(tmp_path, [row(1, -1, 5.0, 20, 2, [1, 2]), row(2, 1, 4.0, 40, 2, [1, 2, 3])])
    assert "bad.jsonl: line 2:" in message and "earlier than its parent's (5 s, chat_id 1)" in message


def test_branch_whose_parent_does_not_exist(tmp_path):
    message = refused(tmp_path, [row(1, -1, 0.0, 20, 2, [1, 2]), row(2, 7, 1.0, 40, 2, [1, 2, 3])])
    assert "bad.jsonl: line 2:" in message and "parent_chat_id 7 names no earlier request" in message


def test_repeated_chat_id(tmp_path):
    message = refused(tmp_path, [row(1, -1, 0.0, 20, 2, [1, 2]), row(1, -1, 1.0, 20, 2, [1, 2])])
    assert "line 2:" in message and "chat_id 1 appears on an earlier line" in message


def test_hash_ids_that_break_the_prefix_rule(tmp_path):
    message = refused(tmp_path, [row(1, -1, 0.0, 20, 2, [1, 2, 3])])  # 20 tokens hold 2 blocks of 16
    assert "line 1:" in message and "break the prefix rule" in message


@pytest.mark.parametrize("file,missing", [("mooncake/conversation_trace_excerpt.jsonl", "chat_id"),
                                          ("dynamo/agentic_synth.jsonl", "chat_id")])
def test_a_file_of_another_format(file, missing):
    with pytest.raises(PlanError) as info:
        run(FIXTURES / file)
    assert f"{file.split('/')[1]}: line 1: not a bailian trace: no '{missing}' field" in str(info.value)


def test_bailian_named_as_dynamo_fails_on_line_1():
    with pytest.raises(PlanError, match=r"coder_synth.jsonl: line 1: not a dynamo trace: no 'request_id' field"):
        list(formats.sessions("dynamo", [TRACE], ImportOptions(), Report("dynamo")))
