"""Property tests of the workload module: one invariant each, inputs built by construction."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from dualpath_plan.model.profiles import Workload
from dualpath_plan.model.table2 import Shapes, shape_stats
from dualpath_plan.model import workload as workload_module
from dualpath_plan.model.workload import Trajectories, load_jsonl, synthesize, take, write_jsonl

_round = st.tuples(st.integers(1, 5000), st.integers(1, 2000))
_agent = st.lists(_round, min_size=1, max_size=12)


@st.composite
def trajectory_sets(draw) -> Trajectories:
    """Hand-built trajectory sets: 1-8 agents of 1-12 rounds, each round 1-5000 appended, 1-2000 generated."""
    agents = draw(st.lists(_agent, min_size=1, max_size=8))
    flat = np.array([pair for agent in agents for pair in agent], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([len(agent) for agent in agents])))
    return Trajectories(flat[:, 0], flat[:, 1], offsets, "hypothesis")


@st.composite
def workloads(draw) -> Workload:
    """Workloads whose Table 2 columns some trajectories meet, by construction: the columns (under the reading of
    ``table2``) of an equal mixture of 2-4 shapes under a cap of 4k-200k tokens, each away from the edges of what
    the cap allows (>= 10 tokens per round and in the prefix, final length <= 90 % of the cap), so the targets
    are inside the set of reachable means rather than on its boundary."""
    cap = draw(st.integers(4_000, 200_000))
    shapes = []
    for _ in range(draw(st.integers(2, 4))):
        n = draw(st.integers(3, 300))
        room = int(0.9 * cap) - 10
        n = min(n, room // 20)
        body = draw(st.integers(20 * (n - 1), room))
        prefix = draw(st.integers(10, max(10, int(0.9 * cap) - 1 - body)))
        append = draw(st.integers(10 * (n - 1), body - 10 * (n - 1)))
        shapes.append((n, append, body - append, prefix))
    n, A, G, p = (np.array(column, dtype=np.int64) for column in zip(*shapes))
    stats = shape_stats(Shapes(n, A, G, p))
    turns, append, gen, total = stats[:, :4].mean(axis=0)
    context = stats[:, 4].sum() / stats[:, 0].sum()
    return Workload("h", "hypothesis", "generated", 500, turns, append, gen, context, total, float(cap), None, ())


@pytest.mark.slow
@given(trajectory_sets())
def test_context_rises_within_every_agent(traj):
    """Within an agent, each round's context exceeds the previous one's (every round adds >= 2 tokens)."""
    same_agent = np.diff(traj.agent_of_round) == 0
    assert np.all(np.diff(traj.context_tokens)[same_agent] > 0)


@pytest.mark.slow
@given(trajectory_sets())
def test_offsets_and_agent_index_agree(traj):
    """agent_of_round names, for every round index, the agent whose offsets bracket it."""
    index = np.arange(traj.n_rounds)
    owner = traj.agent_of_round
    assert np.all((traj.offsets[owner] <= index) & (index < traj.offsets[owner + 1]))


@pytest.mark.slow
@given(trajectory_sets())
def test_total_is_last_context_plus_last_round(traj):
    """An agent's total tokens = context of its last round + that round's append + gen."""
    last = traj.offsets[1:] - 1
    assert np.array_equal(traj.total_tokens, traj.context_tokens[last] + traj.append_tokens[last] + traj.gen_tokens[last])


@pytest.mark.slow
@given(trajectory_sets())
def test_jsonl_round_trip_is_the_identity(traj):
    """Writing a set as JSONL and loading it back gives the same rounds and offsets."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        write_jsonl(traj, path)
        back = load_jsonl(path)
    assert np.array_equal(back.append_tokens, traj.append_tokens)
    assert np.array_equal(back.gen_tokens, traj.gen_tokens)
    assert np.array_equal(back.offsets, traj.offsets)


# The two data-set properties below see the same generated workloads and seeds (one explicit seed, derandomize off, no
# example database), so each workload's 500 trajectories are drawn once for both: a draw takes about 0.35 s.
SAME_EXAMPLES = 20261202


@functools.lru_cache(maxsize=None)
def _data_set(workload: Workload, rng_seed: int) -> Trajectories:
    return synthesize(workload, 500, np.random.default_rng(rng_seed))


@seed(SAME_EXAMPLES)
@settings(derandomize=False, database=None)
@given(workloads(), st.integers(0, 2**32 - 1))
@pytest.mark.slow
def test_synthetic_trajectories_never_exceed_the_cap(workload, rng_seed):
    """No synthetic trajectory ends above the workload's max_len_tokens."""
    assert _data_set(workload, rng_seed).total_tokens.max() <= workload.max_len_tokens


@seed(SAME_EXAMPLES)
@settings(derandomize=False, database=None)
@given(workloads(), st.integers(0, 2**32 - 1))
@pytest.mark.slow
def test_a_data_set_meets_the_mean_over_trajectories_columns(workload, rng_seed):
    """500 synthetic trajectories meet Turns, Append/turn, Gen/turn and Total of a feasible workload to 1 %."""
    stats = _data_set(workload, rng_seed).summary()
    achieved = (stats.mean_turns, stats.mean_turn_append_tokens, stats.mean_turn_gen_tokens, stats.mean_total_tokens)
    targets = (workload.turns, workload.append_tokens, workload.gen_tokens, workload.total_tokens)
    assert np.allclose(achieved, targets, rtol=0.01)


@pytest.mark.slow
@given(trajectory_sets(), st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_take_only_returns_totals_of_the_source(traj, n, seed):
    """Every resampled agent's total is the total of some source agent."""
    sample = take(traj, n, np.random.default_rng(seed))
    assert set(sample.total_tokens.tolist()) <= set(traj.total_tokens.tolist())


@pytest.mark.slow
@given(trajectory_sets(), st.integers(1, 7), st.lists(st.integers(0, 10_000), min_size=8, max_size=8))
def test_context_is_the_prefix_plus_the_agents_rounds_before(traj, block, prefix):
    """Each round's context is its agent's prefix plus what the agent appended and generated before it, whatever the
    blocks the running sum is corrected in (CONTEXT_BLOCK rounds each, here 1-7, so blocks split agents)."""
    prefix = np.array(prefix[:traj.n_agents], dtype=np.int64)
    traj = Trajectories(traj.append_tokens, traj.gen_tokens, traj.offsets, "hypothesis", prefix_tokens=prefix)
    kept, workload_module.CONTEXT_BLOCK = workload_module.CONTEXT_BLOCK, block
    try:
        context = traj.context_tokens
    finally:
        workload_module.CONTEXT_BLOCK = kept
    for a in range(traj.n_agents):
        rounds = slice(traj.offsets[a], traj.offsets[a + 1])
        added = traj.append_tokens[rounds] + traj.gen_tokens[rounds]
        assert context[rounds].tolist() == (prefix[a] + np.cumsum(added) - added).tolist()


@pytest.mark.slow
@given(trajectory_sets(), st.integers(1, 30), st.integers(0, 2**32 - 1), st.integers(1, 7))
def test_take_copies_every_drawn_agents_rounds_whole(traj, n, seed, block):
    """Every resampled agent's rounds (appended and generated tokens, in order) are those of some source agent,
    whatever the blocks they are copied in (CONTEXT_BLOCK rounds each, here 1-7, so blocks split agents)."""
    kept, workload_module.CONTEXT_BLOCK = workload_module.CONTEXT_BLOCK, block
    try:
        sample = take(traj, n, np.random.default_rng(seed))
    finally:
        workload_module.CONTEXT_BLOCK = kept
    rounds = lambda t, a: tuple(zip(t.append_tokens[t.offsets[a]:t.offsets[a + 1]].tolist(),  # noqa: E731
                                    t.gen_tokens[t.offsets[a]:t.offsets[a + 1]].tolist()))
    source = {rounds(traj, a) for a in range(traj.n_agents)}
    assert all(rounds(sample, a) in source for a in range(sample.n_agents))
