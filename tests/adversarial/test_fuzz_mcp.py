"""Both MCP faces fuzzed: generated JSON-RPC traffic (``nous_memory.testing.mcp_traffic``:
tool calls that break one rule of the tools' own schemas, unknown tools and methods,
another agent's memory, lone surrogates, batches, half lines, bad UTF-8, binary noise, a
10 MB line) sent to ``nous-memory mcp`` over stdio and to ``/mcp`` of ``nous-memory
serve``, both as deployed (subprocesses) over one cloned database.

Every request must be answered with an error within a second, the session must go on,
no answer may hold another agent's text, and every row of every table must be exactly
as it was: an invalid call changes nothing.  The official SDK client also sends
schema-breaking calls over both transports.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from nous_memory import Embedder, MemoryStore
from nous_memory.db import EmbeddedServer
from nous_memory.testing.mcp_traffic import (
    HttpDriver,
    Probe,
    StdioDriver,
    Traffic,
    answer_problem,
    row_snapshot,
    rows_changed,
)
from tests.conftest import create_database, drop_database
from tests.integration.http_helpers import free_port, start_server, stop_server, wait_healthy
from tests.integration.test_mcp import http_client

KEY = "fuzz-alice-key-0123456789"
SECRETS = ("4471-zebra", "Bob's door code")
ANSWER_S = 1.0
EXAMPLES = 40  # hypothesis examples per transport, PROBES requests each
PROBES = 5


@pytest.fixture(scope="module")
async def mcp_target(pg_server: EmbeddedServer, template_db: str,
                     embedder: Embedder) -> AsyncIterator[dict[str, Any]]:
    dsn = await create_database(pg_server, template_db)
    async with MemoryStore.open(database_url=dsn, embedder=embedder,
                                data_dir=Path("/nonexistent-unused")) as store:
        await store.remember_many("alice", [
            {"kind": "fact", "content": "Alice drinks tea"},
            {"kind": "decision", "description": "Alice chose the train"}])
        # the owner keeps secrets here (memories/guard.py): a code is the private marker
        await store.set_secrets_policy("bob", "keep")
        bob = await store.remember("bob", "fact", content="Bob's door code is 4471-zebra")
        forgotten = await store.remember("bob", "fact", content="Bob forgot this")
        await store.delete("bob", forgotten.id)
    env = {**os.environ, "NOUS_MEMORY_DATABASE_URL": dsn, "HF_HUB_OFFLINE": "1",
           "NOUS_MEMORY_RUN_WORKER_IN_SERVE": "false", "NOUS_MEMORY_API_KEYS": f"{KEY}:alice",
           "NOUS_MEMORY_TOOLS_ALLOW_RESTORE": "true"}
    port = free_port()
    proc = await asyncio.to_thread(start_server, port, env)
    stdio = StdioDriver([sys.executable, "-m", "nous_memory.cli", "mcp", "--agent", "alice"],
                        env)
    base = f"http://127.0.0.1:{port}"
    try:
        await asyncio.to_thread(wait_healthy, base, proc)
        listed = await asyncio.to_thread(stdio.initialize)
        http = HttpDriver(f"{base}/mcp", {"Authorization": f"Bearer {KEY}"})
        http_tools = await asyncio.to_thread(http.tools)
        foreign = [str(bob.id), str(forgotten.id), f"fact:{bob.id.hex[:8]}"]
        yield {"dsn": dsn, "before": await row_snapshot(dsn), "stdio": stdio, "http": http,
               "url": f"{base}/mcp", "env": env, "proc": proc,
               "stdio_traffic": Traffic(listed["tools"], foreign_ids=foreign,
                                        foreign_agent="bob"),
               "http_traffic": Traffic(http_tools, foreign_ids=foreign, foreign_agent="bob")}
        http.close()
    finally:
        await asyncio.to_thread(stdio.close)
        await asyncio.to_thread(stop_server, proc)
        await drop_database(pg_server, dsn)


def fuzz(driver: Any, traffic: Traffic) -> list[float]:
    """``EXAMPLES`` hypothesis examples of ``PROBES`` requests each, then a 10 MB line;
    every answer checked as it comes.  The answer times, in ms."""
    times: list[float] = []
    ids = iter(range(1000, 10**9))

    def ask(probe: Probe) -> None:
        answer, ms = driver.ask(probe.body, ANSWER_S * 5)
        assert answer is not None, f"no answer to a {probe.kind} request: {probe.body[:200]!r}"
        assert ms <= ANSWER_S * 1000, f"{probe.kind} answered after {ms:.0f} ms"
        problem = answer_problem(probe, answer, secrets=SECRETS)
        assert problem is None, f"{probe.kind} {probe.body[:200]!r}: {problem}"
        times.append(ms)

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.randoms(use_true_random=False))
    def run(rng: random.Random) -> None:
        for probe in traffic.probes(rng, PROBES, next(ids)):
            ask(probe)

    run()
    ask(traffic.probe(random.Random(7), next(ids), "huge"))
    ask(traffic.probe(random.Random(8), next(ids), "cut"))
    return times


def test_stdio_answers_every_invalid_request(mcp_target: dict[str, Any]) -> None:
    stdio: StdioDriver = mcp_target["stdio"]
    times = fuzz(stdio, mcp_target["stdio_traffic"])
    assert len(times) >= EXAMPLES * PROBES + 2  # hypothesis may add a few examples
    assert stdio.alive()
    listed, _ = stdio.ask(b'{"jsonrpc": "2.0", "id": "after", "method": "tools/list"}', 5)
    assert listed is not None and b'"memory_search"' in listed  # the session goes on
    assert stdio.stderr().count("refused a request line") >= 10  # each one logged


def test_http_answers_every_invalid_request(mcp_target: dict[str, Any]) -> None:
    http: HttpDriver = mcp_target["http"]
    times = fuzz(http, mcp_target["http_traffic"])
    assert len(times) >= EXAMPLES * PROBES + 2  # hypothesis may add a few examples
    assert mcp_target["proc"].poll() is None
    assert "memory_search" in [t["name"] for t in http.tools()]  # the session goes on


async def test_the_sdk_client_gets_errors_for_schema_breaking_calls(
        mcp_target: dict[str, Any]) -> None:
    rng = random.Random(24)
    stdio = StdioServerParameters(command=sys.executable, env=mcp_target["env"],
                                  args=["-m", "nous_memory.cli", "mcp", "--agent", "alice"])
    async with Client(stdio, read_timeout_seconds=120) as on_stdio, \
            http_client(mcp_target["url"], KEY) as on_http:
        for client, traffic in ((on_stdio, mcp_target["stdio_traffic"]),
                                (on_http, mcp_target["http_traffic"])):
            for _ in range(25):
                name, arguments = traffic.broken_call(rng)
                result = await asyncio.wait_for(client.call_tool(name, arguments), ANSWER_S)
                assert result.is_error, (name, arguments)
                text = "\n".join(block.text for block in result.content)
                assert text.startswith("Error: ") and not any(s in text for s in SECRETS)
                assert "aaaaaaaaaa" not in text  # a limit says the sizes, not the value


async def test_no_row_changed(mcp_target: dict[str, Any]) -> None:
    """Runs after the traffic above (same module, file order)."""
    after = await row_snapshot(mcp_target["dsn"])
    assert rows_changed(mcp_target["before"], after) == 0
    assert after == mcp_target["before"]
