"""How each shipped hardware profile's step-time tables are fitted from AIConfigurator's database.

``tools/regen_profiles.py`` writes the profiles with these recipes and a test re-runs them byte for byte;
``validate --kernels`` reports their fits. Which framework's measurements, and why:

* GEMMs, expert GEMMs and the all-to-all from **SGLang**'s collections: block-FP8 GEMMs are DeepGEMM's kernels,
  the expert GEMMs DeepEP-MoE's and the all-to-all DeepEP's, the kernels of the DualPath paper's own stack;
* MLA attention (decode and prefill) from **TensorRT-LLM**'s: its MLA kernels reach FlashMLA's published
  figures (about 660 TFLOPS in decode on Hopper), where AIConfigurator's SGLang collection timed the FA3
  backend, about a fifth of that on Hopper.

``hopper`` (H800) takes the H100's kernel tables (the same SM90 die and HBM3) and its throughput all-to-all across
nodes (the same 400 Gb/s CX7 NIC per GPU, which bounds those kernels), and keeps its own NVLink and low-latency
figures (DeepEP's H800 measurements: its NVLink is 400 GB/s, the H100's 900); ``ampere`` (A100) has no DeepEP or FP8 data, so only its GEMM and MLA
tables are fitted (its FP8 tables are its BF16 ones: the A100 runs FP8 models' GEMMs at the BF16 rate). The
profiles the database does not cover (``h20``, ``mi300x``) keep their sourced values.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from dualpath_plan.calibration import calibrate as cal
from dualpath_plan.model.profiles import Hardware, load_file

KERNELS = ("gemm", "grouped_gemm")
COMM = ("a2a_ll", "a2a_normal")
MLA = ("mla_decode", "mla_prefill")
# profile -> ((system, backend, families), ...), applied in order, each onto the last one's output
RECIPES: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "hopper": (("h100_sxm", "sglang", KERNELS), ("h100_sxm", "sglang", ("a2a_normal",)), ("h100_sxm", "trtllm", MLA)),
    "h100-dgx": (("h100_sxm", "sglang", KERNELS + COMM), ("h100_sxm", "trtllm", MLA)),
    "h200": (("h200_sxm", "sglang", KERNELS), ("h200_sxm", "sglang", COMM), ("h200_sxm", "trtllm", MLA)),
    "blackwell": (("b200_sxm", "sglang", KERNELS + COMM), ("b200_sxm", "trtllm", MLA)),
    "blackwell-ultra": (("b300_sxm", "sglang", KERNELS + COMM), ("b300_sxm", "trtllm", MLA)),
    "gb200": (("gb200", "sglang", KERNELS + COMM), ("gb200", "trtllm", MLA)),
    "gb300": (("gb300", "sglang", KERNELS + COMM), ("gb300", "trtllm", MLA)),
    "ampere": (("a100_sxm", "sglang", KERNELS), ("a100_sxm", "trtllm", MLA)),
}
# (profile, families of a recipe step) -> why those measurements serve that node
NOTES = {("hopper", KERNELS): "the H100's kernel tables for the H800: the same SM90 die and HBM3",
         ("hopper", MLA): "the H100's kernel tables for the H800: the same SM90 die and HBM3",
         ("hopper", ("a2a_normal",)): "the H100's throughput all-to-all for the H800: the ep_normal_* keys across nodes, where the same "
                                      "400 Gb/s CX7 NIC per GPU bounds these kernels, and of the NVLink ones only the intercept (launch "
                                      "and synchronisation; the rate is DeepEP's H800 figure)",
         ("h200", COMM): "AIConfigurator's h200_sxm multi-node DeepEP rows (0.5.6.post2) equal its h100_sxm rows value for value, the device "
                         "column aside: read as the H100's measurement, which the H200's 400 Gb/s CX7 per GPU shares"}
# profile -> fitted keys it keeps from its own file: the node's own measurement of them
KEEP = {"hopper": ("ep_normal_nvlink_GBps",)}


def regenerate(base: Hardware, recipe: tuple[tuple[str, str, tuple[str, ...]], ...]) -> tuple[str, tuple[cal.Calibration, ...]]:
    """The text of ``base`` with every step of ``recipe`` fitted onto it in turn, and each step's calibration.
    Rows faster than the datasheet are left out (each table's source counts them)."""
    steps = []
    with tempfile.TemporaryDirectory() as folder:
        current = base
        for system, backend, families in recipe:
            step = cal.from_database(current, system, backend, None, families, "drop", NOTES.get((base.name, families), ""), KEEP.get(base.name, ()))
            steps.append(step)
            path = Path(folder) / f"{base.name}.toml"
            path.write_text(step.text)
            current = load_file(path)
    return steps[-1].text, tuple(steps)
