"""Reading canonical rounds an array at a time: the same numbers as the JSON parser, and None for anything else."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dualpath_plan.model.trace.columns import read_columns
from dualpath_plan.model.trace.schema import NO_KEEP, session

_KEY = ',"rounds":['


def _lists(*sessions) -> list[bytes]:
    """Each session's rounds list as ``Session.line`` writes it, between its brackets."""
    out = []
    for s in sessions:
        line = s.line()
        out.append(line[line.rfind(_KEY) + len(_KEY):-2].encode())
    return out


def test_columns_of_two_lines_with_tool_time_and_compaction():
    a = session("a", [100, 20, 7], [10, 5, 1], tool_s=[4.0, 0.0, 12.5], keep=[NO_KEEP, 60, NO_KEEP])
    b = session("b", [3], [2], tool_s=[1e-05])
    append, gen, tool, keep, lengths = read_columns(_lists(a, b))
    assert append.tolist() == [100, 20, 7, 3] and gen.tolist() == [10, 5, 1, 2]
    assert tool.tolist() == [4.0, 0.0, 12.5, 1e-05] and keep.tolist() == [NO_KEEP, 60, NO_KEEP, NO_KEEP]
    assert lengths.tolist() == [3, 1]


@pytest.mark.parametrize("text", [
    '{"gen_tokens":1,"append_tokens":1}',  # keys out of order
    '{"append_tokens":1, "gen_tokens":1}',  # a space
    '{"append_tokens":01,"gen_tokens":1}',  # a leading zero
    '{"append_tokens":1.0,"gen_tokens":1}',  # a whole number written as a fraction (the JSON parser takes it)
    '{"append_tokens":1,"gen_tokens":1,"tool_s":.5}',
    '{"append_tokens":1,"gen_tokens":1,"tool_s":5.}',
    '{"append_tokens":1,"gen_tokens":1,"tool_s":+5}',
    '{"append_tokens":1,"gen_tokens":1,"tool_s":1e}',
    '{"append_tokens":1,"gen_tokens":1,"tool_s":"5"}',
    '{"append_tokens":1,"gen_tokens":1,"tool_s":NaN}',
    '{"append_tokens":1,"gen_tokens":1,"gen_tokens":1}',  # a key twice
    '{"append_tokens":1,"gen_tokens":1,"colour":1}',  # an unknown key
    '{"append_tokens":1,"gen_tokens":1}{"append_tokens":1,"gen_tokens":1}',  # no comma between rounds
    '{"append_tokens":1,"gen_tokens":1},',  # a trailing comma
    ' {"append_tokens":1,"gen_tokens":1}',  # a leading space
    '{"append_tokens":12345678901,"gen_tokens":1}',  # more digits than the fast path reads
    '',
])
def test_anything_but_the_canonical_form_is_left_to_the_json_parser(text):
    assert read_columns([text.encode()]) is None


def test_a_list_holding_the_line_separator_is_refused():
    good = '{"append_tokens":1,"gen_tokens":1}'
    assert read_columns([f"{good}|{good}".encode()]) is None


@pytest.mark.parametrize("text", ["0", "0.5", "12.0", "1e-05", "1.5e+20", "3E2", "0e0", "123456789012345678.5",
                                  "0.30000000000000004", "2.2250738585072014e-308", "1" * 30])
def test_every_json_number_form_gives_pythons_float(text):
    got = read_columns([f'{{"append_tokens":1,"gen_tokens":1,"tool_s":{text}}}'.encode()])
    assert got is not None and got[2][0] == float(text) and got[2][0].tobytes() == np.float64(float(text)).tobytes()


def test_the_round_trip_through_a_line_of_the_schema():
    s = session("x", [5, 6], [7, 8], tool_s=[0.1, 2.5])
    append, gen, tool, keep, _ = read_columns(_lists(s))
    assert json.loads(s.line())["rounds"] == [{"append_tokens": 5, "gen_tokens": 7, "tool_s": 0.1},
                                              {"append_tokens": 6, "gen_tokens": 8, "tool_s": 2.5}]
    assert (append.tolist(), gen.tolist(), tool.tolist()) == ([5, 6], [7, 8], [0.1, 2.5]) and keep.tolist() == [NO_KEEP] * 2
