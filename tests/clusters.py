"""Where the suite's throwaway PostgreSQL clusters live: in RAM (``/dev/shm``) when the
machine has room there. Their data need not survive anything (fsync is off), and on a
disk mounted with online discard (``-o discard``, common on cloud volumes) each file
PostgreSQL creates and removes costs a TRIM: cloning the template for a test took
about 470 ms there against about 25 ms in RAM (a loaded 2-core machine).
``NOUS_TEST_PG_DIR`` names another parent directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

RAM_DIR = Path("/dev/shm")
# a run's cluster stays well under this (the template, one clone per running test, the
# WAL up to max_wal_size); a container's 64 MB /dev/shm falls back to the disk
RAM_NEEDED_BYTES = 4 << 30


def cluster_parent() -> str | None:
    """The parent directory for a throwaway cluster; ``None`` is the system's temp dir."""
    chosen = os.environ.get("NOUS_TEST_PG_DIR")
    if chosen:
        return chosen
    roomy = (RAM_DIR.is_dir() and os.access(RAM_DIR, os.W_OK | os.X_OK)
             and shutil.disk_usage(RAM_DIR).free >= RAM_NEEDED_BYTES)
    return str(RAM_DIR) if roomy else None


def cluster_dir(prefix: str) -> Path:
    """A new directory for one throwaway cluster; the caller removes it."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=cluster_parent()))
