"""The DRAM tier in the runner (sim/tier.py): the LRU's rules, and runs with a tier on the Python engine (the compiled
engine's are held equal to these in test_compiled.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.sim import runner
from dualpath_plan.sim.layout import build_layout
from dualpath_plan.sim.pipes import PipeLayout
from dualpath_plan.sim.python.tier import Lru
from tests.sim.fluid_cases import TINY_SETS, tiny_traj

REL_CONSERVATION = 1e-9  # as test_runner: delivered vs demanded, float sums of ~1e3 steps


def test_an_object_serves_its_agent_once_put_and_a_miss_makes_it_of_the_bytes_read():
    lru = Lru(100.0)
    assert not lru.ask(1, 30.0)  # nothing yet: the read from storage is copied in
    assert lru.objects == {1: 30.0}
    assert lru.ask(1, 30.0) and not lru.ask(1, 31.0)  # a longer context than it holds misses, and remakes it
    assert lru.objects == {1: 31.0} and lru.used == 31.0


def test_the_least_recently_used_objects_go_first_and_whole():
    lru = Lru(100.0)
    for agent in (1, 2, 3):
        lru.put(agent, 30.0)
    assert lru.ask(1, 30.0)  # 1 is now the most recent: 2 is the least
    lru.put(4, 30.0)
    assert list(lru.objects) == [3, 1, 4] and lru.used == 90.0


def test_a_write_back_grows_a_held_object_and_an_evicted_one_comes_back_as_its_new_kv_alone():
    lru = Lru(100.0)
    lru.put(1, 40.0)
    lru.written(1, 55.0, 15.0)
    assert lru.objects[1] == 55.0
    lru.put(2, 60.0)  # 1 goes
    lru.written(1, 70.0, 15.0)
    assert lru.objects[1] == 15.0 and not lru.ask(1, 70.0)  # its prefix left the tier: the next turn reads from storage


def test_an_object_larger_than_the_tier_never_stays():
    lru = Lru(100.0)
    lru.put(1, 50.0)
    assert not lru.ask(2, 150.0)
    assert lru.objects == {} and lru.used == 0.0


@given(st.lists(st.tuples(st.integers(0, 5), st.floats(0.0, 80.0), st.sampled_from(("ask", "put", "written"))), max_size=60))
def test_the_tier_never_holds_more_than_its_bytes_and_counts_what_it_holds(ops):
    lru = Lru(100.0)
    for agent, size, op in ops:
        if op == "ask":
            lru.ask(agent, size)
        elif op == "put":
            lru.put(agent, size)
        else:
            lru.written(agent, size, size / 2)
        assert lru.used <= 100.0 and lru.used == pytest.approx(sum(lru.objects.values()), abs=1e-9)


def _tiny(gb: float | None):
    return build_scenario("hopper", model="ds-27b", workload="agentic-32k", P=1, D=2, sets=TINY_SETS, dram_tier_GB=gb)


@pytest.mark.parametrize("policy", ["basic", "dualpath", "split"])
def test_a_run_with_a_tier_delivers_what_its_turns_routes_demand(policy):
    """Every byte the tier serves or copies in crosses the resources the routes name (the pool's included)."""
    r = runner.run(_tiny(2.0), tiny_traj(64, 6, prefix=4000, seed=5), policy, options=runner.SimOptions(engine="python"))
    assert 0.05 < r.tier_share < 0.95 and all(v == pytest.approx(0.0, abs=1e-3) for v in r.leftover.values())  # bytes: float sums
    for kind, demand in r.demanded.items():
        assert r.delivered[kind] == pytest.approx(demand, rel=REL_CONSERVATION, abs=1e-3), kind


@pytest.mark.parametrize("policy", ["basic", "dualpath"])
def test_a_tier_that_holds_every_agent_serves_every_hit_and_storage_reads_nothing(policy):
    r = runner.run(_tiny(64.0), tiny_traj(32, 5, seed=2), policy, options=runner.SimOptions(engine="python"))
    assert r.tier_share == 1.0 and r.delivered["pe_snic"] == 0.0 and r.delivered["de_snic"] == 0.0
    assert r.delivered["de_snic_write"] > 0  # new KV is still persisted
    assert r.bound_tier_share == pytest.approx(1.0)


def test_without_a_tier_a_run_has_no_tier_records_or_pipes():
    sc = _tiny(None)
    r = runner.run(sc, tiny_traj(8, 3), "dualpath", options=runner.SimOptions(engine="python"))
    assert r.records.tier is None and r.tier_share is None and r.bound_tier_share is None
    pipes = PipeLayout.of(build_layout(sc))
    assert pipes.tier0 == pipes.n


def test_with_a_tier_every_prefill_engine_has_a_tier_pipe_and_reads_copy_into_the_pool():
    layout = build_layout(_tiny(2.0))
    pipes, plain = PipeLayout.of(layout), PipeLayout.of(build_layout(_tiny(None)))
    assert pipes.n - pipes.tier0 == layout.n_pe and pipes.tier0 == plain.n
    assert np.all(pipes.lengths[: plain.load0] > plain.lengths[: plain.load0])  # read pipes: the copy into the pool too
    wb = slice(plain.wb0, plain.n)
    assert np.all(pipes.lengths[wb] > plain.lengths[wb])  # write-backs: the new KV's copy too


def test_the_oracle_reads_nothing_so_a_tier_serves_it_nothing_and_reports_no_share():
    r = runner.run(_tiny(2.0), tiny_traj(8, 3), "oracle", options=runner.SimOptions(engine="python"))
    assert r.records.tier is None and r.tier_share is None and r.bound_tier_share is None


def test_a_pipe_lists_each_resource_once_with_its_bytes_summed():
    """A read's node DRAM carries the read, its copy out to the pool and (on 1P2D, its only prefill node) the pool's
    prefill share of that copy: one entry of 2 + sigma bytes per byte, not three (the sharing rule's solo rate reads
    entries one by one)."""
    layout = build_layout(_tiny(2.0))
    pipes = PipeLayout.of(layout)
    starts = np.cumsum(pipes.lengths) - pipes.lengths
    for p in range(pipes.n):
        res = pipes.res[starts[p]:starts[p] + pipes.lengths[p]]
        assert len(set(res.tolist())) == res.size, p
    first = pipes.res[: pipes.lengths[0]].tolist()
    assert pipes.coef[first.index(layout.start["pe_dram"])] == pytest.approx(2.0 + layout.tier_sigma)


def _run_with(steady_share: float | None, bound_share: float | None, over: float | None):
    from dataclasses import replace as _replace
    base = runner.run(_tiny(None), tiny_traj(4, 2), "basic", options=runner.SimOptions(engine="python"))
    return _replace(base, steady_tier_share=steady_share, bound_tier_share=bound_share, tier_share=steady_share,
                    steady_bound_turns_per_s=None if over is None else base.steady_turns_per_s / over)


def test_simulate_notes_an_lru_that_serves_other_than_the_bound_and_a_run_above_its_bound():
    from dualpath_plan.report.simulate import tier_note
    assert tier_note({"basic": _run_with(None, None, None)}) is None  # no tier
    assert tier_note({"basic": _run_with(0.50, 0.52, 0.9)}) is None  # within 5 points
    low = tier_note({"dualpath": _run_with(0.0, 0.41, 0.67)})
    assert "dualpath 0.0 % against 41.0 %" in low and "no ceiling" not in low
    high = tier_note({"basic": _run_with(0.887, 0.589, 1.176)})
    assert "basic 88.7 % against 58.9 %" in high and "so the bound is no ceiling here: basic reached 117.6 %" in high
