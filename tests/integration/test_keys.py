"""API keys kept in the database: made, listed, revoked and rotated at run time, stored
only as a hash, scoped to agents and a role, named in the audit trail of every write,
and refused by every replica within a second of their revocation."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.api import create_app
from nous_memory.errors import ConflictError, InvalidInputError, NotFoundError
from tests.integration.db_helpers import sql
from tests.integration.http_helpers import (
    asgi_client,
    free_port,
    start_server,
    stop_server,
    wait_healthy,
)
from tests.integration.test_cli import cli_command, cli_env, run_process
from tests.integration.test_inspector import client_for, csrf_of, sign_in

BOOT = "bootstrap-owner-key-0123456789"
FACT = {"kind": "fact", "content": "Ana is vegetarian"}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
async def http(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    store.settings = store.settings.with_changes(api_keys=BOOT)
    async with asgi_client(create_app(store)) as client:
        yield client


async def test_secret_shown_once_and_stored_as_a_hash(store: MemoryStore) -> None:
    info, secret = await store.create_key("backend", role="read-write", agents=["a", "b"])
    assert info.role == "read-write" and info.agents == ["a", "b"]
    assert secret.startswith(info.prefix) and len(secret) > 40
    rows = await sql(store, "SELECT * FROM api_keys")  # what the table holds, whole
    assert secret not in repr([dict(r) for r in rows])
    assert [k.name for k in await store.list_keys()] == ["backend"]
    assert not hasattr(info, "secret")
    grant = await store.keys.lookup(secret)
    assert grant is not None and grant.name == "backend" and grant.allows("a")
    assert not grant.allows("c") and grant.can("read-only") and not grant.can("owner")


async def test_names_roles_and_agents_are_checked(store: MemoryStore) -> None:
    await store.create_key("one", role="owner")
    with pytest.raises(ConflictError):
        await store.create_key("one", role="owner")
    with pytest.raises(InvalidInputError) as bad:
        await store.create_key("bad name!", role="admin", agents=[])
    assert [p.field for p in bad.value.problems] == ["name", "role", "agents"]
    with pytest.raises(NotFoundError):
        await store.revoke_key("nobody")


async def test_revoke_and_rotate(store: MemoryStore) -> None:
    _, old = await store.create_key("svc", role="read-only", agents=["a"])
    rotated, new = await store.rotate_key("svc")
    assert rotated.role == "read-only" and rotated.agents == ["a"] and new != old
    assert await store.keys.lookup(old) is None
    assert (await store.keys.lookup(new)) is not None
    await store.revoke_key("svc")
    assert await store.keys.lookup(new) is None
    listed = await store.list_keys(include_revoked=True)
    assert len(listed) == 2 and all(k.revoked_at is not None for k in listed)
    assert await store.list_keys() == []


async def test_roles_over_rest(http: httpx.AsyncClient, store: MemoryStore) -> None:
    made = await http.post("/keys", headers=bearer(BOOT),
                           json={"name": "reader", "role": "read-only", "agents": ["a"]})
    assert made.status_code == 201, made.text
    reader = bearer(made.json()["secret"])
    _, writer_secret = await store.create_key("writer", role="read-write")
    writer = bearer(writer_secret)
    _, owner_secret = await store.create_key("owner-a", role="owner", agents=["a"])

    assert (await http.get("/agents/a/memories", headers=reader)).status_code == 200
    assert (await http.post("/agents/a/recall", headers=reader,
                            json={"query": "x"})).status_code == 200
    assert (await http.post("/agents/a/memories", headers=reader, json=FACT)).status_code == 403
    assert (await http.get("/agents/b/memories", headers=reader)).status_code == 403
    assert (await http.post("/agents/a/memories", headers=writer, json=FACT)).status_code == 201
    assert (await http.get("/agents/a/export", headers=writer)).status_code == 403
    assert (await http.get("/agents/a/export", headers=bearer(owner_secret))).status_code == 200
    # forgetting a message erases for good: an owner's, as forgetting a person is
    forget = f"/agents/a/episodes/{uuid.uuid4()}/messages/0/forget"
    assert (await http.post(forget, headers=writer)).status_code == 403
    assert (await http.post(forget, headers=bearer(owner_secret))).status_code == 404
    # keys are managed by an owner of every agent only
    assert (await http.get("/keys", headers=bearer(owner_secret))).status_code == 403
    assert (await http.get("/keys", headers=writer)).status_code == 403
    listed = (await http.get("/keys", headers=bearer(BOOT))).json()
    assert {k["name"] for k in listed} == {"reader", "writer", "owner-a"}
    assert "secret" not in str(listed) and writer_secret not in str(listed)
    assert (await http.post("/mcp", headers=reader, json={})).status_code == 403

    assert (await http.delete("/keys/reader", headers=bearer(BOOT))).status_code == 200
    assert (await http.get("/agents/a/memories", headers=reader)).status_code == 401
    rotated = await http.post("/keys/writer/rotate", headers=bearer(BOOT))
    assert (await http.get("/agents/a/memories", headers=writer)).status_code == 401
    assert (await http.get("/agents/a/memories",
                           headers=bearer(rotated.json()["secret"]))).status_code == 200
    erased = await http.delete("/agents/a", headers=bearer(owner_secret))
    assert erased.status_code == 200 and erased.json()["actor"] == "owner-a"


async def test_every_write_is_audited_under_the_key(http: httpx.AsyncClient,
                                                    store: MemoryStore) -> None:
    _, secret = await store.create_key("assistant-backend", role="read-write")
    key = bearer(secret)
    made = (await http.post("/agents/a/memories", headers=key, json=FACT)).json()
    await http.patch(f"/agents/a/memories/{made['id']}", headers=key,
                     json={"content": "Ana is vegan"})
    learned = (await http.post("/agents/a/facts/learn", headers=key,
                               json={"content": "The deadline is March 3"})).json()
    episode = (await http.post("/agents/a/episodes", headers=key, json={})).json()
    await http.post(f"/agents/a/episodes/{episode['id']}/close", headers=key)
    boot = (await http.post("/agents/a/memories", headers=bearer(BOOT), json=FACT)).json()
    actors = [e.actor for m in (made["id"], learned["fact"]["id"], episode["id"])
              for e in await store.history("a", m)]
    assert actors and set(actors) == {"assistant-backend"}
    assert {e.actor for e in await store.history("a", boot["id"])} == {"bootstrap-1"}
    direct = await store.remember("a", "fact", content="Written in process")
    assert [e.actor for e in await store.history("a", direct.id)] == [None]  # no leak


async def test_inspector_signs_in_with_a_database_key(store: MemoryStore) -> None:
    _, secret = await store.create_key("viewer", role="read-only", agents=["a"])
    app = create_app(store, settings=store.settings.with_changes(api_keys=BOOT))
    async with client_for(app) as ui:
        assert (await sign_in(ui, secret)).status_code == 303
        assert (await ui.get("/ui/agents/a/memories")).status_code == 200
        assert (await ui.get("/ui/agents/b/memories")).status_code == 403
        await store.revoke_key("viewer")
        await asyncio.sleep(0.6)  # past the per-process cache
        assert (await ui.get("/ui/agents/a/memories")).status_code == 303  # signed out


async def test_cli_manages_keys(database_url: str, tmp_path: Path,
                                store: MemoryStore) -> None:
    env = cli_env(database_url, tmp_path / "unused")
    made = (await run_process([*cli_command(), "keys", "create", "ops", "--role", "owner",
                               "--json"], env)).json()
    assert (await store.keys.lookup(made["secret"])) is not None
    listed = await run_process([*cli_command(), "keys", "list"], env)
    assert "ops" in listed.stdout and made["secret"] not in listed.stdout
    assert (await run_process([*cli_command(), "keys", "revoke", "ops"], env)).code == 0
    assert (await store.keys.lookup(made["secret"])) is None


async def test_revocation_reaches_a_second_replica_within_a_second(
        database_url: str, tmp_path: Path, store: MemoryStore) -> None:
    env = cli_env(database_url, tmp_path / "unused") | {"NOUS_MEMORY_API_KEYS": BOOT}
    ports = [free_port(), free_port()]
    procs = [start_server(port, env) for port in ports]
    try:
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        await asyncio.gather(*(asyncio.to_thread(wait_healthy, base, proc)
                               for base, proc in zip(bases, procs, strict=True)))
        _, secret = await store.create_key("replicated", role="read-only")
        async with httpx.AsyncClient(timeout=10) as client:
            async def status(base: str) -> int:
                response = await client.get(f"{base}/agents/a/memories",
                                            headers=bearer(secret))
                return response.status_code

            assert [await status(base) for base in bases] == [200, 200]
            revoked = await client.delete(f"{bases[0]}/keys/replicated", headers=bearer(BOOT))
            assert revoked.status_code == 200
            started = time.monotonic()
            assert await status(bases[0]) == 401  # the replica that revoked: at once
            while await status(bases[1]) != 401:
                assert time.monotonic() - started < 1.0, "replica 2 still accepts the key"
                await asyncio.sleep(0.02)
    finally:
        for proc in procs:
            stop_server(proc)


async def test_inspector_keys_page(store: MemoryStore) -> None:
    _, reader = await store.create_key("reader", role="read-only")
    app = create_app(store, settings=store.settings.with_changes(api_keys=BOOT))
    async with client_for(app) as ui:
        await sign_in(ui, BOOT)
        page = await ui.get("/ui/keys")
        assert page.status_code == 200 and "reader" in page.text and reader not in page.text
        made = await ui.post("/ui/keys", data={"csrf": csrf_of(page.text), "name": "phone",
                                               "role": "read-write", "agents": "a, b"})
        assert made.status_code == 200
        secret = re.search(r"<code>(nmk_[^<]+)</code>", made.text)
        assert secret is not None
        grant = await store.keys.lookup(secret.group(1))
        assert grant is not None and grant.agents == frozenset({"a", "b"})
        assert (await ui.post("/ui/keys/phone/revoke",
                              data={"csrf": csrf_of(made.text)})).status_code == 200
        assert await store.keys.lookup(secret.group(1)) is None
    async with client_for(app) as ui:
        await sign_in(ui, reader)
        assert (await ui.get("/ui/keys")).status_code == 403
