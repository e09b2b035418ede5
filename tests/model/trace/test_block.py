"""Blocks of sessions: the context rule over sessions end to end, and the bulk checks that leave a bad block to the
line-at-a-time reader."""

from __future__ import annotations

import numpy as np

from dualpath_plan.model.trace.block import checked_block, context_of, of_sessions
from dualpath_plan.model.trace.schema import NO_KEEP, Fork, SharedPrefix, session


def test_the_context_restarts_at_each_session_and_after_each_compaction():
    # session 1: prefix 10, rounds (5+1), (3+1) kept to 4, (2+2); session 2: no prefix, rounds (7+1), (1+1)
    got = context_of(np.array([3, 2]), np.array([10, 0]), np.array([5, 3, 2, 7, 1]), np.array([1, 1, 2, 1, 1]),
                     np.array([NO_KEEP, 4, 3, NO_KEEP, NO_KEEP]))  # session 1's last keep (3) does nothing
    assert got.tolist() == [10, 16, 4, 0, 8]


def test_of_sessions_lays_the_columns_end_to_end():
    a = session("a", [5, 3], [1, 1], tool_s=[2.0, 0.0], shared_prefix=SharedPrefix("sys", 10))
    b = session("b", [7], [1])
    blk = of_sessions([a, b], [1, 3])
    assert blk.starts.tolist() == [0, 2, 3] and blk.lengths.tolist() == [2, 1] and blk.lines == (1, 3)
    assert blk.append.tolist() == [5, 3, 7] and blk.context.tolist() == [10, 16, 0] and blk.tool_s.tolist() == [2.0, 0.0, 0.0]
    assert of_sessions([]).starts.tolist() == [0] and of_sessions([]).append.dtype == np.int64


def _columns(append, gen, tool, keep):
    return (np.array(append), np.array(gen), np.array(tool, dtype=float), np.array(keep), np.array([len(append)]))


def test_a_checked_block_gives_each_session_its_context():
    fork = Fork("p", 1, 6)
    blk = checked_block([("c", None, None, fork)], [4], _columns([2, 3], [1, 1], [1.0, 0.0], [NO_KEEP, NO_KEEP]))
    (s,) = blk.sessions
    assert s.fork == fork and s.context_tokens().tolist() == [6, 9] and s.held_after().tolist() == [9, 13]
    assert s.context_tokens().tolist() == session("c", [2, 3], [1, 1], fork=fork).context_tokens().tolist()


def test_a_block_that_breaks_a_rule_is_left_to_the_line_reader():
    head = [("a", None, None, None)]
    assert checked_block(head, [1], _columns([2], [1], [0.0], [4])) is None  # keeps more than it holds
    assert checked_block(head, [1], _columns([0], [1], [0.0], [NO_KEEP])) is None  # no appended token
    assert checked_block(head, [1], _columns([2], [1], [np.inf], [NO_KEEP])) is None
    assert checked_block(head, [1], _columns([2**31], [1], [0.0], [NO_KEEP])) is None
