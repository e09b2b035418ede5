"""The README's command examples are what the commands print (tools/readme_examples.py; the slow
simulate and validate examples are checked by running the script without --fast)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "readme_examples.py"
_spec = importlib.util.spec_from_file_location("readme_examples", SCRIPT)
readme_examples = importlib.util.module_from_spec(_spec)
sys.modules["readme_examples"] = readme_examples  # dataclasses look their module up there
_spec.loader.exec_module(readme_examples)
FAST = [e for e in readme_examples.examples(readme_examples.README.read_text()) if not e.slow]


def test_the_readme_has_examples_of_every_fast_command():
    assert {e.argv[1] for e in FAST} >= {"bottleneck", "sweep", "plan"}


@pytest.mark.parametrize("example", FAST, ids=lambda e: f"README.md:{e.line}")
@pytest.mark.slow
def test_a_fast_example_prints_what_the_readme_shows(example):
    assert readme_examples.diff(example) == []


def test_a_changed_output_is_a_diff():
    example = FAST[0]
    changed = readme_examples.Example(example.line, example.argv, (*example.expected[:-1], "something else"), example.body_at)
    assert any(line == "+" + example.expected[-1].rstrip() for line in readme_examples.diff(changed))
