"""The range table of the command-line flags (flags.py): complete, consistent, and refusing in one line."""

from __future__ import annotations

import math

import pytest

from dualpath_plan.cli import main
from dualpath_plan.cli.app import app
from dualpath_plan.cli.options import command_options
from dualpath_plan.model import flags
from dualpath_plan.model.errors import PlanError
from dualpath_plan.sim import rules, runner


def _options():
    return [(o.command, o.name, o.kind) for o in command_options(app) if not o.positional]


def test_every_numeric_option_of_every_command_has_a_range():
    numeric = {(path, opt) for path, opt, kind in _options() if kind in (int, float)}
    assert numeric, "no numeric option found: the walk is broken"
    missing = sorted(f"{path} {opt}" for path, opt in numeric if opt not in flags.FLAGS)
    assert not missing


def test_every_row_names_an_option_that_exists():
    names = {opt for _, opt, _ in _options()}
    assert set(flags.FLAGS) <= names


@pytest.mark.parametrize("flag", sorted(flags.FLAGS))
def test_each_range_accepts_its_ends_and_refuses_past_them(flag):
    rng = flags.FLAGS[flag]
    assert rng.low <= rng.high and rng.reason
    assert flags.check_flag(flag, rng.low) == rng.low and flags.check_flag(flag, rng.high) == rng.high
    step = 1 if rng.whole else max(abs(rng.low), abs(rng.high)) * 1e-6
    for bad in (rng.low - step, rng.high + step, math.nan, math.inf, -math.inf, "7", 10**400):
        with pytest.raises(PlanError) as info:
            flags.check_flag(flag, bad)
        text = str(info.value)
        assert info.value.exit_code == 2 and "\n" not in text and text.startswith(f"{flag} = ") and rng.reason in text


def test_whole_flags_refuse_fractions_and_booleans_and_numpy_numbers_pass():
    import numpy as np

    for bad in (2.5, True, np.bool_(True)):
        with pytest.raises(PlanError, match="must be a whole number"):
            flags.check_flag("--agents", bad)
    assert flags.check_flag("--agents", np.int64(6)) == 6 and flags.check_flag("--aps", np.float32(0.5)) == 0.5


def test_the_step_range_is_the_runner_s_own():
    rng = flags.FLAGS["--dt-ms"]
    assert rng.low == runner.MIN_DT_S * 1e3 and rng.high == pytest.approx(rules.QUOTA_S * 1e3)


@pytest.mark.parametrize("argv, needle", [
    (["simulate", "--profile", "hopper", "--online", "--aps", "1e300"], "--aps = 1e+300 agents/s is not allowed"),
    (["simulate", "--profile", "hopper", "--online", "--aps", "1e-300"], "--aps = 1e-300 agents/s is not allowed"),
    (["simulate", "--profile", "hopper", "--seed", "-1"], "--seed = -1 is not allowed; must be a whole number >= 0"),
    (["validate", "--skip-sim", "--seed", "4294967296"], "--seed = 4294967296 is not allowed"),
    (["bottleneck", "--profile", "hopper", "--tpot-slo-ms", "1e-300"], "--tpot-slo-ms = 1e-300 ms is not allowed"),
    (["plan", "--profile", "hopper", "--nodes", "16", "--alternatives", "100000000"], "--alternatives = 100000000 clusters"),
    (["plan", "--profile", "hopper", "--target-turns-per-s", "1e300"], "--target-turns-per-s = 1e+300 turns/s is not allowed"),
    (["plan", "--profile", "hopper", "--nodes", "8", "--node-cost", "hopper=1e30"], "--node-cost/--price hopper = 1e+30 USD is not allowed"),
    # --price is --node-cost's other name: the message names both, and the type the value was given for
    (["sweep", "--profile", "hopper", "--nodes", "12", "--price", "hopper=1000000001"], "--node-cost/--price hopper = 1000000001.0 USD"),
    (["plan", "--profile", "hopper", "--budget-usd", "1e6", "--price", "0"], "--node-cost/--price = 0 USD is not allowed"),
    (["plan", "--profile", "hopper", "--budget-usd-per-hour", "1e3", "--rent", "hopper=1e9"], "--rent hopper = 1e+09 USD/h is not allowed"),
    (["bottleneck", "--profile", "hopper", "-P", "9" * 5000], "-P = '" + "9" * 109 + "...[4,782 characters]..." + "9" * 100),
])
def test_values_past_a_flag_s_range_are_one_line_usage_errors(capsys, argv, needle):
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and needle in captured.err and captured.err.count("\n") == 1


def test_an_online_rate_far_past_the_agent_cap_is_refused_before_drawing_arrivals():
    spec = runner.OnlineSpec(1e5, horizon_s=1e4)
    with pytest.raises(PlanError, match=r"are 1,000,000,000 agents, more than the 262,144 a run takes"):
        runner.online_agents(None, spec, 0)  # type: ignore[arg-type]: refused before the source is touched


def test_a_value_just_past_a_range_end_is_shown_as_typed_not_rounded_into_it():
    """--price hopper=1000000001 was refused as "= 1e+09 USD ... <= 1e+09", a value that reads as in range."""
    with pytest.raises(PlanError, match=r"^--node-cost = 1000000001.0 USD is not allowed"):
        flags.check_flag("--node-cost", 1000000001.0)
    with pytest.raises(PlanError, match=r"^--node-cost = 0.5 USD is not allowed"):
        flags.check_flag("--node-cost", 0.5)
