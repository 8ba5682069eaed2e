"""The read path's functions (schema.sql, "reads as functions"), which a Citus cluster
runs on the worker holding the agent, give exactly what the statements give.

No Citus server runs in the suite: the functions are created and called here on plain
PostgreSQL, through the store with ``Database.delegated`` set as it is on a cluster
whose citus script distributed them; what that script emits is checked in
test_citus.py, and docs/scaling.md has the runs on a real cluster.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.db import QUERIES
from nous_memory.db.distribution import DELEGATED_READS, DELEGATION_ARGUMENT

from .test_context import _seed
from .test_current_truth import JUL, MAY, MOVE


async def test_each_function_is_its_statement(database_url: str) -> None:
    """Same text, same parameters, same columns; the agent is the first argument, by the
    name the citus script distributes it by."""
    conn = await asyncpg.connect(database_url)
    try:
        for query, function in DELEGATED_READS.items():
            row = await conn.fetchrow(
                "SELECT prosrc, proargnames, provolatile::text FROM pg_proc "
                "WHERE oid = to_regproc($1)", function)
            assert row is not None, f"{function} missing: schema.sql and a migration"
            assert QUERIES[query] in row["prosrc"], (
                f"{function} (schema.sql) no longer holds the named query {query}: copy it "
                f"there and into a migration (CREATE OR REPLACE FUNCTION)")
            assert row["proargnames"][0] == DELEGATION_ARGUMENT
            assert row["provolatile"] == "v"  # it prepares its statement
            direct = await conn.prepare(QUERIES[query])
            called = await conn.prepare(QUERIES[f"{query}_delegated"])
            assert called.get_parameters() == direct.get_parameters()
            assert [(a.name, a.type) for a in called.get_attributes()] == [
                (a.name, a.type) for a in direct.get_attributes()]
    finally:
        await conn.close()


async def test_plain_postgresql_runs_the_statements(store: MemoryStore) -> None:
    assert not store._db.distributed and not store._db.delegated
    assert (await store.health())["database"]["reads"] == "statements"


QUERIES_ASKED = ("Which city do I live in these days?", "Where did I live before?",
                 "when is the billing migration window?", "Should I drop table invoices?",
                 "what does Ana prefer?", "incident triage steps",
                 "Faro bakery bread and cake on the street")


async def _reads(store: MemoryStore, delegated: bool) -> list[Any]:
    store._db.delegated = delegated
    out: list[Any] = []
    for query in QUERIES_ASKED:
        for agent in ("a", "u"):
            recalled = await store.recall(agent, query, k=8, as_of=JUL,
                                          include_superseded=True)
            out.append([item.model_dump() for item in recalled.items])
            for current_only in (False, True):
                context = await store.assemble_context(
                    agent, query, budget_tokens=900, as_of=JUL, extraction="off",
                    current_only=current_only)
                out.append((context.text, [i.model_dump() for i in context.items],
                            context.cache_hits, context.cache_misses))
    return out


def _named_reads(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the queries the main pool runs from now on."""
    calls: list[str] = []
    fetch = store._db.fetch

    async def seen(name: str, *args: Any) -> Any:
        calls.append(name)
        return await fetch(name, *args)

    monkeypatch.setattr(store._db, "fetch", seen)
    return calls


async def test_the_functions_give_what_the_statements_give(
        store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall (with the current values of stale slots) and context (pins, censors, Now,
    Upcoming, tier 2) through the functions and through the statements: the same."""
    await _seed(store)
    patterns = [f"step {i}: check the {w} dashboard" for i, w in
                enumerate(("error", "latency", "queue", "disk", "billing", "auth", "dns"))]
    await store.remember("a", "procedure", name="Incident triage", core_patterns=patterns)
    await store.learn_fact("u", "The dentist appointment is on 2024-08-02.",
                           valid_from=datetime(2024, 7, 1, tzinfo=UTC))
    await store.ingest("u", MOVE)
    await store.worker().drain()
    # an old value the ranking finds among many rows, and whose current value it does not
    await store.learn_fact("u", "The user lives in Faro.", valid_from=MAY)
    await store.learn_fact("u", "The user lives in Braga.", valid_from=JUL)
    await store.remember_many("u", [
        {"kind": "fact", "content": f"The Faro bakery on street {i} sells bread and cake"}
        for i in range(30)])
    # access counts move the use prior between calls; the reads are what is compared
    monkeypatch.setattr(store.access, "record", lambda agent, ids: None)
    calls = _named_reads(store, monkeypatch)
    statements = await _reads(store, delegated=False)
    through_statements = set(calls)
    calls.clear()
    store.recaller.forget_agent_figures()  # the agents' sizes are read again, delegated
    functions = await _reads(store, delegated=True)
    assert functions == statements
    assert any(text for text, *_ in statements[1::3])  # contexts with content were compared
    # every read ran both ways (the stale slots' current values and tier 2 included)
    assert set(DELEGATED_READS) - {"recall"} <= through_statements  # recall: scan pool
    assert {f"{q}_delegated" for q in DELEGATED_READS} <= set(calls)
    assert not set(DELEGATED_READS) & set(calls)


async def test_a_statement_is_prepared_once_per_session_over_its_tables(
        database_url: str) -> None:
    """On one PostgreSQL each table the statement reads becomes its schema-qualified self
    (on a Citus worker, the agent's shard), and a session prepares it once."""
    conn = await asyncpg.connect(database_url)
    try:
        for _ in range(3):
            await conn.fetch("SELECT * FROM nous_context_tier2('a', '{}', '\\x00', 10, 10)")
        rows = await conn.fetch(
            "SELECT statement, generic_plans + custom_plans AS runs, current_schema() AS s "
            "FROM pg_prepared_statements WHERE name LIKE 'nous\\_context\\_tier2\\_local\\_%'")
    finally:
        await conn.close()
    assert len(rows) == 1 and rows[0]["runs"] == 3
    schema, statement = rows[0]["s"], rows[0]["statement"]
    for table, alias in (("memories", "m"), ("episodes", "e"), ("episode_chunks", "k"),
                         ("procedures", "p"), ("extraction_cache", "c")):
        assert f" {schema}.{table} {alias}" in statement
    assert "LEFT JOIN LATERAL (" in statement  # what is not a table stays as it was


async def test_a_session_finds_what_it_prepared_without_listing_its_statements(
        database_url: str) -> None:
    """A session setting names each statement the session prepared (the listing of
    pg_prepared_statements costs more with every statement a session holds); one
    prepared in a transaction that rolled back, which keeps the statement and loses the
    setting, is found in the listing and used, not prepared twice."""
    call = "SELECT * FROM nous_context_tier2('a', '{}', '\\x00', 10, 10)"
    conn = await asyncpg.connect(database_url)
    try:
        tx = conn.transaction()
        await tx.start()
        await conn.fetch(call)  # prepares, and names it in the setting
        await tx.rollback()  # the setting is gone, the statement stays
        (name,) = [r["name"] for r in await conn.fetch(
            "SELECT name FROM pg_prepared_statements WHERE name LIKE 'nous\\_%'")]
        setting = f"nous_prepared.{name}"
        assert await conn.fetchval("SELECT current_setting($1, true)", setting) in ("", None)
        await conn.fetch(call)  # found in the listing, no second PREPARE
        assert await conn.fetchval("SELECT current_setting($1, true)", setting) == "yes"
        assert len(await conn.fetch("SELECT 1 FROM pg_prepared_statements "
                                    "WHERE name LIKE 'nous\\_%'")) == 1
    finally:
        await conn.close()
