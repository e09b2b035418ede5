"""Property tests of reading trace files a block at a time: one invariant each, inputs built by construction."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.model.trace import native
from dualpath_plan.model.trace.block import context_of
from dualpath_plan.model.trace.columns import read_columns
from dualpath_plan.model.trace.schema import (
    NO_KEEP,
    SharedPrefix,
    parse_session,
    session,
)
from dualpath_plan.model.trace.stats import _SECOND_EDGES, _TOKEN_EDGES, Histogram

_KEY = ',"rounds":['
_times = st.one_of(st.just(0.0), st.floats(0.0, 1e6, allow_nan=False), st.integers(0, 10**6).map(float),
                   st.integers(0, 10**6).map(lambda n: n / 10))


@st.composite
def sessions(draw, sid: str = "s"):
    """A valid session: 1-8 rounds of 1-100,000 appended and 1-5,000 generated tokens, tool times of every form a
    float's repr takes, a compaction to at most what the session holds (drawn as a share of it), and maybe a prefix."""
    n = draw(st.integers(1, 8))
    append = draw(st.lists(st.integers(1, 100_000), min_size=n, max_size=n))
    gen = draw(st.lists(st.integers(1, 5_000), min_size=n, max_size=n))
    tool = draw(st.lists(_times, min_size=n, max_size=n))
    prefix = draw(st.sampled_from([0, 0, 14_000]))
    share = draw(st.lists(st.one_of(st.none(), st.floats(0.0, 1.0)), min_size=n, max_size=n))
    keep, held = [], prefix
    for a, g, q in zip(append, gen, share):
        held += a + g
        keep.append(NO_KEEP if q is None else int(q * held))
        held = held if q is None else keep[-1]
    shared = SharedPrefix("sys", prefix) if prefix else None
    return session(sid, append, gen, tool, keep, shared_prefix=shared)


def _list_of(line: str) -> bytes:
    return line[line.rfind(_KEY) + len(_KEY):-2].encode()


@given(st.lists(sessions(), min_size=1, max_size=6))
def test_a_block_reads_what_the_json_parser_reads(drawn):
    lines = [s.line().replace('"id":"s"', f'"id":"s{k}"') for k, s in enumerate(drawn)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        path.write_text("\n".join(lines) + "\n")
        got = [s for s, _ in native.read(path)]
    want = [parse_session(json.loads(line)) for line in lines]
    for g, w in zip(got, want, strict=True):
        assert g.id == w.id and g.prefix_tokens == w.prefix_tokens
        for name in ("append_tokens", "gen_tokens", "tool_s", "keep_tokens"):
            assert getattr(g, name).tobytes() == getattr(w, name).tobytes()
        assert g.context_tokens().tolist() == w.context_tokens().tolist()


@given(sessions(), st.integers(0, 10**6), st.sampled_from(list(b'0123456789.eE+-,:{}[]"| xAGTKaknpst_')))
def test_a_changed_byte_is_read_as_the_json_parser_reads_it_or_left_to_it(s, where, byte):
    text = bytearray(_list_of(s.line()))
    text[where % len(text)] = byte
    fast = read_columns([bytes(text)])
    if fast is None:
        return  # left to the JSON parser, which names what is wrong
    rounds = json.loads("[" + text.decode() + "]")
    assert [r["append_tokens"] for r in rounds] == fast[0].tolist() and [r["gen_tokens"] for r in rounds] == fast[1].tolist()
    assert [float(r.get("tool_s", 0.0)) for r in rounds] == fast[2].tolist()
    assert [r.get("keep_tokens", NO_KEEP) for r in rounds] == fast[3].tolist()
    assert all(set(r) <= {"append_tokens", "gen_tokens", "tool_s", "keep_tokens"} for r in rounds)


@given(st.floats(0.0, 1e300, allow_nan=False, allow_infinity=False))
def test_a_float_reads_back_to_the_same_bits(x):
    got = read_columns([f'{{"append_tokens":1,"gen_tokens":1,"tool_s":{x!r}}}'.encode()])
    assert got is not None and got[2][0].tobytes() == np.float64(x).tobytes()


@given(st.lists(sessions(), min_size=1, max_size=6))
def test_the_context_of_sessions_end_to_end_is_each_ones(drawn):
    lengths = np.array([s.n_rounds for s in drawn])
    got = context_of(lengths, np.array([s.prefix_tokens for s in drawn]), *(np.concatenate([getattr(s, k) for s in drawn])
                     for k in ("append_tokens", "gen_tokens", "keep_tokens")))
    assert got.tolist() == np.concatenate([s.context_tokens() for s in drawn]).tolist()


@given(st.lists(st.floats(0.0, 1e12, allow_nan=False), min_size=1, max_size=50), st.sampled_from([_TOKEN_EDGES, _SECOND_EDGES]))
def test_a_histograms_bin_is_the_sorted_search(values, edges):
    v = np.clip(np.array(values), 0.0, edges[-1] * (1 - 1e-12))
    assert Histogram(edges)._bin(v).tolist() == (np.searchsorted(edges, v, side="right") - 1).tolist()
