"""Bad ``plan`` and ``bottleneck`` flag values never show a traceback (cli/plan.py, cli/bottleneck.py)."""

from __future__ import annotations

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dualpath_plan.cli import main

EXAMPLES = 25  # each example may solve a few small MILPs
NUMBERS = st.one_of(
    st.integers(-3, 12).map(str),
    st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e300", "abc", "", "2.5", "1e-300"]),
)
FLAGS = st.sampled_from(["--nodes", "--gpus", "--budget-usd", "--target-turns-per-s", "--target-agents-per-s", "--node-cost", "--alternatives", "--tpot-slo-ms", "--decode-instance-nodes", "--prefill-instance-nodes", "--dtype", "--mode", "--profile", "--dram-tier", "--dram-price", "--dram-rent"])


# capsys is read (and so emptied) inside every example, so sharing it across examples is safe.
FUZZ = settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(pairs=st.lists(st.tuples(FLAGS, NUMBERS), min_size=1, max_size=3))
@pytest.mark.slow
def test_plan_flags_exit_cleanly_with_at_most_one_error_line(capsys, pairs):
    """Any mix of flag values either plans (exit 0) or prints one error line (exit 1 or 2)."""
    argv = ["plan", "--profile", "hopper", "--model", "llama-3.1-8b"]
    for flag, value in pairs:
        argv += [flag, value]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1, 2)
    assert "Traceback" not in err
    if code:
        assert err.startswith("error:") and err.count("\n") == 1 and out == ""


@FUZZ
@given(flag=st.sampled_from(["--tpot-slo-ms", "--decode-instance-nodes", "--prefill-instance-nodes", "--dtype", "-P", "-D", "--pe-profile", "--de-profile"]), value=NUMBERS)
@pytest.mark.slow
def test_bottleneck_bound_flags_exit_cleanly(capsys, flag, value):
    """The flags the LP added to ``bottleneck`` refuse bad values in one line, never a traceback."""
    code = main(["bottleneck", "--profile", "hopper", flag, value, "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2) and "Traceback" not in err
    if code:
        assert err.startswith("error:") and err.count("\n") == 1
