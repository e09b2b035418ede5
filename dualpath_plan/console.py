"""The console script. Importing the command line (typer, rich, numpy) takes a moment; an interrupt
during it is one line and exit code 130 too, as everywhere else (``cli.main``). A reader that closes
stdout early (``dualpath-plan ... | head -1``) ends the run quietly with 141: the process takes SIGPIPE's
default action, as ``yes`` and ``cat`` do. Python ignores SIGPIPE, and then a large write to a pipe whose reader
has gone returns short without an error and the run would end 0; in process (the API, the tests) the closed
pipe is caught instead (``cli.app.closed_pipe``)."""

from __future__ import annotations

import signal
import sys


def main() -> int:
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a reader gone: end like any Unix filter (status 141)
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
