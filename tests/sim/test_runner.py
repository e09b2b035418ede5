"""The fluid engine: routes against the symbolic path tables, the sharing rule, pipes and decode batches,
and whole runs (conservation, determinism, convergence in dt, the saturated steady state)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dualpath_plan.bounds import lp, symbolic
from dualpath_plan.bounds.bandwidth import capacities
from dualpath_plan.bounds.compute import flops_per_new_token
from dualpath_plan.bounds.decode import kv_bytes
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import catalog
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.report.simulate import to_json
from dualpath_plan.sim import runner
from dualpath_plan.bounds.compute import turn_flops as prefill_flops
from dualpath_plan.sim.layout import KINDS, PATH_ROUTES, attention_flops, build_layout, decode_read_bytes
from dualpath_plan.sim.metrics import Meter
from dualpath_plan.sim.python import share
from dualpath_plan.sim.python.share import allocate, make_incidence
from dualpath_plan.sim.python.state import DecodeSet, Pipes
from dualpath_plan.sim.rules import PolicyName
from dualpath_plan.model.workload import synthesize
from tests.sim.fluid_cases import tiny_scenario, tiny_traj

REL_CONSERVATION = 1e-9  # delivered vs demanded units per resource: float sums of ~1e3 steps, far below this
# Halving dt from 50 ms. Work that becomes ready inside a step starts when it became ready (sim.python.late);
# what remains is the DE-side links of a restarted batch and fetches, a fraction of dt per turn. With turns
# of seconds and queues (a loaded run) that is far below 1 % of JCT: 2 % is the stated bound. With ~1 s
# turns and no queueing (a latency-bound run) it reaches a few % of JCT: 5 % there.
DT_REL_TOL_LOADED = 0.02
DT_REL_TOL_LATENCY_BOUND = 0.05
# Saturated steady state: with deep queues every storage NIC is busy all the time (FIFO pipes never idle
# while work is queued) and the shorter-queue rule drives the split to the LP's; what is left is the edge
# of the window (turns read before it finishing in it, about one turn time over a window of ~25 s). With the
# measured step times a turn decodes longer and this run gives 0.943 (0.947 stepped without quiet jumps).
STEADY_SHARE = 0.93


# --- routes and physics --------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(PATH_ROUTES))
def test_routes_sum_to_the_symbolic_path_tables(path):
    """Every byte the runner moves crosses exactly the resources of the paper's per-hop path tables (with a DRAM tier's
    pool split sigma : 1 - sigma over the sides, sigma = P / (P + D))."""
    layout = build_layout(build_scenario("hopper", P=3, D=5, dram_tier_GB=100.0))
    totals = dict.fromkeys(symbolic.RESOURCES, 0.0)
    for route in PATH_ROUTES[path]:
        for res, coef in layout.hops(route, pe=9, de=13, source=4, sources=24):
            totals[KINDS[layout.kind_of[res]]] += coef
    sums = symbolic.path_sum(getattr(symbolic, path))
    assert totals == pytest.approx({k: float(v.subs(symbolic.sigma, 3 / 8)) for k, v in sums.items()}, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("route", ["insert_de", "insert_wb"])
def test_both_decode_side_copies_into_the_pool_load_what_the_bound_charges(route):
    layout = build_layout(build_scenario("hopper", P=2, D=4, dram_tier_GB=50.0))
    totals = dict.fromkeys(symbolic.RESOURCES, 0.0)
    for res, coef in layout.hops(route, pe=0, de=11, source=7, sources=16):
        totals[KINDS[layout.kind_of[res]]] += coef
    sums = symbolic.path_sum(symbolic.INSERT_DE_PATH)
    assert totals == pytest.approx({k: float(v.subs(symbolic.sigma, 1 / 3)) for k, v in sums.items()}, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("P,D", [(2, 4), (3, 5), (5, 2)])
def test_the_sources_of_each_kind_spread_the_pool_evenly_over_the_nodes(P, D):
    """Over the sources of one kind (tier streams, each side's reads, write-backs) every node's DRAM and every GPU's CNIC
    carries the same pool load, and the sides carry sigma : 1 - sigma of it (layout.TIER_ROUTES' comment)."""
    layout = build_layout(build_scenario("hopper", P=P, D=D, dram_tier_GB=50.0))
    kinds = {"tier_read": [(e, 0, e) for e in range(layout.n_pe)], "insert_pe": [(n * layout.g_pe, 0, n) for n in range(P)],
             "insert_de": [(0, n * layout.g_de, n) for n in range(D)], "insert_wb": [(0, e, e) for e in range(layout.n_de)]}
    for route, sources in kinds.items():
        load = np.zeros(layout.n_res)
        for pe, de, i in sources:
            for res, coef in layout.hops(route, pe, de, i, len(sources)):
                load[res] += coef
        pool = ("pe_cnic_read", "de_cnic_read") if route == "tier_read" else ("pe_cnic_write", "de_cnic_write")
        for kind in ("pe_dram", "de_dram", *pool):
            assert np.ptp(load[layout.slice(kind)]) < 1e-9 * len(sources), (route, kind)
        on_pe = load[layout.slice(pool[0])].sum()
        assert on_pe == pytest.approx(len(sources) * layout.tier_sigma), route


@pytest.mark.parametrize("model", ["ds-v3.2", "ds-27b", "qwen2.5-32b", "gpt-oss-120b"])
def test_prefill_flops_twin_matches_compute(model):
    m = catalog().get("model", model)
    ctx = np.array([0.0, 100.0, 2047.0, 2048.0, 5000.0, 64000.0])
    expected = [7 * flops_per_new_token(m, c) for c in ctx]
    assert prefill_flops(m, ctx, 7) == pytest.approx(expected, rel=1e-12)
    assert prefill_flops(m, ctx, 7) - 7 * 2 * m.active_params == pytest.approx([attention_flops(m, c, 7) for c in ctx], rel=1e-9, abs=1.0)


@pytest.mark.parametrize("model", ["ds-v3.2", "qwen2.5-32b"])
def test_decode_read_twin_matches_decode(model):
    m = catalog().get("model", model)
    ctx = np.array([10.0, 2048.0, 3000.0, 65000.0])
    assert decode_read_bytes(m, ctx) == pytest.approx([kv_bytes(m, c)[0] for c in ctx], rel=1e-12)


def test_layout_capacities_add_up_to_the_bandwidth_model():
    sc = tiny_scenario(P=2, D=3)
    L = build_layout(sc)
    caps = capacities(sc.cluster)
    for kind in symbolic.RESOURCES:
        assert L.capacity[L.slice(kind)].sum() == pytest.approx(caps[kind], rel=1e-12)
    assert set(L.start) == set(KINDS)


# --- the sharing rule ------------------------------------------------------------------------------------------

def test_one_link_is_shared_equally_and_a_short_flow_leaves_its_share_to_the_others():
    inc = make_incidence(np.array([1, 1, 1]), np.array([0, 0, 0]), np.ones(3), np.ones(3))
    x, used, active = allocate(inc, np.array([9.0]), np.array([100.0, 100.0, 1.0]))
    assert x == pytest.approx([4.0, 4.0, 1.0]) and used == pytest.approx([9.0])
    assert active == pytest.approx([1.0, 1.0, 1.0 / 3.0])  # the short flow finished a third into the step


def test_a_flow_limited_elsewhere_does_not_waste_its_share():
    # flow 0 crosses links 0 (cap 10) and 1 (cap 2); flow 1 crosses link 0 only: max-min gives 2 and 8
    inc = make_incidence(np.array([2, 1]), np.array([0, 1, 0]), np.ones(3), np.ones(2))
    x, used, _ = allocate(inc, np.array([10.0, 2.0]), np.array([50.0, 50.0]))
    assert x == pytest.approx([2.0, 8.0]) and used == pytest.approx([10.0, 2.0])


@pytest.mark.parametrize("scale", [0.02, 1.0, 1e3])  # heavily contended, some links full, uncontended
def test_a_large_incidence_drops_its_idle_flows_without_changing_anything(scale, monkeypatch):
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 5, 600)
    res = np.concatenate([rng.choice(80, n, replace=False) for n in lengths])
    inc = make_incidence(lengths, res, rng.uniform(0.5, 2.0, res.size), rng.uniform(0.5, 2.0, lengths.size))
    assert inc.res.size >= share.MIN_ENTRIES_TO_SPLIT
    work = np.where(rng.random(lengths.size) < 0.8, 0.0, rng.uniform(0.1, 8.0, lengths.size))
    budget = rng.uniform(1.0, 10.0, 80) * scale
    split = allocate(inc, budget, work)
    monkeypatch.setattr(share, "MIN_ENTRIES_TO_SPLIT", res.size + 1)
    for got, whole in zip(split, allocate(inc, budget, work)):
        np.testing.assert_array_equal(got, whole)
    x, used, active = split
    assert (used <= budget * (1 + 1e-12)).all() and (x <= work * (1 + 1e-12)).all()
    assert ((0 <= active) & (active <= 1)).all() and (x[work == 0] == 0).all()


# --- pipes and decode -----------------------------------------------------------------------------------------

def test_a_pipe_serves_its_items_in_order_and_stamps_their_time_in_the_step():
    pipes = Pipes(build_layout(tiny_scenario()))
    for req, size in ((1, 30.0), (2, 50.0), (3, 40.0)):
        pipes.admit(0, req, size, 0)
    x = np.zeros(pipes.n)
    x[0] = 100.0
    before = pipes.advance(x)
    done = pipes.completions(before, np.ones(pipes.n))
    assert [(req, frac) for _, req, _, frac in done] == [(1, pytest.approx(0.3)), (2, pytest.approx(0.8))]
    assert pipes.work()[0] == pytest.approx(20.0)


def test_decode_batches_make_one_token_per_step_time_and_joiners_finish_inside_the_step():
    L = build_layout(tiny_scenario())
    dec = DecodeSet(L)
    read, attn = 1e9, 1e-4
    step_s = L.decode_step.step_s(1, read, attn)  # the bound's step time of a batch of one
    parts = L.decode_step.parts(1, read, attn)
    assert step_s == pytest.approx(parts["work"] + parts["comm"] + parts["overhead"])
    assert dec.join(7, 0, tokens=10.0, read=read, attn=attn) is None
    before, gained = dec.advance(10 * step_s)
    assert gained[0] == pytest.approx(10.0)
    [(req, frac)] = dec.completions(before, gained)
    assert req == 7 and frac == pytest.approx(1.0)
    assert dec.join(8, 1, tokens=2.0, read=read, attn=attn, head_start_s=5 * step_s) == pytest.approx(2 * step_s)


# --- whole runs ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy", [p.value for p in PolicyName])
def test_every_turn_completes_once_bytes_are_conserved_and_nothing_is_left(policy):
    traj = tiny_traj(12, 6, prefix=3000)
    r = runner.run(tiny_scenario(), traj, policy)
    assert r.turns == traj.n_rounds and np.isfinite(r.records.done).all()
    assert (np.diff(r.records.done.reshape(12, 6), axis=1) > 0).all()  # an agent's rounds in order, each once
    for kind, demand in r.demanded.items():
        assert r.delivered[kind] == pytest.approx(demand, rel=REL_CONSERVATION, abs=1e-6), kind
    assert all(v == pytest.approx(0.0, abs=1e-3) for v in r.leftover.values()), r.leftover


def test_paper_accounting_moves_no_miss_or_write_back_bytes():
    traj = tiny_traj(8, 4)
    exact = runner.run(tiny_scenario(), traj, "basic")
    paper = runner.run(tiny_scenario(accounting="paper"), traj, "basic")
    assert paper.delivered["de_snic_write"] == 0.0 < exact.delivered["de_snic_write"]
    assert paper.delivered["pe_snic"] == pytest.approx(exact.delivered["pe_snic"], rel=1e-12)


def test_the_data_paths_of_the_policies():
    traj = tiny_traj(16, 6)
    sc = tiny_scenario()
    oracle, basic, split = (runner.run(sc, traj, p) for p in ("oracle", "basic", "split"))
    assert all(oracle.delivered[k] == 0.0 for k in symbolic.RESOURCES)  # the oracle's I/O is free
    assert basic.de_read_share == 0.0 and basic.delivered["de_snic"] == 0.0
    lp_fraction = runner.bound_limits(sc, traj)  # the split reads every request at the LP's DE fraction
    from dualpath_plan.bounds.lp import solve
    assert split.de_read_share == pytest.approx(solve(lp_fraction, "dualpath").de_read_fraction, rel=1e-9)


def test_the_same_seed_gives_the_same_json():
    sc, traj = tiny_scenario(), tiny_traj(16, 5)
    online = runner.OnlineSpec(aps=4.0)

    def dump():
        runs = {"dualpath": runner.run(sc, traj, "dualpath", online=online, options=runner.SimOptions(seed=3))}
        data = to_json(sc, traj, runs)
        return json.dumps({k: v for k, v in data.items() if k not in ("wall_s", "sim_s_per_wall_s")}, sort_keys=True)

    assert dump() == dump()


@pytest.mark.parametrize(("agents", "rounds", "tol"), [(256, 20, DT_REL_TOL_LOADED), (96, 12, DT_REL_TOL_LATENCY_BOUND)])
def test_halving_dt_changes_jct_little(agents, rounds, tol):
    sc, traj = tiny_scenario(), tiny_traj(agents, rounds)
    coarse = runner.run(sc, traj, "dualpath", options=runner.SimOptions(dt_s=runner.DT_S))
    fine = runner.run(sc, traj, "dualpath", options=runner.SimOptions(dt_s=runner.DT_S / 2))
    assert abs(coarse.jct_s / fine.jct_s - 1) < tol


def test_saturated_dualpath_reaches_the_bound_in_steady_state():
    r = runner.run(tiny_scenario(), tiny_traj(256, 20), "dualpath")
    assert r.steady_over_window_bound >= STEADY_SHARE
    assert r.de_read_share == pytest.approx(2 / 3, abs=0.05)  # the LP's split for 1 PE node and 2 DE nodes


def test_online_runs_report_latencies_and_the_slo():
    r = runner.run(tiny_scenario(), tiny_traj(40, 5), "dualpath", online=runner.OnlineSpec(aps=8.0))
    assert r.mode == "online" and r.jct_s is None and r.slo_met in (True, False)
    assert 0 < r.ttft.p50_s <= r.ttft.p99_s and 0 < r.tpot.mean_s < 0.05 and r.ttst.mean_s >= r.tpot.mean_s  # one step at least, after the first token


def test_an_idle_cluster_jumps_to_the_next_arrival():
    """Arrivals a day apart: the clock passes the idle time in whole-step jumps (stepping through it
    would take 1.7 million steps per gap), and the same turns get the same latencies as close arrivals."""
    sc, traj = tiny_scenario(), tiny_traj(3, 2)
    slow = runner.run(sc, traj, "dualpath", online=runner.OnlineSpec(aps=1 / 86_400))
    assert slow.sim_s > 86_400 and slow.records.done.size == traj.n_rounds and np.isfinite(slow.records.done).all()
    assert slow.ttft.p99_s < 10 and np.isfinite(slow.snic_max_over_avg)


def test_an_idle_span_leaves_no_empty_windows():
    meter = Meter(build_layout(tiny_scenario()), 3.0)
    n = meter.read_bytes.size
    meter.span(0.0, 1e9, np.zeros(meter.used.size), np.zeros(n), 0.0, 10**9, [0.0] * meter.stage_time.size)
    assert meter.windows == [] and meter.snic_max_over_avg() is None  # no traffic at all


def test_capacity_search_brackets_the_slo():
    cap = runner.find_capacity(tiny_scenario(), tiny_traj(24, 4), "dualpath", slo=runner.OnlineSpec(aps=1.0), rel_tol=0.25, max_probes=4)
    assert 0 < len(cap.probes) <= 4 and 0 <= cap.aps < cap.bound_aps
    assert all(ok == (aps <= cap.aps) for aps, ok in cap.probes)


def test_a_request_over_the_quota_is_prefilled_in_chunks_and_charged_at_least_its_flops():
    traj = tiny_traj(2, 2, prefix=150_000)  # 150k new tokens: ~1.7 s of predicted attention, over the 300 ms quota
    r = runner.run(tiny_scenario(), traj, "dualpath")
    m = tiny_scenario().model
    assert r.demanded["prefill_compute"] > prefill_flops(m, traj.context_tokens, traj.append_tokens).sum()
    assert r.delivered["prefill_compute"] == pytest.approx(r.demanded["prefill_compute"], rel=REL_CONSERVATION)


def test_bad_inputs_are_one_line_errors():
    sc, traj = tiny_scenario(), tiny_traj(2, 2)
    with pytest.raises(PlanError, match="--policy 'nope'") as err:
        runner.run(sc, traj, "nope")
    assert err.value.exit_code == 2
    with pytest.raises(PlanError, match="--dt-ms = 0 ms is not allowed") as err:
        runner.SimOptions(dt_s=0.0)
    with pytest.raises(PlanError, match="needs --online"):
        runner.online_spec(False, 1.0, 4.0, 0.05, False, 1)
    with pytest.raises(PlanError, match="decode HBM") as err:
        runner.run(sc, tiny_traj(1, 2, prefix=10_000_000), "dualpath")
    assert err.value.exit_code == 1


@pytest.mark.slow
def test_split_reads_under_a_full_buffer_do_not_deadlock():
    """Both parts of a split read are admitted together (Engine._offer_pair): with the buffer holding about two
    requests on a 2P2D cluster, part-by-part admission deadlocked here (a stall error); now every turn completes."""
    sc = tiny_scenario(P=2, D=2)
    traj = tiny_traj(64, 6, prefix=4000, seed=2)
    r = runner.run(sc, traj, "split", options=runner.SimOptions(buffer_bytes=8000 * sc.model.kv_bytes_per_token, engine="python"))
    assert r.turns == traj.n_rounds and max(r.leftover.values()) == pytest.approx(0.0, abs=1e-6)  # bytes: sums of floats
    assert 0.0 < r.de_read_share < 1.0


# --- the scheduler on small clusters ------------------------------------------------------------------------

@pytest.mark.parametrize("P, D, agents, least", [(1, 1, 1024, 0.95), (2, 1, 1024, 0.95), (3, 3, 2048, 0.9)])
@pytest.mark.slow
def test_small_clusters_use_both_read_paths_as_the_bound_splits_them(P, D, agents, least):
    """Reads on both paths share the DE buffer; granted in the order reads start, the decode side's storage NICs
    carry the bound's share even when D <= P (the PE side used to take every freed byte: 7 % DE reads on 1P1D
    at 1,024 agents where the bound splits 50 %, and 73 of 141 turns/s). Throughput is compared in the steady
    window, while the cluster is loaded: over the whole run the longest agents' tail, when few agents are left,
    costs 16-37 % whatever the scheduler does (the data set's longest trajectories have 8x the mean turns). The
    share is over the whole run, tail included, hence 0.04. 3P3D gets 2,048 agents: the decode all-to-all's
    measured intercept (DeepEP's low-latency kernels, about 52 us per layer) makes its small decode batches
    slower, and 1,024 closed-loop agents no longer keep six nodes loaded (0.73 of the bound at 1,024, 0.97 at
    2,048: Little's law, not the scheduler)."""
    sc = build_scenario("hopper", model="ds-27b", P=P, D=D)
    traj = synthesize(sc.workload, agents, np.random.default_rng(1))
    r = runner.run(sc, traj, "dualpath", options=runner.SimOptions(engine="compiled"))
    split = lp.solve(lp.limits_of(sc), "dualpath").de_read_fraction
    assert r.de_read_share == pytest.approx(split, abs=0.04)
    assert r.steady_over_window_bound >= least


# --- the paper's online method ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_find_capacity_on_the_papers_cluster_finds_a_rate_the_slo_confirms_and_1_2x_breaks():
    """Poisson arrivals until the steady-state horizon, each agent replayed from its first round: the search on
    2P4D with every default loads the cluster (it used to end with every probe within the SLO, the run too short)."""
    from dualpath_plan import api

    sc = api.scenario("hopper", P=2, D=4)
    cap = api.find_capacity(sc, engine="compiled").capacity
    assert cap.aps > 0 and cap.result is not None and cap.result.agents > 1024  # the horizon, not --agents, set the count
    at = api.simulate(sc, online=True, aps=cap.aps, engine="compiled").runs["dualpath"]
    over = api.simulate(sc, online=True, aps=1.2 * cap.aps, engine="compiled").runs["dualpath"]
    assert at.slo_met and not over.slo_met
    assert at.agents == cap.result.agents  # the same arrivals as the search's probe at that rate


def test_find_capacity_refuses_an_agent_count():
    with pytest.raises(PlanError, match="--agents = 64 agents is not allowed with --find-capacity"):
        runner.capacity_source(catalog().get("workload", "agentic-64k"), 64, None)


def test_the_online_horizon_puts_the_population_within_1_percent_of_steady_state_over_the_window():
    """Half the horizon is the t with E[min(L, t)] = 0.99 E[L] over the agents' lifetimes at the SLO (Little's law);
    equal lifetimes give t = 0.99 L."""
    from dualpath_plan.model.workload import Trajectories, dataset

    slo = runner.OnlineSpec(aps=1.0)
    data = dataset(build_scenario("hopper").workload)
    life = (data.rounds_per_agent * slo.ttft_slo_s + np.add.reduceat(data.gen_tokens, data.offsets[:-1]) * slo.tpot_slo_s).astype(float)
    t = runner.steady_horizon_s(data, slo) / 2
    assert np.minimum(life, t).mean() == pytest.approx(0.99 * life.mean(), rel=1e-9)
    assert t > 2.5 * life.mean()  # the data set's spread: two mean lifetimes would be far from steady
    same = Trajectories(np.full(6, 10), np.full(6, 4), np.array([0, 3, 6]), "two equal agents")
    one = 3 * slo.ttft_slo_s + 12 * slo.tpot_slo_s
    assert runner.steady_horizon_s(same, slo) == pytest.approx(2 * 0.99 * one, rel=1e-12)


def test_a_run_s_decode_steps_take_the_bound_s_mtp_setting():
    from dualpath_plan.bounds.lp import BoundOptions

    sc = build_scenario("hopper", model="ds-v3", P=4, D=4)
    options = runner.SimOptions(mtp=1)
    mtp = options.bound_options(None).decode.mtp_for(sc.model)
    layout = build_layout(sc, mtp=mtp)
    assert layout.decode_step.mtp.drafts == 1 and layout.decode_step.mtp.accepted == pytest.approx(1.85)
    assert runner.SimOptions.of(BoundOptions.parse(mtp=1)).mtp == 1
    with pytest.raises(PlanError, match="ships no multi-token-prediction module"):
        runner.run(tiny_scenario(), tiny_traj(4, 2), "dualpath", options=runner.SimOptions(mtp=1, engine="python"))


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_run_says_what_it_will_cost_before_it_starts(engine):
    """``on_start``: the turns it serves, the engine that plays them, and the wall time that engine's measured rate gives."""
    from dualpath_plan.sim.compiled import run as compiled_run

    seen = []
    sc, traj = tiny_scenario(), tiny_traj(4, 3)
    runner.run(sc, traj, "dualpath", options=runner.SimOptions(engine=engine), on_start=seen.append)
    (cost,) = seen
    assert cost.turns == traj.n_rounds and cost.engine == engine and cost.sim_s > 0
    assert cost.wall_s == compiled_run.estimate_s(engine, cost.turns, cost.sim_s, runner.SimOptions().dt_s)


def test_the_largest_round_is_found_across_slices(monkeypatch):
    """``_most``: the largest per-round sum, taken a slice of CHUNK_TURNS rounds at a time (here 3)."""
    monkeypatch.setattr(runner, "CHUNK_TURNS", 3)
    a, b = np.array([1, 9, 2, 4, 4, 1, 8]), np.array([5, 0, 1, 6, 7, 0, 2])
    assert runner._most(a, b) == 11 and runner._most(a) == 9


@pytest.mark.parametrize("online", [False, True])
def test_the_latencies_beside_the_window_bound_are_those_taken_after_it(online, monkeypatch):
    """A run of any size computes its latencies in a second thread beside the steady window's bound once its turns
    pass BIG_ROWS (here 0, so this small run does): the same JSON as computed after the bound, offline and online."""
    sc, traj = tiny_scenario(), tiny_traj(16, 5)
    spec = runner.OnlineSpec(aps=4.0) if online else None

    def dump():
        runs = {"dualpath": runner.run(sc, traj, "dualpath", online=spec, options=runner.SimOptions(seed=3))}
        data = to_json(sc, traj, runs)
        return json.dumps({k: v for k, v in data.items() if k not in ("wall_s", "sim_s_per_wall_s")}, sort_keys=True)

    after = dump()
    monkeypatch.setattr(runner, "BIG_ROWS", 0)
    assert dump() == after


def test_an_error_of_the_window_bound_is_reported_over_one_of_the_latencies(monkeypatch):
    """What the steady window's bound raises is what the run raises, after the latencies' thread has ended."""
    monkeypatch.setattr(runner, "BIG_ROWS", 0)
    monkeypatch.setattr(runner, "_window_bound", lambda *args: (_ for _ in ()).throw(PlanError("the bound failed", 1)))
    monkeypatch.setattr(runner.TurnRecords, "latencies", lambda *args: (_ for _ in ()).throw(ValueError("the latencies failed")))
    with pytest.raises(PlanError, match="the bound failed"):
        runner.run(tiny_scenario(), tiny_traj(4, 3), "dualpath")
