"""Who is asking, through every face: REST (the X-User header and the user field), the
remote client, the CLI over a service, ToolBox and both MCP transports.  One household
on one agent: Ana's private fact is never shown to Ben, what the agent was told with no
person (the household's) is shown to both, and the owner (no person) sees everything."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from nous_memory import MemoryStore
from nous_memory.client import AsyncMemoryClient, MemoryClient
from nous_memory.errors import InvalidInputError, NotFoundError
from nous_memory.tools import ToolBox
from tests.integration.client_helpers import served
from tests.integration.test_cli import cli_command, run_process
from tests.integration.test_cli_remote import remote_env
from tests.integration.test_mcp import STARTUP_S, text
from tests.integration.test_mcp import served as served_mcp

AGENT = "household"
PRIVATE = "I am allergic to penicillin."
SHARED = "Our wifi network is called Otter."
QUESTION = "allergies, medicine, wifi network name"


async def _household(store: MemoryStore) -> tuple[str, str]:
    """Ana's private fact and the household's shared one; their ids."""
    private = await store.learn_fact(AGENT, PRIVATE, user="ana")
    shared = await store.learn_fact(AGENT, SHARED)
    assert private.fact is not None and private.fact.people == ["ana"]
    assert shared.fact is not None and shared.fact.people == []
    return str(private.fact.id), str(shared.fact.id)


def _said(texts: list[str]) -> tuple[bool, bool]:
    """(penicillin shown, Otter shown)."""
    joined = "\n".join(texts)
    return "penicillin" in joined, "Otter" in joined


# ---------------------------------------------------------------------------- REST


async def test_rest_reads_and_writes_for_the_person_asking(client: httpx.AsyncClient,
                                                           store: MemoryStore) -> None:
    base = f"/agents/{AGENT}"
    learned = await client.post(f"{base}/facts/learn", json={"content": PRIVATE,
                                                             "user": " Ana "})
    assert learned.status_code == 200, learned.text
    assert learned.json()["fact"]["people"] == ["ana"]
    shared = await client.post(f"{base}/facts/learn", json={"content": SHARED})
    assert shared.json()["fact"]["people"] == [], shared.text
    locker = await client.post(f"{base}/memories", headers={"X-User": "Ben"}, json={
        "kind": "fact", "content": "Ben's locker is number 4471"})
    assert locker.status_code == 201 and locker.json()["people"] == ["ben"], locker.text
    batch = await client.post(f"{base}/memories/batch", headers={"X-User": "ben"}, json={
        "items": [{"kind": "fact", "content": "Ben's bike is blue"}]})
    assert batch.json()["items"][0]["people"] == ["ben"], batch.text
    private_id = learned.json()["fact"]["id"]

    async def recall(**how: Any) -> list[str]:
        headers = {"X-User": how.pop("header")} if "header" in how else {}
        answer = await client.post(f"{base}/recall", headers=headers,
                                   json={"query": QUESTION, "k": 20, **how})
        assert answer.status_code == 200, answer.text
        return [item["text"] for item in answer.json()["items"]]

    assert _said(await recall(header="ben")) == (False, True)
    assert _said(await recall(user="BEN")) == (False, True)
    assert _said(await recall(user="ana")) == (True, True)
    owner = await recall()
    assert _said(owner) == (True, True) and any("4471" in t for t in owner)
    assert not any("4471" in t for t in await recall(header="ana"))

    context = await client.post(f"{base}/context", headers={"X-User": "ben"},
                                json={"query": QUESTION, "budget_tokens": 600})
    assert _said([context.json()["text"]]) == (False, True), context.text
    theirs = await client.post(f"{base}/context", json={"query": QUESTION, "user": "ana",
                                                        "budget_tokens": 600})
    assert _said([theirs.json()["text"]]) == (True, True), theirs.text

    listed = await client.get(f"{base}/memories", params={"user": "ben", "limit": 100})
    assert {tuple(m["people"]) for m in listed.json()["items"]} == {(), ("ben",)}
    everything = await client.get(f"{base}/memories", params={"limit": 100})
    assert ("ana",) in {tuple(m["people"]) for m in everything.json()["items"]}

    hidden = await client.get(f"{base}/memories/{private_id}/expand",
                              headers={"X-User": "ben"})
    assert hidden.status_code == 404, hidden.text
    for how in ({"params": {"user": "ana"}}, {"headers": {"X-User": "ana"}}, {}):
        shown = await client.get(f"{base}/memories/{private_id}/expand", **how)
        assert shown.status_code == 200, (how, shown.text)
    upcoming = await client.get(f"{base}/upcoming", params={"user": "ben"})
    assert upcoming.status_code == 200 and upcoming.json()["events"] == []
    same = await client.post(f"{base}/recall", headers={"X-User": "Ana"},
                             json={"query": QUESTION, "user": "ana "})
    assert same.status_code == 200, same.text  # one person, spelled two ways


async def test_rest_refuses_a_bad_or_contradictory_person(client: httpx.AsyncClient) -> None:
    base = f"/agents/{AGENT}"
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", "recall", {"json": {"query": "x", "user": ""}}, "user"),
        ("POST", "recall", {"json": {"query": "x", "user": "x" * 200}}, "user"),
        ("POST", "recall", {"json": {"query": "x", "user": 7}}, "user"),
        ("POST", "recall", {"json": {"query": "x"}, "headers": {"X-User": "  "}}, "X-User"),
        ("POST", "recall", {"json": {"query": "x", "user": "ben"},
                            "headers": {"X-User": "ana"}}, "user"),
        ("POST", "context", {"json": {"query": "x", "user": "a\x00b"}}, "user"),
        ("POST", "facts/learn", {"json": {"content": "I like tea a lot.", "user": ""}},
         "user"),
        ("POST", "facts/learn", {"json": {"content": "I like tea a lot.", "user": "ben"},
                                 "headers": {"X-User": "ana"}}, "user"),
        ("POST", "memories", {"json": {"kind": "fact", "content": "Tea is nice.",
                                       "user": "ben"}, "headers": {"X-User": "ana"}}, "user"),
        ("POST", "memories/batch", {"json": {"items": [{"kind": "fact", "content": "Tea",
                                                        "user": "ben"}]},
                                    "headers": {"X-User": "ana"}}, "items[0].user"),
        ("GET", "memories", {"params": {"user": ""}}, "user"),
        ("GET", "upcoming", {"params": {"user": "ben"}, "headers": {"X-User": "ana"}},
         "user"),
        ("GET", "memories/fact:1a2b3c4d/expand", {"headers": {"X-User": ""}}, "X-User"),
    ]
    for method, path, how, field in cases:
        answer = await client.request(method, f"{base}/{path}", **how)
        assert answer.status_code == 422, (path, how, answer.status_code, answer.text)
        assert field in [p["field"] for p in answer.json()["detail"]], (path, answer.text)


async def test_the_openapi_document_names_the_person(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    paths = document["paths"]
    for path, method in (("/agents/{agent_id}/recall", "post"),
                         ("/agents/{agent_id}/context", "post"),
                         ("/agents/{agent_id}/facts/learn", "post"),
                         ("/agents/{agent_id}/memories", "post"),
                         ("/agents/{agent_id}/memories", "get"),
                         ("/agents/{agent_id}/upcoming", "get"),
                         ("/agents/{agent_id}/memories/{memory_id}/expand", "get")):
        params = {(p["in"], p["name"]) for p in paths[path][method].get("parameters", [])}
        assert ("header", "X-User") in params, (path, method, params)
    for path in ("/agents/{agent_id}/memories", "/agents/{agent_id}/upcoming",
                 "/agents/{agent_id}/memories/{memory_id}/expand"):
        params = {(p["in"], p["name"]) for p in paths[path]["get"]["parameters"]}
        assert ("query", "user") in params, path
    schemas = document["components"]["schemas"]
    for name in ("RecallRequest", "ContextRequest", "FactLearn", "FactCreate"):
        assert "user" in schemas[name]["properties"], name
    assert "user" not in schemas["FactChanges"]["properties"]


# ---------------------------------------------------------------------------- client


@pytest.fixture
async def url(store: MemoryStore) -> AsyncIterator[str]:
    async with served(store) as base:
        yield base


async def test_remote_client_asks_as_a_person(url: str, store: MemoryStore) -> None:
    async with AsyncMemoryClient(url) as owner, \
            AsyncMemoryClient(url, user="ben") as ben:
        private = await owner.learn_fact(AGENT, PRIVATE, user="ana")
        shared = await owner.learn_fact(AGENT, SHARED)
        assert private.fact is not None and private.fact.people == ["ana"]
        assert shared.fact is not None and shared.fact.people == []
        mine = await ben.remember(AGENT, "fact", content="Ben's locker is number 4471")
        assert mine.people == ["ben"]
        assert (await owner.remember(AGENT, "fact", content="The bins go out on Monday",
                                     people=["ana", "ben"])).people == ["ana", "ben"]

        recalled = await ben.recall(AGENT, QUESTION, k=20)
        assert _said([i.text for i in recalled.items]) == (False, True)
        as_ana = await ben.recall(AGENT, QUESTION, k=20, user="ana")  # the call's own wins
        assert _said([i.text for i in as_ana.items]) == (True, True)
        everyone = await owner.recall(AGENT, QUESTION, k=20)
        assert _said([i.text for i in everyone.items]) == (True, True)
        context = await ben.assemble_context(AGENT, QUESTION, budget_tokens=600)
        assert _said([context.text]) == (False, True), context.text
        with pytest.raises(NotFoundError):
            await ben.expand(AGENT, private.fact.id)
        assert (await owner.expand(AGENT, private.fact.id, user="ana")).memory.people == \
            ["ana"]
        page = await ben.list(AGENT, limit=100)
        assert all(not m.people or "ben" in m.people for m in page.items)
        assert len((await owner.list(AGENT, limit=100)).items) == 4
        assert (await ben.upcoming(AGENT)).events == []
        bens = b"".join([chunk async for chunk in ben.export_agent(AGENT)])
        assert b"penicillin" not in bens and b"4471" in bens  # his own, not hers
        whole = b"".join([chunk async for chunk in owner.export_agent(AGENT)])
        assert b"penicillin" in whole and b"4471" in whole
        with pytest.raises(InvalidInputError) as bad:
            await owner.recall(AGENT, "x", user="")
        assert bad.value.problems[0].field == "user"
        erased = await owner.forget_person(AGENT, "Ben")  # his locker code, only his
        assert erased.purged == {"fact": 1} and erased.left == 1  # the bins: Ana's now
        after = b"".join([chunk async for chunk in owner.export_agent(AGENT)])
        assert b"4471" not in after and b"penicillin" in after and b"Monday" in after

    def blocking() -> list[str]:
        with MemoryClient(url, user="ben") as client:
            client.upcoming(AGENT)
            return [i.text for i in client.recall(AGENT, QUESTION, k=20).items]

    assert _said(await asyncio.to_thread(blocking)) == (False, True)


# ---------------------------------------------------------------------------- CLI


async def test_cli_user_option_over_a_service(url: str, store: MemoryStore) -> None:
    env = remote_env()
    base = [*cli_command(), "--url", url]

    async def cli(*args: str) -> Any:
        return await run_process([*base, *args, "--agent", AGENT], env)

    learned = (await cli("facts", "learn", "--content", PRIVATE, "--user", "Ana",
                         "--json")).json()
    assert learned["fact"]["people"] == ["ana"]
    assert (await cli("facts", "learn", "--content", SHARED,
                      "--json")).json()["fact"]["people"] == []
    made = (await cli("remember", "fact", "--content", "Ben's locker is number 4471",
                      "--user", "ben", "--json")).json()
    assert made["people"] == ["ben"]

    recalled = (await cli("recall", QUESTION, "--k", "20", "--user", "ben",
                          "--json")).json()
    assert _said([i["text"] for i in recalled["items"]]) == (False, True)
    owner = (await cli("recall", QUESTION, "--k", "20", "--json")).json()
    assert _said([i["text"] for i in owner["items"]]) == (True, True)
    context = await cli("context", QUESTION, "--budget", "600", "--user", "ben")
    assert context.code == 0 and _said([context.stdout]) == (False, True), context.stdout
    listed = (await cli("list", "--user", "ben", "--json")).json()
    assert {tuple(m["people"]) for m in listed["items"]} == {(), ("ben",)}
    hidden = await cli("expand", learned["fact"]["id"], "--user", "ben")
    assert hidden.code == 3, hidden.stderr
    assert (await cli("expand", learned["fact"]["id"], "--user", "ana")).code == 0
    assert (await cli("upcoming", "--user", "ben")).code == 0
    exported = await cli("export", "--user", "ben")
    assert exported.code == 0 and "4471" in exported.stdout, exported.stderr
    assert "penicillin" not in exported.stdout
    bad = await cli("recall", "x", "--user", "")
    assert bad.code == 2 and "user" in bad.stderr, bad.stderr
    refused = await cli("forget-person", "ana")  # not without --yes
    assert refused.code == 2 and "--yes" in refused.stderr, refused.stderr
    forgot = (await cli("forget-person", "ana", "--yes", "--json")).json()
    assert forgot["purged"] == {"fact": 1}, forgot
    gone = (await cli("recall", QUESTION, "--k", "20", "--json")).json()
    assert _said([i["text"] for i in gone["items"]]) == (False, True)


# ---------------------------------------------------------------------------- ToolBox


async def test_toolbox_acts_for_its_person_only(store: MemoryStore) -> None:
    private_id, _ = await _household(store)
    ben = ToolBox(store, agent_id=AGENT, user="Ben")
    found = await ben.call("memory_search", {"query": QUESTION, "k": 20})
    assert not found.is_error and _said([found.text]) == (False, True), found.text
    context = await ben.call("memory_context", {"query": QUESTION, "budget_tokens": 600})
    assert _said([context.text]) == (False, True), context.text
    for tool in ("memory_expand", "memory_history", "memory_forget"):
        refused = await ben.call(tool, {"ref": private_id})
        assert refused.is_error and refused.data["error"]["type"] == "not_found", tool
    assert (await store.get(AGENT, private_id)).status.value == "active"
    chosen = await ben.call("memory_search", {"query": QUESTION, "user": "ana"})
    assert chosen.is_error and "user" in chosen.text  # not an argument the model has
    sneaky = await ben.call("memory_remember", {"kind": "fact", "content": "Ana owes Ben",
                                                "people": ["ana"]})
    assert sneaky.is_error, sneaky.text
    assert all(not {"user", "people"} & set(t["function"]["parameters"]["properties"])
               for t in ben.openai_tools())

    learned = await ben.call("memory_learn_fact", {"content": "I am left-handed."})
    assert (await store.get(AGENT, learned.data["memory_id"])).people == ["ben"]
    remembered = await ben.call("memory_remember", {"kind": "procedure",
                                                    "name": "Walk the dog",
                                                    "core_patterns": ["before 8am"]})
    assert (await store.get(AGENT, remembered.data["memory_id"])).people == ["ben"]
    assert not (await ben.call("memory_upcoming", {})).is_error

    ana = ben.acting_for("ana")
    assert ana.user == "ana" and ben.user == "ben"
    shown = await ana.call("memory_search", {"query": QUESTION, "k": 20})
    assert _said([shown.text]) == (True, True)
    assert "left-handed" not in shown.text
    owner = await ToolBox(store, agent_id=AGENT).call("memory_search",
                                                      {"query": QUESTION, "k": 20})
    assert _said([owner.text]) == (True, True)
    assert not (await ToolBox(store, agent_id=AGENT).call("memory_expand",
                                                          {"ref": private_id})).is_error
    with pytest.raises(InvalidInputError):
        ToolBox(store, agent_id=AGENT, user="  ")


# ---------------------------------------------------------------------------- MCP


async def test_mcp_over_http_acts_for_the_connections_person(store: MemoryStore) -> None:
    private_id, _ = await _household(store)
    async with served_mcp(store) as url:
        for person, expected in (("ben", (False, True)), ("Ana", (True, True)),
                                 (None, (True, True))):
            headers = {} if person is None else {"X-User": person}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http, Client(
                    streamable_http_client(url, http_client=http),
                    read_timeout_seconds=60) as client:
                found = await client.call_tool("memory_search", {
                    "agent_id": AGENT, "query": QUESTION, "k": 20})
                assert _said([text(found)]) == expected, (person, text(found))
                expanded = await client.call_tool("memory_expand", {"agent_id": AGENT,
                                                                    "ref": private_id})
                assert expanded.is_error is (person == "ben"), (person, text(expanded))
                if person == "ben":
                    chosen = await client.call_tool("memory_search", {
                        "agent_id": AGENT, "query": QUESTION, "user": "ana"})
                    assert chosen.is_error, text(chosen)
        async with httpx.AsyncClient(timeout=30) as raw:
            bad = await raw.post(url, headers={
                "X-User": "", "Accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert bad.status_code == 422, bad.text
            assert bad.json()["detail"][0]["field"] == "X-User"


async def test_mcp_over_stdio_acts_for_the_user_flag(store: MemoryStore,
                                                     database_url: str) -> None:
    private_id, _ = await _household(store)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NOUS_MEMORY_DATABASE_URL": database_url}
    params = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "nous_memory.cli", "mcp", "--agent", AGENT, "--user", "ben"])
    async with Client(params, read_timeout_seconds=120) as client:
        found = await client.call_tool("memory_search", {"query": QUESTION, "k": 20})
        assert _said([text(found)]) == (False, True), text(found)
        assert (await client.call_tool("memory_expand", {"ref": private_id})).is_error
        learned = await client.call_tool("memory_learn_fact", {"content": "I am left-handed."})
        assert not learned.is_error, text(learned)
        memory = await store.get(AGENT, learned.structured_content["memory_id"])
        assert memory.people == ["ben"]

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nous_memory.cli", "mcp", "--agent", AGENT, "--user", "",
        env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=STARTUP_S)
    assert process.returncode == 2 and out == b"", err
    assert "user" in err.decode(), err


async def test_remote_calls_naming_a_memory_act_for_the_person(url: str,
                                                               store: MemoryStore) -> None:
    hers = await store.learn_fact(AGENT, PRIVATE, user="Zoë")
    episode = await store.start_episode(AGENT, user_id="zoë")
    assert hers.fact is not None
    async with AsyncMemoryClient(url, user="ben") as ben, \
            AsyncMemoryClient(url, user="Zoë") as zoe:
        for call in (ben.get(AGENT, hers.fact.id), ben.history(AGENT, hers.fact.id),
                     ben.fact_history(AGENT, hers.fact.id),
                     ben.get_episode(AGENT, episode.id),
                     ben.transcript(AGENT, episode.id),
                     ben.append(AGENT, episode.id, [{"role": "user", "content": "hi"}]),
                     ben.delete(AGENT, hers.fact.id)):
            with pytest.raises(NotFoundError):
                await call
        assert (await zoe.get(AGENT, hers.fact.id)).people == ["zoë"]
        await zoe.append(AGENT, episode.id, [{"role": "user", "content": "Hello again."}])
        said = await zoe.transcript(AGENT, episode.id)
        assert [m.person for m in said] == ["zoë"]
        mine = await ben.start_episode(AGENT)
        assert mine.people == ["ben"]
