"""The Dynamo agentic Mooncake converter on its synthesised fixture (64-token blocks), against hand counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import formats
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.formats import ImportOptions, dynamo
from dualpath_plan.model.trace.schema import NO_KEEP, Fork, SharedPrefix

FIXTURES = Path(__file__).parents[2] / "fixtures" / "traces"
TRACE = FIXTURES / "dynamo" / "agentic_synth.jsonl"


def run(path: Path, opts: ImportOptions = ImportOptions()):
    report = Report("dynamo")
    return list(formats.sessions("dynamo", [path], opts, report)), report


def row(rid: str, sid: str | None, t: float, in_tokens: int, out_tokens: int, ids: list[int], **extra) -> str:
    record = {"request_id": rid, "session_id": sid, "input_length": in_tokens, "output_length": out_tokens,
              "hash_ids": ids, "timestamp": t}
    record.update(extra)
    return json.dumps({k: v for k, v in record.items() if v is not None}, separators=(",", ":"))


def refused(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PlanError) as info:
        run(path)
    return str(info.value)


def by_id():
    return {s.id: s for s in run(TRACE)[0]}


ROOT = row("a1", "s", 0.0, 100, 5, [1, 2])  # 100 tokens in 2 ids: blocks of 64


def test_sessions_in_first_line_order():
    sessions, _ = run(TRACE)
    assert [(s.id, s.n_rounds) for s in sessions] == [("main", 3), ("other", 2), ("sub", 2), ("q1", 1)]


def test_main_session_tool_waits_join_shrink_and_repeat():
    s = by_id()["main"]  # r1 -> r2 (spawns c1) -> r3 (joins c2; keeps blocks 0-1) -> r4 (repeat of r3, dropped)
    assert (s.start_s, s.shared_prefix, s.fork) == (0.0, None, None)
    assert s.append_tokens.tolist() == [300, 420 - 340, 200 - 128]
    assert s.gen_tokens.tolist() == [40, 30, 25]
    assert s.tool_s.tolist() == [1.5, 4.5, 0.25]  # delay + tool_wait_ms; the join's gap between starts; r4's wait
    assert s.keep_tokens.tolist() == [NO_KEEP, 128, NO_KEEP]


def test_branch_is_a_fork_at_the_spawning_round():
    s = by_id()["sub"]
    assert s.fork == Fork("main", 2, 320, 0.1)  # c1 finds blocks 0-3 and 5: 5 x 64 tokens
    assert (s.start_s, s.append_tokens.tolist(), s.gen_tokens.tolist(), s.tool_s.tolist()) == (None, [30, 130], [20, 15], [0.95, 0.0])


def test_cross_session_shared_prefix_and_timestamp_gap():
    s = by_id()["other"]
    assert s.shared_prefix == SharedPrefix("agentic_synth-block-1", 128)
    assert (s.start_s, s.append_tokens.tolist(), s.gen_tokens.tolist(), s.tool_s.tolist()) == (1.0, [12, 260 - 152], [12, 8], [3.0, 0.0])


def test_row_without_session_id_is_its_own_session():
    s = by_id()["q1"]
    assert (s.start_s, s.n_rounds, s.append_tokens.tolist(), s.shared_prefix) == (9.0, 1, [64], None)


def test_report_counts():
    _, report = run(TRACE)
    assert (report.records, report.sessions, report.rounds) == (9, 4, 8)
    assert (report.repeats_dropped, report.shrinks, report.trims, report.upper_bound_tool, report.overlaps) == (1, 1, 0, 2, 0)
    assert (report.forks, report.shared_prefixes) == (1, 1)
    assert report.tool_from == dynamo.TOOL_FROM
    assert "agentic_synth.jsonl: hash blocks of 64 tokens (inferred from input_length and hash_ids)" in report.notes


def test_context_window_cut_orphans_the_fork():
    sessions, report = run(TRACE, ImportOptions(max_context_tokens=400))  # main holds 340, 450: cut after round 1
    assert [(s.id, s.n_rounds) for s in sessions] == [("main", 1), ("other", 2), ("q1", 1)]
    assert (report.sessions, report.forks, report.sessions_cut, report.rounds_over_window) == (3, 0, 2, 3)
    assert any("1 fork dropped: its parent" in note for note in report.notes)


def test_block_size_is_inferred_from_the_rows(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text("\n".join([row("a1", "s", 0.0, 20, 5, [1]), row("a2", "s", 1.0, 100, 5, [1, 2]),
                               row("b1", "t", 2.0, 300, 5, [1, 2, 3])]) + "\n")
    s, t = run(path)[0]
    # a1 (one id) leaves the block size open; a2 (100 tokens in 2 ids) sets it to 64; a2 keeps a1's context
    assert s.append_tokens.tolist() == [20, 100 - 25]
    assert t.shared_prefix == SharedPrefix("b-block-2", 2 * 64)  # b1 matches ids 1 and 2: two blocks of 64


def test_missing_field(tmp_path):
    message = refused(tmp_path, [ROOT, row("a2", "s", 1.0, 100, 5, [1, 2], timestamp=None)])
    assert "bad.jsonl: line 2: not a dynamo trace: no 'timestamp' field" in message


def test_truncated_json(tmp_path):
    message = refused(tmp_path, [ROOT, ROOT.replace("a1", "a2")[:40]])
    assert "bad.jsonl: line 2:" in message and "not JSON" in message


def test_decreasing_times_in_a_session(tmp_path):
    message = refused(tmp_path, [row("a1", "s", 500.0, 100, 5, [1, 2]), row("a2", "s", 200.0, 100, 5, [1, 2])])
    assert "bad.jsonl: line 2:" in message and "timestamp 200 ms is before the row before it in session 's'" in message


def test_fork_whose_parent_does_not_exist(tmp_path):
    message = refused(tmp_path, [ROOT, row("c1", "child", 100.0, 100, 5, [1, 3], wait_for=["zz"], delay=5.0)])
    assert "bad.jsonl: line 2:" in message and "wait_for names request 'zz', which no earlier line has" in message


def test_repeated_request_id(tmp_path):
    message = refused(tmp_path, [ROOT, ROOT])
    assert "line 2:" in message and "request_id 'a1' appears on an earlier line" in message


def test_hash_ids_that_break_the_prefix_rule(tmp_path):
    message = refused(tmp_path, [ROOT, row("a2", "s", 1.0, 100, 5, [1, 2, 3])])  # 100 tokens hold 2 blocks of 64
    assert "line 2:" in message and "break the prefix rule" in message


def test_hash_ids_that_fit_no_block_size(tmp_path):
    message = refused(tmp_path, [row("a1", "s", 0.0, 1000, 5, [1, 2, 3, 4, 5])])
    assert "line 1:" in message and "fit no block of a power-of-two size" in message


def test_a_file_of_another_format():
    with pytest.raises(PlanError, match=r"conversation_trace_excerpt.jsonl: line 1: not a dynamo trace: no 'request_id' field"):
        run(FIXTURES / "mooncake" / "conversation_trace_excerpt.jsonl")
