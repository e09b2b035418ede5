"""The shipped profiles' step-time tables are what ``tools/regen_profiles.py`` fits from the database, byte for
byte (skipped without the 'calibrate' extra)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("aiconfigurator_core")

from dualpath_plan.calibration.shipped import RECIPES, regenerate  # noqa: E402
from dualpath_plan.model.profiles import load_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2] / "hardware_profiles"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_shipped_profile_is_its_recipe_s_output_byte_for_byte(name):
    path = ROOT / f"{name}.toml"
    text, steps = regenerate(load_file(path), RECIPES[name])
    assert text == path.read_text(), f"{name}: run python tools/regen_profiles.py"
    assert all(step.reports for step in steps)


def test_hopper_takes_the_h100_s_kernel_tables_and_keeps_its_own_links():
    hopper = load_file(ROOT / "hopper.toml")
    sources = dict(hopper.sources)
    assert "h100_sxm" in sources["gemm_dense_frac"] and "H800" in sources["gemm_dense_frac"]
    assert "DeepEP docs/legacy.md" in sources["ep_dispatch_us"] and "153" in sources["ep_nvlink_GBps"]
