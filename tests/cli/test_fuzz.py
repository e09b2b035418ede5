"""The command-line fuzz harness in the suite: hypothesis draws ``tools/fuzz_cli.py``'s invocations (every
command, flag and profile field, hostile files and environments) and runs them in process. Each ends with exit
0, or exit 1 or 2 with one line on stderr and nothing on stdout, and leaves no temporary or partial file.
Kills and closed pipes need a process of their own: the campaign script runs those (and 2,000 invocations)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualpath_plan.cli import main
from dualpath_plan.cli.app import app
from dualpath_plan.cli.options import command_options

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "fuzz_cli.py"
_spec = importlib.util.spec_from_file_location("fuzz_cli", SCRIPT)
fuzz = importlib.util.module_from_spec(_spec)
sys.modules["fuzz_cli"] = fuzz
_spec.loader.exec_module(fuzz)


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory(prefix="dualpath-fuzz-") as root:
        yield fuzz.prepare(Path(root))


@contextlib.contextmanager
def _inside(folder: Path, env: dict[str, str]):
    """Run in ``folder`` with ``env`` added (DUALPATH_PLAN_PROFILES names a folder of it); undo both after."""
    old_cwd, old_env = os.getcwd(), {k: os.environ.get(k) for k in env}
    os.chdir(folder)
    os.environ.update({k: str(folder / v) if k == "DUALPATH_PLAN_PROFILES" else v for k, v in env.items()})
    try:
        yield
    finally:
        os.chdir(old_cwd)
        for key, value in old_env.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def _draw(data) -> "fuzz.Draw":
    return fuzz.Draw(lambda seq: data.draw(st.sampled_from(list(seq))), lambda a, b: data.draw(st.integers(a, b)))


@given(st.data())
@pytest.mark.slow
def test_every_generated_invocation_ends_in_exit_0_or_one_clean_line(folder, data):
    case = fuzz.make_case(_draw(data), allow_disturb=False)
    fuzz.lay_journal(folder, case.journal)
    before = {str(p.relative_to(folder)) for p in folder.rglob("*")}
    out, err = io.StringIO(), io.StringIO()
    with _inside(folder, case.env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(case.argv))
    left = fuzz.leftovers(folder, before)
    for name in left:  # a successful run's outputs go, for the next example
        (folder / name).unlink(missing_ok=True)
    fuzz.lay_journal(folder, None)
    assert "nowhere.partial" not in left, (case.argv, "written through a dangling journal")
    assert fuzz.classify(code, out.getvalue(), err.getvalue(), None) in ("ok", "clean error"), (case.argv, err.getvalue())
    assert not [n for n in left if n.startswith(".") or code], (case.argv, left)


def test_the_generator_reaches_every_command_flag_and_profile_field():
    """Over a fixed seed's 4,000 cases, every command of the app has a base line, and every option of every
    command and every profile field is changed in some case of that command."""
    drawn = fuzz.cases(4000, fuzz.SEED)
    options = command_options(app)
    assert {o.command for o in options} == {fuzz.command_of(base) for base in fuzz.BASES}
    changed = {(fuzz.command_of(case.command), what) for case in drawn for what in case.changes}
    assert not [(o.command, o.name) for o in options if (o.command, o.name) not in changed]
    fields = {what.removeprefix("--set ") for _, what in changed if what.startswith("--set ")}
    assert not [key for _, key in fuzz.set_texts() if key not in fields]
    assert {what for _, what in changed if what.startswith("env ")} == {"env COLUMNS", "env DUALPATH_PLAN_PROFILES", "env RAY_ADDRESS"}
    assert {case.journal for case in drawn} >= set(fuzz.JOURNALS)  # every hostile journal is laid under some resume


@pytest.mark.parametrize("code, out, err, disturb, expected", [
    (0, "table", "", None, "ok"),
    (2, "", "error: --aps = 1e300 is not allowed\n", None, "clean error"),
    (1, "", "error: one\nerror: two\n", None, "multi-line"),
    (1, "", "Traceback (most recent call last):\n  ...\n", None, "traceback"),
    (None, "", "", None, "hang"),
    (2, "", "", None, "silent"),
    (141, "", "", "pipe", "ok"),
    (-13, "", "", "pipe", "ok"),
    (141, "", "", None, "silent"),
    (143, "", "", "TERM", "killed"),
    (-9, "", "", "KILL", "killed"),
    (3, "", "odd\n", None, "other"),
])
def test_the_classes_of_an_ending(code, out, err, disturb, expected):
    assert fuzz.classify(code, out, err, disturb) == expected
