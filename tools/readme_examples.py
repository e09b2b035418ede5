"""Run every ``$ dualpath-plan ...`` example of the README and the documentation pages and diff its output against the text.

    python tools/readme_examples.py            # every example (simulate and validate take minutes)
    python tools/readme_examples.py --fast     # only the commands that answer in about a second
    python tools/readme_examples.py --write    # replace each example's text with what the command prints now
    python tools/readme_examples.py --only 'simulate --profile hopper'   # the examples whose command holds this text
    python tools/readme_examples.py --file docs/commands/plan.md         # the examples of one page

The pages are ``README.md`` and every ``docs/**/*.md``. Each example is a fenced block whose first line is
``$ dualpath-plan ...`` (a trailing ``\\`` continues the command); the rest of the block is what the command prints
(stdout, then stderr) at a terminal of ``COLUMNS`` = 100. Lines that measure this machine (``wall``,
``simulated / wall``) are left out of the comparison. Each example is named by its page and line
(``docs/commands/plan.md:123``). Exit 0 when every example matches, 1 with a unified diff per example otherwise.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
COLUMNS = "100"
SLOW = ("simulate", "validate")  # minutes, not seconds: left out by --fast
MACHINE_LINES = re.compile(r"^│ (wall|simulated / wall) ")


@dataclass(frozen=True)
class Example:
    line: int  # where the command stands on its page (1-based)
    argv: tuple[str, ...]
    expected: tuple[str, ...]
    body_at: int  # index (0-based) of the first output line
    page: str = "README.md"  # the page, relative to the repository's root

    @property
    def slow(self) -> bool:
        return self.argv[1] in SLOW or "--check" in self.argv  # --check runs the simulator

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """Every page whose examples are checked: the README, then the documentation pages by path."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def page_name(path: Path) -> str:
    """A page's path relative to the repository's root (``docs/commands/plan.md``)."""
    return path.resolve().relative_to(ROOT).as_posix()


def examples(text: str, page: str = "README.md") -> list[Example]:
    """A page's command examples, in order."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("```") and i + 1 < len(lines) and lines[i + 1].startswith("$ dualpath-plan "):
            start, command, i = i + 2, lines[i + 1][2:], i + 2
            while command.endswith("\\"):
                command, i = command[:-1] + " " + lines[i].strip(), i + 1
            body_at, body = i, []
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append(Example(start, tuple(shlex.split(command)), tuple(body), body_at, page))
        i += 1
    return out


def all_examples(files: list[Path] | None = None) -> list[Example]:
    """The examples of ``files`` (default: every page), page by page."""
    return [e for path in (pages() if files is None else files) for e in examples(path.read_text(), page_name(path))]


def output_of(example: Example) -> list[str]:
    """What the example's command prints, stdout then stderr, at the pages' width."""
    env = {**os.environ, "COLUMNS": COLUMNS, "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run(example.argv, capture_output=True, text=True, env=env, timeout=1800, cwd=ROOT)
    return (done.stdout + done.stderr).rstrip("\n").splitlines()


def _comparable(lines) -> list[str]:
    return [line.rstrip() for line in lines if not MACHINE_LINES.match(line)]


def diff(example: Example) -> list[str]:
    """The unified diff between the page's text and the command's output (empty when they agree)."""
    return list(difflib.unified_diff(_comparable(example.expected), _comparable(output_of(example)),
                                     example.name, " ".join(example.argv), lineterm=""))


def _chosen(example: Example, fast: bool, only: str | None) -> bool:
    return not (fast and example.slow) and (only is None or only in " ".join(example.argv))


def write(fast: bool, only: str | None = None, files: list[Path] | None = None) -> int:
    """Replace the output text of every example (of the fast ones with ``fast``, of those holding ``only``, on
    ``files``) by what it prints now; a page is written back only when one of its examples was chosen."""
    for path in pages() if files is None else files:
        lines, wrote = path.read_text().splitlines(), False
        for example in reversed(examples("\n".join(lines), page_name(path))):  # from the end: earlier lines stay put
            if not _chosen(example, fast, only):
                continue
            lines[example.body_at:example.body_at + len(example.expected)] = output_of(example)
            wrote = True
            print(f"wrote    {example.name}  {' '.join(example.argv)}")
        if wrote:
            path.write_text("\n".join(lines) + "\n")
    return 0


def _page(text: str) -> Path:
    path = Path(text)
    path = (path if path.is_absolute() else Path.cwd() / path).resolve()
    if path.suffix != ".md" or not path.is_file() or path not in {p.resolve() for p in pages()}:
        raise argparse.ArgumentTypeError(f"{text} is not one of the checked pages (README.md, docs/**/*.md)")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="only the examples that answer in about a second")
    parser.add_argument("--write", action="store_true", help="write each example's current output into its page")
    parser.add_argument("--only", metavar="TEXT", help="only the examples whose command holds TEXT")
    parser.add_argument("--file", metavar="PATH", type=_page, action="append",
                        help="only the examples of this page (README.md or docs/...; repeatable)")
    args = parser.parse_args(argv)
    if args.write:
        return write(args.fast, args.only, args.file)
    failed = 0
    for example in all_examples(args.file):
        if not _chosen(example, args.fast, args.only):
            continue
        lines = diff(example)
        print(f"{'differs' if lines else 'same   '}  {example.name}  {' '.join(example.argv)}")
        if lines:
            failed += 1
            print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
