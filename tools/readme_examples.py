"""Run every ``$ dualpath-plan ...`` example of the README and diff its output against the README's text.

    python tools/readme_examples.py            # every example (simulate and validate take minutes)
    python tools/readme_examples.py --fast     # only the commands that answer in about a second
    python tools/readme_examples.py --write    # replace each example's text with what the command prints now
    python tools/readme_examples.py --only 'simulate --profile hopper'   # the examples whose command holds this text

Each example is a fenced block whose first line is ``$ dualpath-plan ...`` (a trailing ``\\`` continues
the command); the rest of the block is what the command prints (stdout, then stderr) at a terminal of
``COLUMNS`` = 100. Lines that measure this machine (``wall``, ``simulated / wall``) are left out of the
comparison. Exit 0 when every example matches, 1 with a unified diff per example otherwise.
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

README = Path(__file__).resolve().parents[1] / "README.md"
COLUMNS = "100"
SLOW = ("simulate", "validate")  # minutes, not seconds: left out by --fast
MACHINE_LINES = re.compile(r"^│ (wall|simulated / wall) ")


@dataclass(frozen=True)
class Example:
    line: int  # where the command stands in the README (1-based)
    argv: tuple[str, ...]
    expected: tuple[str, ...]
    body_at: int  # index (0-based) of the first output line

    @property
    def slow(self) -> bool:
        return self.argv[1] in SLOW or "--check" in self.argv  # --check runs the simulator


def examples(text: str) -> list[Example]:
    """The README's command examples, in order."""
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
            out.append(Example(start, tuple(shlex.split(command)), tuple(body), body_at))
        i += 1
    return out


def output_of(example: Example) -> list[str]:
    """What the example's command prints, stdout then stderr, at the README's width."""
    env = {**os.environ, "COLUMNS": COLUMNS, "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run(example.argv, capture_output=True, text=True, env=env, timeout=1800)
    return (done.stdout + done.stderr).rstrip("\n").splitlines()


def _comparable(lines) -> list[str]:
    return [line.rstrip() for line in lines if not MACHINE_LINES.match(line)]


def diff(example: Example) -> list[str]:
    """The unified diff between the README's text and the command's output (empty when they agree)."""
    return list(difflib.unified_diff(_comparable(example.expected), _comparable(output_of(example)),
                                     f"README.md:{example.line}", " ".join(example.argv), lineterm=""))


def _chosen(example: Example, fast: bool, only: str | None) -> bool:
    return not (fast and example.slow) and (only is None or only in " ".join(example.argv))


def write(fast: bool, only: str | None = None) -> int:
    """Replace the output text of every example (of the fast ones with ``fast``, of those holding ``only``) by what
    it prints now."""
    lines = README.read_text().splitlines()
    for example in reversed(examples("\n".join(lines))):  # from the end, so earlier line numbers stay valid
        if not _chosen(example, fast, only):
            continue
        lines[example.body_at:example.body_at + len(example.expected)] = output_of(example)
        print(f"wrote    README.md:{example.line}  {' '.join(example.argv)}")
    README.write_text("\n".join(lines) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="only the examples that answer in about a second")
    parser.add_argument("--write", action="store_true", help="write each example's current output into the README")
    parser.add_argument("--only", metavar="TEXT", help="only the examples whose command holds TEXT")
    args = parser.parse_args(argv)
    if args.write:
        return write(args.fast, args.only)
    failed = 0
    for example in examples(README.read_text()):
        if not _chosen(example, args.fast, args.only):
            continue
        lines = diff(example)
        print(f"{'differs' if lines else 'same   '}  README.md:{example.line}  {' '.join(example.argv)}")
        if lines:
            failed += 1
            print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
