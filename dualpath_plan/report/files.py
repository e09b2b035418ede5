"""Writing output files atomically: a temporary name in the target directory, then a rename, so an
interrupted run never leaves a half-written file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from dualpath_plan.errors import PlanError


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` to produce the file at a temporary path, then rename it to ``path``."""
    path = Path(path)
    if not path.parent.is_dir():
        raise PlanError(f"{path}: directory {str(path.parent)!r} does not exist", 2)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the user's usual mode
        os.replace(tmp, path)
    except OSError as exc:
        raise PlanError(f"{path}: cannot write ({exc.strerror or exc})", 1) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
