"""The MCP faces, driven by the official SDK's own client: ``nous-memory mcp`` as a
subprocess over stdio, and ``/mcp`` of a REST service served by uvicorn on loopback."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from nous_memory import MemoryStore
from nous_memory.api import create_app
from nous_memory.tools import DEFAULT_TOOL_NAMES
from nous_memory.tools.mcp_server import memory_uri
from tests.integration.http_helpers import free_port

KEY_ALICE = "alice-key-0123456789abcdef"
KEY_BOTH = "both-key-0123456789abcdef"
STARTUP_S = 20.0


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def exercise(client: Client, store: MemoryStore, extra: dict[str, str]) -> None:
    """Call every tool as agent alice (``extra`` names the agent where a session must)."""
    listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == list(DEFAULT_TOOL_NAMES)
    assert all(tool.input_schema["type"] == "object" for tool in listed.tools)
    forget = next(t for t in listed.tools if t.name == "memory_forget")
    assert forget.annotations is not None and forget.annotations.destructive_hint is True
    assert "memory_expand" in (client.instructions or "")

    learned = await client.call_tool("memory_learn_fact", {
        **extra, "content": "The user is allergic to penicillin", "category": "health"})
    assert not learned.is_error, text(learned)
    ref = learned.structured_content["ref"]
    remembered = await client.call_tool("memory_remember", {
        **extra, "kind": "procedure", "name": "Book a flight",
        "core_patterns": ["aisle seat", "no departures before 07:00"]})
    assert not remembered.is_error, text(remembered)

    found = await client.call_tool("memory_search", {**extra, "query": "any allergies?"})
    assert f"[{ref}]" in text(found)
    context = await client.call_tool("memory_context", {**extra, "query": "book me a flight",
                                                        "budget_tokens": 400})
    assert f"[{remembered.structured_content['ref']}]" in text(context)
    expanded = await client.call_tool("memory_expand", {**extra, "ref": ref})
    assert "penicillin" in text(expanded)
    history = await client.call_tool("memory_history", {**extra, "ref": ref})
    assert "created" in text(history)

    bad = await client.call_tool("memory_search", {**extra, "query": "x", "k": 500})
    assert bad.is_error and "k:" in text(bad)
    assert not (await client.call_tool("memory_expand", {**extra, "ref": ref})).is_error

    resource = await client.read_resource(memory_uri("alice", ref))
    assert "penicillin" in resource.contents[0].text
    context_uri = "nous-memory://alice/context?query=allergies&budget_tokens=200"
    assert f"[{ref}]" in (await client.read_resource(context_uri)).contents[0].text
    for bad in ("nous-memory://alice/nothing-here",
                "nous-memory://alice/context?query=x&budget_tokens=%C2%B2",  # '²' isdigit
                "nous-memory://[alice/memory/fact:1a2b3c4d"):  # urlsplit: bad IPv6
        with pytest.raises(MCPError) as refused:
            await client.read_resource(bad)
        assert refused.value.code == INVALID_PARAMS, refused.value

    forgot = await client.call_tool("memory_forget", {**extra, "ref": ref})
    assert not forgot.is_error, text(forgot)
    assert (await store.get("alice", learned.structured_content["memory_id"],
                            include_deleted=True)).status.value == "deleted"


async def bob_untouched(client: Client, store: MemoryStore, bob_id: str,
                        extra: dict[str, str]) -> None:
    """No call in a session for alice reads or changes bob's memory."""
    for name in ("memory_expand", "memory_history", "memory_forget"):
        result = await client.call_tool(name, {**extra, "ref": bob_id})
        assert result.is_error and "no such memory" in text(result)
    found = await client.call_tool("memory_search", {**extra, "query": "door code"})
    assert "4471" not in text(found)
    with pytest.raises(MCPError):
        await client.read_resource(memory_uri("bob", bob_id))
    assert (await store.get("bob", bob_id)).status.value == "active"


async def test_stdio_server_bound_to_one_agent(store: MemoryStore, database_url: str) -> None:
    # the owner keeps secrets here (memories/guard.py): a code is the private marker
    await store.set_secrets_policy("bob", "keep")
    bob = await store.remember("bob", "fact", content="Bob's door code is 4471")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NOUS_MEMORY_DATABASE_URL": database_url}
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "nous_memory.cli", "mcp", "--agent", "alice"],
                                   env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        await exercise(client, store, {})
        named = await client.call_tool("memory_search", {"query": "x", "agent_id": "bob"})
        assert named.is_error and "agent_id: unknown argument" in text(named)
        await bob_untouched(client, store, str(bob.id), {})
        purge = await client.call_tool("memory_forget", {"ref": str(bob.id), "purge": True})
        assert purge.is_error and "purge" in text(purge)


async def test_stdio_server_reports_an_unreachable_database_in_one_line() -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "NOUS_MEMORY_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/nothing",
           "NOUS_MEMORY_DB_WAIT_S": "0"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nous_memory.cli", "mcp", "--agent", "alice", env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=STARTUP_S)
    assert process.returncode != 0 and out == b""  # stdout is the protocol's alone
    assert "cannot reach the database at 127.0.0.1:1" in err.decode(), err
    assert "Traceback" not in err.decode(), err


@asynccontextmanager
async def served(store: MemoryStore, **settings: Any) -> AsyncIterator[str]:
    """The REST service around ``store`` on a loopback port, for as long as the block."""
    port = free_port()
    app = create_app(store, settings=store.settings.with_changes(**settings))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    task = asyncio.create_task(server.serve())
    for _ in range(int(STARTUP_S / 0.05)):
        if server.started or task.done():
            break
        await asyncio.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=STARTUP_S)


@asynccontextmanager
async def http_client(url: str, key: str) -> AsyncIterator[Client]:
    """An SDK client sending ``key``; the HTTP client it is given is ours to close (the
    SDK leaves a caller's client open)."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, Client(
            streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
        yield client


async def test_http_endpoint_lets_a_key_use_only_its_agents(store: MemoryStore) -> None:
    # the owner keeps secrets here (memories/guard.py): a code is the private marker
    await store.set_secrets_policy("bob", "keep")
    bob = await store.remember("bob", "fact", content="Bob's door code is 4471")
    keys = f"{KEY_ALICE}:alice,{KEY_BOTH}:alice|bob"
    async with served(store, api_keys=keys) as url:
        async with httpx.AsyncClient(timeout=30) as raw:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            assert (await raw.post(url, json=initialize)).status_code == 401
            wrong = await raw.post(url, json=initialize,
                                   headers={"Authorization": "Bearer not-a-key-at-all-0000"})
            assert wrong.status_code == 401
            # stateless: no standing event stream (a GET once held a task open for good)
            # and no session to end; both refused at once, with or without a key
            for method in ("GET", "DELETE"):
                for headers in ({}, {"Authorization": f"Bearer {KEY_ALICE}"}):
                    answer = await raw.request(method, url, timeout=10, headers={
                        **headers, "Accept": "application/json, text/event-stream"})
                    assert answer.status_code == 405, (method, answer.status_code)

        async with http_client(url, KEY_ALICE) as client:
            await exercise(client, store, {})  # the key's only agent is the default
            refused = await client.call_tool("memory_search",
                                             {"query": "door code", "agent_id": "bob"})
            assert refused.is_error and "may not act for this agent" in text(refused)
            await bob_untouched(client, store, str(bob.id), {"agent_id": "alice"})

        async with http_client(url, KEY_BOTH) as client:
            listed = await client.list_tools()
            assert all("agent_id" in tool.input_schema["required"] for tool in listed.tools)
            missing = await client.call_tool("memory_search", {"query": "door code"})
            assert missing.is_error and "agent_id" in text(missing)
            found = await client.call_tool("memory_search",
                                           {"query": "door code", "agent_id": "bob"})
            assert "4471" in text(found)


async def test_http_endpoint_without_keys_refuses_other_hosts(store: MemoryStore) -> None:
    async with served(store) as url:
        async with httpx.AsyncClient(timeout=30) as raw:
            rebound = await raw.post(url, json={"jsonrpc": "2.0", "id": 1,
                                                "method": "tools/list"},
                                     headers={"Host": "attacker.example",
                                              "Accept": "application/json, text/event-stream"})
            assert 400 <= rebound.status_code < 500
        async with Client(url, read_timeout_seconds=60) as client:
            result = await client.call_tool("memory_remember", {
                "agent_id": "carol", "kind": "fact", "content": "Carol likes tea"})
            assert not result.is_error, text(result)
            unnamed = await client.call_tool("memory_search", {"query": "tea"})
            assert unnamed.is_error and "agent_id" in text(unnamed)
