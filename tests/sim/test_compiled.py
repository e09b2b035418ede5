"""The compiled fluid engine (core_*): the same runs as the Python engine, and the choice between them."""

from __future__ import annotations

import numpy as np
import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.sim import runner
from dualpath_plan.sim.compiled import run as compiled_run
from dualpath_plan.sim.rules import PolicyName
from dualpath_plan.model.workload import synthesize
from tests.sim.core_cases import assert_same_run, run_both
from tests.sim.fluid_cases import tiny_scenario, tiny_traj


@pytest.fixture(scope="module")
def paper_small():
    """DS 660B on the paper's 2P4D with 48 agents of agentic-64k: the benchmark's cluster, a short run."""
    sc = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=2, D=4)
    return sc, synthesize(sc.workload, 48, np.random.default_rng(3))


_PYTHON_RUNS: dict[str, runner.SimResult] = {}


def python_run(name: str, scenario, traj, policy, online=None) -> runner.SimResult:
    """The Python engine's run, once per test process: the pool-size tests below change only the compiled engine, so
    they compare it with the run of the plain test (a module runs on one worker: ``--dist loadfile``)."""
    if name not in _PYTHON_RUNS:
        _PYTHON_RUNS[name] = runner.run(scenario, traj, policy, online=online, options=runner.SimOptions(engine="python"))
    return _PYTHON_RUNS[name]


def compiled_run_of(scenario, traj, policy, online=None) -> runner.SimResult:
    return runner.run(scenario, traj, policy, online=online, options=runner.SimOptions(engine="compiled"))


def _online_case():
    sc = build_scenario("hopper", model="ds-v3.2", workload="agentic-32k", P=3, D=5)
    return sc, synthesize(sc.workload, 60, np.random.default_rng(4)), "dualpath", runner.OnlineSpec(aps=2.0)


@pytest.mark.parametrize("policy", [p.value for p in PolicyName])
@pytest.mark.slow
def test_the_compiled_engine_takes_the_python_engines_steps_offline(paper_small, policy):
    assert_same_run(python_run(f"small {policy}", *paper_small, policy), compiled_run_of(*paper_small, policy))


@pytest.mark.slow
def test_the_compiled_engine_takes_the_python_engines_steps_online():
    case = _online_case()
    assert_same_run(python_run("online 3P5D", *case), compiled_run_of(*case))


@pytest.mark.slow
def test_an_online_run_stops_at_the_same_point_on_both_engines():
    """The stop rule reads the records between chunks: both engines stop after the same step."""
    sc = tiny_scenario()
    a, b = run_both(sc, tiny_traj(400, 2), "basic", online=runner.OnlineSpec(aps=2.0, ttft_slo_s=0.01, stop_on_violation=True))
    assert a.stopped_early and b.stopped_early
    assert_same_run(a, b)


@pytest.mark.slow
def test_a_full_batch_entry_pool_is_compacted_without_changing_the_run(paper_small, monkeypatch):
    """With a pool just large enough for the running batches, it fills and is compacted again and again."""
    monkeypatch.setattr(compiled_run, "_pool_size", lambda L, n, pipes: 4 * L.n_pe + 3 * n)
    assert_same_run(python_run("small dualpath", *paper_small, "dualpath"), compiled_run_of(*paper_small, "dualpath"))


@pytest.mark.slow
def test_compaction_moves_batches_in_pool_order_not_pe_order(monkeypatch):
    """Batches formed at different times sit in the pool out of PE order; compacting them in PE order overwrote a
    batch placed earlier in the pool before it moved (found when the agents' data set changed: the online run
    above diverged after 27.6 s). With a small pool it compacts often."""
    monkeypatch.setattr(compiled_run, "_pool_size", lambda L, n, pipes: 4 * L.n_pe + 3 * n)
    case = _online_case()
    assert_same_run(python_run("online 3P5D", *case), compiled_run_of(*case))


@pytest.mark.slow
def test_decode_instances_and_dtype_reach_the_compiled_engine():
    sc = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=2, D=4)
    traj = synthesize(sc.workload, 24, np.random.default_rng(5))
    assert_same_run(*run_both(sc, traj, "split", options=runner.SimOptions(dtype="bf16", decode_instance_nodes=2, dt_s=0.025)))
    wide = sc.with_nodes(4, 4)  # a prefill instance of 4 nodes (EP32) where 2 hold the weights
    assert_same_run(*run_both(wide, traj, "split", options=runner.SimOptions(prefill_instance_nodes=4, dt_s=0.025)))


def test_auto_runs_python_without_numba_and_compiled_when_long_or_compiled_already(monkeypatch):
    never, always = (lambda: False), (lambda: True)
    assert compiled_run.choose("python", 1e9, always) == "python"
    assert compiled_run.choose("compiled", 0.0, never) == "compiled"
    assert compiled_run.choose("auto", compiled_run.COMPILE_S * 2, never) == "compiled"
    assert compiled_run.choose("auto", 1.0, always) == "compiled"
    assert compiled_run.choose("auto", 1.0, never) == "python"
    monkeypatch.setattr(compiled_run, "numba_available", lambda: False)
    assert compiled_run.choose("auto", compiled_run.COMPILE_S * 2, always) == "python"


def test_the_python_estimate_grows_with_turns_and_steps():
    base = compiled_run.python_estimate_s(1000, 100.0, 0.05)
    assert compiled_run.python_estimate_s(2000, 100.0, 0.05) > base and compiled_run.python_estimate_s(1000, 200.0, 0.05) > base
    assert compiled_run.python_estimate_s(1000, 100.0, 0.025) > base


def test_an_unknown_engine_and_compiled_without_numba_are_refused(monkeypatch):
    with pytest.raises(PlanError, match="--engine 'fast' is not allowed; must be one of auto, compiled, python") as err:
        runner.SimOptions(engine="fast")
    assert err.value.exit_code == 2
    monkeypatch.setattr(compiled_run, "numba_available", lambda: False)
    with pytest.raises(PlanError, match="--engine compiled needs numba"):
        runner.SimOptions(engine="compiled")


def test_auto_falls_back_to_python_when_numba_is_missing(monkeypatch):
    monkeypatch.setattr(compiled_run, "numba_available", lambda: False)
    r = runner.run(tiny_scenario(), tiny_traj(4, 2), "dualpath")
    assert r.engine == "python"


@pytest.mark.slow
def test_the_compile_note_comes_only_when_the_engine_is_not_compiled_yet(paper_small, monkeypatch):
    notes = []
    monkeypatch.setattr(compiled_run, "is_compiled", lambda: False)
    runner.run(*paper_small, "dualpath", options=runner.SimOptions(engine="compiled"), on_compile=lambda: notes.append(1))
    monkeypatch.setattr(compiled_run, "is_compiled", lambda: True)
    runner.run(*paper_small, "dualpath", options=runner.SimOptions(engine="compiled"), on_compile=lambda: notes.append(2))
    assert notes == [1]


def test_a_compiled_run_leaves_the_engine_compiled(paper_small):
    """After one compiled run the engine is in memory and in numba's cache: auto then picks it for short runs too."""
    runner.run(*paper_small, "dualpath", options=runner.SimOptions(engine="compiled"))
    r = runner.run(*paper_small, "dualpath")
    assert r.engine == "compiled"


@pytest.mark.slow
def test_commands_that_do_not_simulate_never_import_numba():
    """numba's import costs about half a second: only a compiled run loads it (bottleneck must answer in a second)."""
    import subprocess
    import sys
    code = "import sys, dualpath_plan.cli; assert 'numba' not in sys.modules, 'numba imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("policy", ["basic", "dualpath", "split"])
@pytest.mark.slow
def test_both_engines_play_the_same_dram_tier(policy):
    """A tier that serves about 60 % of the hit KV: its LRU hits, misses and evicts, in the same order on both engines."""
    sc = build_scenario("hopper", model="ds-27b", workload="agentic-32k", P=1, D=2, sets=("gpus_per_node=2", "snic_Gbps=50"),
                        dram_tier_GB=2.0)
    a, b = run_both(sc, tiny_traj(64, 6, prefix=4000, seed=5), policy)
    assert 0.05 < a.tier_share < 0.95  # the case exercises both hits and misses
    assert_same_run(a, b)


@pytest.mark.slow
def test_a_tier_stream_over_more_pool_nodes_than_two_fits_the_batch_scratch():
    """1P5D of 2 GPUs: two prefill engines share five decode nodes out, so each tier stream crosses three of them (and
    their CNICs); the compiled engine's per-batch scratch holds them (run.build sizes it from the longest tier pipe)."""
    sc = build_scenario("hopper", model="ds-27b", workload="agentic-32k", P=1, D=5, sets=("gpus_per_node=2", "snic_Gbps=50"),
                        dram_tier_GB=8.0)
    assert_same_run(*run_both(sc, tiny_traj(48, 4, prefix=3000, seed=7), "dualpath"))


@pytest.mark.slow
def test_split_reads_wait_as_pairs_on_both_engines():
    sc = tiny_scenario(P=2, D=2)
    traj = tiny_traj(64, 6, prefix=4000, seed=2)
    assert_same_run(*run_both(sc, traj, "split", options=runner.SimOptions(buffer_bytes=8000 * sc.model.kv_bytes_per_token)))


def test_the_cache_folder_is_named_after_the_compiled_sources(monkeypatch, tmp_path):
    """A change to any compiled module gives a new cache folder, so numba cannot load a stale engine."""
    import hashlib
    from pathlib import Path

    from dualpath_plan.sim.compiled import cache as compiled_cache
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    here = Path(compiled_cache.__file__).parent
    digest = hashlib.sha256(b"".join((here / n).read_bytes() for n in compiled_cache.CACHE_SOURCES)).hexdigest()[:16]
    folder = compiled_cache.versioned_cache_dir.__wrapped__()
    assert folder == str(tmp_path / "dualpath-plan" / f"numba-{digest}") and Path(folder).is_dir()
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/somewhere/else")
    assert compiled_cache.versioned_cache_dir.__wrapped__() == "/somewhere/else"


def _frozen_sources(here):
    """Files under the compiled package whose code numba compiles (they use ``jit``, or ``state``, whose
    offsets the kernels read), and every ``dualpath_plan`` module they import from (their constants are frozen)."""
    import ast
    from pathlib import Path

    root = Path(here).parents[1]  # the dualpath_plan package
    kernels = [p for p in Path(here).glob("*.py") if "jit" in p.read_text() and p.name not in ("cache.py", "run.py")]
    kernels.append(Path(here) / "state.py")
    found = set()
    for path in kernels:
        found.add(path.resolve())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dualpath_plan."):
                for alias in node.names:
                    parts = node.module.split(".")[1:]
                    module = root.joinpath(*parts, alias.name + ".py")  # ``from pkg import module``
                    found.add((module if module.exists() else root.joinpath(*parts[:-1], parts[-1] + ".py")).resolve())
    return found


def test_the_cache_key_covers_every_file_whose_code_or_constants_numba_freezes():
    """tier.py, stages.py, rules.py, pipes.py: a kernel or a constant in any of them is compiled into the engine,
    so a change to one must give a new cache folder (the key once left the DRAM tier's kernels out)."""
    from pathlib import Path

    from dualpath_plan.sim.compiled import cache as compiled_cache
    here = Path(compiled_cache.__file__).parent
    keyed = {(here / n).resolve() for n in compiled_cache.CACHE_SOURCES}
    not_compiled = {here / "cache.py"}  # the key itself, imported first
    missing = sorted(str(p) for p in _frozen_sources(here) - keyed - not_compiled)
    assert not missing, missing


@pytest.mark.slow
def test_without_communication_or_fixed_costs_both_engines_charge_the_old_flat_compute():
    """With no all-to-all, no fixed costs, weights read in no time and one flat efficiency e (GEMMs and attention
    alike), a forward pass costs exactly its FLOP over e x peak, the old flat-MFU model: on both engines every turn is charged
    miss * F(hit) / e at peak, and the engines agree."""
    from dataclasses import replace

    from dualpath_plan.bounds.compute import turn_flops as prefill_flops

    sc = build_scenario("hopper", model="llama-3.1-8b", workload="agentic-32k", P=1, D=1, sets=("gpus_per_node=2",))
    flat = {"1": 0.45, "8192": 0.45}  # flat from one row up: no memory-bound small GEMMs
    hw = replace(sc.pe_hw, ep_dispatch_s={"8": 0.0}, ep_combine_s={"8": 0.0}, gemm_dense_frac=flat, gemm_grouped_frac=flat,
                 bf16_gemm_dense_frac=None, bf16_gemm_grouped_frac=None,
                 attn_frac=0.45, layer_overhead_s=0.0, step_overhead_s=0.0, request_overhead_s=0.0, hbm_Bps=1e30)
    sc = replace(sc, pe_hw=hw, de_hw=hw)
    traj = synthesize(sc.workload, 8, np.random.default_rng(5))
    a, b = run_both(sc, traj, "basic")  # no attention quota, so no chunk sees more context than its turn's
    assert_same_run(a, b)
    expected = float(prefill_flops(sc.model, traj.context_tokens, traj.append_tokens).sum()) / 0.45
    assert a.demanded["prefill_compute"] == pytest.approx(expected, rel=1e-9)


def test_every_arena_field_constant_names_its_position():
    """``K_NAME`` is the index of field ``name`` in its arena (the kernels index the arenas by these)."""
    from dualpath_plan.sim.compiled import state

    for names in (state.FLOAT, state.INT):
        for k, name in enumerate(names):
            assert getattr(state, "K_" + name.upper()) == k, name
    assert len(state.REC_NAMES) == len(state.REC_START) <= state.REC_W


def test_the_rows_of_each_round_and_agent_start_on_cache_lines_and_hold_their_fields():
    """``rec`` and ``agent_f`` (float rows of one line per round and two per agent), ``agent_i`` and ``r_tok`` start on a
    cache line whatever the fields before them, and each row holds its own fields (``Rows``, ``Cols``)."""
    from dualpath_plan.sim.compiled import state

    for sizes in ((1, 2, 3), (5, 7, 11)):
        fields = {n: np.zeros(sizes[k % 3]) for k, n in enumerate(state.FLOAT)}
        fields |= {n: np.zeros(sizes[k % 3], np.int64) for k, n in enumerate(state.INT)}
        fields["rec"] = state.Rows(3 * state.REC_W, tuple(range(state.REC_W)))
        fields["agent_f"] = state.Cols(tuple(np.full(2, f + 0.5) for f in range(state.AF_W)))
        fields["agent_i"] = state.Cols(tuple(np.array([f, -f]) for f in range(state.AI_W)))
        hit, miss, gen = np.array([0, 9, 20]), np.array([4, 5, 6]), np.array([1, 2, 3])
        fields["r_tok"] = state.Cols((hit, miss, gen))
        core = state.pack(fields)
        halves = state.pack(fields, rows_by=lambda n, write: (write(n // 2, n), write(0, n // 2)))  # sim.beside.in_halves' ranges
        assert all(np.array_equal(a, b) for a, b in zip(core, halves))
        for name in ("rec", "agent_f", "agent_i", "r_tok"):
            assert state.view(core, name).ctypes.data % state.LINE_BYTES == 0, name
        assert state.view(core, "rec").reshape(-1, state.REC_W)[2].tolist() == list(range(state.REC_W))
        assert state.view(core, "agent_f").reshape(-1, state.AF_W)[1, state.AF_DE_FRAC] == state.AF_DE_FRAC + 0.5
        assert state.view(core, "agent_i").reshape(-1, state.AI_W)[1, state.AI_Q_PREV] == -state.AI_Q_PREV
        rows = state.view(core, "r_tok").reshape(-1, state.RT_W)
        assert rows[:, state.RT_HIT].tolist() == hit.tolist() and rows[:, state.RT_MISS].tolist() == miss.tolist()
        assert rows[:, state.RT_GEN].tolist() == gen.tolist()


@pytest.mark.slow
def test_both_engines_drop_the_same_use_records_when_they_fill(paper_small, monkeypatch):
    """With room for 8 records a run of ~1,000 s halves them again and again: both engines keep the same ones."""
    from dualpath_plan.sim import metrics

    monkeypatch.setattr(metrics, "MAX_SNAPSHOTS", 8)
    monkeypatch.setattr(metrics, "MIN_SNAPSHOTS", 8)
    a, b = run_both(*paper_small, "dualpath")
    assert_same_run(a, b)
    assert a.steady_use["pe_snic"].delivered > 0


def test_auto_weighs_all_of_a_commands_runs_against_one_compile(monkeypatch):
    seen = []
    monkeypatch.setattr(compiled_run, "python_estimate_s", lambda turns, sim_s, dt_s: 10.0)
    monkeypatch.setattr(compiled_run, "choose", lambda engine, python_s, cached: seen.append(python_s) or "python")
    sc = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=2, D=4)
    traj = synthesize(sc.workload, 4, np.random.default_rng(5))
    runner.compare(sc, traj, ["basic", "dualpath"])
    assert seen == [20.0, 20.0]  # two runs of about 10 s each: 20 s of Python against one compile


def test_idle_sure_marks_a_flow_only_if_each_entry_has_a_positive_finite_coefficient_and_a_positive_budget():
    """``share.idle_sure``: the flows the uncontended test may give alone rate 0 and active share 0 when idle."""
    from dualpath_plan.sim.compiled.share import idle_sure

    lengths = np.array([2, 1, 1, 1, 1])
    starts = np.cumsum(lengths) - lengths
    res = np.array([0, 1, 1, 2, 0, 1])
    coef = np.array([1.0, 2.0, np.inf, 1.0, 0.0, 0.5])
    budget = np.array([1.0, 3.0, 0.0])
    assert idle_sure(res, coef, starts, lengths, budget).tolist() == [1, 0, 0, 0, 1]


@pytest.mark.parametrize("late_coef, contended", [(1.0, True), (np.inf, False)])
def test_the_uncontended_test_stops_at_a_full_link_only_when_no_later_term_can_lower_its_sum(late_coef, contended):
    """``share.uncontended`` answers as soon as a link is over while every later term is >= 0. Here flows 0 and 1 put
    link 0 over (2 units against 1); flow 2 (not marked sure) crosses it after, with solo rate 0 (link 1 has no
    budget): with a finite coefficient its term is 0 and the link stays over (contended); with an infinite one its
    term is inf x 0 = NaN, the link's sum ends NaN, never over, and the step is uncontended, as the numpy rule says.
    Both answers match that rule bit for bit."""
    from dualpath_plan.sim.compiled.share import allocate_loops, uncontended
    from dualpath_plan.sim.python.share import allocate, make_incidence

    inc = make_incidence(np.array([1, 1, 2]), np.array([0, 0, 1, 0]), np.array([1.0, 1.0, 1.0, late_coef]), np.ones(3))
    budget, work = np.array([1.0, 0.0]), np.ones(3)
    scratch = np.empty(3), np.empty(2), np.empty(3)
    none_sure = np.zeros(3, np.int64)
    assert uncontended(inc.res, inc.coef, inc.starts, inc.lengths, budget, work, none_sure, *scratch) is (not contended)
    got = allocate_loops(inc.flow, inc.res, inc.coef, inc.aw, inc.starts, inc.lengths, inc.weight, budget, work, none_sure)
    for expected, value in zip(allocate(inc, budget, work), got):
        assert np.array_equal(expected, value, equal_nan=True)


def test_the_arena_views_are_the_slices_they_stand_for():
    """``fa``, ``ia``, ``fa_agent`` and ``ia_agent`` build their views in LLVM (numba intrinsics): each equals numpy's
    slice of the same arena, shares its memory (a write through the view lands in the arena), and an empty field
    gives an empty view."""
    from numba import njit

    from dualpath_plan.sim.compiled import queues
    from dualpath_plan.sim.compiled.state import AF_W, AI_W, K_AGENT_F, K_AGENT_I

    n_f, n_i = max(K_AGENT_F, 3) + 2, max(K_AGENT_I, 3) + 2
    f_off = np.zeros(n_f + 1, np.int64)
    i_off = np.zeros(n_i + 1, np.int64)
    f_off[1:], i_off[1:] = np.cumsum(np.arange(n_f) % 4), np.cumsum(np.arange(n_i) % 3)
    f_off[K_AGENT_F + 1:] += 5 * AF_W - f_off[K_AGENT_F + 1] + f_off[K_AGENT_F]  # five agents' float rows
    i_off[K_AGENT_I + 1:] += 5 * AI_W - i_off[K_AGENT_I + 1] + i_off[K_AGENT_I]
    c = (np.arange(float(f_off[-1])), f_off, np.arange(i_off[-1]) * 10, i_off)

    @njit(_nrt=False)
    def views(c, k, kk, f, g):
        a, b, x, y = queues.fa(c, k), queues.ia(c, kk), queues.fa_agent(c, f), queues.ia_agent(c, g)
        got = (a.size, a.sum(), b.size, b.sum(), x.size, x.sum(), y.size, y.sum())
        if x.size:
            x[x.size - 1] = -1.0
        return got

    for k in range(n_f):
        kk, f, g = k % n_i, k % AF_W, k % AI_W
        before = c[0].copy()
        got = views(c, k, kk, f, g)
        a, b = before[f_off[k]:f_off[k + 1]], c[2][i_off[kk]:i_off[kk + 1]]
        x, y = before[f_off[K_AGENT_F] + f:f_off[K_AGENT_F + 1]:AF_W], c[2][i_off[K_AGENT_I] + g:i_off[K_AGENT_I + 1]:AI_W]
        assert got[:4] == (a.size, a.sum(), b.size, b.sum()) and got[4] == x.size == 5 and got[6:] == (y.size, y.sum())
        assert got[5] == x.sum() and c[0][f_off[K_AGENT_F] + f + 4 * AF_W] == -1.0  # the write went through
        c[0][:] = before
    assert (f_off[1] - f_off[0]) == 0 and views(c, 0, 0, 0, 0)[0] == 0  # an empty field


def test_a_preloaded_engine_loads_once_in_another_thread_and_is_waited_for(monkeypatch):
    """``preload`` starts one load however often it is called; ``build_beside_load`` builds meanwhile, waits for that
    load and hands back whether the engine was cached; a build that fails still waits and leaves no load pending."""
    import threading

    from dualpath_plan.sim.compiled import run

    loads = []
    monkeypatch.setattr(run, "is_compiled", lambda: loads.append(threading.current_thread()) or True)
    monkeypatch.setattr(run, "_LOADING", [])
    run.preload()
    run.preload()
    core, cached = run.build_beside_load(lambda: "the core")
    assert (core, cached) == ("the core", True)
    assert len(loads) == 1 and loads[0] is not threading.current_thread() and not run._LOADING

    def fails():
        raise ValueError("bad build")

    with pytest.raises(ValueError, match="bad build"):
        run.build_beside_load(fails)
    assert len(loads) == 2 and not run._LOADING


def test_the_sharing_kernel_on_a_real_runs_allocations_is_the_numpy_rule_bit_for_bit():
    """``benchmarks/bench_share.py`` takes the kernel's inputs from a compiled run at each progress report and checks
    every answer against the numpy rule before it times them; here on a small run, so that the capture keeps working
    and the kernel meets the rule on instances a run really builds (the property tests draw random ones)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "bench_share.py"
    spec = importlib.util.spec_from_file_location("bench_share", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    samples = bench.capture(2, 4, 256)
    assert len(samples) >= 10
    contended = bench.check(bench.share, [bench.arguments(s) for s in samples], samples)
    assert 0 < contended <= len(samples)
