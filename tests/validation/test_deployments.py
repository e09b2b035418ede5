"""The deployment rows of ``validate`` (validation/deployments.py): the step-time model against published figures."""

from __future__ import annotations

import json

import pytest

from dualpath_plan.cli import main
from dualpath_plan.validation import deployments, validate


@pytest.fixture(scope="module")
def rows():
    return [row for row in validate(skip_sim=True).rows if row.figure.kind == "deployment"]


def test_every_deployment_row_is_within_its_stated_factor(rows):
    """A factor of two (the module docstring's argument: the model's largest simplifications each move a rate by up to
    that much, prefill slow and decode fast); each row is reported with its error whatever it is."""
    assert len(rows) == 6
    for row in rows:
        assert row.figure.tolerance == deployments.FACTOR
        assert deployments.within(row.figure, row.ours), (row.figure.name, row.ours, row.figure.paper_value)


def test_decode_leans_fast_as_its_stated_overlap_says(rows):
    """Decode hides the shorter of its work and its all-to-all entirely from 128 tokens per GPU on, an upper bound on
    what two micro-batches gain: the decode rows lean fast. (Prefill has no such lean: with the measured kernel
    tables its rows fall on both sides.)"""
    decode = [row for row in rows if "decode" in row.figure.name]
    assert decode and all(row.rel_error > 0 for row in decode)


def test_the_rows_take_each_deployments_own_conditions(rows):
    first = {label: value for label, value, _ in rows[0].figure.condition}
    assert first == {"profile": "hopper", "model": "ds-v3", "EP": 128.0, "batch": 128.0, "context": 4096.0}


@pytest.mark.slow
def test_json_marks_the_kind_and_the_factor(capsys):
    assert main(["validate", "--skip-sim", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    kinds = {row["kind"] for row in data["rows"]}
    assert kinds == {"paper", "deployment"}
    assert all(row["tolerance_factor"] == 2.0 for row in data["rows"] if row["kind"] == "deployment")
