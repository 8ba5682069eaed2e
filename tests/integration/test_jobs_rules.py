"""Lifecycle rules, procedure compression (LLM through the scripted server) and
housekeeping on a real database."""

from __future__ import annotations

from datetime import timedelta

from nous_memory import MemoryStore
from nous_memory.testing import ScriptedLLMServer

from .jobs_helpers import NOW, snapshot, sql

AGENT = "rules-agent"


async def test_lifecycle_promotes_flags_and_retires_with_audit(sweeps: str,
                                                               store: MemoryStore,
                                                               database_url: str) -> None:
    assert store.maintenance.policy.sweeps == sweeps
    solid = await store.remember(AGENT, "fact", content="The user lives in Lyon")
    shaky = await store.remember(AGENT, "fact", content="The user likes jazz")
    await sql(database_url, "UPDATE facts SET confirmation_count = $2 WHERE memory_id = $1",
              solid.id, 3)
    await sql(database_url, "UPDATE facts SET confirmation_count = $2 WHERE memory_id = $1",
              shaky.id, 2)
    failing = await store.remember(AGENT, "procedure", name="Deploy", activation_count=6,
                                   success_count=1, failure_count=5, effectiveness=0.2)
    young = await store.remember(AGENT, "procedure", name="Backup", activation_count=4,
                                 success_count=0, failure_count=4, effectiveness=0.0)
    good = await store.remember(AGENT, "procedure", name="Review", activation_count=9,
                                success_count=8, failure_count=1, effectiveness=0.9)
    noisy = await store.remember(AGENT, "censor", trigger_pattern="rm -rf", action="warn",
                                 reason="dangerous", activation_count=6,
                                 false_positive_count=4)
    fair = await store.remember(AGENT, "censor", trigger_pattern="drop table", action="block",
                                reason="data loss", activation_count=6, false_positive_count=3)

    before = await snapshot(database_url)
    dry = await store.maintenance.lifecycle(now=NOW, dry_run=True)
    assert await snapshot(database_url) == before
    result = await store.maintenance.lifecycle(now=NOW)
    assert result.counts == dry.counts == {"facts_promoted": 1, "procedures_flagged": 1,
                                           "censors_retired": 1}

    assert "core" in (await store.get(AGENT, solid.id)).tags
    assert "core" not in (await store.get(AGENT, shaky.id)).tags
    assert "needs_review" in (await store.get(AGENT, failing.id)).tags
    for ok in (young, good):
        assert "needs_review" not in (await store.get(AGENT, ok.id)).tags
    assert (await store.get(AGENT, noisy.id)).status == "archived"
    assert (await store.get(AGENT, fair.id)).status == "active"
    assert [e.event for e in await store.history(AGENT, solid.id)][-1] == "promoted"
    assert [e.event for e in await store.history(AGENT, failing.id)][-1] == "flagged"
    retired = (await store.history(AGENT, noisy.id))[-1]
    assert retired.event == "retired" and retired.new_values == {
        "status": "archived", "activations": 6, "false_positives": 4}
    assert (await store.maintenance.lifecycle(now=NOW)).counts == {
        "facts_promoted": 0, "procedures_flagged": 0, "censors_retired": 0}


NOTES = [f"note {i}: step {i} needs care" for i in range(12)]


async def test_compression_without_llm_is_skipped_and_says_so(store: MemoryStore) -> None:
    procedure = await store.remember(AGENT, "procedure", name="Release",
                                     implementation_notes=NOTES)
    result = await store.maintenance.compress(now=NOW)
    assert result.skipped and "no LLM" in (result.note or "")
    assert result.counts == {"procedures_waiting": 1}
    assert (await store.get(AGENT, procedure.id)).procedure.implementation_notes == NOTES


async def test_compression_consolidates_notes_and_keeps_the_old_ones(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer, database_url: str) -> None:
    long = await llm_store.remember(AGENT, "procedure", name="Release",
                                    implementation_notes=NOTES)
    short = await llm_store.remember(AGENT, "procedure", name="Hotfix",
                                     implementation_notes=NOTES[:10])
    merged = ["Tag the release", "Run the migrations first", "Announce in #ops"]
    llm_server.reply_json({"notes": merged})

    dry = await llm_store.maintenance.compress(now=NOW, dry_run=True)
    assert dry.counts == {"procedures_compressed": 1} and llm_server.pending == 1
    result = await llm_store.maintenance.compress(now=NOW)
    assert result.counts == {"procedures_compressed": 1, "procedures_failed": 0,
                             "notes_before": 12, "notes_after": 3}
    assert (await llm_store.get(AGENT, long.id)).procedure.implementation_notes == merged
    assert (await llm_store.get(AGENT, short.id)).procedure.implementation_notes == NOTES[:10]
    event = (await llm_store.history(AGENT, long.id))[-1]
    assert event.event == "compressed"
    assert event.old_values == {"implementation_notes": NOTES}
    calls = await sql(database_url, "SELECT purpose, outcome FROM llm_calls")
    assert [(c["purpose"], c["outcome"]) for c in calls] == [("procedure_compress", "ok")]


async def test_compression_rejects_an_answer_over_the_limit(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer) -> None:
    procedure = await llm_store.remember(AGENT, "procedure", name="Release",
                                         implementation_notes=NOTES)
    llm_server.reply_json({"notes": [f"n{i}" for i in range(6)]})
    result = await llm_store.maintenance.compress(now=NOW)
    assert result.counts["procedures_failed"] == 1 and result.note
    assert (await llm_store.get(AGENT, procedure.id)).procedure.implementation_notes == NOTES


async def test_housekeeping_expires_requeues_and_reembeds(sweeps: str, store: MemoryStore,
                                                          database_url: str) -> None:
    assert store.maintenance.policy.sweeps == sweeps
    fact = await store.remember(AGENT, "fact", content="The user's cat is called Miso")
    model = store.embedder.model_name
    original = await sql(database_url, "SELECT embedding::text AS e FROM memories "
                         "WHERE id = $1", fact.id)
    await sql(database_url, "UPDATE memories SET embedding_model = 'old-model', embedding = "
              "array_fill(0.1, ARRAY[384])::vector WHERE id = $1", fact.id)
    for hours, key in ((-1, b"a" * 32), (1, b"b" * 32)):
        await sql(database_url, "INSERT INTO extraction_cache (agent_id, memory_id, "
                  "query_sha256, max_tokens, content, source, expires_at) VALUES "
                  "($1, $2, $3, 100, 'x', 'rule', $4)", AGENT, fact.id, key,
                  NOW + timedelta(hours=hours))
    await sql(database_url, "INSERT INTO work_items (agent_id, task, memory_id, state, "
              "attempts, lease_until, locked_by) VALUES ($1, 'episode_close', $2, 'running', "
              "1, $3, 'dead-worker'), ($1, 'episode_upgrade', $2, 'running', 6, $3, "
              "'dead-worker'), ($1, 'summary_regenerate', $2, 'running', 1, $4, 'live')",
              AGENT, fact.id, NOW - timedelta(minutes=5), NOW + timedelta(minutes=5))

    before = await snapshot(database_url)
    dry = await store.maintenance.housekeeping(now=NOW, dry_run=True)
    assert await snapshot(database_url) == before
    result = await store.maintenance.housekeeping(now=NOW)
    expected = {"cache_expired": 1, "work_requeued": 2, "work_requeued_failed": 1,
                "memories_reembedded": 1, "chunks_reembedded": 0}
    assert result.counts == dry.counts == expected

    rows = await sql(database_url, "SELECT task, state, locked_by FROM work_items ORDER BY id")
    assert [(r["task"], r["state"], r["locked_by"]) for r in rows] == [
        ("episode_close", "pending", None), ("episode_upgrade", "failed", None),
        ("summary_regenerate", "running", "live")]
    assert len(await sql(database_url, "SELECT 1 FROM extraction_cache")) == 1
    after = await sql(database_url, "SELECT embedding::text AS e, embedding_model FROM "
                      "memories WHERE id = $1", fact.id)
    assert after[0]["embedding_model"] == model and after[0]["e"] == original[0]["e"]
