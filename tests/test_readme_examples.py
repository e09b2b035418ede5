"""The command examples of the README and of every page under docs/ are what the commands print
(tools/readme_examples.py; the slow simulate and validate examples are checked by running the script without --fast)."""

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
EXAMPLES = readme_examples.all_examples()
FAST = [e for e in EXAMPLES if not e.slow]


def test_the_pages_have_examples_of_every_fast_command():
    assert {e.argv[1] for e in FAST} >= {"bottleneck", "sweep", "plan", "compare", "formulas", "trace"}


def test_the_readme_has_an_example_and_the_docs_hold_the_rest():
    pages = {e.page for e in EXAMPLES}
    assert "README.md" in pages and any(page.startswith("docs/") for page in pages)
    assert all(page == "README.md" or page.startswith("docs/") for page in pages)


@pytest.mark.parametrize("example", FAST, ids=lambda e: e.name)
@pytest.mark.slow
def test_a_fast_example_prints_what_its_page_shows(example):
    assert readme_examples.diff(example) == []


@pytest.mark.slow
def test_a_changed_output_is_a_diff():
    example = FAST[0]
    changed = readme_examples.Example(example.line, example.argv, (*example.expected[:-1], "something else"), example.body_at,
                                      example.page)
    assert any(line == "+" + example.expected[-1].rstrip() for line in readme_examples.diff(changed))


def test_an_example_is_named_by_its_page_and_line():
    text = "intro\n\n```\n$ dualpath-plan profiles list \\\n    --json\n{}\n```\n"
    (example,) = readme_examples.examples(text, "docs/commands/profiles.md")
    assert example.name == "docs/commands/profiles.md:4"
    assert example.argv == ("dualpath-plan", "profiles", "list", "--json") and example.expected == ("{}",)


def test_write_puts_the_output_into_the_page_and_leaves_the_others(tmp_path, monkeypatch):
    page, other = tmp_path / "docs" / "a.md", tmp_path / "README.md"
    page.parent.mkdir()
    page.write_text("```\n$ dualpath-plan bottleneck --profile hopper\nstale\n```\n")
    other.write_text("no examples\n")
    monkeypatch.setattr(readme_examples, "ROOT", tmp_path)
    monkeypatch.setattr(readme_examples, "README", other)
    monkeypatch.setattr(readme_examples, "DOCS", tmp_path / "docs")
    monkeypatch.setattr(readme_examples, "output_of", lambda example: ["fresh", "output"])
    assert readme_examples.write(fast=True, files=[page]) == 0
    assert page.read_text() == "```\n$ dualpath-plan bottleneck --profile hopper\nfresh\noutput\n```\n"
    assert other.read_text() == "no examples\n"
