"""Drawn data sets kept on disk between commands, so that a command does not draw its workload's again.

Drawing a workload's data set (``workload.dataset``: a tilted prior pool, then a balanced draw of 500
shapes) takes about 0.1 s, a quarter of a ``bottleneck`` run, and gives the same arrays every time. This
module keeps them in ``$XDG_CACHE_HOME/dualpath-plan/datasets`` (``~/.cache/...`` without it), one
``.npz`` file per key. ``DUALPATH_PLAN_CACHE`` set to ``off`` turns the cache off, set to a folder puts it
there (the test suite keeps its own).

A key is the hash of the code that draws (the source of ``SOURCES`` and numpy's version) and a hash of the
caller's fields and seed, so a change to any of them draws anew; a file kept by other code is deleted
when the next one is written, so edits do not pile files up. The cache never changes a result, only how
soon it comes: a file that cannot be read, or does not hold what the key promises, is drawn again and
replaced; a folder that cannot be made or written (no home folder, a read-only disk) is left alone.
Files are written under a temporary name and renamed, so a reader never sees half of one.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

ENV_VAR = "DUALPATH_PLAN_CACHE"
OFF = ("off", "0", "no")
SOURCES = ("table2.py", "workload.py")  # the modules whose code decides the arrays


@functools.cache
def _code_digest() -> str | None:
    """The hash of the drawing code, or None when its source cannot be read (then nothing is kept)."""
    here = Path(__file__).parent
    try:
        source = b"".join((here / name).read_bytes() for name in SOURCES)
    except OSError:
        return None
    return hashlib.sha256(source + np.__version__.encode()).hexdigest()[:12]


def key_of(*fields: object) -> str | None:
    """The cache key of a draw from ``fields`` (numbers as exact hex, so 0.1 and 0.1000001 differ), or None
    when the drawing code cannot be hashed."""
    code = _code_digest()
    if code is None:
        return None
    text = "|".join(float(f).hex() if isinstance(f, float) else repr(f) for f in fields)
    return f"{code}-{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def folder() -> Path | None:
    """The data-set folder, or None when the cache is off or there is no folder to put it in."""
    chosen = os.environ.get(ENV_VAR, "")
    if chosen.lower() in OFF:
        return None
    if chosen:
        return Path(chosen)
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError:  # no HOME and no passwd entry (a container's bare uid)
        return None
    return base / "dualpath-plan" / "datasets"


def load(key: str | None, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` stored under ``key``, or None (no cache, no file, or a file that does not hold them)."""
    where = folder()
    if where is None or key is None:
        return None
    try:
        with np.load(where / f"{key}.npz", allow_pickle=False) as data:
            return {name: np.array(data[name]) for name in names}
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):  # missing, unreadable, truncated or foreign: draw again
        return None


def store(key: str | None, arrays: dict[str, np.ndarray]) -> None:
    """Keep ``arrays`` under ``key`` when the folder can be written (written whole, then renamed into place), and
    delete the files other code kept."""
    where = folder()
    if where is None or key is None:
        return
    tmp = None
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, prefix=f".{key}.", suffix=".tmp", delete=False) as handle:
            tmp = Path(handle.name)
            np.savez(handle, **arrays)
        os.replace(tmp, where / f"{key}.npz")
        tmp = None
        _prune(where, key.split("-", 1)[0])
    except OSError:
        pass  # a read-only or full disk: the next command draws again
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def _prune(where: Path, code: str) -> None:
    """Delete the data sets that code other than ``code`` drew: no command will read them again."""
    for old in where.glob("*.npz"):
        if not old.name.startswith(f"{code}-"):
            old.unlink(missing_ok=True)
