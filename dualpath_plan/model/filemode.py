"""The mode an output file gets: what the user's umask gives a new file, not ``tempfile.mkstemp``'s 0600.

Every output is written under a temporary name and renamed into place (``report.files.write_atomic``,
``model.trace.native.write_lines``); ``mkstemp`` creates that file readable by its owner only, so before the rename it
gets ``0666`` less the umask, as ``open(path, "w")`` would have given it.
"""

from __future__ import annotations

import os
from pathlib import Path


def give_usual_mode(path: Path | str) -> None:
    """Set ``path``'s mode to ``0666`` less the process's umask (read without changing it: ``os.umask`` sets and returns)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)
