"""The conversion rules every converter shares (``convert`` rules 1-6), on hand-made requests with hand counts."""

from __future__ import annotations

import gzip

import pytest

from dualpath_plan.model.trace.convert import PrefixIndex, FormatError, Report, Request, build_session, json_lines, open_text
from dualpath_plan.model.trace.schema import NO_KEEP


def _build(reqs, **kw):
    report = Report("test")
    return build_session("s", reqs, report, **kw), report


def test_rule_1_a_first_request_with_cached_tokens_starts_from_a_shared_prefix():
    s, report = _build([Request(5000, 100, 4096)], shared_id="sys")
    assert s.shared_prefix.tokens == 4096 and s.shared_prefix.id == "sys" and s.append_tokens.tolist() == [904]
    assert report.shared_prefixes == 1


def test_rule_1_a_fork_takes_its_cached_prefix_from_its_parent():
    s, report = _build([Request(3000, 50, 2000)], fork=("p", 2, 0.3))
    assert (s.fork.parent, s.fork.round, s.fork.tokens, s.fork.delay_s) == ("p", 2, 2000, 0.3) and s.shared_prefix is None
    assert report.forks == 1


def test_rule_2_a_whole_previous_prompt_cached_keeps_the_context_and_appends_the_rest():
    # round 2: previous input 1000 + output 100 = 1,100 cached (960 of 1,000 matched: whole 64-token blocks)
    s, report = _build([Request(1000, 100, 0), Request(1500, 80, 960)], block_tokens=64)
    assert s.append_tokens.tolist() == [1000, 400] and s.keep_tokens.tolist() == [NO_KEEP, NO_KEEP]
    assert s.context_tokens().tolist() == [0, 1100] and report.shrinks == report.trims == 0


def test_rule_2_a_hit_below_the_previous_prompt_is_a_shrink_and_an_unsent_output_a_trim():
    s, report = _build([Request(1000, 100, 0), Request(700, 50, 300), Request(740, 10, 700)])
    # round 2 found 300 cached of a previous prompt of 1,000: keep 300, append 400 (a shrink)
    # round 3 found the whole previous prompt (700) but its input (740) is not past 700 + 50: keep 700 (a trim)
    assert s.keep_tokens.tolist() == [300, 700, NO_KEEP] and s.append_tokens.tolist() == [1000, 400, 40]
    assert (report.shrinks, report.trims) == (1, 1)


def test_rule_3_without_hits_the_counts_decide():
    s, _ = _build([Request(1000, 100), Request(1200, 50), Request(1230, 10), Request(500, 10)])
    # 1200 > 1100: whole context; 1230 > 1200 but not > 1250: the previous input; 500 < 1230: nothing kept
    assert s.keep_tokens.tolist() == [NO_KEEP, 1200, 0, NO_KEEP] and s.append_tokens.tolist() == [1000, 100, 30, 500]


def test_rule_4_a_retry_is_dropped():
    s, report = _build([Request(1000, 100, 0), Request(1000, 100, 1000), Request(1200, 10, 1000)])
    assert s.n_rounds == 2 and report.repeats_dropped == 1


def test_rule_5_tool_time_from_the_format_then_durations_then_starts():
    s, report = _build([Request(100, 10, None, 0.0, 2.0), Request(200, 10, None, 5.0, None, 7.5), Request(300, 10, None, 20.0),
                        Request(400, 10, None, 30.0), Request(500, 10, None, 29.0)])
    # 5.0 - 2.0 = 3.0 (end known); 7.5 (the format's own); 30 - 20 = 10 (starts only: an upper bound); -1 -> 0 (overlap)
    assert s.tool_s.tolist() == [3.0, 7.5, 10.0, 0.0, 0.0]
    assert (report.upper_bound_tool, report.overlaps) == (2, 1)


def test_rule_6_a_session_is_cut_at_the_window_and_dropped_when_its_first_round_passes_it():
    s, report = _build([Request(1000, 100), Request(1500, 100), Request(4000, 100)], max_context_tokens=2000)
    assert s.n_rounds == 2 and s.keep_tokens[-1] == NO_KEEP and (report.sessions_cut, report.rounds_over_window) == (1, 1)
    none, report = _build([Request(3000, 100)], max_context_tokens=2000)
    assert none is None and report.sessions_over_window == 1


def test_block_prefix_matching_counts_the_leading_run_only():
    idx = PrefixIndex(16)
    assert idx.hit([1, 2, 3], 40) == 0
    assert idx.hit([1, 2, 9, 3], 64) == 32  # 3 was seen but follows a new block: not a prefix
    with pytest.raises(FormatError, match="break the prefix rule"):
        idx.check_ids([1, 2, 3, 4], 40, 7)


def test_gzip_and_plain_text_read_the_same_and_truncated_json_names_its_line(tmp_path):
    plain, packed = tmp_path / "a.jsonl", tmp_path / "a.jsonl.gz"
    text = '{"x": 1}\n\n{"x": 2}\n'
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    seen = []
    for path in (plain, packed):
        with open_text(path, seen.append) as f:
            assert list(json_lines(f)) == [(1, {"x": 1}), (3, {"x": 2})]
    assert sum(seen) == plain.stat().st_size + packed.stat().st_size
    plain.write_text('{"x": 1}\n{"x": ')
    with open_text(plain) as f, pytest.raises(FormatError) as info:
        list(json_lines(f))
    assert info.value.line == 2 and "truncated" in str(info.value)
