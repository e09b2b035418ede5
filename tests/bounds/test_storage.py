"""The storage cluster's physics: the KV it keeps (Little's law) and the nodes each limit needs (bounds/storage.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dualpath_plan.bounds import storage
from dualpath_plan.bounds.decode import DecodeRate
from dualpath_plan.model.cluster import StorageSide
from dualpath_plan.model.profiles import catalog

MODEL = catalog().get("model", "ds-v3.2")
TURN = replace(catalog().get("workload", "agentic-64k"), context_tokens=30_000.0, append_tokens=1_000.0, gen_tokens=500.0,
               total_tokens=60_000.0, tool_s=None)
RATE = DecodeRate(tokens_per_gpu_s=2_000.0, batch_per_gpu=40.0, step_s=0.02, weight_share_bytes=1e9, kv_read_bytes_per_seq=1e6,
                  kv_held_bytes_per_seq=1e9, limited_by="tpot_slo")


def test_a_turn_decodes_its_tokens_at_one_sequence_s_share_of_the_gpu():
    assert storage.turn_decode_s(500.0, RATE) == pytest.approx(500 * 40 / 2_000)  # 10 s
    assert storage.turn_decode_s(500.0, replace(RATE, batch_per_gpu=None)) == 0.0  # a calibrated figure models no batch


def test_kept_kv_is_the_context_after_a_turn_over_its_life():
    """k = kv * ((context + append + gen) * (t_turn + t_tool) + total * t_keep / turns)."""
    kv, held = MODEL.kv_bytes_per_token, 31_500.0
    assert storage.kept_bytes_s_per_turn(MODEL, TURN, RATE, 100.0, 0.0) == pytest.approx(kv * held * 10.0)
    with_tool = replace(TURN, tool_s=5.0)
    assert storage.kept_bytes_s_per_turn(MODEL, with_tool, RATE, 100.0, 3600.0) == pytest.approx(kv * (held * 15.0 + 60_000 * 36.0))


def test_nodes_needed_round_up_each_limit_to_whole_nodes():
    side = StorageSide("test", None, read_Bps=40e9, write_Bps=10e9, usable_bytes=1e14)
    need = storage.nodes_needed(side, read_Bps=400e9, write_Bps=10.5e9, kept_bytes=0.0)
    assert need == {"storage_read": 10, "storage_write": 2, "storage_capacity": 0, "copies": 1}  # nothing kept needs no node


def test_each_copy_needs_a_node_of_its_own():
    side = StorageSide("test", None, read_Bps=40e9, write_Bps=10e9, usable_bytes=1e14, replicas=3)
    need = storage.nodes_needed(side, read_Bps=40e9, write_Bps=1e9, kept_bytes=1e12)  # one node's worth of each load
    assert need["copies"] == 3 and max(need.values()) == 3
