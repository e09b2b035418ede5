"""The WEKA kv-cache-tester converter on its synthesised fixture (64-token blocks), against hand counts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import formats
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.formats import ImportOptions, weka
from dualpath_plan.model.trace.schema import NO_KEEP, Fork, SharedPrefix

FIXTURES = Path(__file__).parents[2] / "fixtures" / "traces"
A, B = FIXTURES / "weka" / "trace_0001.json", FIXTURES / "weka" / "trace_0002.json"
HAIKU = "claude-haiku-4-5-20251001"


def run(paths: list[Path], opts: ImportOptions = ImportOptions()):
    report = Report("weka")
    return list(formats.sessions("weka", paths, opts, report)), report


def by_id():
    return {s.id: s for s in run([A, B])[0]}


def doc(cid: str, requests: list, scope: str = "local") -> dict:
    return {"id": cid, "models": ["m"], "block_size": 64, "hash_id_scope": scope, "tool_tokens": 0, "system_tokens": 0,
            "requests": requests}


def req(t: float, n_in: int, out: int, ids: list, model: str = "m", **extra) -> dict:
    return {"t": t, "type": "n", "model": model, "in": n_in, "out": out, "hash_ids": ids, "input_types": ["text"],
            "output_types": ["text"], "stop": "end_turn", "api_time": 1.0, **extra}


def refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        run([path])
    return str(info.value)


def test_sessions_parents_first():
    sessions, _ = run([A, B])
    assert [(s.id, s.n_rounds) for s in sessions] == [("conv-a", 5), (f"conv-a/{HAIKU}", 1), ("conv-a/agent_001", 2),
                                                     ("conv-a/agent_002", 2), ("conv-b", 3)]


def test_main_session_repeat_compaction_and_think_times():
    s = by_id()["conv-a"]  # r1, r2, (r3 a repeat of r2), r4, r5, r6; the side call and the sub-agents left out
    assert (s.start_s, s.shared_prefix, s.fork) == (None, None, None)
    assert s.append_tokens.tolist() == [640, 760 - 690, 1000 - 800, 1100 - 1080, 400 - 192]
    assert s.gen_tokens.tolist() == [50, 40, 80, 90, 100]
    assert s.keep_tokens.tolist() == [NO_KEEP, NO_KEEP, NO_KEEP, 3 * 64, NO_KEEP]  # r6 keeps blocks 1-3
    assert s.tool_s.tolist() == [3.0, 2.5, 3.0, 12.0, 0.0]  # think_time of the next request (r2's: r3's, dropped)


def test_sub_agents_fork_or_start_at_their_time():
    sessions = by_id()
    first, second = sessions["conv-a/agent_001"], sessions["conv-a/agent_002"]
    assert (first.fork, first.start_s) == (None, 12.0)  # nothing cached: no fork, its recorded start
    assert (first.append_tokens.tolist(), first.gen_tokens.tolist(), first.tool_s.tolist()) == ([300, 420 - 330], [30, 60], [2.0, 0.0])
    assert second.fork == Fork("conv-a", 2, 4 * 64, 13.0 - (5.0 + 1.5))  # after r2 (r3 dropped), agent_001's 4 blocks
    assert (second.start_s, second.append_tokens.tolist(), second.tool_s.tolist()) == (None, [330 - 256, 400 - 350], [1.2, 0.0])


def test_side_call_of_another_model_is_its_own_session():
    s = by_id()[f"conv-a/{HAIKU}"]
    assert (s.start_s, s.fork, s.append_tokens.tolist(), s.gen_tokens.tolist()) == (15.0, None, [200], [10])


def test_local_scope_and_a_start_without_api_time():
    s = by_id()["conv-b"]  # its blocks 1-3 are conv-a's ids, but each file has its own index
    assert (s.shared_prefix, s.append_tokens.tolist(), s.gen_tokens.tolist()) == (None, [128, 200 - 138, 300 - 220], [10, 20, 30])
    assert s.tool_s.tolist() == [3.0, 10.0 - 4.0, 0.0]  # b2 has no api_time: the gap between starts


def test_report_counts():
    _, report = run([A, B])
    assert (report.files, report.records, report.sessions, report.rounds) == (2, 14, 5, 13)
    assert (report.repeats_dropped, report.shrinks, report.trims, report.upper_bound_tool, report.overlaps) == (1, 1, 0, 1, 0)
    assert (report.forks, report.shared_prefixes, report.hits_from) == (1, 0, weka.HITS_FROM)
    assert report.notes == [f"1 {weka.SIDE}", f"2 {weka.UNFORKED}"]


def test_context_window_cuts_the_main_session():
    sessions, report = run([A], ImportOptions(max_context_tokens=900))  # conv-a holds 690, 800, 1080: cut after round 2
    assert [(s.id, s.n_rounds) for s in sessions][:1] == [("conv-a", 2)]
    assert (report.sessions_cut, report.rounds_over_window, report.forks) == (1, 3, 1)  # agent_002 forks at round 2


def test_gzip_file(tmp_path):
    path = tmp_path / "trace_0002.json.gz"
    path.write_bytes(gzip.compress(B.read_bytes()))
    (s,), report = run([path])
    assert (s.id, s.append_tokens.tolist(), s.tool_s.tolist(), report.records) == ("conv-b", [128, 62, 80], [3.0, 6.0, 0.0], 3)


def test_global_scope_shares_blocks_across_files(tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(doc("x", [req(0.0, 200, 10, [1, 2, 3])], "global")))
    two.write_text(json.dumps(doc("y", [req(0.0, 300, 10, [1, 2, 7, 8])], "global")))
    x, y = run([one, two])[0]
    assert (x.shared_prefix, y.shared_prefix, y.append_tokens.tolist()) == (None, SharedPrefix("y-prefix", 128), [300 - 128])


def test_nested_sub_agent_forks_from_its_sub_agent(tmp_path):
    inner = {"t": 1.5, "type": "subagent", "agent_id": "inner", "requests": [req(0.0, 130, 5, [10, 12])]}
    outer = {"t": 2.0, "type": "subagent", "agent_id": "outer", "requests": [req(0.0, 130, 5, [10, 11]), inner]}
    path = tmp_path / "nest.json"
    path.write_text(json.dumps(doc("n", [req(0.0, 64, 5, [10]), outer])))
    sessions = run([path])[0]
    # outer starts 2 s into n, 1 s after n's round 1 ends; inner 1.5 s into outer, 0.5 s after outer's round 1
    assert [(s.id, s.fork) for s in sessions] == [("n", None), ("n/outer", Fork("n", 1, 64, 1.0)),
                                                  ("n/outer/inner", Fork("n/outer", 1, 64, 0.5))]


def test_missing_field(tmp_path):
    message = refused(tmp_path, json.dumps(doc("x", [req(0.0, 64, 5, [1]), {"t": 1.0, "model": "m", "out": 3}])))
    assert "bad.json: line 1: not a weka trace: requests[1]: no 'in' field" in message


def test_truncated_json(tmp_path):
    message = refused(tmp_path, A.read_text()[:500])
    assert "bad.json: line 1: not a weka trace: not JSON" in message


def test_decreasing_times(tmp_path):
    message = refused(tmp_path, json.dumps(doc("x", [req(5.0, 64, 5, [1]), req(2.0, 128, 5, [1, 2])])))
    assert "bad.json: line 1: not a weka trace: requests[1]: t = 2.0 s is before the previous m request's 5.0 s" in message


def test_a_second_document(tmp_path):
    message = refused(tmp_path, B.read_text() + "\n" + B.read_text() + "\n")
    assert "bad.json: line 2: not a weka trace: a second JSON document" in message


def test_a_file_of_another_format():
    with pytest.raises(PlanError, match=r"conversation_trace_excerpt.jsonl: line 1: not a weka trace: the trace: no 'requests' field"):
        run([FIXTURES / "mooncake" / "conversation_trace_excerpt.jsonl"])
