"""Writing output files atomically: a temporary name in the target directory, then a rename, so an
interrupted run never leaves a half-written file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from dualpath_plan.errors import PlanError


def check_output(path: Path, flag: str, suffix: str | None = None) -> None:
    """Refuse an output path before any work is done or any file written: its directory must exist and,
    when ``suffix`` is given, the name must end with it (a PNG is written as a PNG whatever its name)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise PlanError(f"{flag} {path}: directory {str(path.parent)!r} does not exist", 2)
    if suffix is not None and path.suffix.lower() != suffix:
        raise PlanError(f"{flag} {path}: the file name must end in {suffix} (the file is written in that format)", 2)


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
