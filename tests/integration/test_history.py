"""History import through the Python API: one closed episode per session, idempotent,
all-or-nothing per call on bad input, processed by the worker like any close."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nous_memory import MemoryStore
from nous_memory.errors import ConflictError, ContentionError, DuplicateError, InvalidInputError
from nous_memory.history import HistorySession, HistoryTurn, IngestProgress
from tests.integration.db_helpers import sql

T0 = datetime(2023, 3, 1, 9, 0, tzinfo=UTC)


def sessions(n: int, *, keyed: bool = True) -> list[HistorySession]:
    return [HistorySession(
        key=f"s{i}" if keyed else None, started_at=T0 + timedelta(days=i),
        turns=[HistoryTurn(role="user", content=f"Day {i}: I planted {i} tulips.",
                           metadata={"turn": f"s{i}#0"}),
               HistoryTurn(role="assistant", content="Lovely!")]) for i in range(n)]


async def test_sessions_become_closed_episodes_once(store: MemoryStore) -> None:
    seen: list[IngestProgress] = []
    first = await store.ingest("h", sessions(5), progress=seen.append)
    assert (first.sessions_imported, first.sessions_skipped, first.turns_imported) == (5, 0, 10)
    assert seen[-1].sessions_done == 5 and seen[-1].turns_done == 10
    again = await store.ingest("h", sessions(5))
    assert (again.sessions_imported, again.sessions_skipped) == (0, 5)
    await store.worker().drain()
    episode = await store.get_episode("h", first.episode_ids[2])
    detail: Any = episode.detail
    assert detail.state == "closed" and detail.source_key == "s2"
    assert detail.started_at == T0 + timedelta(days=2)
    transcript = await store.transcript("h", episode.id)
    assert [m.content for m in transcript] == ["Day 2: I planted 2 tulips.", "Lovely!"]
    assert transcript[0].metadata == {"turn": "s2#0"}
    found = await store.recall("h", "how many tulips did I plant on day 3?", k=3)
    assert any("Day 3" in i.text for i in found.items), [i.text for i in found.items]


async def test_a_rerun_finishes_an_interrupted_import(store: MemoryStore) -> None:
    await store.ingest("h", sessions(6)[:2])  # stopped after two sessions
    rest = await store.ingest("h", sessions(6))
    assert (rest.sessions_imported, rest.sessions_skipped) == (4, 2)
    assert len((await store.list("h", kind="episode")).items) == 6


async def test_sessions_without_keys_are_keyed_by_their_content(store: MemoryStore) -> None:
    await store.ingest("h", sessions(3, keyed=False))
    again = await store.ingest("h", sessions(3, keyed=False))
    assert again.sessions_skipped == 3


async def test_concurrent_imports_write_each_session_once(store: MemoryStore) -> None:
    results = await asyncio.gather(*(store.ingest("h", sessions(8)) for _ in range(3)))
    assert sum(r.sessions_imported for r in results) == 8
    assert sum(r.sessions_skipped for r in results) == 16


async def test_a_bad_session_rejects_the_call_naming_it(store: MemoryStore) -> None:
    bad: list[Any] = [
        {"started_at": T0.isoformat(), "turns": [{"role": "user", "content": "fine"}]},
        {"started_at": "last tuesday", "turns": [{"role": "user", "content": "x"}]},
        {"started_at": T0.isoformat(), "turns": []},
        {"started_at": T0.isoformat(), "turns": [{"role": "robot", "content": "x"}]},
    ]
    with pytest.raises(InvalidInputError) as caught:
        await store.ingest("h", bad)
    fields = {p.field for p in caught.value.problems}
    assert {"sessions[1].started_at", "sessions[2].turns", "sessions[3].turns[0].role"
            } <= fields
    assert not (await store.list("h", kind="episode")).items  # nothing was written
    once = await store.ingest("h", [sessions(1)[0], sessions(1)[0]])  # a repeated session
    assert (once.sessions_imported, once.sessions_skipped) == (1, 0)
    other = HistorySession(key="s0", started_at=T0, turns=[HistoryTurn(role="user",
                                                                       content="else")])
    with pytest.raises(InvalidInputError) as twice:
        await store.ingest("h", [sessions(2)[1], sessions(1)[0], other])
    assert twice.value.problems[0].field == "sessions[2].key"


async def _deadlock_when(store: MemoryStore, name: str, condition: str, *,
                         error: str = "'deadlock detected' USING ERRCODE = '40P01'") -> None:
    """A trigger on work_items that raises a deadlock (40P01), or ``error``, when
    ``condition`` holds: what a session's transaction meets when PostgreSQL chooses it
    as a victim."""
    await sql(store, f"""
        CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF {condition} THEN
                RAISE EXCEPTION {error};
            END IF;
            RETURN NEW;
        END $$""")
    await sql(store, f"CREATE TRIGGER {name} BEFORE INSERT ON work_items "
                     f"FOR EACH ROW EXECUTE FUNCTION {name}()")


async def test_a_session_whose_write_loses_a_deadlock_is_an_error_not_a_skip(
        store: MemoryStore) -> None:
    """Only a key taken meanwhile counts as skipped: a deadlock (or serialization
    failure) in the session's transaction reaches the caller, and nothing is written."""
    await _deadlock_when(store, "test_deadlock", "true")
    with pytest.raises(ContentionError):
        await store.ingest("h", sessions(1))
    assert not (await store.list("h", kind="episode")).items
    await sql(store, "DROP TRIGGER test_deadlock ON work_items")
    result = await store.ingest("h", sessions(1))  # retried as it is: imported
    assert (result.sessions_imported, result.sessions_skipped) == (1, 0)


async def test_a_duplicate_of_another_record_is_an_error_not_a_skipped_session(
        store: MemoryStore) -> None:
    """Only the session's own key, taken meanwhile, makes it a skip: another unique index
    refusing its write is an error, and nothing is written."""
    await _deadlock_when(store, "test_other_duplicate", "true", error=(
        "'duplicate key value violates unique constraint' USING ERRCODE = '23505', "
        "CONSTRAINT = 'work_items_pkey'"))
    with pytest.raises(DuplicateError) as raised:
        await store.ingest("h", sessions(1))
    assert raised.value.constraint == "work_items_pkey"
    assert not (await store.list("h", kind="episode")).items


async def test_a_key_taken_on_a_citus_worker_is_a_skipped_session(store: MemoryStore) -> None:
    """Through a Citus coordinator, a worker's unique violation comes without its
    constraint field, its message naming the shard's index: still the session's own key
    taken meanwhile, so a skip."""
    await _deadlock_when(store, "test_key_on_worker", "true", error=(
        "'duplicate key value violates unique constraint \"episodes_source_key_102040\"' "
        "USING ERRCODE = '23505'"))
    result = await store.ingest("h", sessions(1))
    assert (result.sessions_imported, result.sessions_skipped) == (0, 1)


async def test_a_session_that_loses_once_is_written_on_its_second_try(
        store: MemoryStore) -> None:
    await sql(store, "CREATE SEQUENCE test_losses")
    # a sequence: not rolled back with the transaction it raised in
    await _deadlock_when(store, "test_lose_once", "nextval('test_losses') = 1")
    result = await store.ingest("h", sessions(2))
    assert (result.sessions_imported, result.sessions_skipped) == (2, 0)


async def test_contention_after_an_imported_session_does_not_say_nothing_was_written(
        store: MemoryStore) -> None:
    """The first session went in; the second keeps losing: not a ContentionError (which
    tells a client nothing was written), but a conflict saying what was imported."""
    await _deadlock_when(store, "test_lose_second", "EXISTS (SELECT 1 FROM work_items "
                                                     "WHERE agent_id = NEW.agent_id)")
    with pytest.raises(ConflictError) as raised:
        await store.ingest("h", sessions(2))
    assert not isinstance(raised.value, ContentionError)
    assert "the sessions before it were imported" in str(raised.value)
    assert len((await store.list("h", kind="episode")).items) == 1
