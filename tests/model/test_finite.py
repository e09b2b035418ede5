"""Stage-boundary guards (finite.py): nothing non-finite passes from one stage to the next."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from dualpath_plan.cli import main
from dualpath_plan.model import finite
from dualpath_plan.model.errors import PlanError


@dataclass(frozen=True)
class Inner:
    rates: dict[str, float]
    values: np.ndarray


@dataclass(frozen=True)
class Outer:
    name: str
    count: int
    missing: float | None
    inner: Inner
    parts: tuple[float, ...]
    tpot_slo_s: float = math.inf
    raw: np.ndarray = field(default_factory=lambda: np.array([math.nan]), metadata={finite.RAW: "per-turn times"})


def _record(**changes):
    base = dict(name="x", count=3, missing=None, inner=Inner({"a": 1.0}, np.arange(3.0)), parts=(1.0, 2.0))
    return Outer(**(base | changes))


def test_a_finite_record_passes_whole():
    record = _record()
    assert list(finite.nonfinite(record)) == [] and finite.guard(record, "stage", "inputs") is record


@pytest.mark.parametrize("changes, path", [
    ({"inner": Inner({"a": math.nan}, np.arange(3.0))}, "inner.rates.a"),
    ({"inner": Inner({"a": 1.0}, np.array([[0.0, 1.0], [math.inf, 2.0]]))}, "inner.values[1, 0]"),
    ({"parts": (1.0, -math.inf)}, "parts[1]"),
    ({"missing": np.float64(math.nan)}, "missing"),
    ({"tpot_slo_s": math.nan}, "tpot_slo_s"),
])
def test_the_first_non_finite_value_is_named_by_its_path(changes, path):
    assert next(finite.nonfinite(_record(**changes)))[0] == path


def test_infinity_passes_only_where_it_means_no_limit_and_raw_fields_are_not_walked():
    assert list(finite.nonfinite(_record(tpot_slo_s=math.inf))) == []
    assert list(finite.nonfinite(_record(missing=math.inf))) == [("missing", math.inf)]


def test_the_guard_is_one_domain_line_naming_stage_field_and_inputs():
    with pytest.raises(PlanError) as info:
        finite.guard(_record(parts=(math.nan,)), "the dualpath bound", "hopper 2P4D, ds-v3.2 on agentic-64k")
    text = str(info.value)
    assert info.value.exit_code == 1 and "\n" not in text
    assert text.startswith("the dualpath bound gave parts[0] = nan for hopper 2P4D, ds-v3.2 on agentic-64k")


def test_a_nan_between_scenario_and_bound_stops_the_command_in_one_line(monkeypatch, capsys):
    from dualpath_plan.bounds import lp
    monkeypatch.setattr(lp, "prefill_rates", lambda model, turns, hw, dtype, nodes=None: (math.nan, 1e15))
    code = main(["bottleneck", "--profile", "hopper", "--set", "snic_Gbps=400"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "" and captured.err.count("\n") == 1
    assert "the bound's inputs gave flops_per_turn = nan for hopper 2P4D" in captured.err and "--set snic_Gbps=400" in captured.err


def test_a_nan_between_bound_and_plan_stops_the_command_in_one_line(monkeypatch, capsys):
    from dualpath_plan.bounds import lp
    real = lp._utilization
    monkeypatch.setattr(lp, "_utilization", lambda *a: real(*a) | {"pe_snic": math.inf})
    code = main(["plan", "--profile", "hopper", "--nodes", "8"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "" and captured.err.count("\n") == 1 and "utilization.pe_snic = inf" in captured.err


@pytest.mark.slow
def test_a_nan_out_of_the_runner_stops_the_command_in_one_line(monkeypatch, capsys):
    from dualpath_plan.sim import metrics
    monkeypatch.setattr(metrics.Meter, "de_read_share", lambda self: math.nan)
    code = main(["simulate", "--profile", "hopper", "--agents", "4", "--engine", "python"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "" and captured.err.count("\n") == 1
    assert "the dualpath run gave de_read_share = nan for hopper 2P4D" in captured.err
