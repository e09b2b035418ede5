"""The scheduler's rules (paper section 6, A.4), each on a hand-made engine state."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from dualpath_plan.sim.python import policies as pol
from dualpath_plan.sim.python.policies import POLICIES, Fetch, SchedView
from dualpath_plan.sim.rules import FEATURES, PolicyName

BETA = 100.0


# --- Algorithm 1: classes and PE choice ---------------------------------------------------------------------

@pytest.mark.parametrize(("tok", "read_q", "expected"), [
    (101.0, 0.0, 1),  # tok > beta: overloaded, whatever the read queue
    (100.0, 10.0, 2),  # tok == beta is not overloaded; read queue == alpha is short
    (0.0, 10.1, 3),  # read queue above alpha
])
def test_pe_class_boundaries(tok, read_q, expected):
    assert pol.pe_class(tok, read_q, alpha=10.0, beta=BETA) == expected


def test_c2_engines_are_preferred_even_with_more_tokens():
    # engine 0 is on a node with a long read queue (C3) and fewer tokens; engine 1 is C2
    picks = pol.assign_pe([5.0], tok=[0.0, 50.0], read_q=[20.0, 0.0], alpha=[10.0, 10.0], beta=BETA)
    assert picks == [1]


def test_c3_is_used_only_when_c2_is_empty():
    # engine 0 is C2 with 90 tokens, engine 1 is C3 with none: C2 keeps winning while it stays under beta
    assert pol.assign_pe([5.0, 5.0], tok=[90.0, 0.0], read_q=[0.0, 20.0], alpha=[10.0, 10.0], beta=BETA) == [0, 0]
    # the first request takes engine 0 to 110 > beta (C1): the second falls back to C3
    assert pol.assign_pe([20.0, 5.0], tok=[90.0, 0.0], read_q=[0.0, 20.0], alpha=[10.0, 10.0], beta=BETA) == [0, 1]


def test_argmin_tokens_with_ties_to_the_lowest_index():
    # tokens 40,10,10: engine 1 (tie with 2, lower index) -> 40,40,10: engine 2 -> 40,40,40: engine 0 -> 70,40,40 ...
    picks = pol.assign_pe([30.0] * 5, tok=[40.0, 10.0, 10.0], read_q=[0, 0, 0], alpha=[1, 1, 1], beta=BETA)
    assert picks == [1, 2, 0, 1, 2]


def test_the_fetch_ends_when_every_engine_is_overloaded():
    # an engine stays eligible while tok <= beta: 0, 30, 60, 90 -> four requests each, the fourth taking it to 120
    assert len(pol.assign_pe([30.0] * 50, tok=[0.0, 0.0], read_q=[0, 0], alpha=[1, 1], beta=BETA)) == 8


# --- DE phase 2: threshold, HBM fit, choice ---------------------------------------------------------------------

def test_threshold_counts_only_the_head_requests_that_fit_the_groups_free_hbm():
    # free 10 + 5 = 15 bytes: needs 6, 6 fit (12); the third (6) would need 18 -> R = first two
    z = pol.de_threshold(free=[10.0, 5.0], tok=[100.0, 300.0], needs=[6.0, 6.0, 6.0], lengths=[50.0, 70.0, 1000.0])
    assert z == pytest.approx(1.05 * (50 + 70 + 100 + 300) / 2)


def test_pick_de_prefers_low_token_engines_by_fewest_requests():
    # z = 200: engine 0 (tok 150 + 40 <= 200, seq 3), engine 1 (tok 20 + 40, seq 5), engine 2 (tok 190 + 40 > z)
    choice = pol.pick_de(need=1.0, length=40.0, free=[10, 10, 10], tok=[150, 20, 190], seq=[3, 5, 0], z=200.0)
    assert choice == 0  # fewest requests among the non-high-token ones, not fewest tokens


def test_pick_de_falls_back_to_fewest_tokens_when_every_engine_is_high():
    choice = pol.pick_de(need=1.0, length=40.0, free=[10, 10], tok=[300, 250], seq=[0, 9], z=200.0)
    assert choice == 1


def test_pick_de_checks_hbm_fit_first():
    assert pol.pick_de(need=8.0, length=1.0, free=[5, 9], tok=[0, 500], seq=[0, 0], z=10.0) == 1
    assert pol.pick_de(need=10.0, length=1.0, free=[5, 9], tok=[0, 0], seq=[0, 0], z=10.0) is None


def test_assign_de_stops_at_the_first_request_that_fits_nowhere():
    picks = pol.assign_de(needs=[4.0, 4.0, 4.0], lengths=[10.0, 10.0, 10.0], free=[5.0, 5.0], tok=[0.0, 0.0], seq=[0, 0])
    assert picks == [0, 1]  # each engine takes one; the third needs 4 > 1 left anywhere


# --- read side, quota and chunking -------------------------------------------------------------------------

@pytest.mark.parametrize(("pe_q", "de_q", "frac"), [(10.0, 5.0, 1.0), (5.0, 10.0, 0.0), (7.0, 7.0, 0.0)])
def test_read_goes_to_the_shorter_queue_ties_to_the_pe(pe_q, de_q, frac):
    assert pol.read_side(pe_q, de_q) == frac


def test_largest_chunk_is_the_binary_search_of_a_monotone_cost():
    cost = lambda b: 0.003 * b + 1e-7 * b * b  # noqa: E731 (any non-decreasing cost)
    for budget in (0.0, 0.01, 0.3, 5.0):
        best = max([b for b in range(2001) if cost(b) <= budget], default=0)
        assert pol.largest_chunk(cost, 2000, budget) == best


def test_batch_fills_the_quota_and_chunks_the_request_that_does_not_fit():
    tick = 2.0**-10  # seconds per token whatever the context (a power of two: exact sums)
    attn = lambda cached, b: tick * b  # noqa: E731
    queue = [(1, 0.0, 100), (2, 0.0, 150), (3, 0.0, 400), (4, 0.0, 10)]
    batch = pol.batch_by_quota(queue, attn, quota_s=300 * tick)
    assert batch == [(1, 100), (2, 150), (3, 50)]  # 100 + 150 tokens, then 50 of request 3 fill the quota; 4 waits


def test_a_lone_request_too_big_for_the_quota_still_progresses():
    attn = lambda cached, b: 1.0 * b  # noqa: E731: one token alone takes 1 s > quota
    assert pol.batch_by_quota([(7, 0.0, 30)], attn, quota_s=0.3) == [(7, 1)]


def test_basic_batches_every_ready_request_whole():
    assert pol.batch_all([(1, 0.0, 5), (2, 3.0, 7)]) == [(1, 5), (2, 7)]


# --- policies on a hand-made scheduler view ----------------------------------------------------------------

def _view(pe_wait=(), de_wait=(), P=1, D=2, g=2, read_q=None) -> SchedView:
    n = 16
    return SchedView(
        g_pe=g, g_de=g, P=P, D=D, pe_tok=[0.0] * (P * g), pe_seq=[0] * (P * g), de_tok=[0.0] * (D * g), de_seq=[0] * (D * g),
        de_free=[100.0] * (D * g), group_queued=[0.0] * D, read_q=np.array(read_q if read_q is not None else [0.0] * (P + D)),
        alpha=np.full(P + D, 1e9), beta=BETA, length=np.full(n, 10.0), hit=np.full(n, 8.0), need=np.full(n, 30.0),
        pe_of=np.zeros(n, dtype=np.int64), pe_wait=deque(pe_wait), de_wait=deque(de_wait), de_private=[deque() for _ in range(D)],
        arrive=np.arange(n, dtype=float),  # request r arrived at r seconds
    )


@pytest.mark.parametrize("policy", [pol.dualpath, pol.basic])
def test_a_pe_fetch_takes_only_the_requests_that_had_arrived_by_the_time_it_sees(policy):
    """A PE fetch takes the head of the prefill queue that had arrived by the time it sees (one step before it was due)."""
    view = _view(pe_wait=[5, 6, 7, 8])
    assert [req for req, _ in policy(view, Fetch("pe", 0, seen=6.5)).pe] == [5, 6]
    assert policy(view, Fetch("pe", 0, seen=4.0)).pe == []
    assert [req for req, _ in policy(view, Fetch("pe", 0)).pe] == [5, 6, 7, 8]  # nothing unseen: the whole queue


def test_dualpath_pe_fetch_assigns_the_fifo_head_to_the_fetching_groups_engines():
    view = _view(pe_wait=[5, 6, 7])
    dec = pol.dualpath(view, Fetch("pe", 0))
    assert [r for r, _ in dec.pe] == [5, 6, 7]
    assert [e for _, e in dec.pe] == [0, 1, 0]  # least tokens, ties to the lowest index


def test_dualpath_de_fetch_drains_to_the_least_loaded_group_then_places_with_the_z_threshold():
    view = _view(de_wait=[1, 2, 3])
    view.de_tok = [40.0, 0.0, 0.0, 0.0]  # group 0 (DEs 0, 1) already carries 40 tokens, group 1 none
    dec = pol.dualpath(view, Fetch("de", 1))
    assert dec.to_group == [(1, 1), (2, 1), (3, 1)]  # group 1 stays lighter: 0, 10, 20 < 40
    # Z = 1.05 * (30 + 0) / 2 = 15.75: request 1 -> DE 2 (tie, lower index); request 2: DE 2 would be 20 > Z,
    # so DE 3; request 3: both are high-token (20 > Z) -> fewest tokens, tie -> DE 2
    assert [(r, de) for r, de, _ in dec.de] == [(1, 2), (2, 3), (3, 2)]


def test_read_side_uses_queues_updated_within_the_fetch():
    view = _view(de_wait=[1, 2, 3], read_q=[20.0, 0.0, 10.0])  # PE node 20 tokens, DE node of group 1: 10
    view.de_tok = [40.0, 0.0, 0.0, 0.0]  # all three go to group 1
    dec = pol.dualpath(view, Fetch("de", 1))
    # 10 < 20 -> DE (now 18); 18 < 20 -> DE (26); 26 > 20 -> PE
    assert [frac for *_, frac in dec.de] == [1.0, 1.0, 0.0]


def test_phase2_needs_hbm():
    view = _view(de_wait=[1, 2, 3])
    view.de_tok = [40.0, 0.0, 0.0, 0.0]  # all three go to group 1
    view.de_free = [100.0, 100.0, 40.0, 20.0]  # group 1 has room for one request of 30 bytes, on DE 2 only
    dec = pol.dualpath(view, Fetch("de", 1))
    assert [(r, de) for r, de, _ in dec.de] == [(1, 2)]  # the second fits nowhere: the fetch ends


def test_framework_policies_take_pes_in_turn_and_alternate_read_sides():
    view = _view(pe_wait=[1, 2, 3])
    dec = pol.basic(view, Fetch("pe", 0))
    assert [e for _, e in dec.pe] == [0, 1, 0] and dec.rr["pe"] == 1
    view = _view(de_wait=[1, 2, 3])
    dec = pol.dualpath_rr(view, Fetch("de", 0))
    assert [(de, frac) for _, de, frac in dec.de] == [(0, 0.0), (1, 1.0), (2, 0.0)] and dec.de_source == "global"
    assert all(frac == 0.0 for *_, frac in pol.basic(_view(de_wait=[1, 2]), Fetch("de", 0)).de)


def test_framework_policies_place_decode_on_the_de_with_fewest_tokens():
    view = _view(de_wait=[1, 2, 3])
    view.de_tok = [25.0, 0.0, 12.0, 30.0]  # every request is 10 tokens: DE 1 (0 -> 10), DE 1 (10 -> 20), DE 2 (12)
    assert [de for _, de, _ in pol.basic(view, Fetch("de", 1)).de] == [1, 1, 2]  # any fetching group: no groups


def test_least_tokens_counts_the_requests_placed_before_and_breaks_ties_to_the_lowest_index():
    assert pol.least_tokens([5.0, 5.0, 5.0, 20.0], tok=[10.0, 10.0, 0.0]) == [2, 2, 0, 1]
    assert pol.least_tokens([], tok=[1.0]) == []


def test_split_reads_at_the_lp_fraction():
    view = _view(de_wait=[1])
    view.de_fraction = 0.6
    assert [frac for *_, frac in pol.split(view, Fetch("de", 0)).de] == [0.6]


def test_every_policy_name_has_a_function_and_features():
    assert set(POLICIES) == set(PolicyName) == set(FEATURES)
    assert FEATURES[PolicyName.BASIC].layerwise is False and FEATURES[PolicyName.ORACLE].io_free is True
    assert {FEATURES[p].lp_mode for p in PolicyName} == {"basic", "dualpath", "oracle"}
