"""``trace stats``: hand counts on a small v2 trace, percentiles within their stated precision, and an import read
back giving the statistics of the raw input in every format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dualpath_plan.model.trace import native
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.ops import import_trace, sessions_of, trace_stats
from dualpath_plan.model.trace.schema import NO_KEEP, Fork, SharedPrefix, session
from dualpath_plan.model.trace.stats import BINS_PER_DECADE, collect

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
RAW = {d.name: sorted(p.name for p in d.iterdir() if p.name != "SOURCE.md") for d in FIXTURES.iterdir() if d.is_dir()}


def _small():
    parent = session("p", [1000, 200, 100], [50, 40, 30], tool_s=[5.0, 15.0, 99.0], keep=[NO_KEEP, 300, NO_KEEP],
                     start_s=10.0, shared_prefix=SharedPrefix("sys", 500))
    child = session("c", [100], [20], fork=Fork("p", 1, 800))
    return [parent, child]


def test_hand_counts_of_a_parent_with_a_shared_prefix_a_compaction_and_a_fork():
    d = collect(_small()).as_dict(kv_bytes_per_token=100.0)
    # contexts: parent 500, 1550, 300; child 800. prompts: 1500, 1750, 400; 900
    assert (d["sessions"], d["rounds"], d["forks"], d["compactions"], d["shared_prefix_sessions"]) == (2, 4, 1, 1, 1)
    assert d["mean_context_tokens"] == pytest.approx((500 + 1550 + 300 + 800) / 4)
    assert d["hit_share"] == pytest.approx(3150 / 4550)
    assert d["hit_share_across_sessions"] == pytest.approx(1300 / 4550)  # the shared prefix and the fork's prefix
    assert d["hit_share_within_sessions"] == pytest.approx(1850 / 4550)
    assert d["mean_tool_s"] == pytest.approx(10.0)  # between rounds only: 5 and 15 (the last round's 99 is no gap)
    assert d["kv_bytes_per_turn"] == pytest.approx(100.0 * 3150 / 4
                                                   )
    assert d["table2"]["total_tokens"] == pytest.approx((430 + 920) / 2)  # what each holds at its end
    assert d["max_held_tokens"] == 1790


def test_hit_tokens_never_exceed_prompt_tokens():
    d = collect(_small()).as_dict()
    assert 0 <= d["hit_share_across_sessions"] <= d["hit_share"] <= 1


def test_percentiles_are_within_the_bins_precision():
    rng = np.random.default_rng(0)
    append = rng.integers(1, 200_000, 5000)
    d = collect([session(f"s{i}", append[i * 50:(i + 1) * 50], np.ones(50, dtype=np.int64)) for i in range(100)]).as_dict()
    width = 10 ** (1 / BINS_PER_DECADE)
    for q in (50, 90, 99):
        exact = np.percentile(append, q, method="inverted_cdf")
        assert exact / width <= d["distributions"]["append_tokens"][f"p{q}"] <= exact * width


@pytest.mark.parametrize("fmt", sorted(RAW))
def test_import_then_stats_equals_stats_on_the_raw_input(fmt, tmp_path):
    raw = [FIXTURES / fmt / name for name in RAW[fmt]]
    out = tmp_path / "imported.jsonl"
    import_trace(fmt, raw, out)
    direct = trace_stats(raw, fmt).stats.as_dict()
    back = trace_stats([out]).stats.as_dict()
    assert back == direct
    assert [s.line() for s in sessions_of(raw, fmt, Report(fmt))] == [s.line() for s, _ in native.read(out)]


def test_a_keep_on_a_sessions_last_round_is_no_compaction():
    s = session("a", [100, 50], [10, 5], keep=[40, 30])
    assert collect([s]).compactions == 1
