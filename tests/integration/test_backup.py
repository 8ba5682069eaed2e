"""``db backup`` and ``db restore``: a round trip of a rich store (embeddings, audit
history, archived detail, a queued close) into an empty database, identical table by
table; a backup taken while writes go on holds every write acknowledged before it
began; a non-empty target is refused unless forced; a backup whose connection is cut
(pg_dump waiting inside its COPY snapshot) is the unavailable error.  Real PostgreSQL
and the wheel's own pg_dump and pg_restore."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from nous_memory import DatabaseUnavailableError, MemoryStore
from nous_memory.db.backup import backup, read_manifest, restore
from nous_memory.errors import ConflictError
from tests.integration.portability_helpers import build_rich_agent
from tests.integration.test_cli import cli_command, cli_env, run_process


async def _all_rows(dsn: str) -> dict[str, list[str]]:
    """Every table's rows as text, sorted (UTC, so the text does not depend on the
    session)."""
    conn = await asyncpg.connect(dsn, server_settings={"TimeZone": "UTC"})
    try:
        tables = [r[0] for r in await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "'public' AND table_type = 'BASE TABLE' ORDER BY 1")]
        return {t: sorted(r[0] for r in await conn.fetch(f'SELECT t::text FROM "{t}" t'))
                for t in tables}
    finally:
        await conn.close()


async def _count(dsn: str, query: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(query))
    finally:
        await conn.close()


async def test_round_trip_is_identical_with_embeddings_history_and_archive(
        store: MemoryStore, database_url: str, empty_database_url: str,
        tmp_path: Path) -> None:
    await build_rich_agent(store, "ana")
    await store.remember("bo", "fact", content="Bo keeps bees")
    for query, least in (("SELECT count(*) FROM memories WHERE embedding IS NOT NULL", 5),
                         ("SELECT count(*) FROM memory_events", 5),
                         ("SELECT count(*) FROM memory_archive", 1),
                         ("SELECT count(*) FROM work_items WHERE state = 'pending'", 1)):
        assert await _count(database_url, query) >= least, query
    file = tmp_path / "store.backup"
    made = await backup(database_url, file)
    assert made.size_bytes == file.stat().st_size > 0 and made.rows > 20
    assert {s.agent_id for s in made.sums} >= {"ana", "bo", ""}

    done = await restore(empty_database_url, file, verify=True)
    assert done.verified and done.mismatches == ()
    assert await _all_rows(empty_database_url) == await _all_rows(database_url)
    async with MemoryStore.open(database_url=empty_database_url, embedder=store.embedder,
                                data_dir=Path("/nonexistent-unused")) as restored:
        hits = await restored.recall("ana", "when is the project deadline?")
        assert any("March 10" in h.text for h in hits.items)


async def test_a_non_empty_database_is_refused_unless_forced(
        store: MemoryStore, database_url: str, tmp_path: Path) -> None:
    await store.remember("ana", "fact", content="Ana lives in Porto")
    file = tmp_path / "store.backup"
    await backup(database_url, file)
    await store.remember("ana", "fact", content="Ana bought a boat")  # after the backup
    with pytest.raises(ConflictError, match="not empty"):
        await restore(database_url, file)
    await store.close()  # the store's pools would hold the tables a forced restore drops
    done = await restore(database_url, file, force=True, verify=True)
    assert done.mismatches == ()
    facts = await _all_rows(database_url)
    assert any("Porto" in row for row in facts["facts"])
    assert not any("boat" in row for row in facts["facts"])


async def test_verify_names_what_differs(store: MemoryStore, database_url: str,
                                         empty_database_url: str, tmp_path: Path) -> None:
    """The comparison is real: a restored database that differs is reported by table
    and agent."""
    await store.remember("ana", "fact", content="Ana lives in Porto")
    file = tmp_path / "store.backup"
    await backup(database_url, file)
    await restore(empty_database_url, file)
    conn = await asyncpg.connect(empty_database_url)
    try:
        await conn.execute("UPDATE facts SET content = 'Ana lives in Lisbon'")
    finally:
        await conn.close()
    from nous_memory.db import QUERIES, Connection
    from nous_memory.db.backup import checksums, compare

    raw = await asyncpg.connect(empty_database_url)
    try:
        async with raw.transaction():
            found = await checksums(Connection(raw, QUERIES))
    finally:
        await raw.close()
    assert compare(read_manifest(file), found) == ["facts (agent ana): same 1 rows, "
                                                   "different content"]


async def test_a_backup_during_writes_holds_every_write_acknowledged_before_it(
        store: MemoryStore, database_url: str, empty_database_url: str,
        tmp_path: Path) -> None:
    acked: list[tuple[float, str]] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            content = f"note number {i} about the harbour"
            await store.remember("ana", "fact", content=content)
            acked.append((loop.time(), content))

    writing = asyncio.create_task(writer())
    await asyncio.sleep(1.0)
    began = loop.time()
    await backup(database_url, tmp_path / "live.backup")
    await asyncio.sleep(0.3)
    stop.set()
    await writing
    before = [content for at, content in acked if at < began]
    assert len(before) > 5 and len(acked) > len(before)  # writes went on throughout
    done = await restore(empty_database_url, tmp_path / "live.backup", verify=True)
    assert done.mismatches == ()
    restored = "\n".join((await _all_rows(empty_database_url))["facts"])
    assert all(content in restored for content in before)


async def test_a_backup_cut_while_pg_dump_waits_is_unavailable(
        database_url: str, pg_server: Any, store: MemoryStore, tmp_path: Path) -> None:
    await store.remember("ana", "fact", content="Ana lives in Porto")
    locker = await asyncpg.connect(database_url)
    admin = await asyncpg.connect(pg_server.dsn("postgres"))
    name = urlsplit(database_url).path.lstrip("/")
    try:
        tx = locker.transaction()
        await tx.start()
        await locker.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        running = asyncio.create_task(backup(database_url, tmp_path / "cut.backup"))
        for _ in range(400):
            pid = await admin.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND "
                "application_name = 'pg_dump' AND wait_event_type = 'Lock'", name)
            if pid:
                await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("pg_dump never waited on the lock")
        await tx.rollback()
        with pytest.raises(DatabaseUnavailableError, match="pg_dump lost the database"):
            await asyncio.wait_for(running, 30)
    finally:
        await locker.close()
        await admin.close()
    assert not (tmp_path / "cut.backup").exists()


async def test_the_commands(store: MemoryStore, database_url: str,
                            empty_database_url: str, tmp_path: Path) -> None:
    await store.remember("ana", "fact", content="Ana lives in Porto")
    file = tmp_path / "cli.backup"
    made = await run_process([*cli_command(), "db", "backup", str(file)],
                             cli_env(database_url, tmp_path / "unused"))
    assert made.code == 0, made.stderr
    assert made.stdout.startswith(f"backup {file}:") and "1 agents" in made.stdout
    target = cli_env(empty_database_url, tmp_path / "unused")
    done = await run_process([*cli_command(), "db", "restore", str(file), "--verify"], target)
    assert done.code == 0, done.stderr
    assert "verified: every table's rows and checksums match" in done.stdout
    again = await run_process([*cli_command(), "db", "restore", str(file)], target)
    assert again.code == 4 and "not empty" in again.stderr
