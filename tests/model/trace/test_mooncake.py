"""The Mooncake FAST'25 converter on its fixture (an excerpt of the public conversation trace), against hand counts."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import formats
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.formats import ImportOptions, mooncake
from dualpath_plan.model.trace.schema import NO_KEEP

FIXTURES = Path(__file__).parents[2] / "fixtures" / "traces"
TRACE = FIXTURES / "mooncake" / "conversation_trace_excerpt.jsonl"
ID = "conversation_trace_excerpt"


def run(path: Path, opts: ImportOptions = ImportOptions(), name: str = "mooncake"):
    report = Report(name)
    return list(formats.sessions(name, [path], opts, report)), report


def refused(tmp_path: Path, lines: list[str], name: str = "mooncake") -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PlanError) as info:
        run(path, name=name)
    return str(info.value)


GOOD = '{"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}'


def test_every_request_is_a_one_round_session_with_its_shared_prefix():
    sessions, report = run(TRACE)
    assert [s.id for s in sessions] == [f"{ID}-{n}" for n in range(1, 8)]
    assert all(s.n_rounds == 1 and s.fork is None for s in sessions)
    # hand counts: append = input - cached prefix (512-token blocks), gen = output_length
    assert [int(s.append_tokens[0]) for s in sessions] == [6758, 7322 - 512, 1902 - 512, 2651 - 512, 3024 - 2560, 1, 3142 - 2560]
    assert [int(s.gen_tokens[0]) for s in sessions] == [500, 490, 587, 366, 111, 654, 398]
    assert sessions[0].shared_prefix is None
    shared = [(s.shared_prefix.id, s.shared_prefix.tokens) for s in sessions[1:]]
    assert shared == [(f"{ID}-block-0", 512)] * 3 + [(f"{ID}-block-1544", 2560), (f"{ID}-block-977", 1901),
                                                      (f"{ID}-block-1544", 2560)]
    assert [s.start_s for s in sessions] == [0.0, 0.0, 12.0, 21.0, 48.0, 90.0, 95.999]
    assert all(float(s.tool_s[0]) == 0.0 and int(s.keep_tokens[0]) == NO_KEEP for s in sessions)


def test_report_counts():
    _, report = run(TRACE)
    assert (report.files, report.records, report.sessions, report.rounds) == (1, 7, 7, 7)
    assert (report.shared_prefixes, report.forks, report.repeats_dropped, report.shrinks, report.upper_bound_tool) == (6, 0, 0, 0, 0)
    assert report.hits_from == mooncake.HITS_FROM and report.tool_from == mooncake.TOOL_FROM


def test_context_window_drops_sessions_whose_only_round_passes_it():
    sessions, report = run(TRACE, ImportOptions(max_context_tokens=7000))
    assert [s.id for s in sessions] == [f"{ID}-{n}" for n in range(3, 8)]  # 6758 + 500 and 7322 + 490 pass 7000
    assert (report.sessions, report.sessions_over_window, report.rounds_over_window) == (5, 2, 2)


def test_gzip_reads_the_same(tmp_path):
    packed = tmp_path / "conversation_trace_excerpt.jsonl.gz"
    with open(TRACE, "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert [s.line() for s in run(packed)[0]] == [s.line() for s in run(TRACE)[0]]


def test_streams_a_session_before_reading_the_next_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(GOOD + "\n{\"timestamp\": 5, \"input_len\n")
    sessions = mooncake.read(path, ImportOptions(), Report("mooncake"))
    assert next(sessions)[0].id == "t-1"


def test_missing_field(tmp_path):
    message = refused(tmp_path, [GOOD, '{"timestamp": 5, "input_length": 10, "hash_ids": [3]}'])
    assert "bad.jsonl: line 2: not a mooncake trace: no 'output_length' field" in message


def test_truncated_json(tmp_path):
    message = refused(tmp_path, [GOOD, GOOD[:30]])
    assert "bad.jsonl: line 2:" in message and "not JSON" in message


def test_decreasing_times(tmp_path):
    later = GOOD.replace('"timestamp": 0', '"timestamp": 900')
    message = refused(tmp_path, [later, GOOD])
    assert "bad.jsonl: line 2:" in message and "timestamp 0 ms is below the line before's (900 ms)" in message


def test_negative_time(tmp_path):
    message = refused(tmp_path, [GOOD.replace('"timestamp": 0', '"timestamp": -3')])
    assert "line 1:" in message and "timestamp = -3 ms is negative" in message


def test_hash_ids_that_break_the_prefix_rule(tmp_path):
    message = refused(tmp_path, [GOOD.replace("[1, 2]", "[1, 2, 3]")])  # 1000 tokens hold 2 blocks of 512
    assert "line 1:" in message and "break the prefix rule" in message


@pytest.mark.parametrize("name,file", [("bailian", "bailian/coder_synth.jsonl"), ("dynamo", "dynamo/agentic_synth.jsonl")])
def test_a_file_of_another_format(name, file):
    with pytest.raises(PlanError) as info:
        run(FIXTURES / file)
    message = str(info.value)
    assert f"{file.split('/')[1]}: line 1: not a mooncake trace: unknown field(s)" in message
