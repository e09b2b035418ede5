"""The console script. Importing the command line (typer, rich, numpy) takes a moment; an interrupt
during it is one line and exit code 130 too, as everywhere else (``cli.main``). A reader that closes
stdout early (``dualpath-plan ... | head -1``) ends the run quietly with 141 (``cli.app.closed_pipe``)."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from dualpath_plan.cli import main as cli_main
        from dualpath_plan.cli.app import closed_pipe
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    code = cli_main()
    try:
        sys.stdout.flush()  # what is still buffered goes now, where a closed pipe can be caught
    except BrokenPipeError:
        return closed_pipe()
    return code
