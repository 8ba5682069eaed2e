"""The ``nous-memory`` command line, run as a real subprocess against a real database.

Every ``remember`` or summary-changing ``update`` loads the embedding model in the child
(~10 s), so the runs are few and each checks as much as it can.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

import httpx
import pytest

from nous_memory import MemoryStore, NotFoundError, Status
from nous_memory.db.distribution import citus_script
from nous_memory.db.migrate import schema_version
from tests.integration.http_helpers import free_port

AGENT = "cli-agent"
SUMMARY = ("Chose Postgres + pgvector for unified storage [success] [85% confidence]"
           " — Pattern: Unify to reduce surface area")
RUN_TIMEOUT = 180.0
SERVER_START_TIMEOUT = 120.0
SCRIPT = Path(sys.executable).with_name("nous-memory")


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.code == 0, self.stderr
        return json.loads(self.stdout)


Cli = Callable[..., Awaitable[Result]]


def cli_command() -> list[str]:
    """The installed console script when there is one, else the module."""
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "nous_memory.cli"]


def cli_env(database_url: str, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_MEMORY_")}
    env.update(NOUS_MEMORY_DATABASE_URL=database_url, NOUS_MEMORY_DATA_DIR=str(data_dir),
               HF_HUB_OFFLINE="1")
    return env


async def run_process(argv: list[str], env: dict[str, str]) -> Result:
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return Result(proc.returncode, out.decode(), err.decode())


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return cli_env(database_url, tmp_path / "unused-data-dir")


@pytest.fixture
def cli(env: dict[str, str]) -> Cli:
    async def run(*args: str) -> Result:
        return await run_process([*cli_command(), *args], env)

    return run


async def test_decision_round_trip(cli: Cli, store: MemoryStore) -> None:
    older = await store.remember(AGENT, "fact", content="The staging database runs PostgreSQL 18")

    made = await cli(
        "remember", "decision", "--agent", AGENT,
        "--description", "Chose Postgres + pgvector for unified storage",
        "--outcome", "success", "--confidence", "0.85",
        "--pattern", "Unify to reduce surface area",
        "--reasons", "one backup story", "--reasons", "vectors next to their rows",
        "--tag", "architecture",
        "--fields-json", '{"context": "greenfield service", "importance": 0.8}')
    assert made.code == 0, made.stderr
    match = re.fullmatch(r"([0-9a-f-]{36})  decision  (.+)\n", made.stdout)
    assert match, made.stdout
    memory_id, printed = match.groups()
    assert printed == SUMMARY
    assert (await store.get(AGENT, memory_id)).summary == SUMMARY

    got = (await cli("get", memory_id, "--agent", AGENT, "--json")).json()
    assert got["id"] == memory_id and got["kind"] == "decision" and got["status"] == "active"
    assert got["summary"] == SUMMARY
    assert got["importance"] == 0.8 and got["tags"] == ["architecture"]
    assert got["detail"]["reasons"] == ["one backup story", "vectors next to their rows"]
    assert got["detail"]["context"] == "greenfield service"
    assert got["detail"]["confidence"] == 0.85

    elsewhere = await cli("get", memory_id, "--agent", "another-agent")
    assert elsewhere.code == 3, elsewhere.stderr
    assert "not found" in elsewhere.stderr and elsewhere.stdout == ""

    updated = (await cli("--json", "update", memory_id, "--agent", AGENT, "--actor", "tester",
                         "--confidence", "0.9", "--tag", "storage", "--tag", "postgres")).json()
    assert updated["version"] == 2
    assert updated["summary"] == SUMMARY.replace("85%", "90%")
    assert updated["tags"] == ["storage", "postgres"]
    assert updated["detail"]["outcome"] == "success"  # untouched fields stay

    first = (await cli("--json", "list", "--agent", AGENT, "--limit", "1")).json()
    assert [m["id"] for m in first["items"]] == [memory_id]
    assert first["next_cursor"]
    second = (await cli("--json", "list", "--agent", AGENT, "--limit", "1",
                        "--cursor", first["next_cursor"])).json()
    assert [m["id"] for m in second["items"]] == [str(older.id)]
    assert second["next_cursor"] is None

    deleted = (await cli("--json", "delete", memory_id, "--agent", AGENT)).json()
    assert deleted == {"id": memory_id, "deleted": True, "purged": False}
    with pytest.raises(NotFoundError):
        await store.get(AGENT, memory_id)
    assert (await store.get(AGENT, memory_id, include_deleted=True)).status is Status.DELETED

    events = (await cli("--json", "history", memory_id, "--agent", AGENT)).json()
    assert [e["event"] for e in events] == ["created", "updated", "deleted"]
    assert events[1]["actor"] == "tester"
    assert events[1]["old_values"]["confidence"] == 0.85
    assert events[1]["new_values"]["confidence"] == 0.9


async def test_errors_map_to_exit_codes(cli: Cli) -> None:
    invalid = await cli("remember", "decision", "--agent", AGENT,
                        "--description", "Too sure", "--confidence", "1.5")
    assert invalid.code == 2
    assert re.search(r"^nous-memory: error: confidence: .*1", invalid.stderr, re.M), \
        invalid.stderr
    assert "Traceback" not in invalid.stderr and invalid.stdout == ""

    unknown_kind = await cli("remember", "opinion", "--agent", AGENT, "--description", "x")
    assert unknown_kind.code == 2
    assert "kind" in unknown_kind.stderr and "opinion" in unknown_kind.stderr

    missing = str(uuid4())
    not_found = await cli("delete", missing, "--agent", AGENT, "--purge")
    assert not_found.code == 3, not_found.stderr
    assert missing in not_found.stderr and "Traceback" not in not_found.stderr


# runs main() in a child that reports afterwards whether model weights were loaded
STATUS_PROBE = """\
import sys
from nous_memory.cli import main
code = main(sys.argv[1:])
loaded = any(m in sys.modules for m in ("torch", "onnxruntime", "sentence_transformers"))
print("weights loaded" if loaded else "weights not loaded", file=sys.stderr)
raise SystemExit(code)
"""


async def test_db_citus_script(cli: Cli) -> None:
    result = await cli("db", "citus-script")
    assert result.code == 0, result.stderr
    assert result.stdout == citus_script()
    data = (await cli("db", "citus-script", "--json")).json()
    assert data["sql"] == citus_script() and data["distributed"][0] == "memories"
    assert set(data["coordinator_local"]) == {"agent_erasures", "api_keys", "job_runs",
                                              "schema_version", "store_meta", "work_items"}


async def test_db_status(env: dict[str, str], database_url: str) -> None:
    result = await run_process([sys.executable, "-c", STATUS_PROBE, "db", "status"], env)
    assert result.code == 0, result.stderr
    assert "weights not loaded" in result.stderr
    out = result.stdout
    expected = schema_version()
    assert re.search(rf"^schema version: +{expected} \(expected {expected}, up to date\)$",
                     out, re.M), out
    assert re.search(r"^pgvector version: +\d+\.\d+", out, re.M), out
    assert re.search(r"^server version: +\d+", out, re.M), out
    assert re.search(r"^embedding model: +\S+ \(384 dimensions\)$", out, re.M), out
    password = urlsplit(database_url).password
    if password:
        assert password not in out


async def test_serve_answers_health(env: dict[str, str]) -> None:
    try:
        from nous_memory.api import create_app  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"nous_memory.api cannot be imported yet: {exc}")
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *cli_command(), "serve", "--host", "127.0.0.1", "--port", str(port), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        response = await wait_for_health(proc, f"http://127.0.0.1:{port}/health")
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "ok"
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def wait_for_health(proc: asyncio.subprocess.Process, url: str) -> httpx.Response:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SERVER_START_TIMEOUT
    async with httpx.AsyncClient(timeout=5) as client:
        while True:
            if proc.returncode is not None:
                _, err = await proc.communicate()
                pytest.fail(f"serve exited with {proc.returncode}:\n{err.decode()}")
            try:
                return await client.get(url)
            except httpx.TransportError:
                if loop.time() > deadline:
                    pytest.fail(f"serve did not answer {url} within {SERVER_START_TIMEOUT} s")
                await asyncio.sleep(0.25)
