"""The owner's undo of a forget in Python: a soft-deleted memory comes back, audited as
``restored``; a fact comes back through the value rule, never beside a newer version of
itself."""

from __future__ import annotations

import httpx
import pytest

from nous_memory import ConflictError, MemoryStore, NotFoundError

from .test_cli_facts import run_main

A = "restorer"


async def test_a_deleted_memory_comes_back_as_it_was(store: MemoryStore) -> None:
    decision = await store.remember(A, "decision", description="Chose tea over coffee",
                                    outcome="success")
    await store.delete(A, decision.id, actor="mcp")
    assert (await store.recall(A, "tea or coffee")).items == []

    back = await store.restore_deleted(A, decision.id, actor="owner")
    assert back.action == "restored" and back.previous_status == "active"
    assert back.memory.status == "active" and back.memory.version == decision.version + 2
    assert (await store.get(A, decision.id)).summary == decision.summary
    assert [item.memory_id for item in (await store.recall(A, "tea or coffee")).items] == [
        decision.id]
    events = await store.history(A, decision.id)
    assert [e.event for e in events] == ["created", "deleted", "restored"]
    assert events[-1].actor == "owner"
    assert events[-1].old_values == {"status": "deleted"}
    assert events[-1].new_values is not None and events[-1].new_values["status"] == "active"


async def test_only_a_deleted_memory_of_this_agent_can_be_restored(store: MemoryStore) -> None:
    fact = await store.remember(A, "fact", content="Ana lives in Porto")
    with pytest.raises(ConflictError, match="not deleted"):
        await store.restore_deleted(A, fact.id)
    await store.delete(A, fact.id)
    with pytest.raises(NotFoundError):
        await store.restore_deleted("someone-else", fact.id)
    await store.delete(A, fact.id, purge=True)
    with pytest.raises(NotFoundError):
        await store.restore_deleted(A, fact.id)


async def test_a_superseded_version_comes_back_superseded(store: MemoryStore) -> None:
    old = (await store.learn_fact(A, "The project deadline is March 3")).fact
    new = (await store.learn_fact(A, "The project deadline is March 10")).fact
    assert old is not None and new is not None
    await store.delete(A, old.id)
    back = await store.restore_deleted(A, old.id)
    assert back.action == "restored" and back.memory.status == "superseded"
    assert (await store.get(A, new.id)).status == "active"


async def test_a_fact_restored_over_a_newer_version_stays_history(store: MemoryStore) -> None:
    old = (await store.learn_fact(A, "The project deadline is March 3")).fact
    assert old is not None
    await store.delete(A, old.id)
    newer = await store.learn_fact(A, "The project deadline is March 10")
    assert newer.action == "created" and newer.fact is not None  # the old one was gone

    back = await store.restore_deleted(A, old.id)
    assert back.action == "superseded" and back.related == [newer.fact.id]
    assert back.memory.status == "superseded"
    assert (await store.get(A, newer.fact.id)).status == "active"
    chain = await store.fact_history(A, newer.fact.id)
    assert [m.id for m in chain.chain] == [old.id, newer.fact.id]
    active = await store.list(A, kind="fact", status="active")
    assert [m.id for m in active.items] == [newer.fact.id]


async def test_a_fact_restored_beside_the_same_fact_confirms_it(store: MemoryStore) -> None:
    old = (await store.learn_fact(A, "Ana is vegetarian")).fact
    assert old is not None
    await store.delete(A, old.id)
    again = (await store.learn_fact(A, "Ana is vegetarian.")).fact
    assert again is not None and again.id != old.id

    back = await store.restore_deleted(A, old.id)
    assert back.action == "confirmed" and back.related == [again.id]
    assert back.memory.status == "superseded"
    current = await store.get(A, again.id)
    assert current.status == "active"
    assert getattr(current.detail, "confirmation_count", 0) == 1
    assert len((await store.list(A, kind="fact", status="active")).items) == 1


async def test_a_restored_fact_newer_than_the_current_one_replaces_it(
        store: MemoryStore) -> None:
    older = await store.remember(A, "fact", content="The weekly sync is on Tuesdays")
    newer = await store.remember(A, "fact", content="The weekly sync is on Wednesdays")
    await store.delete(A, newer.id)

    back = await store.restore_deleted(A, newer.id)
    assert back.action == "replaced" and back.related == [older.id]
    assert back.memory.status == "active"
    assert (await store.get(A, older.id)).status == "superseded"
    assert [m.id for m in (await store.fact_history(A, newer.id)).chain] == [older.id,
                                                                             newer.id]


async def test_restore_over_rest_and_the_command_line(
        client: httpx.AsyncClient, store: MemoryStore, database_url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    old = (await store.learn_fact(A, "The project deadline is March 3")).fact
    assert old is not None
    url = f"/agents/{A}/memories/{old.id}"
    assert (await client.delete(url)).status_code == 204
    assert (await client.patch(url, json={"status": "active"})).status_code == 404
    newer = (await store.learn_fact(A, "The project deadline is March 10")).fact
    assert newer is not None

    response = await client.post(f"{url}/restore")
    assert response.status_code == 200, response.text
    assert response.json() | {"id": str(old.id)} == {
        "id": str(old.id), "restored_from": "deleted", "status": "superseded",
        "previous_status": "active", "action": "superseded", "related": [str(newer.id)],
        "previous_storage": None, "detail_chars": None, "messages": None}
    assert (await client.post(f"/agents/other/memories/{old.id}/restore")).status_code == 404
    history = (await client.get(f"{url}/history")).json()
    assert [e["event"] for e in history][-1] == "restored"

    decision = await store.remember(A, "decision", description="Chose the blue tent")
    await store.delete(A, decision.id)
    code, out, err = await run_main(capsys, "--database-url", database_url, "memories",
                                    "restore", str(decision.id), "--agent", A,
                                    "--actor", "ana")
    assert code == 0, err
    assert out.strip() == f"restored {decision.id} from deletion: active"
    events = await store.history(A, decision.id)
    assert (events[-1].event, events[-1].actor) == ("restored", "ana")
