"""Hardware, model and workload profiles: TOML data files loaded strictly into frozen SI records.

Where profiles come from, in the order a name is looked up (a later source shadows an earlier
one with the same kind and name):

1. the shipped files (``hardware_profiles/``, ``model_profiles/``, ``workload_profiles/``);
2. every ``*.toml`` in each directory on ``DUALPATH_PLAN_PROFILES`` (``os.pathsep``-separated);
3. files given with ``--profile-file`` (``extra_files``).

A file's ``kind`` key says what it is (``hardware`` when absent); its name is the file stem.
Every other key is checked against the schemas below: unknown, missing, mistyped, zero, negative,
NaN and infinite values are refused with one line naming the file, key, value, unit and rule.
"""

from __future__ import annotations


import os
import tomllib
from dataclasses import dataclass, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from dualpath_plan.model.errors import PlanError, field_error
from dualpath_plan.model.inputs import MAX_PROFILE_BYTES, check_shape, read_regular
from dualpath_plan.model.schema import Field, check_table, check_value, did_you_mean
from dualpath_plan.model.units import TO_SI

ENV_VAR = "DUALPATH_PLAN_PROFILES"
MAX_SET_CHARS = 200  # a --set value: one number, word or short list
KINDS = ("hardware", "model", "workload", "storage")
_PACKAGES = {
    "hardware": "dualpath_plan.hardware_profiles",
    "model": "dualpath_plan.model_profiles",
    "workload": "dualpath_plan.workload_profiles",
    "storage": "dualpath_plan.storage_profiles",
}
_F = Field

HARDWARE_SCHEMA: dict[str, Field] = {
    "description": _F("str", "description", doc="one line: what node this is"),
    "gpu": _F("str", "gpu", doc="GPU model name"),
    "gpus_per_node": _F("int", "g", doc="g: GPUs (engines) per node"),
    "cnic_Gbps": _F("float", "cnic_Bps", "Gbps", "compute NIC line rate per GPU, each direction"),
    "snic_Gbps": _F("float", "snic_Bps", "Gbps", "storage NIC line rate per node, each direction"),
    "dram_GBps": _F("float", "dram_Bps", "GBps", "host DRAM bandwidth per node, reads + writes"),
    "pcie_GBps": _F("float", "pcie_Bps", "GBps", "host link bandwidth per GPU, each direction"),
    "hbm_GB": _F("float", "hbm_bytes", "GB", "usable HBM capacity per GPU"),
    "hbm_TBps": _F("float", "hbm_Bps", "TBps", "HBM bandwidth per GPU"),
    "bf16_dense_TFLOPS": _F("float", "bf16_flops", "TFLOPS", "dense BF16 tensor peak per GPU"),
    "fp8_dense_TFLOPS": _F("float", "fp8_flops", "TFLOPS", "dense FP8 tensor peak per GPU"),
    "fp4_dense_TFLOPS": _F("float", "fp4_flops", "TFLOPS", "dense FP4 tensor peak per GPU (absent: the GPU has no FP4 tensor cores)", required=False),
    "cnic_efficiency_frac": _F("float", "cnic_efficiency", "frac", "usable share of CNIC line rate"),
    "snic_efficiency_frac": _F("float", "snic_efficiency", "frac", "usable share of SNIC line rate"),
    "dram_efficiency_frac": _F("float", "dram_efficiency", "frac", "usable share of dram_GBps"),
    "hbm_efficiency_frac": _F("float", "hbm_efficiency", "frac", "usable share of HBM bandwidth"),
    "ep_dispatch_us": _F("table", "ep_dispatch_s", "us", "MoE dispatch latency per layer at 128 tokens per GPU, by EP size (low-latency kernels)"),
    "ep_combine_us": _F("table", "ep_combine_s", "us", "MoE combine latency per layer at 128 tokens per GPU, by EP size (low-latency kernels)"),
    "ep_normal_GBps": _F("float_or_table", "ep_normal_Bps", "GBps", "all-to-all rate per GPU of the throughput kernels (prefill) across NVLink domains (RDMA): a token's copies' payload over time, by EP size (a number: every size)"),
    "ep_ll_intercept_us": _F("float", "ep_ll_intercept_s", "us", "low-latency all-to-all (decode) over RDMA: dispatch + combine latency per MoE layer at zero tokens", allow_zero=True),
    "ep_normal_intercept_us": _F("float_or_table", "ep_normal_intercept_s", "us", "throughput all-to-all (prefill) over RDMA: dispatch + combine latency per MoE layer at zero tokens, by EP size (a number: every size)", allow_zero=True),
    "nvl_domain_gpus": _F("int", "nvl_domain_gpus", doc="GPUs in one NVLink (scale-up) domain: an expert-parallel instance this size or smaller exchanges tokens over NVLink"),
    "ep_nvlink_GBps": _F("float", "ep_nvlink_Bps", "GBps", "all-to-all bandwidth per GPU inside an NVLink domain (payload over time)"),
    "ep_nvlink_intercept_us": _F("float", "ep_nvlink_intercept_s", "us", "all-to-all inside an NVLink domain: dispatch + combine latency per MoE layer at zero tokens", allow_zero=True),
    "ep_normal_nvlink_GBps": _F("float", "ep_normal_nvlink_Bps", "GBps", "throughput all-to-all (prefill) inside an NVLink domain: payload of the copies that leave the GPU over time (absent: ep_nvlink_GBps)", required=False),
    "ep_normal_nvlink_intercept_us": _F("float", "ep_normal_nvlink_intercept_s", "us", "throughput all-to-all (prefill) inside an NVLink domain: dispatch + combine latency per MoE layer at zero tokens (absent: ep_nvlink_intercept_us)", allow_zero=True, required=False),
    "gemm_dense_frac": _F("table", "gemm_dense_frac", "frac", "FP8 dense GEMM throughput as a share of the FP8 dense peak, by rows M"),
    "gemm_grouped_frac": _F("table", "gemm_grouped_frac", "frac", "FP8 grouped (MoE expert) GEMM throughput as a share of the FP8 dense peak, by rows M per expert"),
    "bf16_gemm_dense_frac": _F("table", "bf16_gemm_dense_frac", "frac", "BF16 dense GEMM throughput as a share of the BF16 dense peak, by rows M (absent: the FP8 table's shares)", required=False),
    "bf16_gemm_grouped_frac": _F("table", "bf16_gemm_grouped_frac", "frac", "BF16 grouped GEMM throughput as a share of the BF16 dense peak, by rows M per expert (absent: the FP8 table's shares)", required=False),
    "fp4_gemm_dense_frac": _F("table", "fp4_gemm_dense_frac", "frac", "FP4 dense GEMM throughput as a share of the FP4 dense peak, by rows M (absent: the FP8 table's shares)", required=False),
    "fp4_gemm_grouped_frac": _F("table", "fp4_gemm_grouped_frac", "frac", "FP4 grouped GEMM throughput as a share of the FP4 dense peak, by rows M per expert (absent: the FP8 table's shares)", required=False),
    "attn_frac": _F("float", "attn_frac", "frac", "prefill attention kernel throughput as a share of BF16 dense peak"),
    "decode_attn_frac": _F("float", "decode_attn_frac", "frac", "decode attention kernel (dense over the context) throughput as a share of BF16 dense peak, where compute-bound"),
    "decode_sparse_attn_frac": _F("float", "decode_sparse_attn_frac", "frac", "decode attention kernel over a capped key set (sparse top-k, sliding window) as a share of BF16 dense peak, where compute-bound"),
    "decode_attn_hbm_frac": _F("float", "decode_attn_hbm_frac", "frac", "share of HBM bandwidth the decode attention kernel reaches reading KV, where memory-bound"),
    "decode_attn_layer_us": _F("float", "decode_attn_layer_s", "us", "fixed latency of the decode attention kernel per layer (launch, split-KV combine)", allow_zero=True),
    "layer_overhead_us": _F("float", "layer_overhead_s", "us", "fixed cost per layer of a forward pass or decode step", allow_zero=True),
    "step_overhead_us": _F("float", "step_overhead_s", "us", "fixed cost per forward pass or decode step", allow_zero=True),
    "request_overhead_us": _F("float", "request_overhead_s", "us", "fixed cost per request in a pass or step", allow_zero=True),
    "price_per_node_usd": _F("float", "price_per_node_usd", "usd", "price of one node", required=False),
    "rent_per_node_hour_usd": _F("float", "rent_per_node_hour_usd", "usd_per_hour", "on-demand rent of one node per hour", required=False),
    "node_power_W": _F("float", "node_power_W", "W", "most one node draws at full load (GPUs, CPUs, NICs, fans), W (absent: power not reported)", required=False),
    "dram_GB": _F("float", "dram_bytes", "GB", "host DRAM of one node, the bound on a DRAM tier's share of it (absent: --dram-tier refused)", required=False),
}

MODEL_SCHEMA: dict[str, Field] = {
    "description": _F("str", "description", doc="one line: what model this is"),
    "hf_name": _F("str", "hf_name", doc="public checkpoint name, or 'none'"),
    "layers": _F("int", "layers", doc="transformer layers"),
    "active_params": _F("float", "active_params", "params", "parameters active per token"),
    "total_params": _F("float", "total_params", "params", "all parameters (weights held in HBM)"),
    "weight_bytes_per_param": _F("float", "weight_bytes_per_param", "bytes", "bytes per stored weight"),
    "compute_dtype": _F("str", "compute_dtype", doc="tensor dtype of the GEMMs", choices=("fp8", "bf16", "fp4")),
    "kv_layouts": _F("table", "kv_layouts", "bytes", "KV bytes per token (all layers) for each layout"),
    "kv_layout": _F("str", "kv_layout", doc="the layout used, one of the kv_layouts names"),
    "indexer_bytes_per_token": _F("float", "indexer_bytes_per_token", "bytes", "sparse-attention indexer key cache per token", allow_zero=True),
    "indexer_cache": _F("bool", "indexer_cache", doc="whether the indexer cache is stored and loaded with the KV"),
    "attn_flops_per_ctx_token": _F("float", "attn_flops_per_ctx_token", "", "c: attention FLOP per new token per context token (all layers)", allow_zero=True),
    "sparse_attn_flops_per_key": _F("float", "sparse_attn_flops_per_key", "", "attention FLOP per new token per attended key, for keys capped at sparse_topk_tokens", allow_zero=True),
    "sparse_topk_tokens": _F("float", "sparse_topk_tokens", "tokens", "keys attended by the capped term (0: none)", allow_zero=True),
    "decode_attn_flops_per_ctx_token": _F("float", "decode_attn_flops_per_ctx_token", "", "attention FLOP per decoded token per context token (all layers), in the form decode kernels run", allow_zero=True),
    "decode_sparse_attn_flops_per_key": _F("float", "decode_sparse_attn_flops_per_key", "", "decode attention FLOP per decoded token per attended key of the capped term, in the form decode kernels run", allow_zero=True),
    "mtp_modules": _F("int", "mtp_modules", doc="multi-token-prediction modules shipped with the checkpoint (0: none; --mtp needs one)", allow_zero=True),
    "moe_layers": _F("int", "moe_layers", doc="layers whose FFN is a routed mixture of experts (0: dense model)", allow_zero=True),
    "routed_experts": _F("int", "routed_experts", doc="routed experts per MoE layer (0 for a dense model)", allow_zero=True),
    "experts_per_token": _F("int", "experts_per_token", doc="routed experts each token activates (0 for a dense model)", allow_zero=True),
    "shared_experts": _F("int", "shared_experts", doc="always-active shared experts per MoE layer", allow_zero=True),
    "hidden_size": _F("int", "hidden_size", doc="model width H (values per token exchanged by the all-to-all)"),
    "expert_intermediate_size": _F("int", "expert_intermediate_size", doc="intermediate size of one routed expert (0 for a dense model)", allow_zero=True),
    "decode_tokens_per_gpu_s": _F("float", "decode_tokens_per_gpu_s", "", "calibrated decode tokens/s per GPU (replaces the roofline)", required=False),
    "context_window_tokens": _F("int", "context_window_tokens", "tokens", "longest sequence (prompt + generated) the model serves, as its publisher documents it (absent: not checked)", required=False),
}

WORKLOAD_SCHEMA: dict[str, Field] = {
    "description": _F("str", "description", doc="one line: what workload this is"),
    "trajectories": _F("int", "trajectories", doc="trajectories in the data set"),
    "turns": _F("float", "turns", "", "mean rounds (turns) per trajectory"),
    "append_tokens": _F("float", "append_tokens", "tokens", "tokens appended per turn: the mean over trajectories of each one's mean (Table 2; model/table2.py)"),
    "gen_tokens": _F("float", "gen_tokens", "tokens", "tokens generated per turn: the mean over trajectories of each one's mean (Table 2)"),
    "context_tokens": _F("float", "context_tokens", "tokens", "mean context (already cached) tokens per turn"),
    "total_tokens": _F("float", "total_tokens", "tokens", "mean final length of a trajectory"),
    "max_len_tokens": _F("float", "max_len_tokens", "tokens", "maximum trajectory length (MaxLen)"),
    "hit_rate_frac": _F("float", "hit_rate", "frac", "what-if for the bounds: share of prompt tokens whose KV is loaded from storage (unset: every cached token, as the data set replays)", required=False),
    "tool_time_s": _F("float", "tool_s", "s", "mean tool or think time after each turn, drawn per round from an exponential distribution (absent: 0, the paper's method)", allow_zero=True, required=False),
}

STORAGE_SCHEMA: dict[str, Field] = {
    "description": _F("str", "description", doc="one line: what storage node this is"),
    "nics_per_node": _F("int", "nics", doc="network ports of one storage node that serve clients"),
    "nic_Gbps": _F("float", "nic_Bps", "Gbps", "line rate of one such port, each direction"),
    "nic_efficiency_frac": _F("float", "nic_efficiency", "frac", "share of the ports' line rate the storage system delivers to its clients, measured"),
    "ssds_per_node": _F("int", "ssds", doc="data SSDs per storage node"),
    "ssd_TB": _F("float", "ssd_bytes", "TB", "raw capacity of one SSD"),
    "ssd_read_GBps": _F("float", "ssd_read_Bps", "GBps", "sequential read bandwidth of one SSD"),
    "ssd_write_GBps": _F("float", "ssd_write_Bps", "GBps", "sequential write bandwidth of one SSD"),
    "replicas": _F("int", "replicas", doc="copies the storage system keeps of every byte (chain replication: a write lands on each)"),
    "storage_node_power_W": _F("float", "node_power_W", "W", "most one storage node draws at full load, W (absent: power not reported)", required=False),
    "storage_node_price_usd": _F("float", "price_usd", "usd", "price of one storage node (absent: not priced)", required=False),
    "storage_node_rent_per_hour_usd": _F("float", "rent_per_hour_usd", "usd_per_hour", "rent of one storage node per hour (absent: not priced)", required=False),
}

SCHEMAS = {"hardware": HARDWARE_SCHEMA, "model": MODEL_SCHEMA, "workload": WORKLOAD_SCHEMA, "storage": STORAGE_SCHEMA}

# The plausible range of every number, in the file's unit, with its reason: wide enough for any real system
# (and the what-ifs a buyer asks), narrow enough that the arithmetic downstream stays finite and meaningful.
_LINE = "1 Gb/s to 100 Tb/s: slower links carry no KV-Cache; 100x today's fastest 800 Gb/s NIC"
_FRAC = "a share of a peak: at least 1 %, as less means a broken link or kernel, and at most all of it"
_TOKENS = "1 to 10 M tokens: the longest context any model offers is 10 M"
_US = "up to 1 s: no kernel or per-layer cost comes near that"
_EP_US = "0.1 us to 1 s per layer: DeepEP's slowest measured is a few hundred us"
_DENSE_SHARE = "a share of the dense peak: above 0.1 % and at most all of it"
_BF16_SHARE = "a share of the BF16 peak: above 0.1 % and at most all of it"
_NODE_W = ("100 W to 1 MW per node: a server's CPUs, memory, NICs and fans alone draw some hundreds of W at full load, an 8-GPU "
           "node about 10 to 15 kW, a whole NVL72 rack about 120 kW")
MAX_DATASET_ROUNDS = 2_000_000  # trajectories x turns of a workload's data set, drawn by every command that uses it
RANGES: dict[str, dict[str, tuple[float, float, str]]] = {
    "hardware": {
        "gpus_per_node": (1, 576, "1 to 576 GPUs: the largest NVLink domain announced, Rubin Ultra NVL576"),
        "cnic_Gbps": (1, 102_400, _LINE),
        "snic_Gbps": (1, 102_400, _LINE),
        "dram_GBps": (1, 100_000, "1 GB/s to 100 TB/s: a two-socket server has about 1 TB/s"),
        "pcie_GBps": (0.1, 10_000, "0.1 GB/s to 10 TB/s: NVLink-C2C, the fastest host link, is 0.9 TB/s"),
        "hbm_GB": (1, 10_000, "1 GB to 10 TB per GPU: the largest today holds 288 GB"),
        "hbm_TBps": (0.1, 1_000, "0.1 to 1,000 TB/s per GPU: the fastest today is 8 TB/s"),
        "bf16_dense_TFLOPS": (1, 100_000, "1 TFLOPS to 100 PFLOPS per GPU: the fastest today is about 2.5 PFLOPS"),
        "fp8_dense_TFLOPS": (1, 100_000, "1 TFLOPS to 100 PFLOPS per GPU: the fastest today is about 5 PFLOPS"),
        "fp4_dense_TFLOPS": (1, 200_000, "1 TFLOPS to 200 PFLOPS per GPU: the fastest today is about 15 PFLOPS"),
        "cnic_efficiency_frac": (0.01, 1, _FRAC),
        "snic_efficiency_frac": (0.01, 1, _FRAC),
        "dram_efficiency_frac": (0.01, 1, _FRAC),
        "hbm_efficiency_frac": (0.01, 1, _FRAC),
        "ep_dispatch_us": (0.1, 1e6, _EP_US),
        "ep_combine_us": (0.1, 1e6, _EP_US),
        "ep_normal_GBps": (0.1, 10_000, "0.1 GB/s to 10 TB/s per GPU: NVLink 5 is 0.9 TB/s each way"),
        "ep_ll_intercept_us": (0, 1e6, _EP_US),
        "ep_normal_intercept_us": (0, 1e6, _EP_US),
        "nvl_domain_gpus": (1, 576, "1 (no NVLink) to 576 GPUs: the largest NVLink domain announced, Rubin Ultra NVL576"),
        "ep_nvlink_GBps": (0.1, 10_000, "0.1 GB/s to 10 TB/s per GPU: NVLink 5 is 0.9 TB/s each way"),
        "ep_nvlink_intercept_us": (0, 1e6, _EP_US),
        "ep_normal_nvlink_GBps": (0.1, 10_000, "0.1 GB/s to 10 TB/s per GPU: NVLink 5 is 0.9 TB/s each way"),
        "ep_normal_nvlink_intercept_us": (0, 1e6, _EP_US),
        "gemm_dense_frac": (0.001, 1, _DENSE_SHARE),
        "gemm_grouped_frac": (0.001, 1, _DENSE_SHARE),
        "bf16_gemm_dense_frac": (0.001, 1, _DENSE_SHARE),
        "bf16_gemm_grouped_frac": (0.001, 1, _DENSE_SHARE),
        "fp4_gemm_dense_frac": (0.0001, 1, _DENSE_SHARE),
        "fp4_gemm_grouped_frac": (0.0001, 1, _DENSE_SHARE),
        "attn_frac": (0.001, 1, _BF16_SHARE),
        "decode_attn_frac": (0.001, 1, _BF16_SHARE),
        "decode_sparse_attn_frac": (0.001, 1, _BF16_SHARE),
        "decode_attn_hbm_frac": (0.01, 1, _FRAC),
        "decode_attn_layer_us": (0, 1e6, _US),
        "layer_overhead_us": (0, 1e6, _US),
        "step_overhead_us": (0, 1e6, _US),
        "request_overhead_us": (0, 1e6, _US),
        "price_per_node_usd": (1, 1e9, "$1 to $1 billion: the largest supercomputers cost about $0.6 billion"),
        "rent_per_node_hour_usd": (0.01, 1e6, "1 cent to $1 million an hour: an 8-GPU node rents for $15 to $70 an hour in 2026"),
        "node_power_W": (100, 1e6, _NODE_W),
        "dram_GB": (1, 1e6, "1 GB to 1 PB per node: the largest servers hold 32 TB"),
    },
    "model": {
        "layers": (1, 1_000, "1 to 1,000 layers: the deepest public LLMs have about 130"),
        "context_window_tokens": (1, 1e8, "1 to 100 M tokens: the longest public windows are about 10 M"),
        "active_params": (1e6, 1e14, "1 M to 100 T parameters: the largest models have about 2 T"),
        "total_params": (1e6, 1e15, "1 M to 1,000 T parameters: the largest models have about 2 T"),
        "weight_bytes_per_param": (0.125, 4, "1-bit to fp32 weights"),
        "kv_layouts": (1, 1e8, "1 byte to 100 MB of KV per token: dense 405B models need about 0.5 MB"),
        "indexer_bytes_per_token": (0, 1e8, "up to 100 MB per token, as the KV itself"),
        "attn_flops_per_ctx_token": (0, 1e12, "up to 1e12 FLOP: the widest dense models need about 1e7"),
        "sparse_attn_flops_per_key": (0, 1e12, "up to 1e12 FLOP: the widest dense models need about 1e7"),
        "sparse_topk_tokens": (0, 1e7, "up to 10 M keys: the longest context any model offers"),
        "decode_attn_flops_per_ctx_token": (0, 1e12, "up to 1e12 FLOP: the widest dense models need about 1e7"),
        "decode_sparse_attn_flops_per_key": (0, 1e12, "up to 1e12 FLOP: the widest dense models need about 1e7"),
        "mtp_modules": (0, 16, "0 to 16: public checkpoints ship at most a few"),
        "moe_layers": (0, 1_000, "0 (dense) to 1,000: no more than the layers a model can have"),
        "routed_experts": (0, 100_000, "0 (dense) to 100,000 experts: the most in a public model is 384"),
        "experts_per_token": (0, 1_000, "0 (dense) to 1,000: public models activate at most a few dozen"),
        "shared_experts": (0, 1_000, "0 to 1,000: public models have at most a few"),
        "hidden_size": (1, 1_000_000, "1 to 1 M: the widest public models have under 20,000"),
        "expert_intermediate_size": (0, 10_000_000, "0 (dense) to 10 M: public experts have a few thousand"),
        "decode_tokens_per_gpu_s": (1, 10_000_000, "1 to 10 M tokens/s per GPU: the best published is a few thousand"),
    },
    "workload": {
        "trajectories": (1, 100_000, "1 to 100,000: the data set is drawn in memory for every run; the paper's has 500"),
        "turns": (1, 100_000, "1 to 100,000 turns: the paper's longest workload has 157 on average"),
        "append_tokens": (1, 1e7, _TOKENS),
        "gen_tokens": (1, 1e7, _TOKENS),
        "context_tokens": (1, 1e7, _TOKENS),
        "total_tokens": (1, 1e7, _TOKENS),
        "max_len_tokens": (1, 1e7, _TOKENS),
        "hit_rate_frac": (0, 1, "a share of the prompt tokens"),
        "tool_time_s": (0, 1e6, "0 to 1e6 s (11.6 days): coding agents' tools take seconds to minutes"),
    },
    "storage": {
        "nics_per_node": (1, 64, "1 to 64 ports: storage servers have 1 to 8"),
        "nic_Gbps": (1, 102_400, _LINE),
        "nic_efficiency_frac": (0.01, 1, _FRAC),
        "ssds_per_node": (1, 1_000, "1 to 1,000 SSDs: the densest storage servers hold about 100"),
        "ssd_TB": (0.01, 10_000, "10 GB to 10 PB per SSD: the largest announced hold about 250 TB"),
        "ssd_read_GBps": (0.01, 1_000, "10 MB/s to 1 TB/s per SSD: a PCIe Gen6 x4 SSD reads about 28 GB/s"),
        "ssd_write_GBps": (0.01, 1_000, "10 MB/s to 1 TB/s per SSD: a PCIe Gen6 x4 SSD writes about 28 GB/s"),
        "replicas": (1, 16, "1 to 16 copies: replicated storage keeps 2 to 3"),
        "storage_node_power_W": (100, 1e6, _NODE_W),
        "storage_node_price_usd": (1, 1e9, "$1 to $1 billion"),
        "storage_node_rent_per_hour_usd": (0.01, 1e6, "1 cent to $1 million an hour"),
    },
}
for _kind, _ranges in RANGES.items():  # the one source of every number's range (the schemas above give none)
    _schema = SCHEMAS[_kind]
    for _key, (_low, _high, _why) in _ranges.items():
        _schema[_key] = replace(_schema[_key], min_value=_low, max_value=_high, reason=_why)


@dataclass(frozen=True)
class Hardware:
    """One node type, in SI. ``g`` GPUs; link rates in bytes/s per direction; FLOP/s per GPU."""

    name: str
    path: str
    description: str
    gpu: str
    g: int
    cnic_Bps: float
    snic_Bps: float
    dram_Bps: float
    pcie_Bps: float
    hbm_bytes: float
    hbm_Bps: float
    bf16_flops: float
    fp8_flops: float
    fp4_flops: float | None
    cnic_efficiency: float
    snic_efficiency: float
    dram_efficiency: float
    hbm_efficiency: float
    ep_dispatch_s: dict[str, float]
    ep_combine_s: dict[str, float]
    ep_normal_Bps: float | dict[str, float]  # by EP size (a number: every size)
    ep_ll_intercept_s: float
    ep_normal_intercept_s: float | dict[str, float]  # by EP size (a number: every size)
    nvl_domain_gpus: int
    ep_nvlink_Bps: float
    ep_nvlink_intercept_s: float
    ep_normal_nvlink_Bps: float | None
    ep_normal_nvlink_intercept_s: float | None
    gemm_dense_frac: dict[str, float]
    gemm_grouped_frac: dict[str, float]
    bf16_gemm_dense_frac: dict[str, float] | None
    bf16_gemm_grouped_frac: dict[str, float] | None
    fp4_gemm_dense_frac: dict[str, float] | None
    fp4_gemm_grouped_frac: dict[str, float] | None
    attn_frac: float
    decode_attn_frac: float
    decode_sparse_attn_frac: float
    decode_attn_hbm_frac: float
    decode_attn_layer_s: float
    layer_overhead_s: float
    step_overhead_s: float
    request_overhead_s: float
    price_per_node_usd: float | None
    rent_per_node_hour_usd: float | None
    sources: tuple[tuple[str, str], ...]
    node_power_W: float | None = None  # most one node draws at full load, W (None: not known)
    dram_bytes: float | None = None  # host DRAM of one node, bytes (None: not known)

    @property
    def B(self) -> float:
        """B: usable CNIC bandwidth per GPU, bytes/s each direction."""
        return self.cnic_Bps * self.cnic_efficiency

    @property
    def s(self) -> float:
        """s: usable SNIC bandwidth per node divided by B (the node reads s*B bytes/s)."""
        return self.snic_Bps * self.snic_efficiency / self.B

    @property
    def M(self) -> float:
        """M: usable host DRAM bandwidth per node, bytes/s, reads and writes together."""
        return self.dram_Bps * self.dram_efficiency

    def peak_flops(self, dtype: str) -> float:
        """Dense tensor peak per GPU for ``dtype`` (``fp8``, ``bf16`` or ``fp4``), FLOP/s; FP4 on a GPU without FP4
        tensor cores is refused in one line."""
        if dtype == "fp4":
            if self.fp4_flops is None:
                raise PlanError(f"dtype fp4 is not allowed on {self.name} ({self.gpu}): it has no FP4 tensor cores (no fp4_dense_TFLOPS "
                                "in its profile); use fp8 or bf16, or a GPU with FP4 (blackwell, blackwell-ultra, gb200, gb300)", 2)
            return self.fp4_flops
        return self.fp8_flops if dtype == "fp8" else self.bf16_flops

    def gemm_tables(self, dtype: str) -> tuple[dict[str, float], dict[str, float]]:
        """(dense, grouped) GEMM efficiency tables for ``dtype``, shares of that dtype's dense peak by rows M. A BF16 or
        FP4 table the profile lacks falls back to the FP8 one's shares (stated in the profile's sources)."""
        if dtype == "bf16":
            return (self.bf16_gemm_dense_frac or self.gemm_dense_frac, self.bf16_gemm_grouped_frac or self.gemm_grouped_frac)
        if dtype == "fp4":
            return (self.fp4_gemm_dense_frac or self.gemm_dense_frac, self.fp4_gemm_grouped_frac or self.gemm_grouped_frac)
        return self.gemm_dense_frac, self.gemm_grouped_frac


@dataclass(frozen=True)
class Model:
    """One model, in SI: bytes per token, parameter counts, attention FLOP coefficients."""

    name: str
    path: str
    description: str
    hf_name: str
    layers: int
    active_params: float
    total_params: float
    weight_bytes_per_param: float
    compute_dtype: str
    kv_layouts: dict[str, float]
    kv_layout: str
    indexer_bytes_per_token: float
    indexer_cache: bool
    attn_flops_per_ctx_token: float
    sparse_attn_flops_per_key: float
    sparse_topk_tokens: float
    decode_attn_flops_per_ctx_token: float
    decode_sparse_attn_flops_per_key: float
    mtp_modules: int
    moe_layers: int
    routed_experts: int
    experts_per_token: int
    shared_experts: int
    hidden_size: int
    expert_intermediate_size: int
    decode_tokens_per_gpu_s: float | None
    sources: tuple[tuple[str, str], ...]
    context_window_tokens: int | None = None  # longest sequence the model serves (None: not checked)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes stored and loaded per token: the chosen layout plus the indexer cache if on."""
        extra = self.indexer_bytes_per_token if self.indexer_cache else 0.0
        return self.kv_layouts[self.kv_layout] + extra

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights."""
        return self.total_params * self.weight_bytes_per_param

    @property
    def is_moe(self) -> bool:
        return self.moe_layers > 0

    @property
    def expert_params(self) -> float:
        """Parameters of one routed expert: gate, up and down projections (SwiGLU), ``3*H*I``."""
        return 3.0 * self.hidden_size * self.expert_intermediate_size

    @property
    def routed_params(self) -> float:
        """Parameters of every routed expert of every MoE layer (spread over an instance by expert parallelism)."""
        return self.moe_layers * self.routed_experts * self.expert_params

    @property
    def routed_active_params(self) -> float:
        """Routed-expert parameters one token activates: ``moe_layers * k * 3*H*I``."""
        return self.moe_layers * self.experts_per_token * self.expert_params


@dataclass(frozen=True)
class Workload:
    """Per-turn averages of an agentic workload (the paper's Table 2 rows), in tokens.

    The columns are Table 2's, in the reading under which all six hold at once: turns and total per trajectory,
    append and generated tokens per turn as means over trajectories of each one's own mean, context a mean over turns.
    What :func:`dualpath_plan.workload_from_trace` returns.

    Attributes:
        name: The profile's name (``agentic-64k``, ...; for a trace, the name :func:`dualpath_plan.trace_workload` gives).
        path: The file it was read from.
        description: One line on what it is.
        trajectories: Trajectories in its replay data set (500 per Table 2 row).
        turns: Mean turns per trajectory.
        append_tokens: Tokens appended per turn.
        gen_tokens: Tokens generated per turn.
        context_tokens: Cached context per turn, tokens.
        total_tokens: Tokens a trajectory holds at its end, mean.
        max_len_tokens: The longest a trajectory may grow (MaxLen), tokens.
        hit_rate: A what-if of the bounds (``hit_rate_frac``): the share of a turn's prompt loaded from storage, a
            fraction; ``None``: every cached token is loaded (the replay rule, paper A.3).
        sources: Where each value comes from, as (key, source) pairs.
        tool_s: Mean tool time after each round of the synthetic data set, seconds; ``None`` or 0: none (the paper's
            method).
        trace: For a trace: (path, format, time scale, tool scale); ``None`` for a synthetic workload.
        decode_context: Mean context of a sequence in a decode batch, tokens: each turn's prompt plus half its generated
            tokens, weighted by the tokens it generates (``model.workload.TurnSet``; ``bounds.decode`` says why);
            ``None``: the means' prompt plus half their generated tokens (a record not taken from turns).
    """

    name: str
    path: str
    description: str
    trajectories: int
    turns: float
    append_tokens: float
    gen_tokens: float
    context_tokens: float
    total_tokens: float
    max_len_tokens: float
    hit_rate: float | None  # None: every cached token is loaded (the replay rule, paper A.3)
    sources: tuple[tuple[str, str], ...]
    tool_s: float | None = None  # mean tool time after each round of the synthetic data set, s (None or 0: the paper's method)
    trace: tuple[str, str, float, float] | None = None  # (path, format, time scale, tool scale) of the trace it is (None: synthetic)
    decode_context: float | None = None  # tokens: the decode batch's mean context, weighted by generated tokens (None: of the means)

    @property
    def prompt_tokens(self) -> float:
        """Prompt of one turn: the cached context plus the appended tokens."""
        return self.context_tokens + self.append_tokens

    @property
    def hit_tokens(self) -> float:
        """Tokens per turn whose KV is loaded from storage."""
        return self.context_tokens if self.hit_rate is None else self.hit_rate * self.prompt_tokens

    @property
    def miss_tokens(self) -> float:
        """Tokens per turn whose KV is computed by prefill."""
        return self.prompt_tokens - self.hit_tokens


@dataclass(frozen=True)
class Storage:
    """One storage node of the cluster behind the storage NICs, in SI (a ``storage_profiles/*.toml`` file).

    Attributes:
        name: The profile's name (``3fs``, ...).
        path: The file it was read from.
        description: One line on what it is.
        nics: Ports of the node that serve clients.
        nic_Bps: Line rate of one port, bytes/s each direction.
        nic_efficiency: Share of the ports' line rate the storage system delivers to clients, a fraction (measured).
        ssds: Data SSDs in the node.
        ssd_bytes: Raw capacity of one SSD, bytes.
        ssd_read_Bps: Sequential read bandwidth of one SSD, bytes/s.
        ssd_write_Bps: Sequential write bandwidth of one SSD, bytes/s.
        replicas: Copies kept of every byte.
        sources: Where each value comes from, as (key, source) pairs.
        node_power_W: The most one storage node draws at full load, W (``None``: not known; the file's
            ``storage_node_power_W``).
        price_usd: One storage node's price, USD (``None``: not priced; ``storage_node_price_usd``).
        rent_per_hour_usd: One storage node's rent, USD per hour (``None``: not priced; ``storage_node_rent_per_hour_usd``).
    """

    name: str
    path: str
    description: str
    nics: int
    nic_Bps: float
    nic_efficiency: float
    ssds: int
    ssd_bytes: float
    ssd_read_Bps: float
    ssd_write_Bps: float
    replicas: int
    sources: tuple[tuple[str, str], ...]
    node_power_W: float | None = None  # most one storage node draws at full load, W (None: not known)
    price_usd: float | None = None  # one storage node's price (None: not priced)
    rent_per_hour_usd: float | None = None  # one storage node's rent per hour (None: not priced)

    @property
    def network_Bps(self) -> float:
        """What the node's ports deliver to clients, each direction, bytes/s (line rate times the measured share)."""
        return self.nics * self.nic_Bps * self.nic_efficiency

    @property
    def read_Bps(self) -> float:
        """KV one node serves to readers, bytes/s: the slower of its ports and its SSDs (a read comes from one copy)."""
        return min(self.network_Bps, self.ssds * self.ssd_read_Bps)

    @property
    def write_Bps(self) -> float:
        """New KV one node's share of the cluster persists, bytes/s: the slower of its ports and its SSDs, over the
        copies (each byte written crosses ``replicas`` nodes' ports inward and lands on ``replicas`` SSDs)."""
        return min(self.network_Bps, self.ssds * self.ssd_write_Bps) / self.replicas

    @property
    def usable_bytes(self) -> float:
        """KV one node holds, bytes: its SSDs' raw capacity over the copies."""
        return self.ssds * self.ssd_bytes / self.replicas


_RECORDS = {"hardware": Hardware, "model": Model, "workload": Workload, "storage": Storage}
Profile = Hardware | Model | Workload | Storage


def parse_file(path: Path) -> dict[str, Any]:
    """The TOML table of a profile file, read within ``inputs``' limits (a regular file of at most
    MAX_PROFILE_BYTES, nesting and digits bounded)."""
    data = read_regular(path, "profile file", MAX_PROFILE_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not valid TOML (not UTF-8 text: {exc.reason} at byte {exc.start})", 2) from None
    check_shape(text, str(path))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: not valid TOML ({exc})", 2) from None


def _sources(where: str, data: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    table = data.pop("sources", {})
    if not isinstance(table, dict):
        raise field_error(where, "sources", type(table).__name__, "", "must be a table of key = \"citation\" strings")
    for key, value in table.items():
        if not isinstance(value, str):
            raise field_error(where, f"sources.{key}", value, "", "must be a citation string")
    return tuple(sorted(table.items()))


def _typed(value: float) -> float | int:
    """A number as people type it in a profile: whole numbers without a trailing ``.0``."""
    return int(value) if float(value).is_integer() else value


def _check_together(where: str, kind: str, values: dict[str, Any]) -> None:
    """Rules between fields of one profile (each field alone is checked by its schema); ``values`` by attribute, SI."""
    if kind == "model":
        if values["kv_layout"] not in values["kv_layouts"]:
            allowed = f"must be one of the kv_layouts names: {', '.join(values['kv_layouts'])}"
            raise field_error(where, "kv_layout", values["kv_layout"], "", allowed)
        if values["active_params"] > values["total_params"]:
            raise field_error(where, "active_params", _typed(values["active_params"]), "params", f"must be <= total_params = {values['total_params']:g}")
        _check_moe_shape(where, values)
    elif kind == "workload":
        if values["turns"] < 1:
            raise field_error(where, "turns", _typed(values["turns"]), "", "must be >= 1 (a trajectory has at least one turn)")
        rounds = values["trajectories"] * values["turns"]
        if rounds > MAX_DATASET_ROUNDS:  # bounded work: every command draws the data set (Table 2's largest: 500 x 157)
            raise PlanError(f"{where}: trajectories x turns = {_typed(values['trajectories'])} x {_typed(values['turns'])} = {rounds:,.0f} rounds "
                            f"is not allowed; a data set holds at most {MAX_DATASET_ROUNDS:,} rounds (every command draws it; Table 2's "
                            "largest has 78,500): lower either", 2)
        prompt = values["context_tokens"] + values["append_tokens"]
        if prompt > values["max_len_tokens"]:
            raise field_error(where, "context_tokens", _typed(values["context_tokens"]), "tokens",
                              f"must be <= max_len_tokens = {values['max_len_tokens']:g} minus append_tokens = {values['append_tokens']:g}")
    elif kind == "hardware":
        _check_hardware(where, values)


def _check_moe_shape(where: str, v: dict[str, Any]) -> None:
    """A dense model has no routed experts; a MoE model's experts fit its layers and parameter counts."""
    if v["moe_layers"] == 0:
        for key in ("routed_experts", "experts_per_token", "expert_intermediate_size"):
            if v[key] != 0:
                raise field_error(where, key, v[key], "", "must be 0 when moe_layers = 0 (a dense model has no routed experts)")
        return
    if v["moe_layers"] > v["layers"]:
        raise field_error(where, "moe_layers", v["moe_layers"], "", f"must be <= layers = {v['layers']}")
    for key in ("routed_experts", "experts_per_token", "expert_intermediate_size"):
        if v[key] < 1:
            raise field_error(where, key, v[key], "", "must be >= 1 when moe_layers > 0")
    if v["experts_per_token"] > v["routed_experts"]:
        raise field_error(where, "experts_per_token", v["experts_per_token"], "", f"must be <= routed_experts = {v['routed_experts']}")
    expert = 3.0 * v["hidden_size"] * v["expert_intermediate_size"]
    for attr, key, count in (("total_params", "routed_experts", v["routed_experts"]), ("active_params", "experts_per_token", v["experts_per_token"])):
        routed = v["moe_layers"] * count * expert
        if routed > v[attr]:
            raise field_error(where, key, v[key], "", f"makes {routed:.4g} routed parameters (moe_layers x {key} x 3 x hidden_size x "
                              f"expert_intermediate_size), more than {attr} = {v[attr]:.4g}")


MAX_TABLE_ROWS = 8  # entries of one measured table (EP sizes, GEMM rows): the step-time kernels hold them in fixed slots


def _check_gemm_curve(where: str, key: str, table: dict[str, float]) -> None:
    """A GEMM efficiency curve by rows M: a share that never falls as M grows (a bigger GEMM is never run less
    efficiently: the step-time model takes the largest batch as the best) and never grows faster than M (a
    GEMM of more rows never takes less time)."""
    points = sorted((int(k), v) for k, v in table.items())
    for (m0, f0), (m1, f1) in zip(points, points[1:]):
        if f1 < f0:
            raise field_error(where, f"{key}.{m1}", _typed(f1), "frac", f"must be >= the share at {m0} rows, {f0:g} (a curve that never falls with M)")
        if f1 / m1 > f0 / m0 * (1 + 1e-12):
            raise field_error(where, f"{key}.{m1}", _typed(f1), "frac", f"must be <= {f0:g} x {m1}/{m0} = {f0 * m1 / m0:.4g} (a GEMM of more rows never takes less time)")


def _check_hardware(where: str, values: dict[str, Any]) -> None:
    for key, attr in (("ep_dispatch_us", "ep_dispatch_s"), ("ep_combine_us", "ep_combine_s"), ("ep_normal_GBps", "ep_normal_Bps"),
                      ("ep_normal_intercept_us", "ep_normal_intercept_s"), ("gemm_dense_frac", "gemm_dense_frac"), ("gemm_grouped_frac", "gemm_grouped_frac"),
                      ("bf16_gemm_dense_frac", "bf16_gemm_dense_frac"), ("bf16_gemm_grouped_frac", "bf16_gemm_grouped_frac"),
                      ("fp4_gemm_dense_frac", "fp4_gemm_dense_frac"), ("fp4_gemm_grouped_frac", "fp4_gemm_grouped_frac")):
        table = values[attr]
        if not isinstance(table, dict):  # absent, or one number for every EP size
            continue
        bad = [k for k in table if not (k.isdigit() and int(k) >= 1)]
        if bad:
            raise field_error(where, f"{key}.{bad[0]}", bad[0], "", "must be keyed by whole numbers >= 1 (EP sizes or GEMM rows)")
        if len(table) > MAX_TABLE_ROWS:
            raise field_error(where, key, f"{len(table)} entries", "", f"must have at most {MAX_TABLE_ROWS} entries")
        if "gemm" in key:
            _check_gemm_curve(where, key, table)
    if values["fp4_flops"] is not None and values["fp4_flops"] < values["fp8_flops"]:
        tflops = TO_SI["TFLOPS"]
        raise field_error(where, "fp4_dense_TFLOPS", _typed(values["fp4_flops"] / tflops), "TFLOPS",
                          f"must be >= fp8_dense_TFLOPS = {values['fp8_flops'] / tflops:g} (FP4 tensor cores are at least as fast as FP8)")
    if values["bf16_flops"] > values["fp8_flops"]:
        tflops = TO_SI["TFLOPS"]
        raise field_error(where, "bf16_dense_TFLOPS", _typed(values["bf16_flops"] / tflops), "TFLOPS",
                          f"must be <= fp8_dense_TFLOPS = {values['fp8_flops'] / tflops:g} (without FP8 units, give the BF16 rate for both)")


def load_file(path: Path) -> Profile:
    """Load and validate one profile file; its name is the file stem."""
    where = str(path)
    data = parse_file(path)
    kind = data.pop("kind", "hardware")
    if kind not in KINDS:
        raise field_error(where, "kind", kind, "", f"must be one of {', '.join(KINDS)}")
    sources = _sources(where, data)
    values = check_table(where, data, SCHEMAS[kind])
    _check_together(where, kind, values)
    return _RECORDS[kind](name=path.stem, path=where, sources=sources, **values)


_SOURCE_DIRS = {"hardware": "hardware_profiles", "model": "model_profiles", "workload": "workload_profiles", "storage": "storage_profiles"}


def _shipped_files(kind: str) -> list[Path]:
    """The profiles shipped with the package (installed copy), or the source tree's when running
    from a checkout whose directories are not mapped into the package."""
    try:
        entries = [Path(str(entry)) for entry in resources.files(_PACKAGES[kind]).iterdir()]
    except ModuleNotFoundError:
        entries = list((Path(__file__).resolve().parents[2] / _SOURCE_DIRS[kind]).iterdir())
    return sorted(path for path in entries if path.suffix == ".toml")


def _env_files() -> list[Path]:
    files: list[Path] = []
    for folder in filter(None, os.environ.get(ENV_VAR, "").split(os.pathsep)):
        directory = Path(folder)
        if not directory.is_dir():
            raise PlanError(f"{ENV_VAR}: {folder!r} is not a directory; set it to directories of *.toml profiles", 2)
        files.extend(sorted(directory.glob("*.toml")))
    return files


@dataclass(frozen=True)
class Catalog:
    """Every known profile file, by kind and name. Files are parsed only when asked for.

    What :func:`dualpath_plan.profiles` returns: the shipped profiles, those on ``DUALPATH_PLAN_PROFILES`` and the
    files given.

    Attributes:
        files: Per kind (``hardware``, ``model``, ``workload``), each profile's name and its file.
    """

    files: dict[str, dict[str, Path]]

    def names(self, kind: str) -> list[str]:
        return sorted(self.files[kind])

    def get(self, kind: str, name: str) -> Profile:
        """Load the profile ``name`` of ``kind``; an unknown name lists the known ones."""
        if name not in self.files[kind]:
            known = ", ".join(self.names(kind)) or "(none)"
            raise PlanError(f"unknown {kind} profile {name!r}{did_you_mean(name, self.names(kind))}; known {kind} profiles: {known}", 2)
        return load_file(self.files[kind][name])


def _peek_kind(path: Path) -> str:
    kind = parse_file(path).get("kind", "hardware")
    return kind if kind in KINDS else "hardware"


def catalog(extra_files: tuple[Path, ...] = ()) -> Catalog:
    """Collect the shipped, environment and ``extra_files`` profiles (later sources shadow)."""
    files: dict[str, dict[str, Path]] = {kind: {} for kind in KINDS}
    for kind in KINDS:
        for path in _shipped_files(kind):
            files[kind][path.stem] = path
    for path in _env_files():
        files[_peek_kind(path)][path.stem] = path
    for path in map(Path, extra_files):
        files[load_file_kind(path)][path.stem] = path  # a file the user names is checked whole, used or not
    return Catalog(files)


def shadowed(extra_files: tuple[Path, ...]) -> list[tuple[str, str]]:
    """``(kind, name)`` of every shipped profile a given file replaces (a file is named by its stem: ``hopper.toml`` is
    ``hopper``); a file that does not parse is left to :func:`catalog` to refuse."""
    out = []
    for path in map(Path, extra_files):
        try:
            kind = _peek_kind(path)
        except PlanError:
            continue
        if path.stem in {p.stem for p in _shipped_files(kind)}:
            out.append((kind, path.stem))
    return out


def load_file_kind(path: Path) -> str:
    """Validate ``path`` completely and return its kind."""
    profile = load_file(path)
    return next(kind for kind, record in _RECORDS.items() if isinstance(profile, record))


def settable_keys() -> dict[str, str]:
    """Every key ``--set`` accepts, mapped to the kind of profile it changes."""
    keys = {}
    for kind, schema in SCHEMAS.items():
        keys.update({key: kind for key, field in schema.items() if field.kind not in ("str", "table") or key == "kv_layout"})
    return keys


def parse_override(text: str) -> tuple[str, Any]:
    """Parse one ``key=value`` (the value in TOML syntax; a bare word is a string)."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key or not raw:
        raise PlanError(f"--set: {text!r} is not key=value (e.g. --set snic_Gbps=800)", 2)
    if len(raw) > MAX_SET_CHARS:
        raise PlanError(f"--set {key}: a value of {len(raw)} characters; at most {MAX_SET_CHARS} (one number, word or short list)", 2)
    check_shape(raw, f"--set {key}")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def apply_overrides(profile: Profile, kind: str, overrides: tuple[tuple[str, Any], ...]) -> Profile:
    """Return ``profile`` with every override of this ``kind`` applied, each validated as in a file."""
    schema = SCHEMAS[kind]
    changes: dict[str, Any] = {}
    for key, value in overrides:
        if key not in schema:
            continue
        where = f"--set on {kind} profile {profile.name!r}"
        changes[schema[key].attr] = check_value(where, key, schema[key], value)
    updated = replace(profile, **changes) if changes else profile
    _check_together(f"--set on {kind} profile {profile.name!r}", kind, {f.name: getattr(updated, f.name) for f in fields(updated)})
    return updated


def check_override_keys(overrides: tuple[tuple[str, Any], ...]) -> None:
    """Refuse any ``--set`` key that no schema knows (after a ``pe.``/``de.`` prefix), listing the keys that can be set."""
    known = settable_keys()
    for text_key, value in overrides:
        key = text_key.partition(".")[2] if text_key.startswith(("pe.", "de.")) else text_key
        whole = next((kind for kind, schema in SCHEMAS.items() if key in schema), None)
        if key not in known and whole is not None:  # a table or a name: more than one value on a command line
            raise PlanError(f"--set {text_key}: {key} is a {'table' if SCHEMAS[whole][key].kind == 'table' else 'text'} field "
                            f"of {whole} profiles, which --set does not change; copy the profile into a file with the new "
                            "value and pass it with --profile-file", 2)
        if key not in known:
            near = did_you_mean(key, known)  # a near miss names the key meant; else every key, to choose from
            rest = "`dualpath-plan profiles show NAME` shows a profile's keys" if near else f"settable keys: {', '.join(sorted(known))}"
            raise PlanError(f"--set {text_key}={value}: unknown key {key!r}{near}; {rest}", 2)
