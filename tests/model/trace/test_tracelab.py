"""The TraceLab converter on its synthesised fixture (Claude Code and Codex rows), against hand counts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import formats
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.formats import ImportOptions, tracelab
from dualpath_plan.model.trace.schema import NO_KEEP, SharedPrefix

FIXTURES = Path(__file__).parents[2] / "fixtures" / "traces"
TRACE = FIXTURES / "tracelab" / "round_trace_synth.jsonl"
CODEX, CLAUDE = "codex:7c2e41a0-93d5-4b8e-a1f6-2d0c9e5b3a48", "claude:5b1f0c9e-2a44-4c1e-9d0b-0e6f3c2a7d11"
SUB, HAIKU = "claude:0a9d77e3-5c18-4f2b-8e6d-91b4a2c0f535", "claude-haiku-4-5-20251001"
ORIGIN = 10.0  # the origin is 2026-05-31T23:59:50Z: 10 s before midnight


def run(path: Path, opts: ImportOptions = ImportOptions()):
    report = Report("tracelab")
    return list(formats.sessions("tracelab", [path], opts, report)), report


def by_id():
    return {s.id: s for s in run(TRACE)[0]}


def lines() -> list[dict]:
    return [json.loads(text) for text in TRACE.read_text().splitlines()]


def refused(tmp_path: Path, records: list, text: str | None = None) -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text(text if text is not None else "".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(PlanError) as info:
        run(path)
    return str(info.value)


def test_sessions_in_file_order():
    sessions, _ = run(TRACE)
    assert [(s.id, s.n_rounds) for s in sessions] == [(CODEX, 4), (CLAUDE, 5), (f"{CLAUDE}/{HAIKU}", 1), (SUB, 2)]


def test_claude_session_misses_wait_compaction_and_repeat():
    s = by_id()[CLAUDE]  # lines 5-8, 10 (9: Haiku, 11: a repeat of 10)
    assert (s.start_s, s.shared_prefix) == (ORIGIN + 5 * 3600 + 40 * 60 + 20, SharedPrefix(f"{CLAUDE}-prefix", 27000))
    # lines 6-8 keep at least the previous input (cached 30000, 33498 and 0 are below it): rule 2's appends
    assert s.append_tokens.tolist() == [32000 - 27000, 33500 - 32900, 34400 - 33900, 35500 - 35100, 9000 - 4000]
    assert s.gen_tokens.tolist() == [900, 400, 700, 300, 800]
    assert s.keep_tokens.tolist() == [NO_KEEP, NO_KEEP, NO_KEEP, 4000, NO_KEEP]  # the compaction keeps 4000 cached
    assert s.tool_s.tolist() == [1.0, 2.5, 300.0, 7.0, 0.0]  # last event to the next round's last input event


def test_codex_session_provider_miss_trim_and_shrink():
    s = by_id()[CODEX]
    assert (s.start_s, s.shared_prefix) == (0.0, SharedPrefix(f"{CODEX}-prefix", 6912))
    assert s.append_tokens.tolist() == [9000 - 6912, 9600 - 9400, 9700 - 9600, 9650 - 9472]
    assert s.gen_tokens.tolist() == [400, 100, 50, 60]
    assert s.keep_tokens.tolist() == [NO_KEEP, 9600, 9472, NO_KEEP]  # line 3 keeps line 2's input (the miss); line 4 shrinks
    assert s.tool_s.tolist() == [1.0, 4.0, 62.0, 0.0]


def test_side_model_and_sub_agent_sessions():
    sessions = by_id()
    side, sub = sessions[f"{CLAUDE}/{HAIKU}"], sessions[SUB]
    assert (side.start_s, side.shared_prefix, side.append_tokens.tolist(), side.gen_tokens.tolist()) == (
        ORIGIN + 5 * 3600 + 46 * 60 + 4, None, [600], [30])
    assert (sub.start_s, sub.shared_prefix.tokens, sub.append_tokens.tolist(), sub.tool_s.tolist()) == (
        ORIGIN + 5 * 3600 + 42 * 60, 11000, [1000, 12600 - 12200], [1.0, 0.0])


def test_report_counts():
    _, report = run(TRACE)
    assert (report.files, report.records, report.sessions, report.rounds) == (1, 14, 4, 12)
    assert (report.repeats_dropped, report.shrinks, report.trims, report.upper_bound_tool, report.overlaps) == (1, 2, 1, 0, 0)
    assert (report.forks, report.shared_prefixes, report.hits_from) == (0, 3, tracelab.HITS_FROM)
    assert report.notes == [f"4 {tracelab.MISSES}", f"1 {tracelab.SIDE}", f"1 {tracelab.ENDED}"]


def test_context_window_cuts_the_claude_session():
    sessions, report = run(TRACE, ImportOptions(max_context_tokens=35000))  # it holds 32900, 33900, 35100: cut at 3
    assert [(s.id, s.n_rounds) for s in sessions][1] == (CLAUDE, 2)
    assert (report.sessions_cut, report.rounds_over_window) == (1, 3)


def test_gzip_release_file(tmp_path):
    path = tmp_path / "syfi_coding_trace.jsonl.gz"
    path.write_bytes(gzip.compress(TRACE.read_bytes()))
    sessions, report = run(path)
    assert [(s.id, s.n_rounds, s.start_s) for s in sessions] == [(s.id, s.n_rounds, s.start_s) for s in run(TRACE)[0]]
    assert (report.records, report.rounds) == (14, 12)


def test_missing_field(tmp_path):
    records = lines()[:3]
    del records[1]["prefix_tokens"]
    assert "bad.jsonl: line 2: not a tracelab trace: no 'prefix_tokens' field" in refused(tmp_path, records)


def test_truncated_json(tmp_path):
    text = TRACE.read_text().splitlines()
    message = refused(tmp_path, [], text[0] + "\n" + text[1][:300] + "\n")
    assert "bad.jsonl: line 2: not a tracelab trace: not JSON" in message


def test_truncated_gzip(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(TRACE.read_bytes())[:600])
    with pytest.raises(PlanError, match=r"cut.jsonl.gz: line \d+: not a tracelab trace: (unreadable|not JSON)"):
        run(path)


def test_decreasing_times(tmp_path):
    records = lines()[4:6]  # Claude lines 5 and 6, the second moved 10 minutes back
    for event in records[1]["timing_events"]:
        event["timestamp"] = event["timestamp"].replace("05:40:", "05:30:")
    message = refused(tmp_path, records)
    assert "bad.jsonl: line 2: not a tracelab trace: the round starts 589.000 s before the previous round" in message


def test_bad_timestamp(tmp_path):
    records = lines()[:1]
    records[0]["timing_events"][0]["timestamp"] = "yesterday"
    message = refused(tmp_path, records)
    assert "bad.jsonl: line 1: not a tracelab trace: timing_events[0].timestamp = 'yesterday' is not an ISO 8601" in message


def test_a_file_of_another_format():
    with pytest.raises(PlanError, match=r"trace_0002.json: line 1: not a tracelab trace: no 'session_id' field"):
        run(FIXTURES / "weka" / "trace_0002.json")
