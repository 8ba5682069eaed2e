"""Stopping and starting an embedded PostgreSQL under a running store, for outage tests
and ``bench/outage.py``: a fast restart (``pg_ctl restart -m fast``) and a hard stop
(the postmaster and every child killed with SIGKILL, as a crash or an OOM kill would),
then a start with the options the embedded server was started with."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil

from ..db.tools import postgres_tool


class ServerControl:
    """One embedded server's data directory, driven with its own ``pg_ctl``."""

    def __init__(self, pgdata: Path, dsn: str) -> None:
        self.pgdata = pgdata
        hosts = parse_qs(urlsplit(dsn).query).get("host")
        if not hosts:
            raise ValueError("an embedded server's DSN names its socket directory")
        self.socket_dir = hosts[0]

    def _pg_ctl(self, *args: str, timeout_s: float = 60.0) -> None:
        # PostgreSQL refuses to run as root: as root, the wheel runs it as the data
        # directory's owner (a user of its own)
        user = self.pgdata.owner() if os.geteuid() == 0 else None
        done = subprocess.run([str(postgres_tool("pg_ctl")), "-D", str(self.pgdata), *args],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=timeout_s, check=False, user=user)
        if done.returncode != 0:
            log = self.pgdata / "log"
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            raise RuntimeError(f"pg_ctl {' '.join(args)} failed: "
                               f"{done.stderr.decode(errors='replace')}\n{tail}")

    def postmaster(self) -> psutil.Process | None:
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
            process = psutil.Process(pid)
        except (OSError, ValueError, IndexError, psutil.Error):
            return None
        return process if process.is_running() else None

    def start(self) -> float:
        """Start the server and wait until it accepts; returns when (monotonic)."""
        self._pg_ctl("-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}",
                     "-l", str(self.pgdata / "log"), "start")
        return time.monotonic()

    def restart_fast(self) -> tuple[float, float]:
        """A fast shutdown and a start; returns (down at, up at), monotonic."""
        down = time.monotonic()
        self._pg_ctl("-w", "-m", "fast", "stop")
        return down, self.start()

    def kill_hard(self) -> float:
        """SIGKILL the postmaster and all its processes; returns when (monotonic)."""
        process = self.postmaster()
        if process is None:
            raise RuntimeError(f"no PostgreSQL is running in {self.pgdata}")
        victims = [process, *process.children(recursive=True)]
        at = time.monotonic()
        for victim in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim.pid, signal.SIGKILL)
        psutil.wait_procs(victims, timeout=10)
        return at

    def stop(self) -> None:
        """A fast shutdown, if it runs (cleanup after a test that restarted it: the
        embedded handle only stops the server process it started itself)."""
        if self.postmaster() is not None:
            self._pg_ctl("-w", "-m", "fast", "stop")
