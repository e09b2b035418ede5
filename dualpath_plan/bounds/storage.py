"""The storage cluster behind the storage NICs: the KV it must keep, and how many storage nodes a bound needs.

**Bandwidth.** Every byte a storage NIC reads is served by the storage nodes, and every byte a decode node's SNIC
writes back is persisted by them (``symbolic.STORAGE_OF``), so the storage cluster's read side carries
``R_p + R_d`` and its write side ``omega*(R_p + R_d)`` (``_generated.STORAGE_LOAD_COEFFS``), against ``N_s*S_r``
and ``N_s*S_w`` (``model.profiles.Storage.read_Bps``, ``write_Bps``: the slower of a node's ports at their measured
share of line rate and its SSDs; writes over the copies). Both lines are flat in the read split, so they cap the
total KV rate whatever DualPath does, and with both SNICs saturated they give range (9) a storage end,
``P/D <= n_s*S_r/(s*B) - 1`` (``symbolic.storage_linear_forms``; ``n_s`` storage nodes per decode node).

**Capacity.** The storage keeps the KV of every live agent. By Little's law the agents alive at a throughput of
``X`` turns/s are ``X/turns`` agents/s times an agent's life: per turn, its residence ``t_turn`` and the tool time
after it ``t_tool``, plus ``t_keep`` after its last turn (``--storage-retention-s``). During a turn and the tool time
after it, an agent holds its whole context after the turn (context, appended and generated tokens, written back at
its end); kept after its last turn, its final length. So the KV kept is ``X * k`` with

    k = kv * ((context + append + gen) * (t_turn + t_tool) + total * t_keep / turns)    [byte-seconds per turn]

and the constraint ``X * k <= N_s * U`` (``U`` usable bytes per node) joins the LP with its shadow price.
``t_turn`` is a turn's decode time at the bound's decode rate, ``gen * batch / tokens_per_gpu_s`` (one token per
sequence per step; with multi-token prediction, the accepted tokens): a lower bound, as prefill, reads and queues
come on top, so the row is a necessary condition and the bound stays a bound. A calibrated decode figure models
no batch: ``t_turn`` is then 0.
"""

from __future__ import annotations

import math

from dualpath_plan.bounds.decode import DecodeRate
from dualpath_plan.model.cluster import StorageSide
from dualpath_plan.model.profiles import Model, Workload

COPIES = "copies"  # nodes_needed's key for the nodes a storage profile's copies need


def turn_decode_s(gen_tokens: float, rate: DecodeRate | None) -> float:
    """A turn's decode time at ``rate``, seconds: ``gen * batch / tokens_per_gpu_s`` (0 without a modelled batch)."""
    if rate is None or rate.batch_per_gpu is None or rate.tokens_per_gpu_s <= 0:
        return 0.0
    return gen_tokens * rate.batch_per_gpu / rate.tokens_per_gpu_s


def kept_bytes_s_per_turn(model: Model, turn: Workload, rate: DecodeRate | None, turns_per_agent: float, retention_s: float) -> float:
    """``k``: bytes the storage keeps per turn/s of throughput, byte-seconds per turn (module docstring).

    ``turn``: the mean turn (context, append, gen tokens, tool time); its ``total_tokens`` is an agent's final length."""
    held = turn.context_tokens + turn.append_tokens + turn.gen_tokens
    tool = turn.tool_s or 0.0
    live = held * (turn_decode_s(turn.gen_tokens, rate) + tool) + turn.total_tokens * retention_s / turns_per_agent
    return model.kv_bytes_per_token * live


def nodes_needed(side: StorageSide, read_Bps: float, write_Bps: float, kept_bytes: float) -> dict[str, int]:
    """Storage nodes of ``side``'s profile each storage limit needs to carry the given loads (read and write bytes/s,
    KV kept in bytes), by limit name, and under ``copies`` the nodes its copies need (each copy of a byte on its own
    node: 3FS's chain replication puts a chain's targets on distinct nodes, Ceph's CRUSH rule its replicas on distinct
    hosts); the cluster needs the largest."""
    return {
        "storage_read": _whole(read_Bps / side.read_Bps),
        "storage_write": _whole(write_Bps / side.write_Bps),
        "storage_capacity": _whole(kept_bytes / side.usable_bytes),
        COPIES: side.replicas,
    }


def _whole(nodes: float) -> int:
    """The fewest whole nodes carrying ``nodes`` nodes' worth of load (a relative 1e-9 of rounding forgiven; 0 for none)."""
    return math.ceil(nodes * (1 - 1e-9))
