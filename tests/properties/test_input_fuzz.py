"""Bad input never shows a traceback: fuzz the profile loader and the CLI (profiles.py, cli/)."""

from __future__ import annotations

import pytest

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.cli import main
from dualpath_plan.model import profiles
from dualpath_plan.model.errors import PlanError

HOPPER = (Path(__file__).resolve().parents[2] / "hardware_profiles" / "hopper.toml").read_text()
TOML_VALUES = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda x: "nan" if x != x else ("inf" if x == float("inf") else "-inf" if x == float("-inf") else repr(x))),
    st.text(alphabet="abc xyz", max_size=5).map(lambda t: f'"{t}"'),
    st.sampled_from(["true", "false", "[1, 2]", "{a = 1}", '"1e3"', "", "[", "0x10"]),
)
KEYS = st.one_of(st.sampled_from(sorted(profiles.HARDWARE_SCHEMA)), st.sampled_from(["kind", "sources", "snic_gbps", "x"]))


@st.composite
def mutated_profiles(draw) -> str:
    """The hopper file with one to three lines replaced, removed or added with random values."""
    lines = HOPPER.splitlines()
    head = [i for i, line in enumerate(lines) if " = " in line and not line.startswith("[")]
    for _ in range(draw(st.integers(1, 3))):
        key, value = draw(KEYS), draw(TOML_VALUES)
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        index = draw(st.sampled_from(head))
        if action == "replace":
            lines[index] = f"{lines[index].split(' = ')[0]} = {value}"
        elif action == "drop":
            lines[index] = ""
        else:
            lines.insert(0, f"{key} = {value}")
    return "\n".join(lines)


def _load(text: str):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.toml"
        path.write_text(text)
        return profiles.load_file(path)


@given(mutated_profiles())
@pytest.mark.slow
def test_loader_returns_a_profile_or_one_plan_error(text):
    """Any file either loads or raises one PlanError of one line; nothing else escapes."""
    try:
        _load(text)
    except PlanError as exc:
        assert "\n" not in str(exc) and "fuzz.toml" in str(exc)


@pytest.mark.slow
@given(mutated_profiles())
def test_a_loaded_fuzzed_profile_is_valid_toml_with_positive_rates(text):
    """Whatever loads has positive, finite bandwidths: validation cannot be bypassed."""
    try:
        hw = _load(text)
    except PlanError:  # refusals are checked by the test above
        return
    assert 0 < hw.B < float("inf") and 0 < hw.s * hw.B < float("inf") and 0 < hw.M < float("inf")


FLAG_VALUES = st.one_of(st.integers(-3, 70).map(str), st.sampled_from(["", "x", "1.5", "nan", "-0", "1e9", "hopper", "paper", "exact"]))
SETS = st.one_of(
    st.sampled_from(["snic_Gbps", "dram_GBps", "gpus_per_node", "attn_frac", "hit_rate_frac", "kv_layout", "pe.snic_Gbps", "xx.snic_Gbps", "nope", ""]),
).flatmap(lambda key: FLAG_VALUES.map(lambda value: f"{key}={value}"))


@st.composite
def command_lines(draw) -> list[str]:
    """A bottleneck command line with random values for its flags."""
    argv = ["bottleneck", "--profile", draw(st.sampled_from(["hopper", "blackwell", "nope", ""]))]
    for flag in draw(st.lists(st.sampled_from(["-P", "-D", "--accounting", "--model", "--workload", "--set"]), max_size=4)):
        argv += [flag, draw(SETS) if flag == "--set" else draw(FLAG_VALUES)]
    return argv + draw(st.sampled_from([[], ["--json"]]))


@given(command_lines())
@pytest.mark.slow
def test_cli_never_shows_a_traceback(argv):
    """Any command line exits 0, 1 or 2; a failure prints exactly one line on stderr."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code in (0, 1, 2)
    if code:
        assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue()
