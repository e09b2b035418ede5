"""Packaging: every subpackage is installed, the README's test command is what CI runs, and CI builds the docs."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "dualpath_plan").rglob("__init__.py")}
    assert found <= listed


def test_ci_runs_the_readme_test_command_verbatim():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    readme = (ROOT / "README.md").read_text()
    commands = [line.strip() for line in ci_lines if line.strip().startswith("pip install")]
    assert len(commands) == 1
    command = commands[0]
    assert "pytest" in command
    assert command in readme


def test_ci_builds_the_docs_strictly_after_the_tests():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    builds = [i for i, line in enumerate(ci_lines) if line.startswith("mkdocs build") and "--strict" in line.split()]
    tests = next(i for i, line in enumerate(ci_lines) if line.startswith("pip install"))
    assert builds and builds[0] > tests
    assert "--site-dir" in ci_lines[builds[0]]  # never into the checkout's site/


def test_the_docs_extra_is_in_the_test_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"mkdocs", "mkdocs-material", "mkdocstrings[python]"} <= {req.split(">=")[0] for req in extras["docs"]}
    assert set(extras["docs"]) <= set(extras["test"])


def test_the_console_script_turns_an_interrupt_while_loading_into_one_line(monkeypatch, capsys):
    import builtins

    from dualpath_plan import console

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["dualpath-plan"] == "dualpath_plan.console:main"
    real = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "dualpath_plan.cli":
            raise KeyboardInterrupt
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert console.main() == 130 and capsys.readouterr().err == "error: interrupted\n"
