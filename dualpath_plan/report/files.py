"""Writing output files atomically: a temporary name in the target directory, then a rename, so an
interrupted run never leaves a half-written file.

A symbolic link is followed: the file it points to is replaced and the link stays. A path that is not
a regular file (a device such as ``/dev/stdout``) cannot be replaced: the finished bytes are written into
it. :func:`check_output` refuses such paths outside ``/dev`` up front (a FIFO without a reader would block
the run forever).

The temporary file is ``.NAME.PID.XXXXXXXX.tmp`` beside the target (NAME shortened so that the whole
name fits the file system's limit). It is removed on every exit the process sees: an error, Ctrl-C, and
SIGTERM (turned into exit 143 while the file exists). A kill that leaves no chance (SIGKILL) leaves it
behind; the next write to the same target removes every such file whose process is gone."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.filemode import give_usual_mode


def check_output(path: Path, flag: str, suffix: str | tuple[str, ...] | None = None) -> None:
    """Refuse an output path before any work is done or any file written, in one line naming ``flag`` and the
    path as given: its directory must exist and be writable, its name must fit the file system's limit, it
    must not be a directory, nor a FIFO, socket or device outside ``/dev`` (``/dev/stdout`` is written into),
    and, when ``suffix`` is given (one, or a tuple of the formats allowed), the name must end with it (a PNG is
    written as a PNG whatever its name)."""
    if not str(path).strip() or str(path) == ".":
        raise PlanError(f"{flag} {str(path)!r}: give a file name", 2)
    path = Path(path)
    if path.name.startswith(".") and path.suffix == "" and path.name.lower() in {f"{a}" for a in ((suffix,) if isinstance(suffix, str) else suffix or ())}:
        raise PlanError(f"{flag} {path}: give a file name before {path.name}", 2)
    if str(path) == "-":
        raise PlanError(f"{flag} -: standard output is not a file name here; give a file name (or /dev/stdout)", 2)
    try:
        path.resolve()
    except (RuntimeError, OSError):  # RuntimeError: Python 3.11's word for a loop of symbolic links
        raise PlanError(f"{flag} {path}: is a loop of symbolic links; give a file name", 2) from None
    if not path.parent.is_dir():
        raise PlanError(f"{flag} {path}: directory {str(path.parent)!r} does not exist", 2)
    limit = _name_max(path.parent)
    if len(path.name.encode()) > limit:
        raise PlanError(f"{flag} {path}: the file name is {len(path.name.encode())} bytes; this file system allows at most {limit}", 2)
    if path.is_dir():
        raise PlanError(f"{flag} {path}: is a directory; give a file name", 2)
    allowed = (suffix,) if isinstance(suffix, str) else suffix
    if allowed is not None and path.suffix.lower() not in allowed:
        raise PlanError(f"{flag} {path}: the file name must end in {' or '.join(allowed)} (the file is written in that format)", 2)
    if str(path).startswith("/dev/"):
        return  # /dev/stdout and the like: written into, as given
    if path.exists() and not path.is_file():
        raise PlanError(f"{flag} {path}: is not a regular file (a FIFO, socket or device); give a file name", 2)
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise PlanError(f"{flag} {path}: directory {str(path.parent)!r} is not writable", 2)
    _probe(path, flag)


def _probe(path: Path, flag: str) -> None:
    """Make and remove a temporary file beside ``path``: a directory the permission bits call writable may not take
    files (``/proc``, ``/sys``, a read-only mount), and a run should not end by losing its results to that."""
    try:
        fd, probe = tempfile.mkstemp(prefix=_temp_stem(Path(os.path.realpath(path))), suffix=".tmp", dir=os.path.realpath(path.parent))
    except OSError as exc:
        raise PlanError(f"{flag} {path}: cannot write a file in directory {str(path.parent)!r} ({exc.strerror or exc})", 2) from None
    os.close(fd)
    os.unlink(probe)


def _name_max(directory: Path) -> int:
    """The longest file name, in bytes, the file system of ``directory`` allows (255 where it does not say)."""
    try:
        return int(os.pathconf(directory, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


RANDOM_CHARS = 8  # the random part of a temporary name (tempfile.mkstemp's)
PID_DIGITS = 10  # room kept for the process id in a temporary name (Linux allows at most 7 digits)


def _temp_stem(target: Path) -> str:
    """``.NAME.``, NAME cut (the same for every process) so that ``.NAME.PID.XXXXXXXX.tmp`` fits the file
    system's limit on names."""
    room = _name_max(target.parent) - len("..") - PID_DIGITS - len(".") - RANDOM_CHARS - len(".tmp")
    return "." + target.name.encode()[:max(room, 1)].decode(errors="ignore") + "."


def _remove_stale(target: Path) -> None:
    """Remove the temporaries of ``target`` left by processes that are gone (a SIGKILL during a write)."""
    stem = _temp_stem(target)
    for entry in target.parent.glob(f"{glob.escape(stem)}*.tmp"):
        pid = entry.name[len(stem):].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            entry.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """While the temporary file exists, SIGTERM raises SystemExit(143) and SIGPIPE is ignored (a closed pipe is then
    a BrokenPipeError, not death mid-copy into ``/dev/stdout``), so that the file is removed on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    pipe = signal.signal(signal.SIGPIPE, signal.SIG_IGN) if hasattr(signal, "SIGPIPE") else None
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if pipe is not None:
            signal.signal(signal.SIGPIPE, pipe)


def _replaceable(path: Path) -> bool:
    """Whether ``path`` (symlinks followed) is a regular file or new: then it can be renamed over."""
    return not path.exists() or (path.is_file() and not str(path).startswith(("/dev/", "/proc/")))


def check_distinct(outputs: dict[str, Path]) -> None:
    """Refuse two output flags naming the same file (``outputs`` by flag)."""
    seen: dict[Path, str] = {}
    for flag, path in outputs.items():
        if (where := Path(path).resolve()) in seen:
            raise PlanError(f"{seen[where]} and {flag} are both {path}; give two files", 2)
        seen[where] = flag


def write_atomic(path: Path, write: Callable[[Path], None], flag: str) -> None:
    """Call ``write(tmp)`` to produce the file at a temporary path, then rename it to ``path`` (module docstring);
    errors name ``flag`` and the path as given."""
    given = Path(path)
    target = Path(os.path.realpath(given))
    if not target.parent.is_dir():
        raise PlanError(f"{flag} {given}: directory {str(target.parent)!r} does not exist", 2)
    direct = not (_replaceable(given) and _replaceable(target))
    home = Path(tempfile.gettempdir()) / target.name if direct else target
    _remove_stale(home)
    with _sigterm_as_exit():
        fd, tmp = tempfile.mkstemp(prefix=f"{_temp_stem(home)}{os.getpid()}.", suffix=".tmp", dir=home.parent)
        os.close(fd)
        try:
            write(Path(tmp))
            if direct:
                with open(tmp, "rb") as src, open(given, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            else:
                give_usual_mode(tmp)  # mkstemp makes 0600
                os.replace(tmp, target)
        except BrokenPipeError:
            raise  # the reader of /dev/stdout went away: the command ends quietly (cli.main), the temporary file goes below
        except OSError as exc:
            raise PlanError(f"{flag} {given}: cannot write ({exc.strerror or exc})", 1) from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
