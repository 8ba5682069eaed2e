"""The MCP conformance suite (``@modelcontextprotocol/conformance``, pinned in
clients/tools) against ``/mcp`` of ``nous-memory serve``, as deployed.

Two deployments, one database: with API keys (a key scoped to two agents), and on
loopback without keys, where the endpoint checks Host and Origin against DNS rebinding.
The suite's CLI cannot send headers, so in the keyed run it talks to a loopback relay
that adds ``Authorization: Bearer KEY`` to each request, as a deployer's gateway would;
the relay changes nothing else.  The scenarios that apply to an application server must
pass; every other scenario of the pinned suite is listed below with why it does not apply.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from nous_memory.db import EmbeddedServer
from tests.conftest import create_database, drop_database
from tests.integration.http_helpers import free_port, start_server, stop_server, wait_healthy
from tests.integration.node_tools import CONFORMANCE, NODE, node_env, require

KEY = "conformance-key-0123456789abcdef"
APPLY = ("server-initialize", "ping", "tools-list", "tools-call-error", "resources-list")
LOOPBACK_ONLY = {
    "dns-rebinding-protection": "with API keys the key is the protection: the endpoint then "
    "takes any Host (a keyed deployment is reached by its network name), and a page that "
    "rebinds a name cannot present the key; checked in the loopback run without keys",
}
DEMO_TOOL = "calls one of the suite's own demo tools (test_*), which a memory server does not have"
NOT_APPLICABLE = {
    "logging-set-level": "no logging capability: the service logs to its own log, not to "
                         "the client",
    "completion-complete": "no prompts and no resource-template arguments to complete",
    "tools-call-simple-text": DEMO_TOOL + " (it passes only because the 'no such tool' "
                                          "error result is text)",
    "tools-call-image": DEMO_TOOL, "tools-call-audio": DEMO_TOOL,
    "tools-call-embedded-resource": DEMO_TOOL, "tools-call-mixed-content": DEMO_TOOL,
    "tools-call-with-logging": DEMO_TOOL, "tools-call-with-progress": DEMO_TOOL,
    "tools-call-sampling": DEMO_TOOL + "; the memory tools never ask the client's model",
    "tools-call-elicitation": DEMO_TOOL + "; the memory tools never ask the user",
    "elicitation-sep1034-defaults": DEMO_TOOL + "; the memory tools never ask the user",
    "elicitation-sep1330-enums": DEMO_TOOL + "; the memory tools never ask the user",
    "server-sse-multiple-streams": "needs sessions with event streams; /mcp is stateless "
                                   "JSON so any replica answers any request",
    "resources-read-text": "reads the suite's demo resource test://static-text; memories "
                           "are read through the memory:// templates",
    "resources-read-binary": "reads the suite's demo resource test://static-binary",
    "resources-templates-read": "reads the suite's demo template test://template/{id}",
    "resources-subscribe": "no subscriptions: a stateless endpoint keeps nothing per client",
    "resources-unsubscribe": "no subscriptions: a stateless endpoint keeps nothing per client",
    "prompts-list": "the server offers tools and resources, no prompts",
    "prompts-get-simple": "no prompts", "prompts-get-with-args": "no prompts",
    "prompts-get-embedded-resource": "no prompts", "prompts-get-with-image": "no prompts",
}
RESULT_DIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


async def _relay_requests(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          port: int) -> None:
    """Forward each request on the connection with the key added; the answers as they are."""
    upstream_reader, upstream = await asyncio.open_connection("127.0.0.1", port)

    async def answers() -> None:
        while chunk := await upstream_reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        writer.close()

    back = asyncio.create_task(answers())
    try:  # (cancelled at the end of the module: the finally still closes both sides)
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                assert name.strip().lower() != "transfer-encoding", "a chunked request body"
                if name.strip().lower() == "content-length":
                    length = int(value)
            lines.insert(1, f"Authorization: Bearer {KEY}")
            upstream.write("\r\n".join(lines).encode("latin-1"))
            upstream.write(await reader.readexactly(length))
            await upstream.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the client is done with this connection
    finally:
        upstream.close()
        back.cancel()
        await asyncio.gather(back, return_exceptions=True)
        writer.close()


@pytest.fixture(scope="module")
async def served(pg_server: EmbeddedServer, template_db: str) -> AsyncIterator[dict[str, str]]:
    """Two servers over one database (keyed and not), and a keyed relay."""
    require(NODE, CONFORMANCE)
    dsn = await create_database(pg_server, template_db)
    ports = {"keyed": free_port(), "loopback": free_port()}
    base_env = {**os.environ, "NOUS_MEMORY_DATABASE_URL": dsn, "HF_HUB_OFFLINE": "1",
                "NOUS_MEMORY_RUN_WORKER_IN_SERVE": "false"}
    envs = {"keyed": {**base_env, "NOUS_MEMORY_API_KEYS": f"{KEY}:assistant|planner"},
            "loopback": base_env}
    procs = {name: await asyncio.to_thread(start_server, port, envs[name])
             for name, port in ports.items()}
    # each connection's relay, held until the end: a handler the loop drops while its
    # connection is still open is destroyed pending, its sockets unclosed
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)  # type: ignore[arg-type]
        await _relay_requests(reader, writer, ports["keyed"])

    relay = await asyncio.start_server(handle, "127.0.0.1", 0)
    relay_port = relay.sockets[0].getsockname()[1]
    try:
        await asyncio.gather(*(asyncio.to_thread(wait_healthy, f"http://127.0.0.1:{port}",
                                                 procs[name]) for name, port in ports.items()))
        yield {"keyed": f"http://127.0.0.1:{relay_port}/mcp",
               "keyed_direct": f"http://127.0.0.1:{ports['keyed']}/mcp",
               "loopback": f"http://127.0.0.1:{ports['loopback']}/mcp"}
    finally:
        relay.close()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await relay.wait_closed()
        for proc in procs.values():
            await asyncio.to_thread(stop_server, proc)
        await drop_database(pg_server, dsn)


async def run_suite(url: str, out: Path, *scenario: str) -> dict[str, list[dict[str, Any]]]:
    """Every check of each scenario run, by scenario (the whole active suite by default)."""
    argv = [str(NODE), str(CONFORMANCE), "server", "--url", url, "-o", str(out)]
    if scenario:
        argv += ["--scenario", *scenario]
    proc = await asyncio.create_subprocess_exec(
        *argv, env=node_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
    results = await asyncio.to_thread(read_results, out)
    assert results, output.decode(errors="replace")
    return results


def read_results(out: Path) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {}
    for folder in out.iterdir() if out.exists() else ():
        match = RESULT_DIR.match(folder.name)
        assert match, folder.name
        results[match[1]] = json.loads((folder / "checks.json").read_text())
    return results


def failures(results: dict[str, list[dict[str, Any]]], names: tuple[str, ...] | list[str]
             ) -> dict[str, list[str]]:
    """Each named scenario's checks that did not succeed (a scenario with none is one)."""
    found: dict[str, list[str]] = {}
    for name in names:
        checks = results.get(name)
        bad = ["not run"] if not checks else [
            f"{c['id']}: {c['status']} {c.get('errorMessage') or ''}".strip()
            for c in checks if c["status"] != "SUCCESS"]
        if bad:
            found[name] = bad
    return found


async def test_keyed_endpoint_passes_what_applies(served: dict[str, str],
                                                  tmp_path: Path) -> None:
    results = await run_suite(served["keyed"], tmp_path / "keyed")
    assert failures(results, APPLY) == {}
    listed = set(APPLY) | set(LOOPBACK_ONLY) | set(NOT_APPLICABLE)
    assert set(results) == listed, "the pinned suite's scenarios and this list differ"


async def test_keyed_endpoint_refuses_a_caller_without_the_key(served: dict[str, str],
                                                               tmp_path: Path) -> None:
    """The relay is what lets the suite in: straight to the server it gets nowhere."""
    results = await run_suite(served["keyed_direct"], tmp_path / "direct", "server-initialize")
    assert set(failures(results, ["server-initialize"])) == {"server-initialize"}


async def test_loopback_endpoint_without_keys(served: dict[str, str], tmp_path: Path) -> None:
    results = await run_suite(served["loopback"], tmp_path / "loopback")
    assert failures(results, [*APPLY, *LOOPBACK_ONLY]) == {}
