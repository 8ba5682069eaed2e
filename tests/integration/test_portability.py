"""Export, import and forgetting an agent, on real databases with the real model: every
agent table accounted for, a round trip into another agent and another database that
gives the same records, history and recall, idempotent re-imports, refused bad files
that import nothing, and an erasure that removes exactly one agent's rows."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from nous_memory import Embedder, MemoryStore, NotFoundError
from nous_memory.db import EmbeddedServer
from nous_memory.db.bulk import SHAPES
from nous_memory.history import HistorySession, HistoryTurn
from nous_memory.portability import (
    CARRIED,
    EXCLUDED,
    ExportFileError,
    ImportConflictError,
    TruncatedExportError,
)
from nous_memory.work import queue
from tests.conftest import create_database, drop_database
from tests.integration.db_helpers import sql
from tests.integration.portability_helpers import (
    build_rich_agent,
    chunks_of,
    exported,
    table_counts,
)

QUERIES = ["when is the project deadline?", "what does Ana eat?", "Lisbon flight",
           "morning drink", "how do we deploy?", "garden shed Marker7"]
SKIPPED_IN_COMPARISON = {"work_items": ("id", "state", "attempts", "run_after", "lease_until",
                                        "locked_by", "last_error", "created_at",
                                        "updated_at")}


@pytest.fixture
async def other_store(pg_server: EmbeddedServer, template_db: str,
                      embedder: Embedder) -> AsyncIterator[MemoryStore]:
    """A second, fresh database: where a moved agent lands."""
    dsn = await create_database(pg_server, template_db)
    try:
        async with MemoryStore.open(database_url=dsn, embedder=embedder,
                                    data_dir=Path("/nonexistent-unused")) as opened:
            yield opened
    finally:
        await drop_database(pg_server, dsn)


async def agent_rows(store: MemoryStore, agent: str) -> dict[str, list[dict[str, Any]]]:
    """Every carried table's rows of one agent, without agent_id, in key order."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for carried in CARRIED:
        shape = SHAPES[carried.table]
        skipped = {"agent_id", *SKIPPED_IN_COMPARISON.get(carried.table, ())}
        columns = ", ".join(f'"{c}"' for c in shape.columns if c not in skipped)
        order = ", ".join(f'"{c}"' for c in shape.key)
        only = "".join(f""" AND "{c}" IN ('{"', '".join(v)}')"""
                       for c, v in carried.only.items())  # open work items only
        rows[carried.table] = [dict(r) for r in await sql(
            store, f'SELECT {columns} FROM "{carried.table}" WHERE agent_id = $1{only} '
                   f"ORDER BY {order}", agent)]
    return rows


async def recall_view(store: MemoryStore, agent: str) -> list[list[tuple[Any, ...]]]:
    views = []
    for query in QUERIES:
        result = await store.recall(agent, query, k=8)
        views.append([(i.ref, i.source, i.text, round(i.scores.cosine or 0, 6),
                       round(i.scores.final, 4)) for i in result.items])
    return views


async def test_every_agent_table_is_exported_or_excluded(store: MemoryStore) -> None:
    """A new table with agent_id fails here until it is carried or excluded with a reason."""
    live = {r["table_name"] for r in await sql(
        store, "SELECT c.table_name FROM information_schema.columns c JOIN "
               "information_schema.tables t USING (table_schema, table_name) WHERE "
               "c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
               "AND c.column_name = 'agent_id'")}
    carried = [c.table for c in CARRIED]
    assert len(carried) == len(set(carried)) and not set(carried) & set(EXCLUDED)
    assert set(carried) | set(EXCLUDED) == live
    assert all(reason for reason in EXCLUDED.values())
    for shape in SHAPES.values():  # lines are checked by exactly the typed rows' fields
        fields, typed = shape.checker.model_fields, shape.model.model_fields
        assert {n: f.annotation for n, f in fields.items()} == {
            n: f.annotation for n, f in typed.items()}, shape.name
        assert {n: f.is_required() for n, f in fields.items()} == {
            n: f.is_required() for n, f in typed.items()}, shape.name


async def test_round_trip_into_another_agent_and_database(
        store: MemoryStore, other_store: MemoryStore) -> None:
    made = await build_rich_agent(store, "source")
    data = await exported(store, "source")
    lines = data.splitlines()
    header, trailer = json.loads(lines[0]), json.loads(lines[-1])["end"]
    assert header["nous_memory_export"]["agent_id"] == "source"
    assert header["nous_memory_export"]["embedding_dim"] == 384
    assert trailer["rows"] == len(lines) - 2
    assert trailer["sha256"] == hashlib.sha256(b"".join(
        line + b"\n" for line in lines[:-1])).hexdigest()
    tables = [json.loads(line)["table"] for line in lines[1:-1]]
    assert tables == sorted(tables, key=[c.table for c in CARRIED].index)  # dependency order
    assert all(trailer["counts"][t] > 0 for t in (
        "memories", "episodes", "decisions", "facts", "procedures", "censors",
        "episode_messages", "episode_chunks", "memory_archive", "memory_events",
        "conversation_policies", "conversation_summaries", "conversation_analyses",
        "conversation_state", "work_items"))

    summary = await other_store.import_agent(chunks_of(data), agent_id="moved")
    assert summary.source_agent_id == "source" and summary.agent_id == "moved"
    assert summary.inserted == {t: n for t, n in trailer["counts"].items() if n}
    assert not any(summary.identical.values())

    assert await agent_rows(other_store, "moved") == await agent_rows(store, "source")
    assert await recall_view(other_store, "moved") == await recall_view(store, "source")
    superseding = made["superseding"].fact.id
    chain = await other_store.fact_history("moved", superseding)
    assert [m.fact.content for m in chain.chain] == [
        "The project deadline is March 3", "The project deadline is March 10"]
    conflict = await other_store.get("moved", made["conflict"].fact.id)
    assert conflict.fact.conflicts_with
    history = await other_store.history("moved", made["edited"].id)
    assert [e.event for e in history] == ["created", "updated"]
    archived = await other_store.expand("moved", made["archived"].id)
    assert archived.archived and archived.transcript is not None
    assert archived.transcript.from_cold_storage
    assert any("vegetarian" in m.content for m in archived.transcript.messages)
    assert [s.content for s in await other_store.summary_history("moved", made["live"].id)] \
        == [s.content for s in await store.summary_history("source", made["live"].id)]
    assert (await other_store.conversation_policy("moved")).window_tokens == 16384

    before = await table_counts(other_store.dsn)
    again = await other_store.import_agent(chunks_of(data, 997), agent_id="moved")
    assert not again.changed
    assert again.identical == summary.inserted
    assert await table_counts(other_store.dsn) == before

    # the pending close came along as pending work: the worker finishes it there
    await other_store.worker().drain()
    assert (await other_store.get_episode("moved", made["closing"].id)
            ).episode.state == "closed"


async def test_import_into_another_agent_of_the_same_database(store: MemoryStore) -> None:
    """Ids are per agent, so a copy beside the original shares them; new log rows of
    either agent never collide with the copied ones afterwards."""
    await build_rich_agent(store, "original")
    data = await exported(store, "original")
    summary = await store.import_agent(chunks_of(data), agent_id="copy")
    assert summary.changed
    assert await agent_rows(store, "copy") == {
        t: rows for t, rows in (await agent_rows(store, "original")).items()}
    fact = await store.remember("copy", "fact", content="Only the copy knows this")
    await store.update("copy", fact.id, content="Only the copy knows this, updated")
    assert [e.event for e in await store.history("copy", fact.id)] == ["created", "updated"]
    page = await store.list("original", kind="fact", limit=50)
    assert all("copy" not in m.summary for m in page.items)


async def test_conflicting_rows_refuse_the_import(store: MemoryStore) -> None:
    made = await build_small_agent(store, "a")
    data = await exported(store, "a")
    await store.update("a", made.id, content="Changed since the export")
    before = await table_counts(store.dsn)
    with pytest.raises(ImportConflictError, match="memories") as caught:
        await store.import_agent(chunks_of(data))
    line = json.loads(data.splitlines()[caught.value.lines[0] - 1])
    assert line["row"]["id"] == str(made.id)
    assert await table_counts(store.dsn) == before
    # restoring after forgetting; then reads (access counts) are no conflict: they are
    # not what the record says, and the agent keeps its own
    await store.forget_agent("a")
    assert (await store.import_agent(chunks_of(data))).changed
    await sql(store, "UPDATE memories SET access_count = 7, last_accessed_at = now() "
                     "WHERE agent_id = 'a'")
    assert not (await store.import_agent(chunks_of(data))).changed
    assert (await store.get("a", made.id)).access_count == 7


async def build_small_agent(store: MemoryStore, agent: str) -> Any:
    fact = await store.remember(agent, "fact", content="Tim prefers Celsius", subject="Tim")
    episode = await store.start_episode(agent, title="chat")
    await store.append(agent, episode.id, [{"role": "user", "content": "Hello there"}])
    return fact


def _edited(data: bytes, number: int, change: Any) -> bytes:
    """The file with line ``number`` (1-based) replaced by ``change(line_object)``."""
    lines = data.splitlines()
    value = json.loads(lines[number - 1])
    lines[number - 1] = json.dumps(change(value)).encode()
    return b"\n".join(lines) + b"\n"


def _row_line(data: bytes, table: str) -> int:
    for number, line in enumerate(data.splitlines(), start=1):
        if json.loads(line).get("table") == table:
            return number
    raise AssertionError(table)


def _set(table_row: dict[str, Any], **values: Any) -> dict[str, Any]:
    table_row["row"].update(values)
    return table_row


async def test_bad_files_are_refused_with_the_line_and_import_nothing(
        store: MemoryStore) -> None:
    await build_small_agent(store, "a")
    data = await exported(store, "a")
    lines = data.splitlines(keepends=True)
    memory_line = _row_line(data, "memories")
    message_line = _row_line(data, "episode_messages")
    cases: list[tuple[bytes, type[Exception], int, str]] = [
        (b"".join(lines[:-1]), TruncatedExportError, len(lines), "truncated"),
        (b"".join(lines)[:len(data) // 2], ExportFileError, 0, "JSON"),
        (b"", TruncatedExportError, 1, "empty"),
        (b"".join(lines[:memory_line - 1] + lines[memory_line:]), TruncatedExportError,
         len(lines) - 1, "memories: 1 rows, the trailer says 2"),
        (_edited(data, message_line, lambda v: _set(v, content="Hello there!")),
         TruncatedExportError, len(lines), "checksum"),
        (_edited(data, memory_line, lambda v: _set(v, importance="high")), ExportFileError,
         memory_line, "memories.importance"),
        (_edited(data, memory_line, lambda v: _set(v, status="bogus")), ExportFileError,
         memory_line, "status_check"),
        (_edited(data, memory_line, lambda v: _set(v, id="not-a-uuid")), ExportFileError,
         memory_line, "memories.id"),
        (_edited(data, memory_line, lambda v: _set(v, embedding="AAAA")), ExportFileError,
         memory_line, "expected 384"),
        (_edited(data, memory_line, lambda v: _set(v, surprise=1)), ExportFileError,
         memory_line, "memories.surprise"),
        (_edited(data, memory_line, lambda v: _set(v, summary_tokens=10**30)),
         ExportFileError, memory_line, "(memories.summary_tokens): value out of int32 range"),
        (_edited(data, memory_line, lambda v: _set(v, summary="nul \u0000 byte")),
         ExportFileError, memory_line, "memories"),
        (_edited(data, memory_line, lambda v: {"table": "llm_calls", "row": v["row"]}),
         ExportFileError, memory_line, "do not carry llm_calls"),
        (_edited(data, 1, lambda v: {"nous_memory_export": {
            **v["nous_memory_export"], "embedding_dim": 768}}), ExportFileError, 1,
         "embedding_dim"),
        (_edited(data, 1, lambda v: {"nous_memory_export": {
            **v["nous_memory_export"], "embedding_model": "another/model"}}),
         ExportFileError, 1, "embedding_model"),
        (data + b'{"table": "memories", "row": {}}\n', ExportFileError, len(lines) + 1,
         "after the trailer"),
        (b"\n".join(data.splitlines()[1:]) + b"\n", ExportFileError, 1,
         "not a nous-memory export"),
    ]
    before = await table_counts(store.dsn)
    for body, error, number, reason in cases:
        with pytest.raises(error) as caught:
            await store.import_agent(chunks_of(body, 1000), agent_id="target")
        if number:
            assert caught.value.line == number, (reason, caught.value)  # type: ignore[attr-defined]
        assert reason in str(caught.value), (reason, caught.value)
        assert await table_counts(store.dsn) == before, reason


async def test_a_line_longer_than_the_limit_is_refused_before_it_is_held(
        store: MemoryStore) -> None:
    await build_small_agent(store, "a")
    data = await exported(store, "a")
    from nous_memory.portability.importer import Importer

    importer = Importer(store._db, store._store_facts())
    endless = b'{"nous_memory_export": "' + b"x" * 50_000
    with pytest.raises(ExportFileError, match="longer than 10000 bytes"):
        await importer.run(chunks_of(endless, 4096), max_line_bytes=10_000)
    assert not (await importer.run(chunks_of(data), max_line_bytes=10_000)).changed


async def test_forget_agent_removes_every_row_of_it_and_nothing_else(
        store: MemoryStore) -> None:
    await build_rich_agent(store, "gone")
    await build_small_agent(store, "kept")
    await sql(store, "INSERT INTO llm_calls (agent_id, purpose, model, prompt_tokens, "
                     "completion_tokens, tokens_source, latency_ms, outcome) VALUES "
                     "('gone', 'close', 'm', 10, 5, 'reported', 100, 'ok'), "
                     "('kept', 'close', 'm', 10, 5, 'reported', 100, 'ok')")
    await store.recall("gone", "what did Ana say?")  # an embedding_cache row
    before = await table_counts(store.dsn)
    gone_before = {t: n for (t, a), n in before.items() if a == "gone"}
    assert {"memories", "llm_calls", "embedding_cache", "work_items",
            "memory_archive", "conversation_summaries"} <= set(gone_before)

    receipt = await store.forget_agent("gone", actor="test")
    after = await table_counts(store.dsn)
    assert not {k for k in after if k[1] == "gone"}
    assert {k: n for k, n in before.items() if k[1] != "gone" and k[0] != "agent_erasures"} \
        == {k: n for k, n in after.items() if k[0] != "agent_erasures"}
    assert {t: n for t, n in receipt.counts.items() if n} == gone_before
    assert receipt.total_rows == sum(gone_before.values())
    audit = await sql(store, "SELECT * FROM agent_erasures")
    assert len(audit) == 1
    assert audit[0]["agent_sha256"] == hashlib.sha256(b"gone").digest()
    assert json.loads(audit[0]["row_counts"]) == receipt.counts
    assert audit[0]["actor"] == "test" and audit[0]["total_rows"] == receipt.total_rows
    # no content and no id: only the hash, the counts, the time and who asked
    assert set(audit[0].keys()) == {"id", "agent_sha256", "erased_at", "row_counts",
                                    "total_rows", "actor"}
    with pytest.raises(NotFoundError):
        await store.forget_agent("gone")
    with pytest.raises(NotFoundError):
        await exported(store, "gone")


async def _waiting_on(conn: asyncpg.Connection, locktype: str) -> None:
    """Until another backend waits for a lock of this type (at most 30 s)."""
    for _ in range(600):
        if await conn.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted "
                               "AND locktype = $1", locktype):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"nobody waited on a {locktype} lock")


LOCK_FACTS = "SELECT pg_advisory_xact_lock(hashtext('nous_memory.facts'), hashtext($1))"


async def test_an_erasure_chosen_as_a_deadlocks_victim_runs_again(
        store: MemoryStore) -> None:
    """Another transaction holds one of the agent's rows, then waits for the agent's
    lock the erasure holds: PostgreSQL aborts the erasure, which runs again, waits its
    turn and erases everything."""
    await build_small_agent(store, "gone")
    other = await asyncpg.connect(store.dsn)
    try:
        tx = other.transaction()
        await tx.start()
        await other.execute("SELECT 1 FROM memories WHERE agent_id = 'gone' FOR UPDATE")
        erasure = asyncio.create_task(store.forget_agent("gone", actor="test"))
        await _waiting_on(other, "transactionid")  # the erasure, on the locked row
        await other.execute(LOCK_FACTS, "gone")  # the erasure was the victim: ours now
        assert not erasure.done()  # it waits for our lock again
        await tx.commit()
        receipt = await asyncio.wait_for(erasure, 30)
    finally:
        await other.close()
    assert receipt.total_rows > 0
    assert not await sql(store, "SELECT 1 FROM memories WHERE agent_id = 'gone'")


async def test_a_worker_result_waits_for_an_erasure_before_locking_any_row(
        store: MemoryStore) -> None:
    """A work item's commit takes the agent's lock first, as an erasure does: while the
    erasure holds it, the item's row is not locked by the worker (an erasure deleting
    it would otherwise deadlock), and the worker then finds the agent gone."""
    await store.ingest("gone", [HistorySession(key="s1", started_at=datetime(2025, 3, 1,
                                                                             tzinfo=UTC),
                       turns=[HistoryTurn(role="user", content="My sister lives in Porto."),
                              HistoryTurn(role="assistant", content="Noted.")])])
    eraser = await asyncpg.connect(store.dsn)
    try:
        tx = eraser.transaction()
        await tx.start()
        await eraser.execute(LOCK_FACTS, "gone")
        worker = asyncio.create_task(store.worker().run_once())
        await _waiting_on(eraser, "advisory")
        locked = await eraser.fetch("SELECT id FROM work_items WHERE agent_id = 'gone' "
                                    "FOR UPDATE NOWAIT")  # old order: LockNotAvailable
        assert len(locked) == 1
        await eraser.execute("DELETE FROM work_items WHERE agent_id = 'gone'")
        await tx.commit()
        assert await asyncio.wait_for(worker, 30)  # it ran the item, and lost it
    finally:
        await eraser.close()
    assert not await sql(store, "SELECT 1 FROM work_items WHERE agent_id = 'gone'")
    assert await store.forget_agent("gone", actor="test")


async def test_an_upload_in_progress_holds_no_lock_of_the_agent(store: MemoryStore) -> None:
    """While an import still reads its file (a slow client), the agent's writers and the
    worker are not held up: the agent's lock is taken for the merge only."""
    await build_small_agent(store, "src")
    data = await exported(store, "src")
    half = asyncio.Event()
    go_on = asyncio.Event()

    async def slow_upload() -> AsyncIterator[bytes]:
        cut = len(data) // 2
        yield data[:cut]
        half.set()
        await go_on.wait()
        yield data[cut:]

    importing = asyncio.create_task(store.import_agent(slow_upload(), agent_id="copy"))
    await asyncio.wait_for(half.wait(), 10)
    other = await asyncpg.connect(store.dsn)
    try:
        async with other.transaction():
            assert await other.fetchval(
                "SELECT pg_try_advisory_xact_lock(hashtext('nous_memory.facts'), "
                "hashtext('copy'))")
    finally:
        await other.close()
        go_on.set()
    summary = await asyncio.wait_for(importing, 30)
    assert summary.rows > 0


async def test_a_worker_result_waits_a_bounded_time_for_the_agents_lock(
        store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held past the wait (a long erasure or merge of the agent), the result gives up and
    the item goes back to the queue, as often as that happens, without using up its
    attempts; once the lock is free it completes."""
    monkeypatch.setattr(queue, "COMMIT_LOCK_WAIT_MS", 300)
    await store.ingest("held", [HistorySession(key="s1", started_at=datetime(2025, 3, 1,
                                                                             tzinfo=UTC),
                        turns=[HistoryTurn(role="user", content="My sister lives in Porto."),
                               HistoryTurn(role="assistant", content="Noted.")])])
    holder = await asyncpg.connect(store.dsn)
    worker = store.worker()
    try:
        tx = holder.transaction()
        await tx.start()
        await holder.execute(LOCK_FACTS, "held")
        for _ in range(7):  # more than an item's attempts: waiting is not failing
            assert await asyncio.wait_for(worker.run_once(), 30)
            (item,) = await sql(store, "SELECT state, attempts, last_error, "
                                       "run_after - now() AS wait "
                                       "FROM work_items WHERE agent_id = 'held'")
            assert item["state"] == "pending" and "ContentionError" in item["last_error"]
            assert item["attempts"] == 0  # the contended attempt given back
            assert item["wait"].total_seconds() <= 1.0  # soon, not after a backoff
            await sql(store, "UPDATE work_items SET run_after = now() "
                             "WHERE agent_id = 'held'")
        await tx.rollback()
    finally:
        await holder.close()
    assert await worker.drain() >= 1
    assert [r["state"] for r in await sql(
        store, "SELECT state FROM work_items WHERE agent_id = 'held' AND task = 'episode_close'"
    )] == ["done"]


def _resealed(lines: list[bytes]) -> bytes:
    """Row lines (header first) with a trailer that matches them."""
    counts: dict[str, int] = {}
    for line in lines[1:]:
        table = json.loads(line)["table"]
        counts[table] = counts.get(table, 0) + 1
    body = b"".join(line + b"\n" for line in lines)
    trailer = {"end": {"rows": len(lines) - 1, "counts": counts,
                       "sha256": hashlib.sha256(body).hexdigest()}}
    return body + json.dumps(trailer).encode() + b"\n"


async def test_vectors_of_another_model_are_refused_or_kept_for_re_embedding(
        store: MemoryStore) -> None:
    await build_small_agent(store, "a")
    lines = (await exported(store, "a")).splitlines()[:-1]
    other: list[bytes] = []
    for line in lines:
        value = json.loads(line)
        if "nous_memory_export" in value:
            value["nous_memory_export"]["embedding_model"] = "another/model"
        elif value["row"].get("embedding_model"):
            value["row"]["embedding_model"] = "another/model"
        other.append(json.dumps(value).encode())
    data = _resealed(other)
    with pytest.raises(ExportFileError, match="another/model"):
        await store.import_agent(chunks_of(data), agent_id="b")
    summary = await store.import_agent(chunks_of(data), agent_id="b", allow_other_model=True)
    assert summary.reembed_pending == 2  # the fact and the episode's summary
    found = (await store.recall("b", "Celsius")).items[0]
    assert found.text == "Tim prefers Celsius"
    assert found.scores.cosine is None  # found by its words: its vector is not comparable
    result = await store.maintenance.housekeeping(now=datetime.now(UTC))
    assert result.counts["memories_reembedded"] == 2
    found = (await store.recall("b", "Celsius")).items[0]
    assert found.text == "Tim prefers Celsius" and found.scores.cosine is not None


async def test_a_dry_run_reports_what_an_import_would_do_and_changes_nothing(
        store: MemoryStore) -> None:
    await build_small_agent(store, "a")
    data = await exported(store, "a")
    before = await table_counts(store.dsn)
    rehearsed = await store.import_agent(chunks_of(data), agent_id="b", dry_run=True)
    assert await table_counts(store.dsn) == before
    assert rehearsed == await store.import_agent(chunks_of(data), agent_id="b")
    with pytest.raises(TruncatedExportError):
        await store.import_agent(chunks_of(data[:data.rindex(b'{"end"')]), agent_id="c",
                                 dry_run=True)
