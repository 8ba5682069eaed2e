-- Memory rows of every kind: writes, reads, listing, deletion, audit events.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- ---------------------------------------------------------------- memories

-- name: insert_memories
-- A batch of memories from JSON rows; $3 holds the embeddings, row i uses element i.
INSERT INTO memories (agent_id, id, kind, summary, summary_source, summary_tokens,
                      embedding, embedding_model, importance, tags, people)
SELECT $1, r.id, r.kind, r.summary, r.summary_source, r.summary_tokens,
       ($3::vector[])[r.ord], $4, r.importance, r.tags, COALESCE(r.people, '{}')
FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, kind text, summary text,
     summary_source text, summary_tokens integer, importance double precision,
     tags text[], ord integer, people text[])
RETURNING id, created_at, updated_at;

-- name: upsert_decision_details
INSERT INTO decisions SELECT * FROM jsonb_populate_recordset(NULL::decisions, $2::jsonb) r
WHERE r.agent_id = $1
ON CONFLICT (agent_id, memory_id) DO UPDATE SET
    description = EXCLUDED.description, outcome = EXCLUDED.outcome,
    confidence = EXCLUDED.confidence, pattern = EXCLUDED.pattern,
    reasons = EXCLUDED.reasons, context = EXCLUDED.context,
    source_episode_id = EXCLUDED.source_episode_id;

-- name: upsert_fact_details
-- Confirmations, links and flags are learn_fact's: an update never overwrites them.
INSERT INTO facts SELECT * FROM jsonb_populate_recordset(NULL::facts, $2::jsonb) r
WHERE r.agent_id = $1
ON CONFLICT (agent_id, memory_id) DO UPDATE SET
    content = EXCLUDED.content, subject = EXCLUDED.subject, category = EXCLUDED.category,
    confidence = EXCLUDED.confidence, source = EXCLUDED.source,
    source_kind = EXCLUDED.source_kind, source_episode_id = EXCLUDED.source_episode_id,
    source_seq = EXCLUDED.source_seq, normalized_hash = EXCLUDED.normalized_hash,
    slot_subject = EXCLUDED.slot_subject, slot_attribute = EXCLUDED.slot_attribute,
    slot_value = EXCLUDED.slot_value, slot_ended = EXCLUDED.slot_ended,
    valid_from = EXCLUDED.valid_from, event_at = EXCLUDED.event_at;

-- name: upsert_episode_details
-- State, message count and extraction state belong to the lifecycle: never overwritten.
INSERT INTO episodes SELECT * FROM jsonb_populate_recordset(NULL::episodes, $2::jsonb) r
WHERE r.agent_id = $1
ON CONFLICT (agent_id, memory_id) DO UPDATE SET
    title = EXCLUDED.title, detail = EXCLUDED.detail,
    started_at = EXCLUDED.started_at, ended_at = EXCLUDED.ended_at,
    participants = EXCLUDED.participants, outcome = EXCLUDED.outcome,
    lessons = EXCLUDED.lessons, user_id = EXCLUDED.user_id,
    key_points = EXCLUDED.key_points, topics = EXCLUDED.topics;

-- name: upsert_procedure_details
INSERT INTO procedures SELECT * FROM jsonb_populate_recordset(NULL::procedures, $2::jsonb) r
WHERE r.agent_id = $1
ON CONFLICT (agent_id, memory_id) DO UPDATE SET
    name = EXCLUDED.name, goals = EXCLUDED.goals, core_patterns = EXCLUDED.core_patterns,
    implementation_notes = EXCLUDED.implementation_notes,
    activation_count = EXCLUDED.activation_count, success_count = EXCLUDED.success_count,
    failure_count = EXCLUDED.failure_count, effectiveness = EXCLUDED.effectiveness;

-- name: upsert_censor_details
INSERT INTO censors SELECT * FROM jsonb_populate_recordset(NULL::censors, $2::jsonb) r
WHERE r.agent_id = $1
ON CONFLICT (agent_id, memory_id) DO UPDATE SET
    trigger_pattern = EXCLUDED.trigger_pattern, action = EXCLUDED.action,
    reason = EXCLUDED.reason, activation_count = EXCLUDED.activation_count,
    false_positive_count = EXCLUDED.false_positive_count;

-- name: insert_events
-- Audit rows for a batch: [{memory_id, event, old_values, new_values, actor}].
INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor)
SELECT $1, r.memory_id, r.event, r.old_values, r.new_values, r.actor
FROM jsonb_to_recordset($2::jsonb) AS r(memory_id uuid, event text, old_values jsonb,
     new_values jsonb, actor text);

-- name: get_memory
SELECT * FROM memory_records WHERE agent_id = $1 AND id = $2;

-- name: list_memories
-- Keyset paging on (created_at, id) descending; NULL filters are ignored.
-- $3: statuses to include; ($6, $7): the cursor position; $9: a tag the memory carries;
-- $10: who is asking (people/; NULL: the owner): theirs and the shared ones.
SELECT * FROM memory_records
WHERE agent_id = $1
  AND ($2::text IS NULL OR kind = $2)
  AND status = ANY($3::text[])
  AND ($4::timestamptz IS NULL OR created_at > $4)
  AND ($5::timestamptz IS NULL OR created_at < $5)
  AND ($6::timestamptz IS NULL OR (created_at, id) < ($6, $7::uuid))
  AND ($9::text IS NULL OR $9 = ANY(tags))
  AND ($10::text[] IS NULL OR cardinality(people) = 0 OR people @> $10::text[])
ORDER BY created_at DESC, id DESC
LIMIT $8;

-- name: update_memory
-- Optimistic: only applies when the version is the one the caller read ($3).
UPDATE memories SET
    summary = $4, summary_source = $5, summary_tokens = $6,
    embedding = COALESCE($7::vector, embedding),
    embedding_model = CASE WHEN $7::vector IS NULL THEN embedding_model ELSE $8 END,
    importance = $9, tags = $10::text[],
    version = version + 1, updated_at = now()
WHERE agent_id = $1 AND id = $2 AND version = $3 AND status <> 'deleted'
RETURNING version, updated_at;

-- name: soft_delete_memory
-- Returns the status it had, for the audit event; nothing when missing or already deleted.
UPDATE memories m SET status = 'deleted', deleted_at = now(), updated_at = now(),
                      version = m.version + 1
FROM (SELECT id, status FROM memories
      WHERE agent_id = $1 AND id = $2 AND status <> 'deleted' FOR UPDATE) old
WHERE m.agent_id = $1 AND m.id = old.id
RETURNING old.status;

-- name: purge_unlink
-- Before a purge: links to the memory from this agent's other facts and decisions become
-- NULL (provenance and supersession chains lose the purged end).  Done here rather than
-- by ON DELETE SET NULL, which Citus refuses on keys that include the distribution column.
WITH facts_unlinked AS (
    UPDATE facts SET
        source_episode_id = NULLIF(source_episode_id, $2),
        supersedes_id = NULLIF(supersedes_id, $2),
        superseded_by_id = NULLIF(superseded_by_id, $2)
    WHERE agent_id = $1 AND memory_id <> $2
      AND $2 IN (source_episode_id, supersedes_id, superseded_by_id)
    RETURNING 1
), decisions_unlinked AS (
    UPDATE decisions SET source_episode_id = NULL
    WHERE agent_id = $1 AND source_episode_id = $2
    RETURNING 1
)
SELECT (SELECT count(*) FROM facts_unlinked) + (SELECT count(*) FROM decisions_unlinked);

-- name: purge_memory
-- Detail rows and transcript go with it (ON DELETE CASCADE); purge_unlink runs first.
DELETE FROM memories WHERE agent_id = $1 AND id = $2
RETURNING kind, summary, embedding_model;

-- name: purge_memory_leftovers
-- What a purge must erase that no foreign key cascades to: cold storage (trimmed or
-- archived detail and transcript) and cached query-time extractions of the memory.
WITH cold AS (DELETE FROM memory_archive WHERE agent_id = $1 AND memory_id = $2)
DELETE FROM extraction_cache WHERE agent_id = $1 AND memory_id = $2;


-- name: redact_events
-- A purge removes the content from the audit trail too; the trail itself stays.
UPDATE memory_events SET old_values = NULL, new_values = NULL
WHERE agent_id = $1 AND memory_id = $2;

-- name: memory_events
SELECT id, memory_id, event, old_values, new_values, actor, created_at
FROM memory_events WHERE agent_id = $1 AND memory_id = $2 ORDER BY id;

-- name: count_memories
SELECT kind, status, count(*) AS n FROM memories WHERE agent_id = $1
GROUP BY kind, status ORDER BY kind, status;

-- name: memory_version
-- A record's version: any change of it (an update, a forget of one of an episode's
-- messages) changes it, so work computed from it before does not land.
SELECT version FROM memories WHERE agent_id = $1 AND id = $2;

-- name: memory_touch
UPDATE memories SET version = version + 1, updated_at = now()
WHERE agent_id = $1 AND id = $2;

-- ---------------------------------------------------------------- agents

-- name: known_agents
-- cross-agent: the agents a key that may act for every agent can open in the
-- inspector, in id order after $2 (a page of $1).  A loose index scan over the primary
-- key (one probe per agent, not one row per memory); only agent ids are read.
WITH RECURSIVE a AS (
    (SELECT agent_id FROM memories WHERE agent_id > $2 ORDER BY agent_id LIMIT 1)
    UNION ALL
    SELECT (SELECT m.agent_id FROM memories m WHERE m.agent_id > a.agent_id
            ORDER BY m.agent_id LIMIT 1)
    FROM a WHERE a.agent_id IS NOT NULL
)
SELECT agent_id FROM a WHERE agent_id IS NOT NULL LIMIT $1;

-- name: known_agents_distributed
-- cross-agent: known_agents on Citus, which runs a recursive CTE only within one shard:
-- each shard groups its agent ids (the shards hold disjoint agents), the coordinator
-- merges the pages.
SELECT agent_id FROM memories WHERE agent_id > $2
GROUP BY agent_id ORDER BY agent_id LIMIT $1;

-- name: agent_storage
-- Bytes one agent's rows take (as stored: compressed values count compressed), by area.
SELECT
    (SELECT coalesce(sum(pg_column_size(m.*)), 0) FROM memories m
     WHERE m.agent_id = $1)::bigint AS memories,
    ((SELECT coalesce(sum(pg_column_size(d.*)), 0) FROM decisions d WHERE d.agent_id = $1)
     + (SELECT coalesce(sum(pg_column_size(f.*)), 0) FROM facts f WHERE f.agent_id = $1)
     + (SELECT coalesce(sum(pg_column_size(e.*)), 0) FROM episodes e WHERE e.agent_id = $1)
     + (SELECT coalesce(sum(pg_column_size(p.*)), 0) FROM procedures p WHERE p.agent_id = $1)
     + (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM censors c WHERE c.agent_id = $1)
    )::bigint AS details,
    ((SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM episode_messages t
      WHERE t.agent_id = $1)
     + (SELECT coalesce(sum(pg_column_size(k.*)), 0) FROM episode_chunks k
        WHERE k.agent_id = $1))::bigint AS transcripts,
    (SELECT coalesce(sum(pg_column_size(a.*)), 0) FROM memory_archive a
     WHERE a.agent_id = $1)::bigint AS cold_storage;

-- name: status_before_delete
-- The status a soft-deleted memory had: its newest 'deleted' event says it.
SELECT old_values->>'status' FROM memory_events
WHERE agent_id = $1 AND memory_id = $2 AND event = 'deleted'
ORDER BY id DESC
LIMIT 1;

-- name: undelete_memory
-- Back from a soft delete with status $3; nothing when it is no longer deleted.
UPDATE memories SET status = $3, deleted_at = NULL, updated_at = now(), version = version + 1
WHERE agent_id = $1 AND id = $2 AND status = 'deleted'
RETURNING id;

-- name: agent_people
-- The people an agent's memories belong to (people/), for the owner's view by person.
SELECT DISTINCT p AS person FROM memories, unnest(people) AS p
WHERE agent_id = $1 AND status <> 'deleted'
ORDER BY p LIMIT $2;

-- name: memory_people
-- Whose a memory is (people/): who may read it; an episode's people own what is learned
-- from it.
SELECT people FROM memories WHERE agent_id = $1 AND id = $2;

-- name: agent_secrets_policy
-- What the agent keeps out of memory (memories/guard.py); no row: the default.
SELECT secrets FROM agent_settings WHERE agent_id = $1;

-- name: agent_set_secrets_policy
INSERT INTO agent_settings (agent_id, secrets) VALUES ($1, $2)
ON CONFLICT (agent_id) DO UPDATE SET secrets = EXCLUDED.secrets,
                                     updated_at = EXCLUDED.updated_at;
