"""The scheduler's rules that both engines share: the policies' names, what each changes in the data path,
and the paper's constants (section 6 and A.4; notes section 4).

The Python engine's policies (``sim.python.policies``) and the compiled engine's (``sim.compiled.policies``)
implement the same rules from these names and numbers; ``sim.runner`` passes the constants to both.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

ALPHA_S = 3.0  # alpha: tokens one SNIC reads in 3 s (paper A.4, notes 4.2)
BETA_S = 5.0  # beta: tokens one GPU prefills in 5 s (paper A.4, notes 4.2)
Z_FACTOR = 1.05  # DE high-token threshold factor (paper §6, notes 4.3)
QUOTA_S = 0.300  # PE attention-time quota per forward batch (paper §6 and A.4, notes 4.5)
PE, DE = "pe", "de"
# Step: a tenth of the ~0.5 s a forward batch takes under the attention quota, and the paper's TPOT SLO.
# Halving it moves JCT by < 1 % in loaded runs and by a few % in latency-bound runs with ~1 s turns
# (tests/sim/test_runner.py, convergence); --dt-ms 12.5 for latency studies of short turns.
DT_S = 0.050
TTFT_SLO_S, TPOT_SLO_S = 4.0, 0.050  # paper §7 online, notes 6.3


class PolicyName(str, Enum):
    """The policies ``--policy`` accepts: the paper's ablation ladder, the oracle, and one beyond it."""

    BASIC = "basic"
    LAYERWISE = "layerwise"
    DUALPATH_RR = "dualpath-rr"
    DUALPATH = "dualpath"
    ORACLE = "oracle"
    SPLIT = "split"


@dataclass(frozen=True)
class Features:
    """What a policy changes in the data path, and the LP mode whose bound applies to it."""

    layerwise: bool  # per-layer KV streaming overlapped with prefill compute (else whole hit KV in HBM first)
    io_free: bool  # reads, H2D/D2H and PE->DE transfers cost nothing (the paper's Oracle)
    lp_mode: str


FEATURES: dict[PolicyName, Features] = {
    PolicyName.BASIC: Features(layerwise=False, io_free=False, lp_mode="basic"),
    PolicyName.LAYERWISE: Features(layerwise=True, io_free=False, lp_mode="basic"),
    PolicyName.DUALPATH_RR: Features(layerwise=True, io_free=False, lp_mode="dualpath"),
    PolicyName.DUALPATH: Features(layerwise=True, io_free=False, lp_mode="dualpath"),
    PolicyName.ORACLE: Features(layerwise=True, io_free=True, lp_mode="oracle"),
    PolicyName.SPLIT: Features(layerwise=True, io_free=False, lp_mode="dualpath"),
}
