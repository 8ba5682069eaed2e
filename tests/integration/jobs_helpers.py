"""Shared helpers of the maintenance-job tests: crafted episodes and table snapshots."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from nous_memory import MemoryStore
from nous_memory.memories.records import Memory

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SNAPSHOT_TABLES = ("memories", "episodes", "episode_messages", "episode_chunks",
                   "memory_archive", "memory_events", "work_items", "facts", "procedures",
                   "censors", "extraction_cache")

# unicode that breaks naive byte/char arithmetic: CJK, emoji (astral), combining marks
_WORDS = ("Kyoto", "東京", "café", "naïve", "Zürich", "🙂", "👩‍💻", "e\u0301", "ß", "Ωmega",
          "budget", "deadline", "migration", "rollback", "Postgres", "vector", "€42.50")


def long_text(chars: int, seed: int) -> str:
    """Varied text of exactly ``chars`` characters (code points)."""
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    text = " ".join(words)[:chars]
    return text[:-1] + "x" if text.endswith(" ") else text  # stored text is stripped


async def old_episode(store: MemoryStore, agent: str, *, ended_days_ago: float, detail: str,
                      title: str = "A past episode", now: datetime = NOW) -> Memory:
    ended = now - timedelta(days=ended_days_ago)
    return await store.remember(agent, "episode", title=title, detail=detail,
                                started_at=(ended - timedelta(hours=1)).isoformat(),
                                ended_at=ended.isoformat())


async def snapshot(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables a job may touch, in a stable order."""
    conn = await asyncpg.connect(dsn)
    try:
        out: dict[str, list[tuple[Any, ...]]] = {}
        for table in SNAPSHOT_TABLES:
            rows = await conn.fetch(f"SELECT * FROM {table}")  # test-only, fixed names
            out[table] = sorted(tuple(str(v) for v in r.values()) for r in rows)
        return out
    finally:
        await conn.close()


async def sql(dsn: str, query: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()
