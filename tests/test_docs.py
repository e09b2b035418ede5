"""The documentation site (mkdocs.yml, docs/): every page in the nav, every relative link to a file that exists, a
short README, and every name of the API in the reference. Fast: nothing is built (CI builds it, .ci/run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dualpath_plan

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
README_MAX_LINES = 350
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")


def _nav_pages() -> list[str]:
    """Every page named in mkdocs.yml's nav (the ``.md`` paths, relative to docs/)."""
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:"):]
    return re.findall(r"([\w./-]+\.md)\s*$", nav, flags=re.M)


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans (links there are examples, not links)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def _relative_links(path: Path) -> list[str]:
    return [t for t in LINK.findall(_prose(path.read_text())) if not re.match(r"^[a-z][a-z0-9+.-]*:|^#", t)]


def test_the_docs_have_pages():
    assert len(PAGES) >= 20 and (DOCS / "index.md").is_file()


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    nav = _nav_pages()
    pages = [p.relative_to(DOCS).as_posix() for p in PAGES]
    assert sorted(set(pages) - set(nav)) == []
    assert sorted(set(nav) - set(pages)) == []
    assert len(nav) == len(set(nav))


@pytest.mark.parametrize("path", [ROOT / "README.md", *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_points_at_a_file_that_exists(path):
    missing = [t for t in _relative_links(path) if not (path.parent / t.split("#", 1)[0]).exists()]
    assert missing == []


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_MAX_LINES


def test_every_name_of_the_api_has_a_reference_entry():
    directives = {line.split()[1] for p in PAGES for line in p.read_text().splitlines() if line.startswith("::: ")}
    documented = {d.rpartition(".")[2] for d in directives}
    assert sorted(set(dualpath_plan.__all__) - documented) == []


def test_every_reference_entry_names_an_object_that_exists():
    import importlib

    for p in PAGES:
        for line in p.read_text().splitlines():
            if line.startswith("::: "):
                module, _, name = line.split()[1].rpartition(".")
                assert hasattr(importlib.import_module(module), name), line
