"""queries.sql: parsing, and the rule that every tenant query is scoped by agent_id."""

from __future__ import annotations

import re

import pytest

from nous_memory.db.queries import QUERIES, parse_queries

TENANT_TABLES = ("memories", "decisions", "facts", "episodes", "procedures", "censors",
                 "episode_messages", "episode_chunks", "memory_events", "embedding_cache",
                 "memory_records", "work_items", "llm_calls", "conversation_policies",
                 "conversation_state", "conversation_summaries", "conversation_analyses")

# The worker serves every agent's queue: these read across agents by design and
# hand each row to code that is scoped to that row's agent.
CROSS_AGENT = {"work_claim", "work_fail_exhausted", "idle_open_episodes"}
# The maintenance jobs' sweeps (nous_memory/maintenance): a nightly job serves every
# agent at once in key-ordered batches; every row they write keeps its own agent_id, and
# the tiering sweeps take an optional agent filter (archive_episodes uses it).
CROSS_AGENT |= {
    "episode_key_range", "trim_episodes_batch",
    "archive_episodes_batch", "retention_batch", "lifecycle_promote_facts",
    "lifecycle_flag_procedures", "lifecycle_retire_censors", "compress_candidates",
    "compress_candidates_count",
    "expire_extraction_cache", "requeue_stuck_work", "stale_embeddings_batch",
    "reembed_write", "stale_chunk_embeddings_batch", "reembed_chunks_write",
    "count_stale_embeddings"}
# The fact backfill queues LLM upgrades for every agent's rule-only episodes in one
# bounded statement (optional agent filter); every item it writes keeps its agent_id.
CROSS_AGENT |= {"backfill_upgrades_queue", "backfill_upgrades_left", "backfill_rules_queue"}


def test_every_tenant_query_filters_by_agent() -> None:
    for name in QUERIES.names():
        if name in CROSS_AGENT:
            continue
        sql = re.sub(r"'[^']*'", "''", QUERIES[name])  # table names, not string literals
        touches = [t for t in TENANT_TABLES if re.search(rf"\b{t}\b", sql)]
        if not touches:
            continue
        scoped = re.search(r"\bagent_id\s*=\s*\$1\b", sql) or (
            sql.startswith("INSERT") and re.search(r"\b(SELECT|VALUES \() ?\$1,", sql))
        assert scoped, f"{name} touches {touches} without agent_id = $1"


def test_cross_agent_queries_exist_and_are_few() -> None:
    assert set(QUERIES.names()) >= CROSS_AGENT
    for name in CROSS_AGENT:
        assert "agent_id = $1" not in QUERIES[name]


def test_parse_rejects_duplicates_and_empty() -> None:
    with pytest.raises(ValueError, match="twice"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;")
    with pytest.raises(ValueError, match="without SQL"):
        parse_queries("-- name: a\n-- only a comment\n")


def test_parse_strips_comments_and_semicolon() -> None:
    assert parse_queries("-- name: q\n-- why\nSELECT 1;\n") == {"q": "SELECT 1"}


def test_unknown_name_fails_loudly() -> None:
    with pytest.raises(KeyError, match="no query named"):
        QUERIES["nope"]
