"""Where numba keeps the compiled engine: a cache folder per version of the compiled modules' source.

numba checks only the timestamp of the file that holds the function it loads from its cache: the
cached engine (``loop.run_chunk``) would survive a change to a kernel it calls from another file,
or to a constant it took from another module, and run the old code. :func:`versioned_cache_dir` points numba at a folder named after a hash of every
compiled module's source, which cannot hold a stale engine. The modules that import numba call it
first (numba reads ``NUMBA_CACHE_DIR`` when it is imported).
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

# The compiled kernels' modules, then every module they take code or constants from (numba freezes both).
CACHE_SOURCES = ("state.py", "queues.py", "engine.py", "policies.py", "loop.py", "share.py", "tier.py", "../../bounds/steptime.py",
                 "../clocksteps.py", "../stages.py", "../rules.py", "../pipes.py", "../tier.py")


@functools.cache
def versioned_cache_dir() -> str | None:
    """Point numba's cache at a folder named after a hash of every compiled module's source, unless
    ``NUMBA_CACHE_DIR`` is set already (module docstring); returns the folder, or None if none could be
    made (numba then caches next to the sources)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    here = Path(__file__).parent
    digest = hashlib.sha256(b"".join((here / name).read_bytes() for name in CACHE_SOURCES)).hexdigest()[:16]
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dualpath-plan" / f"numba-{digest}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    return str(folder)
