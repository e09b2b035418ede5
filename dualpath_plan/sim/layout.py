"""Static layout of a simulated cluster: resource instances, capacities, byte routes, per-token physics.

Every resource of the bandwidth model exists once per node (SNIC, DRAM) or once per GPU (CNIC
directions), plus one prefill-compute resource per prefill engine (one engine = one GPU, paper §4.2).
Instances are numbered kind by kind in :data:`KINDS` order (``Layout.start``); instance ``start[kind]
+ i`` is node or GPU ``i`` of that kind's side.

**Routes.** A byte moved by one stage of a request crosses the resources of the paper's per-hop path
tables (Fig. 4a/4b, restated as ``symbolic.PE_PATH``, ``DE_PATH``, ``MISS_PATH`` and
``WRITEBACK_PATH``). :data:`ROUTES` splits those hops by the stage that moves them, and names where
each resource sits (the PE's node or GPU, the DE's node or GPU). The runner charges bytes along
these routes only; a test checks that summing the routes per path gives the symbolic path sums, so
the runner and the LP load the same links per byte.

**Physics.** :func:`decode_read_bytes` is the numpy twin of ``decode.kv_bytes`` (which takes scalars); a
test checks that they agree. A turn's prefill FLOP and saturated pass seconds are the LP's own
(``compute.turn_flops``, ``compute.turn_prefill_seconds``); :func:`attention_flops` is the attention part of
the former. What a pass and a
step cost in time is ``steptime`` (``Layout.prefill_pass``, ``Layout.decode_step``), the functions the LP
uses too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualpath_plan.bounds._generated import RESOURCES, UNIT_CAPACITY
from dualpath_plan.bounds.compute import prefill_instance_gpus, prefill_pass, resolve_dtype
from dualpath_plan.bounds.steptime import NO_MTP, DecodeStep, Mtp, PrefillPass, attention_coefficients, decode_attention_seconds, weight_share_bytes
from dualpath_plan.bounds.decode import kv_bytes
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import Hardware, Model
from dualpath_plan.model.scenario import Scenario
from dualpath_plan.model.units import GB

COMPUTE = "prefill_compute"
KINDS = (*RESOURCES, COMPUTE)
GPU_KINDS = frozenset(k for k in KINDS if "cnic" in k or k == COMPUTE)

# Where a resource of a route sits: the prefill engine's node or GPU, or the decode engine's.
PE_NODE, PE_GPU, DE_NODE, DE_GPU = "pe_node", "pe_gpu", "de_node", "de_gpu"
_ONE = (PE_NODE, PE_GPU, DE_NODE, DE_GPU)

ROUTES: dict[str, tuple[tuple[str, str, int], ...]] = {
    # PE path 1-2: storage -> PE SNIC -> PE buffer.
    "read_pe": (("pe_snic", PE_NODE, 1), ("pe_dram", PE_NODE, 1)),
    # DE path 1-2: storage -> DE SNIC -> DE buffer.
    "read_de": (("de_snic", DE_NODE, 1), ("de_dram", DE_NODE, 1)),
    # PE path 3-4: PE buffer -> PE CNIC (DMA read) -> loopback H2D into PE HBM.
    "stream_pe": (("pe_dram", PE_NODE, 1), ("pe_cnic_read", PE_GPU, 1), ("pe_cnic_write", PE_GPU, 1)),
    # DE path 3-5: DE buffer -> DE CNIC -> network -> PE CNIC -> PE HBM.
    "stream_de": (("de_dram", DE_NODE, 1), ("de_cnic_read", DE_GPU, 1), ("pe_cnic_write", PE_GPU, 1)),
    # PE path 5-7 (hit + miss KV) and the DE path's unlabelled miss-KV hop: PE HBM -> DE buffer.
    "kv_out": (("pe_cnic_read", PE_GPU, 1), ("de_cnic_write", DE_GPU, 1), ("de_dram", DE_NODE, 1)),
    # PE path 8-9 / DE path 6-7: DE buffer -> DE CNIC -> DE HBM at decode start.
    "h2d": (("de_dram", DE_NODE, 1), ("de_cnic_read", DE_GPU, 1), ("de_cnic_write", DE_GPU, 1)),
    # Write-back: DE HBM -> DE CNIC -> DE buffer (D2H), then DE buffer -> DE SNIC -> storage.
    "writeback": (("de_cnic_read", DE_GPU, 1), ("de_cnic_write", DE_GPU, 1), ("de_dram", DE_NODE, 2), ("de_snic_write", DE_NODE, 1)),
}
# A DRAM tier (``--dram-tier``; symbolic.TIER_PATH, INSERT_PE_PATH, INSERT_DE_PATH): the host DRAM of every node pooled
# and served over the CNICs. A byte of the pool sits on a prefill node with probability sigma = P/(P + D), so the bound
# splits the pool's DRAM and CNIC load sigma : 1 - sigma over the sides. The runner cannot put every flow on every node
# (at 48P96D that is 1,296 resources per flow: 144 DRAMs and 1,152 CNICs), so the sources of each kind (the prefill
# engines' tier streams, the prefill nodes' reads, the decode nodes' reads, the decode engines' write-backs: ``n`` of a
# kind) share each side's N nodes out among them: source i of n takes the stretch [i N/n, (i + 1) N/n) of that side's
# nodes, and sends sigma (or 1 - sigma) of its pool bytes to the nodes the stretch covers, in proportion to how much of
# each it covers (one or two nodes when n >= N, about N/n + 1 when fewer), and on a node over its g CNICs alike (1/g
# each). So over the sources of a kind every node's DRAM and CNICs carry exactly an equal share of the pool's load, as in
# the bound. Where the PE or DE node's own CNIC carries a pipe's bytes (a read's copy into the pool), they are spread over
# its g GPUs the same way.
PE_NODE_GPUS, DE_NODE_GPUS = "pe_node_gpus", "de_node_gpus"  # every GPU of the PE's or DE's node, 1/g each
POOL_PE_NODE, POOL_PE_GPUS, POOL_DE_NODE, POOL_DE_GPUS = "pool_pe_node", "pool_pe_gpus", "pool_de_node", "pool_de_gpus"
_POOL_READ = (("pe_dram", POOL_PE_NODE, 1), ("pe_cnic_read", POOL_PE_GPUS, 1), ("de_dram", POOL_DE_NODE, 1), ("de_cnic_read", POOL_DE_GPUS, 1))
_POOL_WRITE = (("pe_cnic_write", POOL_PE_GPUS, 1), ("pe_dram", POOL_PE_NODE, 1), ("de_cnic_write", POOL_DE_GPUS, 1), ("de_dram", POOL_DE_NODE, 1))
TIER_ROUTES: dict[str, tuple[tuple[str, str, int], ...]] = {
    # A tier hit: pool DRAM -> pool CNIC -> network -> PE CNIC -> PE HBM (a layer-wise stream, or basic's whole-KV load).
    "tier_read": (*_POOL_READ, ("pe_cnic_write", PE_GPU, 1)),
    # What the tier caches: each byte a prefill node reads from storage, from its buffer into the pool ...
    "insert_pe": (("pe_dram", PE_NODE, 1), ("pe_cnic_read", PE_NODE_GPUS, 1), *_POOL_WRITE),
    # ... each byte a decode node reads, from its buffer ...
    "insert_de": (("de_dram", DE_NODE, 1), ("de_cnic_read", DE_NODE_GPUS, 1), *_POOL_WRITE),
    # ... and each byte of new KV, from the DE buffer its write-back passes through, over the decode engine's CNIC.
    "insert_wb": (("de_dram", DE_NODE, 1), ("de_cnic_read", DE_GPU, 1), *_POOL_WRITE),
}
ALL_ROUTES = {**ROUTES, **TIER_ROUTES}
# Which routes make up each symbolic path (the test compares these sums with symbolic.path_sum, sigma numeric).
PATH_ROUTES = {
    "PE_PATH": ("read_pe", "stream_pe", "kv_out", "h2d"),
    "DE_PATH": ("read_de", "stream_de", "h2d"),
    "MISS_PATH": ("kv_out", "h2d"),
    "WRITEBACK_PATH": ("writeback",),
    "TIER_PATH": ("tier_read", "kv_out", "h2d"),
    "INSERT_PE_PATH": ("insert_pe",),
    "INSERT_DE_PATH": ("insert_de",),
}

# DRAM buffer per node for KV in transit: the paper allocates 80 GB per node for its DeepSeek models
# and 320 GB for Qwen 32B (paper A.4, notes 3). We use 80 GB, raised for larger KV to hold as many tokens as
# the paper's Qwen setting: 320 GB / 262,144 B/token (Qwen2.5-32B BF16 KV) = 1.22 M tokens.
BUFFER_FLOOR_BYTES = 80 * GB
BUFFER_TOKENS = 320 * GB / 262_144.0
# ... and raised where the decode nodes' buffers take in more than at the paper's setting, to hold it as long.
# Every byte read from storage lands in a DE buffer (PE path 5-7, DE path 1-2), so a DE node's buffer takes in at
# most the storage NICs' total read rate over the D decode nodes: at the paper's 2P4D on Hopper (one 400 Gb/s
# storage NIC per node, paper 7.2) 6 x 50 GB/s / 4 = 75 GB/s, which its 80 GB holds for 1.07 s (Little's law:
# room = inflow x time held). The paper states 80 GB for DualPath at its splits only; at three prefill nodes per
# decode node (basic's picks) that bound is 200 GB/s (basic's own reads, through the prefill nodes only, 150 GB/s).
# No node's DRAM caps it (the profiles give no DRAM size): at an extreme split such as 100P1D it asks 5.4 TB per node,
# more than a node holds, so such splits' runs assume a buffer no node has; the checks play splits near the pick.
PAPER_SPLIT = (2, 4)
PAPER_SNIC_BPS = 400e9 / 8
BUFFER_HOLD_S = BUFFER_FLOOR_BYTES / (sum(PAPER_SPLIT) * PAPER_SNIC_BPS / PAPER_SPLIT[1])


def stretch(i: int, n: int, N: int) -> list[tuple[int, float]]:
    """The nodes source ``i`` of ``n`` sends its pool bytes to, of a side's ``N``, with the share of them each takes: the
    nodes the stretch [i N/n, (i + 1) N/n) covers, in proportion (``TIER_ROUTES``' comment)."""
    lo, hi = i * N, (i + 1) * N  # in units of 1/n of a node: node k spans [k n, (k + 1) n)
    cover = [(k, min(hi, (k + 1) * n) - max(lo, k * n)) for k in range(lo // n, min(N, -(-hi // n)))]
    return [(k, part / N) for k, part in cover if part > 0]


def route_kind_bytes(route: str, sigma: float = 0.0) -> dict[str, float]:
    """Bytes on each resource kind per byte carried along ``route`` (a DRAM tier's pool split ``sigma : 1 - sigma``)."""
    out: dict[str, float] = {}
    for kind, where, count in ALL_ROUTES[route]:
        share = (sigma if where in (POOL_PE_NODE, POOL_PE_GPUS) else 1.0 - sigma) if where.startswith("pool") else 1.0
        out[kind] = out.get(kind, 0.0) + count * share
    return out


def de_buffer_inflow_Bps(P: int, D: int, snic_pe_Bps: float, snic_de_Bps: float) -> float:
    """The most a decode node's buffer takes in: every storage NIC's read rate (``s * B`` of each side) over D nodes, B/s."""
    return (P * snic_pe_Bps + D * snic_de_Bps) / D


def default_buffer_bytes(model: Model, P: int = PAPER_SPLIT[0], D: int = PAPER_SPLIT[1], snic_pe_Bps: float = PAPER_SNIC_BPS,
                         snic_de_Bps: float = PAPER_SNIC_BPS) -> float:
    """Host DRAM buffer per node for KV in transit (paper A.4, notes 3), bytes: the paper's 80 GB, raised to hold
    1.22 M tokens of the model's KV and ``BUFFER_HOLD_S`` of the decode nodes' inflow (:func:`de_buffer_inflow_Bps`).
    Every node gets the same (the paper's allocation is per node), and a cluster gets the same under every policy."""
    inflow = de_buffer_inflow_Bps(P, D, snic_pe_Bps, snic_de_Bps)
    return max(BUFFER_FLOOR_BYTES, BUFFER_TOKENS * model.kv_bytes_per_token, BUFFER_HOLD_S * inflow)


def attention_flops(model: Model, context_tokens: float, new_tokens: float) -> float:
    """The attention part of ``compute.turn_flops`` (the intra-engine quota counts only this, paper §6, notes 4.5)."""
    capped = min(context_tokens, model.sparse_topk_tokens)
    return new_tokens * (model.attn_flops_per_ctx_token * context_tokens + model.sparse_attn_flops_per_key * capped)


def decode_read_bytes(model: Model, context_tokens: np.ndarray | float) -> np.ndarray:
    """HBM bytes one sequence's attention reads per decode step at ``context_tokens`` (numpy twin of
    ``decode.kv_bytes``'s first value: the MLA latent of the top-k keys plus the indexer keys of all)."""
    ctx = np.asarray(context_tokens, dtype=float)
    layout = model.kv_layouts[model.kv_layout]
    sparse = model.indexer_bytes_per_token > 0 and model.sparse_topk_tokens > 0
    return layout * (np.minimum(ctx, model.sparse_topk_tokens) if sparse else ctx) + model.indexer_bytes_per_token * ctx


def decode_attn_seconds(L: Layout, topk: float, context_tokens: np.ndarray) -> np.ndarray:
    """Decode attention compute seconds of one sequence per step at ``context_tokens`` (the bound's arithmetic,
    ``steptime.decode_attention_seconds``, with this layout's decode hardware)."""
    return decode_attention_seconds(L.decode_attn_s_per_ctx, L.decode_attn_s_per_key, topk, np.asarray(context_tokens, dtype=float))


def hbm_held_per_token(model: Model) -> float:
    """HBM bytes one token of context holds on a decode GPU (MLA latent plus indexer keys)."""
    return kv_bytes(model, 1.0)[1]


@dataclass(frozen=True)
class Layout:
    """Resource instances of one scenario, their capacities (units/s) and the decode constants."""

    P: int
    D: int
    g_pe: int
    g_de: int
    start: dict[str, int]
    count: dict[str, int]
    capacity: np.ndarray
    kind_of: np.ndarray
    kv_bytes_per_token: float
    prefill_flops_per_s: float  # capacity of a prefill engine's compute: the dtype's dense peak (a batch demands pass time x this)
    attn_flops_per_s: float  # the attention kernel's rate (the intra-engine quota counts attention time)
    prefill_pass: PrefillPass
    decode_step: DecodeStep
    decode_attn_s_per_ctx: float  # decode attention compute seconds per context token of a sequence (steptime.attention_coefficients)
    decode_attn_s_per_key: float  # and per capped key
    de_hbm_kv_bytes: float
    pe_hbm_kv_bytes: float
    hbm_held_per_token: float
    buffer_bytes: float
    snic_pe_Bps: float
    snic_de_Bps: float
    tier_bytes: float = 0.0  # a DRAM tier's bytes over every node (``--dram-tier``; 0: none)
    tier_sigma: float = 0.0  # the pool's share on prefill nodes, P / (P + D)

    @property
    def tier(self) -> bool:
        """Whether a DRAM tier serves part of the hit KV."""
        return self.tier_bytes > 0

    def hops(self, route: str, pe: int, de: int, source: int = 0, sources: int = 1) -> list[tuple[int, float]]:
        """The resource instances one byte of ``route`` crosses for engines ``pe``, ``de``, as pool source ``source`` of
        ``sources`` of its kind (``TIER_ROUTES``' comment), with the bytes it puts on each."""
        return [(self.start[kind] + unit, count * share) for kind, where, count in ALL_ROUTES[route]
                for unit, share in self._units(where, pe, de, source, sources)]

    def _units(self, where: str, pe: int, de: int, source: int, sources: int) -> list[tuple[int, float]]:
        """Units of a kind's side at ``where``, with the share of a byte each takes."""
        if where in _ONE:
            return [(self.locate_unit(where, pe, de), 1.0)]
        side_pe = where in (PE_NODE_GPUS, POOL_PE_NODE, POOL_PE_GPUS)
        g = self.g_pe if side_pe else self.g_de
        if where.startswith("pool"):
            share = self.tier_sigma if side_pe else 1.0 - self.tier_sigma
            nodes = [(node, share * part) for node, part in stretch(source, sources, self.P if side_pe else self.D)]
        else:
            nodes = [(pe // self.g_pe if side_pe else de // self.g_de, 1.0)]
        if where in (POOL_PE_NODE, POOL_DE_NODE):
            return nodes
        return [(node * g + j, share / g) for node, share in nodes for j in range(g)]

    def locate_unit(self, where: str, pe: int, de: int) -> int:
        """The unit (node or GPU of its side) at ``where`` (PE_NODE, PE_GPU, DE_NODE, DE_GPU) for engines ``pe``, ``de``."""
        return {PE_NODE: pe // self.g_pe, PE_GPU: pe, DE_NODE: de // self.g_de, DE_GPU: de}[where]

    @property
    def n_res(self) -> int:
        return int(self.capacity.size)

    def read_window_bytes(self, dt: float) -> np.ndarray:
        """Bytes each node's read queue keeps admitted (nodes 0..P+D-1): one step of its SNIC's line rate.

        A storage client keeps enough reads outstanding to fill its link and allocates buffer space only for those
        (its bandwidth-delay product); in steps of ``dt`` the least that keeps a node's SNIC busy for a whole step
        is ``dt`` times its line rate. More admitted reads would read no faster, but would hold DRAM buffer room
        (and DE-buffer room for everything of the request) while they wait in the queue."""
        return dt * np.concatenate((np.full(self.P, self.snic_pe_Bps), np.full(self.D, self.snic_de_Bps)))

    @property
    def n_pe(self) -> int:
        return self.P * self.g_pe

    @property
    def n_de(self) -> int:
        return self.D * self.g_de

    def slice(self, kind: str) -> slice:
        return slice(self.start[kind], self.start[kind] + self.count[kind])

    def locate(self, kind: str, where: str, pe: int, de: int) -> int:
        """Instance of ``kind`` at ``where`` (PE_NODE, PE_GPU, DE_NODE, DE_GPU) for engines ``pe``, ``de``."""
        return self.start[kind] + self.locate_unit(where, pe, de)


def _instances(scenario: Scenario) -> tuple[dict[str, int], dict[str, int]]:
    start, count, at = {}, {}, 0
    for kind in KINDS:
        nodes, g = (scenario.P, scenario.pe_hw.g) if kind.startswith("pe") or kind == COMPUTE else (scenario.D, scenario.de_hw.g)
        count[kind] = nodes * g if kind in GPU_KINDS else nodes
        start[kind], at = at, at + count[kind]
    return start, count


def _unit_capacity(kind: str, hw: Hardware, flops: float) -> float:
    if kind == COMPUTE:
        return flops
    per_node = float(UNIT_CAPACITY[kind](hw.g, hw.B, hw.s, hw.M))
    return per_node / hw.g if kind in GPU_KINDS else per_node


def _free_hbm(hw: Hardware, model: Model, gpus: int, side: str, given: str) -> float:
    """HBM a GPU has left for KV once its share of ``side``'s weights over ``gpus`` GPUs is in; ``given``: the flag and
    value that set those GPUs, for the refusal when nothing is left."""
    share = weight_share_bytes(model, gpus)
    free = hw.hbm_bytes - share
    if free <= 0:
        raise PlanError(
            f"{given} is not allowed: {side} weights: {share / GB:.3g} GB per GPU (experts spread over {gpus} GPUs) do not fit in "
            f"hbm_GB = {hw.hbm_bytes / GB:g} GB; add {side} nodes or use a GPU with more HBM", 1)
    return free


def build_layout(scenario: Scenario, buffer_bytes: float | None = None, dtype: str | None = None,
                 decode_instance_nodes: int | None = None, mtp: Mtp = NO_MTP, prefill_instance_nodes: int | None = None) -> Layout:
    """The layout of ``scenario``: capacities from its profiles (efficiencies applied), prefill at
    ``dtype`` (None: the model's) with the experts over each prefill instance's GPUs
    (``prefill_instance_nodes``; None: the fewest nodes that hold the weights), and decode experts over
    ``decode_instance_nodes`` (None: the whole decode side) with ``mtp``, as the bound's options."""
    model, pe_hw, de_hw = scenario.model, scenario.pe_hw, scenario.de_hw
    dtype = resolve_dtype(model, dtype)
    n_de_gpu = (scenario.D if decode_instance_nodes is None else decode_instance_nodes) * de_hw.g  # one decode instance
    _free_hbm(pe_hw, model, scenario.P * pe_hw.g, "prefill", f"-P = {scenario.P} prefill nodes")  # the whole side holds them, or none serves
    n_pe_gpu = prefill_instance_gpus(model, pe_hw, prefill_instance_nodes)  # one prefill instance
    prefill = prefill_pass(model, pe_hw, dtype, prefill_instance_nodes)
    peak = prefill.peak_flops
    attn_per_ctx, attn_per_key = attention_coefficients(model, de_hw)
    start, count = _instances(scenario)
    capacity = np.concatenate([np.full(count[k], _unit_capacity(k, pe_hw if k.startswith("pe") or k == COMPUTE else de_hw, peak)) for k in KINDS])
    kind_of = np.concatenate([np.full(count[k], i) for i, k in enumerate(KINDS)])
    return Layout(
        P=scenario.P, D=scenario.D, g_pe=pe_hw.g, g_de=de_hw.g, start=start, count=count,
        capacity=capacity, kind_of=kind_of, kv_bytes_per_token=model.kv_bytes_per_token,
        prefill_flops_per_s=peak,
        attn_flops_per_s=prefill.attn_flops_per_s,
        prefill_pass=prefill,
        decode_step=DecodeStep.of(model, de_hw, n_de_gpu, mtp=mtp),
        decode_attn_s_per_ctx=attn_per_ctx,
        decode_attn_s_per_key=attn_per_key,
        de_hbm_kv_bytes=_free_hbm(de_hw, model, n_de_gpu, "decode", f"-D = {scenario.D} decode nodes" if decode_instance_nodes is None
                                  else f"--decode-instance-nodes = {decode_instance_nodes} nodes"),
        pe_hbm_kv_bytes=_free_hbm(pe_hw, model, n_pe_gpu, "prefill", f"--prefill-instance-nodes = {n_pe_gpu // pe_hw.g} nodes"),
        hbm_held_per_token=hbm_held_per_token(model),
        buffer_bytes=(default_buffer_bytes(model, scenario.P, scenario.D, pe_hw.s * pe_hw.B, de_hw.s * de_hw.B)
                      if buffer_bytes is None else buffer_bytes),
        snic_pe_Bps=pe_hw.s * pe_hw.B,
        snic_de_Bps=de_hw.s * de_hw.B,
        tier_bytes=(scenario.P + scenario.D) * scenario.dram_tier_GB * GB if scenario.dram_tier_GB else 0.0,
        tier_sigma=scenario.P / (scenario.P + scenario.D) if scenario.dram_tier_GB else 0.0,
    )
