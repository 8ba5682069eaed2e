"""A rich agent for the export, import and erasure tests, and row counts of every table."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from nous_memory import MemoryStore

NOW = datetime(2026, 1, 15, tzinfo=UTC)
RULE = {"mode": "rule", "protect_tail": 2}


async def build_rich_agent(store: MemoryStore, agent: str) -> dict[str, Any]:
    """Memories of every kind, an edit, a fact chain with a supersession and a possible
    conflict, a closed (then archived) episode with its transcript, chunks and summary,
    a live conversation with rolling summaries, a policy and a pending close."""
    made: dict[str, Any] = {}
    made["decision"] = await store.remember(
        agent, "decision", description="Chose Postgres + pgvector for unified storage",
        outcome="success", confidence=0.85, pattern="Unify to reduce surface area",
        tags=["infra"])
    made["procedure"] = await store.remember(
        agent, "procedure", name="Deploy", core_patterns=["build", "test", "ship"])
    made["censor"] = await store.remember(
        agent, "censor", action="block", trigger_pattern="Pushing directly to main",
        reason="Always use feature branches")
    sync = await store.remember(agent, "fact", content="The weekly sync is on Tuesdays")
    made["edited"] = await store.update(agent, sync.id,
                                        content="The weekly sync moved to Wednesdays")
    await store.learn_fact(agent, "The project deadline is March 3")
    made["superseding"] = await store.learn_fact(agent, "The project deadline is March 10")
    await store.learn_fact(agent, "Tim drinks tea every morning")
    made["conflict"] = await store.learn_fact(agent, "Tim drinks coffee every morning")

    old = await store.start_episode(agent, title="Trip planning", participants=["Ana"],
                                    started_at=NOW - timedelta(days=200))
    await store.append(agent, old.id, [
        {"role": "user", "name": "Ana", "content": "I'm vegetarian, by the way.",
         "metadata": {"source": "chat-1"}},
        {"role": "assistant", "content": "Noted! I will book vegetarian restaurants."},
        {"role": "user", "name": "Ana", "content": "We fly to Lisbon on the 3rd of May."},
    ])
    await store.close_episode(agent, old.id)
    await store.worker().drain()
    await store.archive_episodes(agent, now=NOW + timedelta(days=400))
    made["archived"] = old

    live = await store.start_episode(agent, title="Working memory")
    await store.append(agent, live.id, [
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": f"Point {i}: Ana mentions Marker{i} about the garden shed."}
        for i in range(12)])
    await store.summarize_conversation(agent, live.id, force=True, policy=RULE)
    await store.append(agent, live.id, [{"role": "user", "content": "Point 12: one more."}])
    await store.summarize_conversation(agent, live.id, force=True, policy=RULE)
    made["live"] = live
    await store.set_conversation_policy(agent, window_tokens=16384)

    closing = await store.start_episode(agent, title="Left closing")
    await store.append(agent, closing.id, [{"role": "user", "content": "Bye for now."}])
    await store.close_episode(agent, closing.id)  # its close is still queued
    made["closing"] = closing
    return made


async def table_counts(dsn: str) -> dict[tuple[str, str], int]:
    """{(table, agent): rows} for every table with agent_id, and {(table, ''): rows}
    for the others."""
    conn = await asyncpg.connect(dsn)
    try:
        tables = [r[0] for r in await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "'public' AND table_type = 'BASE TABLE'")]
        counts: dict[tuple[str, str], int] = {}
        for table in tables:
            scoped = await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE "
                "table_schema = 'public' AND table_name = $1 AND column_name = 'agent_id')",
                table)
            query = (f'SELECT agent_id, count(*) FROM "{table}" GROUP BY 1' if scoped
                     else f"SELECT '', count(*) FROM \"{table}\"")
            for agent, n in await conn.fetch(query):
                counts[(table, agent)] = n
        return counts
    finally:
        await conn.close()


async def chunks_of(data: bytes, size: int = 7_000) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


async def exported(store: MemoryStore, agent: str) -> bytes:
    return b"".join([chunk async for chunk in store.export_agent(agent)])
