"""The embedded server's tuning for the machine it runs on.

``nous_memory.conf`` beside ``postgresql.conf`` (which includes it) sets shared_buffers
from the machine's memory (PostgreSQL's 128 MB default holds a few agents' rows; past
that every read of a large store is a copy from the OS cache) and loads pg_prewarm,
whose autoprewarm lists the cached pages at shutdown and reads them back at the next
start (an embedded server stops with its last process, and would otherwise start cold
each time).  What the owner set in the server's own files is left alone: a
``shared_preload_libraries`` there keeps pg_prewarm out, and ``ALTER SYSTEM`` (read
after every include) wins over this file.  The files are replaced whole, never
rewritten in place, so a server starting beside us never reads half a file.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import psutil

from ..config import size_kb
from ..errors import ConfigurationError

TUNING_FILE = "nous_memory.conf"
INCLUDE = f"include_if_exists = '{TUNING_FILE}'"
_MB = 2**20
# "auto" shared_buffers: an eighth of the machine's memory, within these bounds (the
# server shares the machine with the assistant; its pages are only taken when used)
AUTO_SHARED_BUFFERS_MB = (128, 2048)
# a container's memory limit (cgroup v2, then v1): the machine it runs on, for sizing
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"),
                  Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def machine_memory() -> int:
    """The memory this process may use: the host's, or its container's limit if lower."""
    total = int(psutil.virtual_memory().total)
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def auto_shared_buffers(total_bytes: int | None = None) -> str:
    """shared_buffers for "auto": an eighth of ``total_bytes`` (``machine_memory``)."""
    total = machine_memory() if total_bytes is None else total_bytes
    low, high = AUTO_SHARED_BUFFERS_MB
    return f"{min(max(total // 8 // _MB, low), high)}MB"


def size_bytes(size: str) -> int:
    """A size as PostgreSQL writes it ("512MB", "2GB", "65536kB") in bytes."""
    kb = size_kb(size)
    if kb is None:
        raise ConfigurationError(f"not a size such as 512MB or 2GB: {size!r}")
    return kb * 2**10


def tuning_text(shared_buffers: str, *, prewarm: bool = True,
                memory: int | None = None) -> str:
    """The include file's text; a size beyond the machine's memory is refused here,
    before a server that could not start is started."""
    size = auto_shared_buffers(memory) if shared_buffers == "auto" else shared_buffers
    available = machine_memory() if memory is None else memory
    if size_bytes(size) > available:
        raise ConfigurationError(
            f"embedded_shared_buffers {size} is more than this machine's memory "
            f"({available // _MB} MB)")
    lines = ["# written by nous-memory before each start of the embedded server "
             "(NOUS_MEMORY_EMBEDDED_SHARED_BUFFERS);",
             "# edits here are replaced: set what you need in postgresql.conf or with "
             "ALTER SYSTEM",
             f"shared_buffers = '{size}'"]
    if prewarm:
        lines.append("shared_preload_libraries = 'pg_prewarm'")
    return "\n".join(lines) + "\n"


def owner_sets(pgdata: Path, name: str) -> bool:
    """Whether the server's own files set ``name`` (a line not commented out)."""
    setting = re.compile(rf"^\s*{re.escape(name)}\s*=", re.MULTILINE)
    for file in ("postgresql.conf", "postgresql.auto.conf"):
        try:
            if setting.search((pgdata / file).read_text()):
                return True
        except OSError:
            continue
    return False


def write_tuning(pgdata: Path, shared_buffers: str, library_dir: Path) -> None:
    """Writes the include file, and the line that includes it, where they differ from
    what the settings ask for (``library_dir``: where the server's modules are, to see
    that pg_prewarm ships there)."""
    prewarm = (any(library_dir.glob("pg_prewarm.*"))
               and not owner_sets(pgdata, "shared_preload_libraries"))
    tuning = tuning_text(shared_buffers, prewarm=prewarm)
    conf = pgdata / "postgresql.conf"
    text = conf.read_text()
    if INCLUDE not in text.splitlines():
        _replace(conf, text.rstrip("\n") + "\n" + INCLUDE + "\n", like=conf)
    path = pgdata / TUNING_FILE
    if not path.exists() or path.read_text() != tuning:
        _replace(path, tuning, like=conf)


def _replace(path: Path, text: str, *, like: Path) -> None:
    """Writes ``path`` whole (a new file renamed over it) with ``like``'s owner and mode."""
    stat = like.stat()
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(temp, stat.st_mode & 0o777)
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            os.chown(temp, stat.st_uid, stat.st_gid)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
