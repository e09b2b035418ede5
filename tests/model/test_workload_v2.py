"""Schema v2 in the agents' arrays: contexts with prefixes and compaction, forks resampled with their parents, traces as
workloads on every command, tool time on synthetic workloads, and the model's context window."""

from __future__ import annotations

import numpy as np
import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.model.trace import native
from dualpath_plan.model.trace.schema import NO_KEEP, Fork, SharedPrefix, session
from dualpath_plan.model.workload import Trajectories, TurnSet, dataset, load_jsonl, served_turns, take, trace_name, with_tool_time


def _write(tmp_path, sessions, name="t.jsonl"):
    path = tmp_path / name
    native.write(sessions, path)
    return path


def _family(tmp_path):
    parent = session("p", [1000, 200, 100], [50, 40, 30], tool_s=[5.0, 15.0, 0.0], keep=[NO_KEEP, 300, NO_KEEP], start_s=10.0,
                     shared_prefix=SharedPrefix("sys", 500))
    child = session("c", [100, 60], [20, 10], fork=Fork("p", 2, 800, 0.5))
    grandchild = session("g", [10], [5], fork=Fork("c", 1, 900))
    loner = session("l", [400], [40])
    return _write(tmp_path, [parent, child, grandchild, loner])


def test_a_v2_file_becomes_the_agents_arrays_with_the_sessions_contexts(tmp_path):
    traj = load_jsonl(_family(tmp_path))
    assert traj.n_agents == 4 and traj.n_forks == 2 and not traj.is_v1
    assert traj.context_tokens.tolist() == [500, 1550, 300, 800, 920, 900, 0]
    assert traj.fork_round.tolist() == [-1, 1, 3, -1]  # the parent's round 2 is global round 1; the child's round 1 is round 3
    assert traj.fork_delay_s.tolist() == [0.0, 0.5, 0.0, 0.0] and traj.start_s[0] == 10.0 and np.isnan(traj.start_s[3])
    assert traj.line_no.tolist() == [1, 2, 3, 4]


def test_a_v2_file_with_none_of_v2_reads_exactly_as_the_v1_file(tmp_path):
    v1 = tmp_path / "v1.jsonl"
    v1.write_text("[[100, 10], [50, 5]]\n[[70, 7]]\n")
    v2 = _write(tmp_path, [session("a", [100, 50], [10, 5]), session("b", [70], [7])], "v2.jsonl")
    a, b = load_jsonl(v1), load_jsonl(v2)
    assert a.is_v1 and b.is_v1
    for name in ("append_tokens", "gen_tokens", "offsets", "context_tokens", "tool_s", "keep_tokens", "fork_round"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_resampling_draws_whole_families_and_points_each_fork_at_its_own_parents_copy(tmp_path):
    traj = load_jsonl(_family(tmp_path))
    sample = take(traj, 7, np.random.default_rng(3))
    roots = np.flatnonzero(sample.fork_round < 0)
    assert roots.size == 7
    for a in np.flatnonzero(sample.fork_round >= 0):
        parent = sample.agent_of_round[sample.fork_round[a]]
        assert parent < a and sample.prefix_tokens[a] <= sample.held_tokens[sample.fork_round[a]]
    # every copy of the family keeps its shape: parent (3 rounds), child (2), grandchild (1)
    families = [sample.rounds_per_agent[r:r + 3].tolist() for r in roots if sample.rounds_per_agent[r] == 3]
    assert families and all(f == [3, 2, 1] for f in families)
    subs = int(np.count_nonzero(sample.fork_round >= 0))  # the source names roots and agents apart
    assert sample.source.startswith(f"7 root sessions drawn from ") and sample.source.endswith(f", {7 + subs} agents with their {subs} sub-agents")


def test_rescaling_stretches_start_times_and_scales_tool_time(tmp_path):
    traj = load_jsonl(_family(tmp_path))
    r = traj.rescaled(time_scale=0.5, tool_scale=0.0)
    assert r.start_s[0] == 5.0 and not r.tool_s.any() and not r.fork_delay_s.any()
    assert traj.rescaled() is traj


def test_tool_time_on_a_synthetic_workload_leaves_its_tokens_and_has_the_mean_asked_for():
    sc = build_scenario("hopper", workload="agentic-32k")
    base = dataset(sc.workload)
    with_tool = with_tool_time(base, 30.0)
    assert np.array_equal(with_tool.append_tokens, base.append_tokens) and with_tool.tool_s.mean() == pytest.approx(30.0, rel=0.05)
    sc2 = build_scenario("hopper", workload="agentic-32k", sets=("tool_time_s=30",))
    assert dataset(sc2.workload).tool_s.mean() == pytest.approx(with_tool.tool_s.mean())
    assert not dataset(sc.workload).tool_s.any()  # the paper's method by default


def test_a_trace_is_a_workload_whose_turns_are_the_traces_own(tmp_path):
    path = _family(tmp_path)
    sc = build_scenario("hopper", workload=trace_name(path))
    turns, own = served_turns(sc.workload), TurnSet.of(load_jsonl(path))
    assert np.array_equal(turns.hit, own.hit) and np.array_equal(turns.miss, own.miss)
    assert sc.workload.turns == pytest.approx(7 / 4) and sc.workload.tool_s == pytest.approx(20 / 3)  # between rounds: 5, 15, 0
    assert sc.workload.name == "trace t.jsonl"


def test_trace_names_refuse_unknown_formats_and_bad_scales(tmp_path):
    with pytest.raises(PlanError, match="--format 'csv' is not allowed"):
        trace_name(tmp_path / "x", "csv")
    with pytest.raises(PlanError, match="--time-scale = -1 is not allowed"):
        trace_name(tmp_path / "x", None, -1)


def test_a_session_longer_than_the_models_window_is_refused_with_its_line(tmp_path):
    path = _write(tmp_path, [session("a", [100], [1]), session("b", [100_000, 40_000], [100, 100])])
    with pytest.raises(PlanError) as info:
        build_scenario("hopper", model="ds-v3.2", workload=trace_name(path))
    assert f"{path}: line 2: round 2 holds 140,200 tokens, more than the 131,072-token context window of model ds-v3.2" in str(info.value)
    with pytest.raises(PlanError, match="max_len_tokens = 65,536 tokens is more than the 50,000-token context window"):
        build_scenario("hopper", workload="agentic-64k", sets=("context_window_tokens=50000",))


def test_take_copies_each_drawn_agents_tool_times_and_compactions_with_its_rounds():
    """The v2 arrays per round (tool time, kept tokens) come along with their rounds, slice by slice, for every agent
    drawn (roots of a set with compaction and tool time, no forks)."""
    rounds = 4
    append, gen = np.arange(1, 13) * 10, np.arange(1, 13)
    tool, keep = np.arange(12) * 0.5, np.full(12, NO_KEEP)
    keep[5] = 15  # agent 1 compacts after its second round
    src = Trajectories(append, gen, np.arange(0, 13, rounds), "v2 source", tool_s=tool, keep_tokens=keep)
    sample = take(src, 9, np.random.default_rng(4))
    for a in range(sample.n_agents):
        rows = slice(sample.offsets[a], sample.offsets[a + 1])
        k = int(sample.append_tokens[rows][0] // 10 - 1) // rounds  # the source agent, from its first round's tokens
        source = slice(k * rounds, (k + 1) * rounds)
        assert sample.tool_s[rows].tolist() == tool[source].tolist()
        assert sample.keep_tokens[rows].tolist() == keep[source].tolist()
