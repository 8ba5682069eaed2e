"""Two workers across a database outage: each item is processed once and no LLM call is
repeated, because a worker takes its presence lock back after the server restarted and
nobody takes a live worker's item meanwhile.

A server of its own (the shared one cannot be killed): stopped hard (SIGKILL of the
postmaster and all its processes) while both workers wait in an LLM call, started again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from nous_memory import Embedder, MemoryStore
from nous_memory.db import EmbeddedServer
from nous_memory.db.outage import OUTAGE
from nous_memory.testing import Delayed, JSONReply, ScriptedLLMServer
from nous_memory.testing.pgcontrol import ServerControl
from tests.integration.test_worker_durability import EXTRACTION, MESSAGES

EPISODES = 4
LLM_DELAY_S = 6.0  # the outage (kill, start) ends well inside the calls


@pytest.fixture
async def outage_store(own_server: tuple[EmbeddedServer, ServerControl, Path],
                       embedder: Embedder, llm_server: ScriptedLLMServer
                       ) -> AsyncIterator[MemoryStore]:
    _, _, data_dir = own_server
    async with MemoryStore.open(data_dir=data_dir, embedder=embedder,
                                llm_base_url=llm_server.base_url, llm_model="scripted",
                                llm_max_attempts=1, episode_chunk_tokens=160) as store:
        yield store


async def _rows(dsn: str, query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(query))
    finally:
        await conn.close()


async def _until(check: Any, timeout_s: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        try:
            if await check():
                return
        except (OSError, asyncpg.PostgresError):
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_two_workers_across_a_hard_outage_run_each_item_once(
        outage_store: MemoryStore, llm_server: ScriptedLLMServer,
        own_server: tuple[EmbeddedServer, ServerControl, Path],
        caplog: pytest.LogCaptureFixture) -> None:
    _, control, _ = own_server
    store, dsn = outage_store, outage_store.dsn
    llm_server.enqueue(*[Delayed(seconds=LLM_DELAY_S, then=JSONReply(content=EXTRACTION))
                         for _ in range(EPISODES)])
    for i in range(EPISODES):  # one agent each: no fact of one meets another's
        episode = await store.start_episode(f"agent{i}")
        await store.append(f"agent{i}", episode.id, MESSAGES)
        await store.close_episode(f"agent{i}", episode.id)

    stop = asyncio.Event()
    workers = [store.worker(worker_id=name, poll_s=0.2) for name in ("A", "B")]
    running = [asyncio.create_task(w.run(stop)) for w in workers]
    try:
        async def both_calling() -> bool:
            return len(llm_server.requests) == 2

        await _until(both_calling, 60, "both workers inside an LLM call")
        outages = OUTAGE.count
        caplog.clear()
        caplog.set_level(logging.INFO)
        control.kill_hard()
        await asyncio.sleep(0.5)
        control.start()

        async def presence_back() -> bool:
            rows = await _rows(dsn, "SELECT count(*) AS n FROM pg_locks WHERE locktype = "
                                    "'advisory' AND objid IN (hashtext('A')::oid, "
                                    "hashtext('B')::oid) AND granted")
            return int(rows[0]["n"]) == 2

        await _until(presence_back, 15, "both presence locks held again")

        async def all_done() -> bool:
            rows = await _rows(dsn, "SELECT count(*) FILTER (WHERE state <> 'done') AS open, "
                                    "count(*) AS n FROM work_items")
            return int(rows[0]["open"]) == 0 and int(rows[0]["n"]) >= EPISODES

        await _until(all_done, 90, "every work item done")
        logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        stop.set()
        await asyncio.gather(*running)

    assert OUTAGE.count == outages + 1  # one outage, said once
    # quiet: one line when it went, one when it came back, no traceback
    assert [r.getMessage().split(":")[0].split(" after")[0] for r in logged] == [
        "database unavailable", "database back"], [r.getMessage() for r in logged]
    assert not any(r.exc_info for r in caplog.records)
    assert len(llm_server.requests) == EPISODES  # no call repeated
    closes = await _rows(dsn, "SELECT agent_id, attempts, locked_by FROM work_items "
                              "WHERE task = 'episode_close' ORDER BY agent_id")
    assert len(closes) == EPISODES
    assert all(row["attempts"] == 1 for row in closes), [dict(r) for r in closes]
    states = await _rows(dsn, "SELECT state FROM episodes")
    assert sorted(r["state"] for r in states) == ["closed"] * EPISODES
    events = await _rows(dsn, "SELECT memory_id, count(*) AS n FROM memory_events "
                              "WHERE event = 'updated' AND new_values->>'state' = 'closed' "
                              "GROUP BY memory_id")
    assert len(events) == EPISODES and all(r["n"] == 1 for r in events)
