"""The console script. Importing the command line (typer, rich, numpy) takes a moment; an interrupt
during it is one line and exit code 130 too, as everywhere else (``cli.main``)."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from dualpath_plan.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    return cli_main()
