"""Writing output files atomically: a temporary name in the target directory, then a rename, so an
interrupted run never leaves a half-written file.

A symbolic link is followed: the file it points to is replaced and the link stays. A path that is not
a regular file (a device such as ``/dev/stdout``, a FIFO) cannot be replaced: the finished bytes are
written into it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from dualpath_plan.model.errors import PlanError


def check_output(path: Path, flag: str, suffix: str | None = None) -> None:
    """Refuse an output path before any work is done or any file written: its directory must exist, it
    must not be a directory and, when ``suffix`` is given, the name must end with it (a PNG is written
    as a PNG whatever its name)."""
    if not str(path).strip() or str(path) == ".":
        raise PlanError(f"{flag} {str(path)!r}: give a file name", 2)
    path = Path(path)
    if str(path) == "-":
        raise PlanError(f"{flag} -: standard output is not a file name here; give a file name (or /dev/stdout)", 2)
    if not path.parent.is_dir():
        raise PlanError(f"{flag} {path}: directory {str(path.parent)!r} does not exist", 2)
    if path.is_dir():
        raise PlanError(f"{flag} {path}: is a directory; give a file name", 2)
    if suffix is not None and path.suffix.lower() != suffix:
        raise PlanError(f"{flag} {path}: the file name must end in {suffix} (the file is written in that format)", 2)


def _replaceable(path: Path) -> bool:
    """Whether ``path`` (symlinks followed) is a regular file or new: then it can be renamed over."""
    return not path.exists() or (path.is_file() and not str(path).startswith(("/dev/", "/proc/")))


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` to produce the file at a temporary path, then rename it to ``path`` (module docstring)."""
    given = Path(path)
    target = Path(os.path.realpath(given))
    if not target.parent.is_dir():
        raise PlanError(f"{given}: directory {str(target.parent)!r} does not exist", 2)
    direct = not (_replaceable(given) and _replaceable(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=tempfile.gettempdir() if direct else target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        if direct:
            with open(tmp, "rb") as src, open(given, "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the user's usual mode
            os.replace(tmp, target)
    except OSError as exc:
        raise PlanError(f"{given}: cannot write ({exc.strerror or exc})", 1) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
