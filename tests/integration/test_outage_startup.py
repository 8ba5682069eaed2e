"""Starting while the database is down: ``nous-memory serve`` waits for it (one line an
attempt) and comes up by itself when it appears; past ``NOUS_MEMORY_DB_WAIT_S`` it
gives up with one line naming the host and the reason, a non-zero exit and no
traceback.  A server of the module's own, stopped and started around the service."""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.request
from pathlib import Path

from nous_memory import Embedder, MemoryStore
from nous_memory.db import EmbeddedServer
from nous_memory.testing.pgcontrol import ServerControl
from tests.integration.http_helpers import free_port
from tests.integration.test_cli import cli_command, cli_env, run_process

OwnServer = tuple[EmbeddedServer, ServerControl, Path]


def wait_until_healthy(base: str, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("serve did not become healthy")


async def _dsn(own_server: OwnServer, embedder: Embedder) -> str:
    """The own server's store database, created and migrated (the server left up)."""
    server, control, data_dir = own_server
    if control.postmaster() is None:
        control.start()
    async with MemoryStore.open(data_dir=data_dir, embedder=embedder):
        pass
    return server.dsn("nous_memory")


async def test_serve_gives_up_past_the_wait_in_one_line(
        own_server: OwnServer, embedder: Embedder, tmp_path: Path) -> None:
    dsn = await _dsn(own_server, embedder)
    own_server[1].stop()
    env = cli_env(dsn, tmp_path / "unused") | {"NOUS_MEMORY_DB_WAIT_S": "3"}
    done = await run_process([*cli_command(), "serve", "--port", str(free_port())], env)
    assert done.code == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    waiting = [line for line in lines if "waiting for the database at" in line]
    assert 2 <= len(waiting) <= 8, lines  # one line an attempt, with backoff
    assert lines[-1].startswith("nous-memory: error: cannot reach the database at /")
    assert "gave up after" in lines[-1] and "NOUS_MEMORY_DB_WAIT_S=3" in lines[-1]
    with_debug = await run_process([*cli_command(), "--debug", "serve", "--port",
                                    str(free_port())], env | {"NOUS_MEMORY_DB_WAIT_S": "0"})
    assert with_debug.code == 1 and "Traceback" in with_debug.stderr


async def test_serve_started_before_its_database_comes_up_by_itself(
        own_server: OwnServer, embedder: Embedder, tmp_path: Path) -> None:
    dsn = await _dsn(own_server, embedder)
    control = own_server[1]
    control.stop()
    port = free_port()
    log = tmp_path / "serve.log"
    env = cli_env(dsn, tmp_path / "unused") | {"NOUS_MEMORY_DB_WAIT_S": "60"}
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *cli_command(), "serve", "--host", "127.0.0.1", "--port", str(port), env=env,
            stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):  # down while it starts: it waits, it does not exit
            if log.read_text().count("waiting for the database at") >= 2:
                break
            assert proc.returncode is None, log.read_text()
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"serve never said it waits: {log.read_text()}")
        control.start()
        await asyncio.to_thread(wait_until_healthy, f"http://127.0.0.1:{port}")
        assert proc.returncode is None
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)
    text = log.read_text()
    assert "waiting for the database at" in text and "Traceback" not in text, text
