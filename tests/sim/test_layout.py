"""The runner's layout (sim.layout): here the DRAM buffer each node gets for KV in transit."""

from __future__ import annotations

import numpy as np
import pytest

from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.sim.layout import BUFFER_FLOOR_BYTES, BUFFER_HOLD_S, build_layout, de_buffer_inflow_Bps, default_buffer_bytes

SNIC_BPS = 400e9 / 8  # Hopper: one 400 Gb/s storage NIC per node


def test_the_paper_setting_keeps_the_papers_80_gb_and_its_hold_time():
    assert BUFFER_HOLD_S == pytest.approx(80e9 / (6 * SNIC_BPS / 4))  # 80 GB over 75 GB/s
    layout = build_layout(build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=2, D=4))
    assert layout.buffer_bytes == BUFFER_FLOOR_BYTES


@pytest.mark.parametrize(("P", "D", "gb"), [(12, 4, 213.33), (27, 9, 213.33), (48, 96, 80.0), (3, 3, 106.67)])
def test_the_buffer_holds_the_papers_time_of_the_decode_nodes_inflow(P, D, gb):
    """12 prefill and 4 decode nodes send the decode buffers 16 x 50 GB/s / 4 = 200 GB/s, 1.07 s of which is 213 GB."""
    sc = build_scenario("hopper", model="ds-v3.2", workload="agentic-64k", P=P, D=D)
    assert de_buffer_inflow_Bps(P, D, SNIC_BPS, SNIC_BPS) == pytest.approx((P + D) * SNIC_BPS / D)
    assert build_layout(sc).buffer_bytes / 1e9 == pytest.approx(gb, abs=0.01)


def test_a_large_kv_model_keeps_the_papers_token_count():
    """Qwen 32B's 320 GB (paper A.4) is 1.22 M tokens of its 256 KiB/token KV: more than the hold time asks at 1P2D."""
    sc = build_scenario("hopper", model="qwen2.5-32b", workload="agentic-64k", P=1, D=2)
    assert build_layout(sc).buffer_bytes == pytest.approx(320e9)
    assert default_buffer_bytes(sc.model, 1, 2, SNIC_BPS, SNIC_BPS) == pytest.approx(320e9)


@pytest.mark.parametrize("model", ["ds-v3.2", "ds-v3", "gpt-oss-120b"])
def test_a_run_charges_decode_attention_as_the_bound_does(model):
    """The engines' per-sequence attention seconds (layout.decode_attn_seconds) are the bound's (decode.attention_s)."""
    from dualpath_plan.bounds.decode import attention_s
    from dualpath_plan.model.scenario import build_scenario
    from dualpath_plan.sim.layout import build_layout, decode_attn_seconds

    sc = build_scenario("hopper", model=model, P=4, D=4)
    L = build_layout(sc)
    ctx = np.array([100.0, 2048.0, 30_000.0, 120_000.0])
    got = decode_attn_seconds(L, sc.model.sparse_topk_tokens, ctx)
    assert got.tolist() == pytest.approx([attention_s(sc.model, sc.de_hw, c) for c in ctx.tolist()], rel=1e-12)
