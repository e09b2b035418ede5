"""Trace schema v2: the context rule, strict validation with the field named, and the rules across sessions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dualpath_plan.model.trace.schema import NO_KEEP, Fork, Registry, SharedPrefix, parse_session, session


def _line(**extra):
    base = {"v": 2, "id": "s", "rounds": [{"append_tokens": 100, "gen_tokens": 10}, {"append_tokens": 50, "gen_tokens": 5, "tool_s": 2.5},
                                           {"append_tokens": 20, "gen_tokens": 4}]}
    base.update(extra)
    return base


def test_the_context_rule_counts_prefix_rounds_and_compaction_by_hand():
    s = session("a", [100, 50, 20, 30], [10, 5, 4, 6], keep=[NO_KEEP, 40, NO_KEEP, NO_KEEP], shared_prefix=SharedPrefix("sys", 1000))
    # round 1 starts from the 1,000 shared tokens; round 2 from 1000 + 100 + 10; round 2 keeps 40; round 4 from 40 + 20 + 4
    assert s.context_tokens().tolist() == [1000, 1110, 40, 64]
    assert s.held_after().tolist() == [1110, 1165, 64, 100]


def test_a_line_round_trips_through_json():
    s = session("a", [100, 50], [10, 5], tool_s=[3.0, 0.0], keep=[60, NO_KEEP], start_s=12.5, shared_prefix=SharedPrefix("p", 7))
    back = parse_session(json.loads(s.line()))
    assert back.line() == s.line()
    assert back.tool_s.tolist() == [3.0, 0.0] and back.keep_tokens.tolist() == [60, NO_KEEP] and back.start_s == 12.5


@pytest.mark.parametrize("change,words", [
    ({"v": 1}, "v = 1"),
    ({"id": ""}, "id = ''"),
    ({"rounds": []}, "non-empty"),
    ({"extra": 1}, "unknown keys ['extra']"),
    ({"start_s": -1}, "start_s = -1 s"),
    ({"start_s": float("nan")}, "not a finite number"),
    ({"rounds": [{"append_tokens": 0, "gen_tokens": 1}]}, "append_tokens = 0 tokens"),
    ({"rounds": [{"append_tokens": 1.5, "gen_tokens": 1}]}, "not a whole number"),
    ({"rounds": [{"append_tokens": 5, "gen_tokens": 1, "tool_s": -2}]}, "round 1 tool_s = -2 s"),
    ({"rounds": [{"append_tokens": 5, "gen_tokens": 1, "keep_tokens": 7}]}, "keep_tokens = 7 tokens is not allowed"),
    ({"rounds": [{"append_tokens": 5}]}, "lacks gen_tokens"),
    ({"shared_prefix": {"id": "x"}}, "lacks tokens"),
    ({"fork": {"parent": "p", "round": 1, "tokens": 5}, "start_s": 1.0}, "takes no start_s"),
    ({"fork": {"parent": "s", "round": 1, "tokens": 5}}, "cannot fork from itself"),
    ({"fork": {"parent": "p", "round": 0, "tokens": 5}}, "fork round = 0 rounds"),
])
def test_a_bad_session_names_the_field_value_and_rule(change, words):
    with pytest.raises(ValueError) as info:
        parse_session(_line(**change))
    assert words in str(info.value)


def test_the_registry_refuses_a_duplicate_id_a_missing_parent_and_a_fork_that_reads_more_than_its_parent_held():
    reg = Registry()
    parent = parse_session(_line(id="p"))
    reg.add(parent)
    with pytest.raises(ValueError, match="appears twice"):
        reg.add(parse_session(_line(id="p")))
    with pytest.raises(ValueError, match="does not exist on an earlier line"):
        reg.add(parse_session(_line(id="c", fork={"parent": "q", "round": 1, "tokens": 5})))
    held = int(parent.held_after()[1])  # 100 + 10 + 50 + 5 = 165 after round 2
    with pytest.raises(ValueError, match=f"holds {held} tokens after round 2"):
        reg.add(parse_session(_line(id="c", fork={"parent": "p", "round": 2, "tokens": held + 1})))
    with pytest.raises(ValueError, match="has 3 rounds"):
        reg.add(parse_session(_line(id="c", fork={"parent": "p", "round": 4, "tokens": 1})))
    child = parse_session(_line(id="c", fork={"parent": "p", "round": 2, "tokens": held, "delay_s": 0.5}))
    reg.add(child)
    assert child.fork == Fork("p", 2, held, 0.5) and child.context_tokens()[0] == held


def test_a_round_keeps_at_most_what_it_held():
    with pytest.raises(ValueError, match="must be <= the 110 tokens"):
        session("a", [100, 5], [10, 1], keep=[111, NO_KEEP])
    assert session("a", [100, 5], [10, 1], keep=[0, NO_KEEP]).context_tokens().tolist() == [0, 0]
    assert np.array_equal(session("a", [1], [1]).keep_tokens, [NO_KEEP])
