"""Drawn data sets kept on disk between commands, so that a command does not draw its workload's again.

Drawing a workload's data set (``workload.dataset``: a tilted prior pool, then a balanced draw of 500
shapes) takes about 0.1 s, a quarter of a ``bottleneck`` run, and gives the same arrays every time. This
module keeps them in ``$XDG_CACHE_HOME/dualpath-plan/datasets`` (``~/.cache/...`` without it), one
``.npz`` file per key; ``DUALPATH_PLAN_CACHE=off`` turns the cache off.

The key is a hash of everything the draw reads: the caller's fields and seed, the source of the modules
that draw (``SOURCES``) and numpy's version, so a change to any of them draws anew. The cache never
changes a result, only how soon it comes: a file that cannot be read, or does not hold what the key
promises, is drawn again and replaced; a folder that cannot be written is left alone. Files are written
under a temporary name and renamed, so a reader never sees half of one.
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
SOURCES = ("table2.py", "workload.py")  # the modules whose code decides the arrays


@functools.cache
def _code_digest() -> bytes:
    here = Path(__file__).parent
    return hashlib.sha256(b"".join((here / name).read_bytes() for name in SOURCES) + np.__version__.encode()).digest()


def key_of(*fields: object) -> str:
    """The cache key of a draw from ``fields`` (numbers as exact hex, so 0.1 and 0.1000001 differ)."""
    text = "|".join(float(f).hex() if isinstance(f, float) else repr(f) for f in fields)
    return hashlib.sha256(_code_digest() + text.encode()).hexdigest()[:32]


def folder() -> Path | None:
    """The data-set folder, or None when the cache is off."""
    if os.environ.get(ENV_VAR, "").lower() in ("off", "0", "no"):
        return None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dualpath-plan" / "datasets"


def load(key: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` stored under ``key``, or None (no cache, no file, or a file that does not hold them)."""
    where = folder()
    if where is None:
        return None
    try:
        with np.load(where / f"{key}.npz", allow_pickle=False) as data:
            return {name: np.array(data[name]) for name in names}
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):  # missing, unreadable, truncated or foreign: draw again
        return None


def store(key: str, arrays: dict[str, np.ndarray]) -> None:
    """Keep ``arrays`` under ``key`` when the folder can be written (written whole, then renamed into place)."""
    where = folder()
    if where is None:
        return
    tmp = None
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, prefix=f".{key}.", suffix=".tmp", delete=False) as handle:
            tmp = Path(handle.name)
            np.savez(handle, **arrays)
        os.replace(tmp, where / f"{key}.npz")
        tmp = None
    except OSError:
        pass  # a read-only or full disk: the next command draws again
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
