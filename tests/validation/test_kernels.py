"""``validate --kernels`` (validation/kernels.py): every shipped profile's fitted tables with their errors."""

from __future__ import annotations

import json

import pytest

from dualpath_plan.cli import main


@pytest.mark.slow
def test_without_kernels_validate_reports_no_fits(capsys):
    assert main(["validate", "--skip-sim", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernel_fits"] is None


@pytest.mark.slow
def test_kernels_reports_each_recipe_table_with_fit_and_held_out_errors(capsys):
    pytest.importorskip("aiconfigurator_core")
    from dualpath_plan.calibration.shipped import RECIPES

    assert main(["validate", "--skip-sim", "--kernels", "--json"]) == 0
    fits = json.loads(capsys.readouterr().out)["kernel_fits"]
    assert {f["profile"] for f in fits} == set(RECIPES)
    assert all(f["rows_fit"] > 0 and f["rows_held_out"] > 0 and f["mape_fit"] >= 0 for f in fits)
    hopper = {f["table"] for f in fits if f["profile"] == "hopper"}
    assert "a2a_ll rdma" not in hopper and "mla_decode fp8 KV" in hopper  # hopper keeps its own links
