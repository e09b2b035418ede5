"""Tests of the workload module: synthetic sets against Table 2, the replay rule, the cap, JSONL traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.workload import (
    Trajectories,
    TurnSet,
    load_jsonl,
    synthesize,
    take,
    write_jsonl,
)

WORKLOADS = ("agentic-32k", "agentic-48k", "agentic-64k")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trace-example.jsonl"
N_AGENTS = 500  # a Table 2 data set
# Turns, the per-trajectory append and gen means and Total are balanced to the targets (table2.BALANCE_TOL,
# 1e-5, reached within the swap budget to <= 1.2e-4 over 12 seeds of each workload): 2e-4.
REL_TOL_BALANCED = 2e-4
# Context is balanced in expectation over how each trajectory's tokens split into rounds; the split itself moves it
# by a standard deviation of 0.16-0.25 % at 500 trajectories (12 seeds each, largest 0.52 %): four of them, 1 %.
REL_TOL_CONTEXT = 0.01


def _workload(name):
    return catalog().get("workload", name)


def _relative(achieved: float, target: float) -> float:
    return abs(achieved / target - 1.0)


@pytest.fixture(scope="module")
def synthetic():
    return {name: synthesize(_workload(name), N_AGENTS, np.random.default_rng(0)) for name in WORKLOADS}


@pytest.mark.parametrize("name", WORKLOADS)
def test_all_six_columns_of_table_2_hold_under_the_reading(synthetic, name):
    workload, traj = _workload(name), synthetic[name]
    stats = traj.summary()
    assert _relative(stats.mean_turns, workload.turns) < REL_TOL_BALANCED
    assert _relative(stats.mean_turn_append_tokens, workload.append_tokens) < REL_TOL_BALANCED
    assert _relative(stats.mean_turn_gen_tokens, workload.gen_tokens) < REL_TOL_BALANCED
    assert _relative(stats.mean_total_tokens, workload.total_tokens) < REL_TOL_BALANCED
    assert _relative(stats.mean_context_tokens, workload.context_tokens) < REL_TOL_CONTEXT
    assert stats.max_total_tokens <= workload.max_len_tokens


@pytest.mark.parametrize("name", WORKLOADS)
def test_the_columns_read_as_pooled_means_would_contradict_the_cap_and_the_data_set_shows_why(synthetic, name):
    """Turns x (Append + Gen) exceeds MaxLen; long trajectories have short rounds, so pooled rounds are smaller."""
    workload, stats = _workload(name), synthetic[name].summary()
    assert workload.turns * (workload.append_tokens + workload.gen_tokens) > workload.max_len_tokens
    assert stats.mean_append_tokens < workload.append_tokens and stats.mean_gen_tokens < workload.gen_tokens
    rounds, size = synthetic[name].rounds_per_agent, synthetic[name].total_tokens / synthetic[name].rounds_per_agent
    assert np.corrcoef(np.log(rounds), np.log(size))[0, 1] < 0


@pytest.mark.parametrize("name", WORKLOADS)
def test_first_round_is_the_initial_prompt_with_one_generated_token(synthetic, name):
    traj = synthetic[name]
    first = traj.offsets[:-1]
    assert np.all(traj.append_tokens[first] >= 1)
    assert np.all(traj.gen_tokens[first] == 1)
    assert np.all(traj.context_tokens[first] == 0)


@pytest.mark.parametrize(("change", "named"), [
    (dict(turns=2.0), "turns = 2 rounds"), (dict(gen_tokens=1.0), "gen_tokens = 1 tokens"),
    (dict(append_tokens=0.5), "append_tokens = 0.5 tokens"), (dict(total_tokens=70_000.0), "total_tokens = 70000 tokens"),
    (dict(trajectories=1), "trajectories = 1 cannot meet"),
])
@pytest.mark.slow
def test_targets_no_set_of_trajectories_can_meet_are_refused_naming_the_column(change, named):
    from dataclasses import replace

    workload = replace(_workload("agentic-64k"), **change)
    with pytest.raises(PlanError) as info:
        synthesize(workload, workload.trajectories, np.random.default_rng(0), strict=True)
    assert info.value.exit_code == 2 and named in str(info.value)


@pytest.mark.slow
def test_targets_no_trajectory_under_the_cap_can_meet_are_refused():
    from dataclasses import replace

    workload = replace(_workload("agentic-32k"), turns=30_000.0)  # 30k rounds of >= 2 tokens cannot fit in 32K
    with pytest.raises(PlanError) as info:
        synthesize(workload, 10, np.random.default_rng(0))
    assert info.value.exit_code == 2 and "max_len_tokens = 32768" in str(info.value) and "turns = 30000" in str(info.value)


@pytest.mark.slow
def test_same_seed_gives_identical_arrays():
    workload = _workload("agentic-48k")
    one = synthesize(workload, 300, np.random.default_rng(7))
    two = synthesize(workload, 300, np.random.default_rng(7))
    other = synthesize(workload, 300, np.random.default_rng(8))
    for name in ("append_tokens", "gen_tokens", "offsets"):
        assert np.array_equal(getattr(one, name), getattr(two, name))
    assert not np.array_equal(one.append_tokens[: other.n_rounds], other.append_tokens[: one.n_rounds])


@pytest.mark.slow
def test_context_is_the_sum_of_earlier_rounds_of_the_same_agent():
    traj = synthesize(_workload("agentic-32k"), 25, np.random.default_rng(3))
    for agent in range(traj.n_agents):
        lo, hi = traj.offsets[agent], traj.offsets[agent + 1]
        running = 0
        for index in range(lo, hi):
            assert traj.context_tokens[index] == running
            assert traj.agent_of_round[index] == agent
            running += int(traj.append_tokens[index] + traj.gen_tokens[index])
        assert traj.total_tokens[agent] == running


def test_hit_and_miss_tokens_follow_the_no_eviction_rule():
    traj = load_jsonl(EXAMPLE)
    assert np.array_equal(traj.hit_tokens, traj.context_tokens)
    assert np.array_equal(traj.miss_tokens, traj.append_tokens)
    assert traj.context_tokens.tolist()[:4] == [0, 5121, 5573, 6326]


def test_arrays_are_read_only():
    traj = load_jsonl(EXAMPLE)
    with pytest.raises(ValueError):
        traj.append_tokens[0] = 1


def test_bad_offsets_are_refused():
    with pytest.raises(ValueError, match="offsets"):
        Trajectories(np.array([1, 2]), np.array([1, 1]), np.array([0, 0, 2]), "hand-made")


def test_rounds_without_tokens_are_refused():
    with pytest.raises(ValueError, match=">= 1 token"):
        Trajectories(np.array([1, 0]), np.array([1, 1]), np.array([0, 2]), "hand-made")


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_agent_counts_are_usage_errors(bad):
    with pytest.raises(PlanError) as info:
        synthesize(_workload("agentic-64k"), bad, np.random.default_rng(0))
    assert info.value.exit_code == 2 and "n_agents" in str(info.value)


@pytest.mark.slow
def test_jsonl_round_trip(tmp_path):
    traj = synthesize(_workload("agentic-32k"), 40, np.random.default_rng(1))
    path = tmp_path / "trace.jsonl"
    write_jsonl(traj, path)
    back = load_jsonl(path)
    for name in ("append_tokens", "gen_tokens", "offsets"):
        assert np.array_equal(getattr(traj, name), getattr(back, name))
    assert back.source == str(path) and back.skipped == ()
    assert [p.name for p in tmp_path.iterdir()] == ["trace.jsonl"]


def test_example_trace_loads_with_both_round_forms():
    traj = load_jsonl(EXAMPLE)
    assert traj.n_agents == 4 and traj.rounds_per_agent.tolist() == [4, 6, 2, 5]


BAD_LINES = {
    "not json": "not JSON",
    '{"append_tokens": 3, "gen_tokens": 1}': "JSON list",
    "[]": "empty trajectory",
    "[[3, -1]]": "gen_tokens = -1",
    "[[3.5, 1]]": "append_tokens = 3.5",
    '[{"append": 3, "gen_tokens": 1}]': "exactly append_tokens, gen_tokens",
    "[[1, 2, 3]]": "is not",
    '[["3", 1]]': "not a whole number",
    "[[0, 1]]": "must be >= 1",
}


@pytest.mark.parametrize("line, reason", BAD_LINES.items())
def test_a_bad_line_is_reported_with_file_and_line_number(tmp_path, line, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text("[[10, 2], [5, 1]]\n\n" + line + "\n[[7, 7]]\n", encoding="utf-8")
    with pytest.raises(PlanError) as info:
        load_jsonl(path)
    assert info.value.exit_code == 2
    assert f"{path}: line 3:" in str(info.value) and reason in str(info.value)


def test_skip_bad_keeps_every_good_line_and_lists_the_bad(tmp_path):
    path = tmp_path / "mixed.jsonl"
    good = [[[10, 2], [5, 1]], [[7, 7]], [{"append_tokens": 4, "gen_tokens": 9}]]
    lines = [json.dumps(good[0]), "garbage", json.dumps(good[1]), "[]", json.dumps(good[2])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    traj = load_jsonl(path, skip_bad=True)
    assert traj.n_agents == 3 and traj.total_tokens.tolist() == [18, 14, 13]
    assert [number for number, _ in traj.skipped] == [2, 4]
    assert "not JSON" in traj.skipped[0][1] and "empty" in traj.skipped[1][1]


@pytest.mark.parametrize("content", ["", "\n\n", "oops\n"])
def test_a_file_without_a_good_trajectory_is_an_error(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PlanError) as info:
        load_jsonl(path, skip_bad=True)
    assert "no valid trajectory" in str(info.value) and info.value.exit_code == 2


def test_missing_and_binary_files_are_usage_errors(tmp_path):
    with pytest.raises(PlanError, match="not found"):
        load_jsonl(tmp_path / "absent.jsonl")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe[[1, 1]]")
    with pytest.raises(PlanError, match="UTF-8"):
        load_jsonl(binary)


def test_take_resamples_whole_trajectories():
    source = load_jsonl(EXAMPLE)
    sample = take(source, 50, np.random.default_rng(4))
    assert sample.n_agents == 50
    lookup = {tuple(zip(source.append_tokens[lo:hi], source.gen_tokens[lo:hi])) for lo, hi in zip(source.offsets[:-1], source.offsets[1:])}
    for lo, hi in zip(sample.offsets[:-1], sample.offsets[1:]):
        assert tuple(zip(sample.append_tokens[lo:hi], sample.gen_tokens[lo:hi])) in lookup


def test_take_can_prepend_the_synthetic_round():
    source = load_jsonl(EXAMPLE)
    plain = take(source, 10, np.random.default_rng(5))
    prefixed = take(source, 10, np.random.default_rng(5), prefix_tokens=64)
    assert np.array_equal(prefixed.rounds_per_agent, plain.rounds_per_agent + 1)
    assert np.all(prefixed.append_tokens[prefixed.offsets[:-1]] == 64)
    assert np.all(prefixed.gen_tokens[prefixed.offsets[:-1]] == 1)
    assert np.array_equal(prefixed.total_tokens, plain.total_tokens + 65)


# --- the replay data set (paper A.3) ------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["agentic-32k", "agentic-48k", "agentic-64k"])
def test_the_data_set_holds_table_2s_trajectories_and_matches_its_per_round_columns(name):
    from dualpath_plan.model.workload import dataset

    w = catalog().get("workload", name)
    data = dataset(w)
    s = data.summary()
    assert data.n_agents == w.trajectories == 500
    assert s.mean_turns == pytest.approx(w.turns, rel=REL_TOL_BALANCED)
    assert s.mean_turn_append_tokens == pytest.approx(w.append_tokens, rel=REL_TOL_BALANCED)
    assert s.mean_turn_gen_tokens == pytest.approx(w.gen_tokens, rel=REL_TOL_BALANCED)
    assert s.mean_total_tokens == pytest.approx(w.total_tokens, rel=REL_TOL_BALANCED)
    assert s.mean_context_tokens == pytest.approx(w.context_tokens, rel=REL_TOL_CONTEXT)
    assert s.max_total_tokens <= w.max_len_tokens
    assert dataset(w) is data  # drawn once


@pytest.mark.slow
def test_agents_are_copies_of_the_data_sets_trajectories_so_more_agents_add_no_longer_tail():
    from dualpath_plan.model.workload import dataset, replay

    w = catalog().get("workload", "agentic-64k")
    longest = int(dataset(w).rounds_per_agent.max())
    for n in (64, 2048, 49152):
        agents = replay(w, n, np.random.default_rng(1))
        assert int(agents.rounds_per_agent.max()) <= longest and agents.n_agents == n
    few, many = replay(w, 2048, np.random.default_rng(1)), replay(w, 49152, np.random.default_rng(1))
    assert many.rounds_per_agent.mean() == pytest.approx(few.rounds_per_agent.mean(), rel=0.05)


def test_one_definition_of_turns_per_agent_the_runs_mean():
    from dualpath_plan.model.workload import agent_turns, dataset, trajectories

    w = catalog().get("workload", "agentic-64k")
    assert agent_turns(w) == pytest.approx(dataset(w).n_rounds / 500)
    run = trajectories(w, 8192, None, 0)
    assert run.n_rounds / run.n_agents == pytest.approx(agent_turns(w), rel=0.03)


def test_a_hit_rate_above_the_data_sets_own_share_is_refused_with_a_limit_that_is_itself_allowed():
    import re
    from dataclasses import replace

    from dualpath_plan.model.workload import served_turns

    w = _workload("agentic-64k")
    with pytest.raises(PlanError) as info:
        served_turns(replace(w, hit_rate=0.9999))
    assert info.value.exit_code == 2 and "hit_rate_frac = 0.9999" in str(info.value)
    most = float(re.search(r"must be <= ([\d.]+)", str(info.value)).group(1))
    turns = served_turns(replace(w, hit_rate=most))  # the stated limit is accepted
    assert float(turns.hit.sum() / (turns.hit + turns.miss).sum()) == pytest.approx(most, rel=1e-12)


def test_the_decode_batch_context_weights_each_turn_by_the_tokens_it_generates():
    """Two turns: prompt 1,000 generating 10 tokens, prompt 9,000 generating 1,000 (hits then misses); a decode batch
    holds the second for 100x the steps, so its mean context is (10 x 1,005 + 1,000 x 9,500) / 1,010 tokens."""
    turns = TurnSet(np.array([900.0, 8_000.0]), np.array([100.0, 1_000.0]), np.array([10.0, 1_000.0]), 2.0)
    mean = turns.mean_turn(catalog().get("workload", "agentic-64k"))
    assert mean.decode_context == pytest.approx((10 * 1_005 + 1_000 * 9_500) / 1_010, rel=1e-12)
    assert mean.prompt_tokens + mean.gen_tokens / 2 == pytest.approx(5_252.5)  # the plain mean it replaces


def test_with_one_generated_length_the_decode_batch_context_is_the_plain_mean():
    rng = np.random.default_rng(3)
    hit, miss = rng.integers(1, 50_000, 200).astype(float), rng.integers(1, 5_000, 200).astype(float)
    mean = TurnSet(hit, miss, np.full(200, 120.0), 9.0).mean_turn(catalog().get("workload", "agentic-64k"))
    assert mean.decode_context == pytest.approx(mean.prompt_tokens + mean.gen_tokens / 2, rel=1e-12)


def test_turns_that_generate_nothing_leave_the_decode_context_to_the_means():
    mean = TurnSet(np.array([500.0]), np.array([50.0]), np.array([0.0]), 1.0).mean_turn(catalog().get("workload", "agentic-64k"))
    assert mean.decode_context is None


def test_a_set_copies_a_callers_array_and_keeps_a_read_only_one():
    """A caller's writeable array is copied (changing it later leaves the set as it was); an int64 array nobody can
    write, as ``take`` hands over, is kept as it is (no copy of millions of rounds)."""
    append, gen, offsets = np.array([3, 4]), np.array([1, 2]), np.array([0, 2])
    traj = Trajectories(append, gen, offsets, "test")
    append[0] = 99
    assert traj.append_tokens.tolist() == [3, 4] and not traj.append_tokens.flags.writeable
    frozen = np.array([5, 6], dtype=np.int64)
    frozen.setflags(write=False)
    assert Trajectories(frozen, gen, offsets, "test").append_tokens is frozen


def test_a_read_only_view_of_an_array_its_caller_can_write_is_copied():
    """Read-only itself but a view of the caller's writeable array: the set keeps a copy of its own."""
    base = np.array([5, 6], dtype=np.int64)
    view = base[:]
    view.setflags(write=False)
    traj = Trajectories(view, np.array([1, 2]), np.array([0, 2]), "test")
    base[0] = 99
    assert traj.append_tokens.tolist() == [5, 6]
