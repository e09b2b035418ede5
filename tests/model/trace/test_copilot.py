"""The GitHub Copilot coding agent converter on its synthesised fixture, against hand counts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import formats
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.formats import ImportOptions, copilot, tracelab
from dualpath_plan.model.trace.schema import NO_KEEP, SharedPrefix

FIXTURES = Path(__file__).parents[2] / "fixtures" / "traces"
TRACE = FIXTURES / "copilot" / "shard-synth.jsonl"
S1, S2, S3 = "3f1c9a7e5b2d4c6a8e0f1b3d5a7c9e1f", "9b7d5f3a1c8e6b4d2f0a9c7e5b3d1f8a", "5d3b1f9e7c5a3d1b9f7e5c3a1d9b7f5e"


def run(paths: list[Path], opts: ImportOptions = ImportOptions()):
    report = Report("copilot")
    return list(formats.sessions("copilot", paths, opts, report)), report


def by_id():
    return {s.id: s for s in run([TRACE])[0]}


def records() -> list[dict]:
    return [json.loads(text) for text in TRACE.read_text().splitlines()]


def refused(tmp_path: Path, lines: list, text: str | None = None) -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text(text if text is not None else "".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(PlanError) as info:
        run([path])
    return str(info.value)


def test_sessions_one_per_line_then_other_models():
    sessions, _ = run([TRACE])
    assert [(s.id, s.n_rounds) for s in sessions] == [(S1, 4), (f"{S1}/Model B", 1), (S2, 2), (S3, 2)]


def test_main_session_sorted_calls_miss_and_compaction():
    s = by_id()[S1]  # Model A: c1, c2, c3 (in time order), c5; the tool-model call dropped, c4 (Model B) apart
    assert (s.start_s, s.shared_prefix) == (10 * 3600.0, SharedPrefix(f"{S1}-prefix", 15000))
    assert s.append_tokens.tolist() == [20000 - 15000, 21000 - 20300, 21500 - 21200, 9000 - 4096]
    assert s.gen_tokens.tolist() == [300, 200, 150, 600]
    assert s.keep_tokens.tolist() == [NO_KEEP, NO_KEEP, 4096, NO_KEEP]  # c3 keeps c2's prompt (a miss); c5 keeps 4096
    assert s.tool_s.tolist() == [6.0 - 4.0, 11.0 - 9.0, 140.0 - 13.0, 0.0]  # end (timestamp + duration) to next start


def test_model_switch_clock_skew_repeat_and_overlap():
    sessions = by_id()
    side, skewed, parallel = sessions[f"{S1}/Model B"], sessions[S2], sessions[S3]
    assert (side.start_s, side.shared_prefix, side.append_tokens.tolist()) == (10 * 3600.0 + 133, None, [22000])
    assert (skewed.start_s, skewed.append_tokens.tolist(), skewed.tool_s.tolist()) == (0.0, [5000, 5400 - 5100], [10.0 - 2.0, 0.0])
    assert (parallel.append_tokens.tolist(), parallel.tool_s.tolist()) == ([2000, 8300 - 8100], [0.0, 0.0])


def test_report_counts():
    _, report = run([TRACE])
    assert (report.files, report.records, report.sessions, report.rounds) == (1, 3, 4, 9)
    assert (report.repeats_dropped, report.shrinks, report.trims, report.upper_bound_tool, report.overlaps) == (1, 1, 0, 0, 1)
    assert (report.forks, report.shared_prefixes, report.hits_from) == (0, 2, copilot.HITS_FROM)
    assert report.notes == [f"1 {copilot.DROPPED}", f"1 {tracelab.MISSES}", f"1 {copilot.SIDE}", f"1 {copilot.EARLY}"]


def test_gzip_shards_share_the_first_ones_origin(tmp_path):
    first, second = tmp_path / "shard-0000.jsonl.gz", tmp_path / "shard-0001.jsonl.gz"
    first.write_bytes(gzip.compress(TRACE.read_bytes()))
    later = records()[2]
    later["session_id"], later["date"] = "0e2c4a6b8d0f2e4c6a8b0d2f4e6c8a0b", "2026-06-02"
    for call in later["turns"][0]["llm_calls"]:
        call["timestamp"] = call["timestamp"].replace("2026-06-01", "2026-06-02")
    second.write_bytes(gzip.compress((json.dumps(later) + "\n").encode()))
    sessions, report = run([first, second])
    assert [(s.id, s.start_s) for s in sessions][-2:] == [(S3, 10.5 * 3600), ("0e2c4a6b8d0f2e4c6a8b0d2f4e6c8a0b", 34.5 * 3600)]
    assert (report.files, report.records, report.sessions) == (2, 4, 5)


def test_context_window_drops_a_session():
    sessions, report = run([TRACE], ImportOptions(max_context_tokens=21000))  # Model B's one call holds 22400
    assert f"{S1}/Model B" not in [s.id for s in sessions]
    assert (report.sessions_over_window, report.sessions_cut) == (1, 1)  # S1 holds 20300, then 21200: cut after round 1


def test_missing_field(tmp_path):
    lines = records()[:1]
    del lines[0]["turns"][0]["llm_calls"][1]["tokens"]["cached"]
    assert "bad.jsonl: line 1: not a copilot trace: turns[0].llm_calls[1]: no 'cached' field" in refused(tmp_path, lines)


def test_truncated_json(tmp_path):
    text = TRACE.read_text().splitlines()
    assert "bad.jsonl: line 2: not a copilot trace: not JSON" in refused(tmp_path, [], text[0] + "\n" + text[1][:200])


def test_turns_out_of_time_order(tmp_path):
    lines = records()[:1]
    lines[0]["turns"].reverse()
    message = refused(tmp_path, lines)
    assert "bad.jsonl: line 1: not a copilot trace: turns[1] starts 133.000 s before the turn before it" in message


def test_a_file_of_another_format():
    with pytest.raises(PlanError, match=r"round_trace_synth.jsonl: line 1: not a copilot trace: no 'date' field"):
        run([FIXTURES / "tracelab" / "round_trace_synth.jsonl"])
