"""Every route in the OpenAPI document, fuzzed from the document itself (schemathesis):
generated bodies, query strings, path ids and headers, some carrying lone surrogates and
another agent's ids.  No response may be a 5xx or a dropped connection, and the victim
agent's rows must be exactly as they were.

The service runs as deployed: ``nous-memory serve`` in a subprocess on 127.0.0.1 over
its own cloned database, so the fuzzer meets the real stack (uvicorn, middleware, the
store, PostgreSQL).  Requests are bounded: ``MAX_EXAMPLES`` per operation.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from nous_memory import Embedder, MemoryStore, Settings
from nous_memory.api import create_app
from nous_memory.db import EmbeddedServer
from tests.conftest import create_database, drop_database
from tests.integration.http_helpers import free_port, start_server, stop_server, wait_healthy

MAX_EXAMPLES = 15
VICTIM = "victim"
TENANT_TABLES = ("memories", "decisions", "facts", "episodes", "procedures", "censors",
                 "episode_messages", "episode_chunks", "memory_events", "embedding_cache",
                 "work_items", "conversation_state", "conversation_summaries",
                 "memory_archive")
VICTIM_IDS: list[str] = []


async def victim_snapshot(dsn: str) -> dict[str, str | None]:
    conn = await asyncpg.connect(dsn)
    try:
        return {table: await conn.fetchval(
            f"SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM {table} t "
            "WHERE agent_id = $1", VICTIM) for table in TENANT_TABLES}
    finally:
        await conn.close()


@pytest.fixture(scope="module")
async def fuzz_target(pg_server: EmbeddedServer, template_db: str,
                      embedder: Embedder) -> AsyncIterator[dict[str, Any]]:
    dsn = await create_database(pg_server, template_db)
    async with MemoryStore.open(database_url=dsn, embedder=embedder,
                                data_dir=Path("/nonexistent-unused")) as store:
        # the owner keeps secrets here (memories/guard.py): a code is the private marker
        await store.set_secrets_policy(VICTIM, "keep")
        made = await store.remember_many(VICTIM, [
            {"kind": "fact", "content": "The victim's door code is 4711", "category": "rule"},
            {"kind": "decision", "description": "Keep the victim's data private"},
            {"kind": "censor", "trigger_pattern": "/door code/", "action": "block",
             "reason": "secret"}])
        episode = await store.start_episode(VICTIM, title="private chat")
        await store.append(VICTIM, episode.id, [{"role": "user", "content": "my secret"}])
        VICTIM_IDS[:] = [str(m.id) for m in made] + [str(episode.id)]
    before = await victim_snapshot(dsn)
    port = free_port()
    env = {**os.environ, "NOUS_MEMORY_DATABASE_URL": dsn, "HF_HUB_OFFLINE": "1",
           "NOUS_MEMORY_RUN_WORKER_IN_SERVE": "false"}
    proc = await asyncio.to_thread(start_server, port, env)
    base = f"http://127.0.0.1:{port}"
    try:
        await asyncio.to_thread(wait_healthy, base, proc)
        yield {"base": base, "dsn": dsn, "before": before, "proc": proc}
    finally:
        await asyncio.to_thread(stop_server, proc)
        await drop_database(pg_server, dsn)


@schemathesis.hook
def map_body(ctx: Any, body: Any) -> Any:
    """Every other JSON object gets a lone surrogate in one of its strings."""
    if isinstance(body, dict):
        for key, value in body.items():
            if isinstance(value, str) and len(json.dumps(body)) % 2 == 0:
                body[key] = value + "\ud800"
                break
    return body


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    """An import body: the generated value as raw bytes (lone surrogates kept, so some
    bodies are not even UTF-8)."""
    if isinstance(value, bytes):
        return value
    text = value if isinstance(value, str) else json.dumps(value)
    return text.encode("utf-8", "surrogatepass")


@schemathesis.hook
def map_path_parameters(ctx: Any, path: Any) -> Any:
    """Some ids are the victim's, under the attacker's own agent path (never the
    victim's own path: its answers would rightly hold its data)."""
    if isinstance(path, dict) and VICTIM_IDS:
        for key in ("memory_id", "episode_id", "fact_id", "id_or_ref"):
            if key in path and len(str(path)) % 3 == 0:
                path[key] = VICTIM_IDS[len(str(path)) % len(VICTIM_IDS)]
        if path.get("agent_id") == VICTIM:
            path["agent_id"] = "mallory"
    return path


def test_no_route_answers_5xx(fuzz_target: dict[str, Any]) -> None:
    """Each operation of the served document in turn, ``MAX_EXAMPLES`` cases each."""
    schema = schemathesis.openapi.from_url(f"{fuzz_target['base']}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    app = create_app(settings=Settings(data_dir=Path("/nonexistent-unused")))
    routes = {(method.upper(), path) for path, item in app.openapi()["paths"].items()
              for method in item}
    assert {(op.method.upper(), op.path) for op in operations} == routes  # all of them
    failures: list[str] = []
    for operation in operations:

        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            response = case.call(base_url=fuzz_target["base"], timeout=30)
            assert response.status_code < 500, (case.method, case.formatted_path,
                                                 response.status_code, response.text[:300])
            assert VICTIM not in response.text  # no route answers with the victim's data

        try:
            check()
        except AssertionError as exc:  # keep going: report every operation that fails
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert not failures, "\n".join(failures)


async def test_the_victims_rows_are_unchanged(fuzz_target: dict[str, Any]) -> None:
    """Runs after the fuzzing above (same module, file order)."""
    assert await victim_snapshot(fuzz_target["dsn"]) == fuzz_target["before"]
    assert fuzz_target["proc"].poll() is None  # the server is still up
