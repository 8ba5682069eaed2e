-- Every statement nous-memory sends, by name.  `-- name: x` starts a query; the
-- comment lines after it say why it looks the way it does.  Every query on tenant
-- data filters by agent_id ($1 by convention).

-- ---------------------------------------------------------------- migrations

-- name: migration_lock
-- Serialises concurrent migrators for the rest of the transaction.
SELECT pg_advisory_xact_lock(hashtext($1));

-- name: schema_version_table_exists
SELECT to_regclass('schema_version') IS NOT NULL;

-- name: schema_version_current
SELECT max(version) FROM schema_version;

-- name: schema_version_record
INSERT INTO schema_version (version, name) VALUES ($1, $2);

-- name: pgvector_available
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector');

-- name: store_meta_all
SELECT key, value FROM store_meta ORDER BY key;

-- name: store_meta_get
SELECT value FROM store_meta WHERE key = $1;

-- name: store_meta_set
INSERT INTO store_meta (key, value) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();

-- name: database_exists
SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1);

-- name: server_info
SELECT current_setting('server_version') AS server_version,
       (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS pgvector_version,
       current_database() AS database;

-- ---------------------------------------------------------------- embeddings

-- name: embedding_cache_lookup
-- $3: sha256 digests of the texts; one round trip for a whole batch.
SELECT text_sha256, embedding
FROM embedding_cache
WHERE agent_id = $1 AND model = $2 AND text_sha256 = ANY($3::bytea[]);

-- name: embedding_cache_store
INSERT INTO embedding_cache (agent_id, model, text_sha256, embedding)
SELECT $1, $2, h, e FROM unnest($3::bytea[], $4::vector[]) AS u(h, e)
ON CONFLICT (agent_id, model, text_sha256) DO NOTHING;

-- ---------------------------------------------------------------- memories

-- name: insert_memories
-- A batch of memories from JSON rows; $3 holds the embeddings, row i uses element i.
INSERT INTO memories (agent_id, id, kind, summary, summary_source, summary_tokens,
                      embedding, embedding_model, importance, tags)
SELECT $1, r.id, r.kind, r.summary, r.summary_source, r.summary_tokens,
       ($3::vector[])[r.ord], $4, r.importance, r.tags
FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, kind text, summary text,
     summary_source text, summary_tokens integer, importance double precision,
     tags text[], ord integer)
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
    normalized_hash = EXCLUDED.normalized_hash;

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
-- $3: statuses to include; ($6, $7): the cursor position.
SELECT * FROM memory_records
WHERE agent_id = $1
  AND ($2::text IS NULL OR kind = $2)
  AND status = ANY($3::text[])
  AND ($4::timestamptz IS NULL OR created_at > $4)
  AND ($5::timestamptz IS NULL OR created_at < $5)
  AND ($6::timestamptz IS NULL OR (created_at, id) < ($6, $7::uuid))
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

-- name: purge_memory
-- Detail rows and transcript go with it (ON DELETE CASCADE).
DELETE FROM memories WHERE agent_id = $1 AND id = $2
RETURNING kind, summary, embedding_model;

-- name: embedding_cache_forget
DELETE FROM embedding_cache WHERE agent_id = $1 AND model = $2 AND text_sha256 = $3;

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

-- ---------------------------------------------------------------- facts

-- name: lock_agent_facts
-- Serialises fact decisions per agent until the transaction ends; other agents
-- take other keys (a rare hash collision only makes two agents wait in turn).
SELECT pg_advisory_xact_lock(hashtext('nous_memory.facts'), hashtext($1));

-- name: enable_iterative_scan
-- Filtered HNSW scans keep going until enough rows pass the filter.
SET LOCAL hnsw.iterative_scan = relaxed_order;

-- name: fact_by_hash
-- The fact with this normalised text: the active one, else the newest superseded one.
SELECT m.id, m.status, f.confidence
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.normalized_hash = $2 AND m.status IN ('active', 'superseded')
ORDER BY m.status = 'active' DESC, m.updated_at DESC
LIMIT 1;

-- name: nearest_active_facts
-- Raw cosine similarity to this agent's active facts embedded with the same model.
SELECT m.id, f.content, 1 - (m.embedding <=> $2) AS cosine
FROM memories m JOIN facts f ON f.agent_id = m.agent_id AND f.memory_id = m.id
WHERE m.agent_id = $1 AND m.kind = 'fact' AND m.status = 'active' AND m.embedding_model = $3
ORDER BY m.embedding <=> $2
LIMIT $4;

-- name: fact_for_update
SELECT f.content, f.confidence FROM facts f
JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.memory_id = $2 AND m.status = 'active' FOR UPDATE OF f;

-- name: fact_confirm
-- $4/$5: new wording and its hash when a better wording is kept, else NULL.
UPDATE facts SET confirmation_count = confirmation_count + 1, last_confirmed_at = now(),
                 confidence = $3, content = COALESCE($4, content),
                 normalized_hash = COALESCE($5, normalized_hash)
WHERE agent_id = $1 AND memory_id = $2;

-- name: memory_touch
UPDATE memories SET version = version + 1, updated_at = now()
WHERE agent_id = $1 AND id = $2;

-- name: memory_reword
UPDATE memories SET summary = $3, summary_tokens = $4, embedding = $5, embedding_model = $6,
                    version = version + 1, updated_at = now()
WHERE agent_id = $1 AND id = $2;

-- name: memory_set_status
UPDATE memories SET status = $3, version = version + 1, updated_at = now()
WHERE agent_id = $1 AND id = $2 AND status <> 'deleted';

-- name: fact_link_superseded
UPDATE facts SET superseded_by_id = $3, confidence = $4
WHERE agent_id = $1 AND memory_id = $2;

-- name: fact_reactivate
-- A -> B -> A: A comes back; B points to A as its successor (A keeps its own past,
-- so supersedes links never form a cycle).
UPDATE facts SET superseded_by_id = NULL, confidence = $3, confirmation_count = confirmation_count + 1,
                 last_confirmed_at = now()
WHERE agent_id = $1 AND memory_id = $2;

-- name: active_successor
-- Follow superseded_by links from a fact to the version that is active now.
WITH RECURSIVE walk AS (
    SELECT f.memory_id, f.superseded_by_id, ARRAY[f.memory_id] AS path
    FROM facts f WHERE f.agent_id = $1 AND f.memory_id = $2
    UNION ALL
    SELECT f.memory_id, f.superseded_by_id, w.path || f.memory_id
    FROM walk w JOIN facts f ON f.agent_id = $1 AND f.memory_id = w.superseded_by_id
    WHERE NOT f.memory_id = ANY(w.path)
)
SELECT w.memory_id FROM walk w JOIN memories m ON m.agent_id = $1 AND m.id = w.memory_id
WHERE m.status = 'active' AND w.memory_id <> $2
LIMIT 1;

-- name: fact_flag_conflict
-- Two-way "possible conflict" links between facts kept side by side.
UPDATE facts SET conflicts_with = array_append(conflicts_with, $3)
WHERE agent_id = $1 AND memory_id = ANY($2::uuid[]) AND NOT ($3 = ANY(conflicts_with));

-- name: fact_chain
-- Every version linked to this fact by supersedes / superseded_by, in either
-- direction, oldest first.
WITH RECURSIVE chain AS (
    SELECT f.memory_id, ARRAY[f.memory_id] AS path
    FROM facts f WHERE f.agent_id = $1 AND f.memory_id = $2
    UNION ALL
    SELECT n.id, c.path || n.id
    FROM chain c
    CROSS JOIN LATERAL (
        SELECT x.supersedes_id AS id FROM facts x
        WHERE x.agent_id = $1 AND x.memory_id = c.memory_id
        UNION ALL
        SELECT x.superseded_by_id FROM facts x
        WHERE x.agent_id = $1 AND x.memory_id = c.memory_id
        UNION ALL
        SELECT x.memory_id FROM facts x
        WHERE x.agent_id = $1
          AND (x.supersedes_id = c.memory_id OR x.superseded_by_id = c.memory_id)
    ) AS n
    WHERE n.id IS NOT NULL AND NOT n.id = ANY(c.path) AND cardinality(c.path) < 100
)
SELECT r.* FROM memory_records r
WHERE r.agent_id = $1 AND r.id IN (SELECT memory_id FROM chain)
ORDER BY r.created_at, r.id;

-- name: events_for_memories
SELECT id, memory_id, event, old_values, new_values, actor, created_at
FROM memory_events WHERE agent_id = $1 AND memory_id = ANY($2::uuid[]) ORDER BY id;

-- name: facts_from_episode
SELECT r.* FROM facts f
JOIN memory_records r ON r.agent_id = f.agent_id AND r.id = f.memory_id
WHERE f.agent_id = $1 AND f.source_episode_id = $2
ORDER BY r.created_at, r.id;

-- name: blocking_censors
SELECT m.id, c.trigger_pattern, c.reason
FROM censors c JOIN memories m ON m.agent_id = c.agent_id AND m.id = c.memory_id
WHERE c.agent_id = $1 AND m.status = 'active' AND c.action IN ('block', 'absolute');


-- ---------------------------------------------------------------- episodes

-- name: episode_for_update
-- Row lock on the episode: appends and state changes of one episode are serialised.
SELECT e.state, e.message_count, e.title, e.started_at, e.ended_at, e.last_message_at,
       e.facts_state, m.status, m.summary_source
FROM episodes e JOIN memories m ON m.agent_id = e.agent_id AND m.id = e.memory_id
WHERE e.agent_id = $1 AND e.memory_id = $2 AND m.status <> 'deleted'
FOR UPDATE OF e;

-- name: insert_messages
-- $3: [{seq, role, content, name, tool_call_id, tokens, metadata, created_at}]
INSERT INTO episode_messages (agent_id, episode_id, seq, role, content, name, tool_call_id,
                              tokens, metadata, created_at)
SELECT $1, $2, r.seq, r.role, r.content, r.name, r.tool_call_id, r.tokens,
       COALESCE(r.metadata, '{}'), COALESCE(r.created_at, now())
FROM jsonb_to_recordset($3::jsonb) AS r(seq integer, role text, content text, name text,
     tool_call_id text, tokens integer, metadata jsonb, created_at timestamptz)
RETURNING created_at;

-- name: episode_after_append
-- Imported (backdated) messages move the start back to the first message.
UPDATE episodes SET message_count = $3,
                    last_message_at = GREATEST(COALESCE(last_message_at, $4), $4),
                    started_at = LEAST(COALESCE(started_at, $5), $5)
WHERE agent_id = $1 AND memory_id = $2;

-- name: episode_mark_closing
UPDATE episodes SET state = 'closing', facts_state = 'pending',
                    ended_at = GREATEST(COALESCE(ended_at, last_message_at, now()), started_at)
WHERE agent_id = $1 AND memory_id = $2 AND state = 'open'
RETURNING ended_at;

-- name: episode_messages
SELECT seq, role, content, name, tool_call_id, tokens, metadata, created_at
FROM episode_messages WHERE agent_id = $1 AND episode_id = $2 AND seq >= $3
ORDER BY seq LIMIT $4;

-- name: episode_messages_live
-- For close processing: the transcript without messages deleted while it was open.
SELECT seq, role, content, name, tool_call_id, tokens, metadata, created_at
FROM episode_messages
WHERE agent_id = $1 AND episode_id = $2 AND seq >= $3 AND deleted_at IS NULL
ORDER BY seq LIMIT $4;

-- name: episode_last_chunk
SELECT COALESCE(max(chunk_no), -1) AS chunk_no, COALESCE(max(last_seq), -1) AS last_seq
FROM episode_chunks WHERE agent_id = $1 AND episode_id = $2;

-- name: insert_chunks
-- Idempotent: a retried close writes the same chunk numbers again and keeps the first.
INSERT INTO episode_chunks (agent_id, episode_id, chunk_no, first_seq, last_seq, content,
                            tokens, speakers, started_at, ended_at, message_metadata,
                            embedding, embedding_model, context)
SELECT $1, $2, r.chunk_no, r.first_seq, r.last_seq, r.content, r.tokens, r.speakers,
       r.started_at, r.ended_at, r.message_metadata, ($3::vector[])[r.ord], $4,
       COALESCE(r.context, '')
FROM jsonb_to_recordset($5::jsonb) AS r(chunk_no integer, first_seq integer, last_seq integer,
     content text, tokens integer, speakers text[], started_at timestamptz,
     ended_at timestamptz, message_metadata jsonb, ord integer, context text)
ON CONFLICT (agent_id, episode_id, chunk_no) DO NOTHING;

-- name: episode_chunks
SELECT chunk_no, first_seq, last_seq, content, tokens, speakers, started_at, ended_at,
       message_metadata
FROM episode_chunks WHERE agent_id = $1 AND episode_id = $2 ORDER BY chunk_no;

-- name: episode_finish
-- Close processing's result for the episode record (one statement per table).
UPDATE episodes SET state = 'closed', title = COALESCE(title, $3), outcome = COALESCE($4, outcome),
       key_points = $5, topics = $6, lessons = $7, facts_state = $8
WHERE agent_id = $1 AND memory_id = $2;

-- name: memory_resummarize
UPDATE memories SET summary = $3, summary_source = $4, summary_tokens = $5, embedding = $6,
                    embedding_model = $7, version = version + 1, updated_at = now()
WHERE agent_id = $1 AND id = $2;

-- name: episode_facts_state
UPDATE episodes SET facts_state = $3 WHERE agent_id = $1 AND memory_id = $2;

-- name: episode_extraction_save
-- The close's extraction, to be learned by the follow-up item (an upgrade replaces it).
INSERT INTO episode_extractions (agent_id, episode_id, extraction) VALUES ($1, $2, $3)
ON CONFLICT (agent_id, episode_id)
DO UPDATE SET extraction = EXCLUDED.extraction, created_at = now(), learned_at = NULL;

-- name: episode_extraction_pending
SELECT extraction FROM episode_extractions
WHERE agent_id = $1 AND episode_id = $2 AND learned_at IS NULL;

-- name: episode_extraction_learned
UPDATE episode_extractions SET learned_at = now()
WHERE agent_id = $1 AND episode_id = $2 AND learned_at IS NULL
RETURNING episode_id;

-- name: chunks_unembedded
-- content and context: a chunk is embedded as chunks.index_text(content, context)
SELECT chunk_no, content, context FROM episode_chunks
WHERE agent_id = $1 AND episode_id = $2 AND embedding IS NULL ORDER BY chunk_no;

-- name: chunks_set_embeddings
-- $4 chunk numbers, $5 their vectors; a chunk embedded meanwhile keeps its vector.
UPDATE episode_chunks c SET embedding = v.embedding, embedding_model = $3
FROM unnest($4::integer[], $5::vector[]) AS v(chunk_no, embedding)
WHERE c.agent_id = $1 AND c.episode_id = $2 AND c.chunk_no = v.chunk_no
  AND c.embedding IS NULL;

-- name: memory_unembedded_summary
SELECT summary FROM memories
WHERE agent_id = $1 AND id = $2 AND embedding IS NULL AND status <> 'deleted';

-- name: memory_set_embedding
-- Only for the summary that was embedded ($5): a summary changed meanwhile is not touched.
UPDATE memories SET embedding = $3, embedding_model = $4
WHERE agent_id = $1 AND id = $2 AND embedding IS NULL AND summary = $5
RETURNING id;

-- name: idle_open_episodes
-- cross-agent: the worker's sweep; each hit is then closed within its own agent.
SELECT e.agent_id, e.memory_id
FROM episodes e JOIN memories m ON m.agent_id = e.agent_id AND m.id = e.memory_id
WHERE e.state = 'open' AND m.status <> 'deleted'
  AND COALESCE(e.last_message_at, e.started_at) < now() - make_interval(secs => $1)
ORDER BY COALESCE(e.last_message_at, e.started_at) LIMIT $2;

-- ---------------------------------------------------------------- work queue

-- name: work_enqueue
-- $5 dedup_key ('' when one open item per (task, memory) is enough), $6 payload
INSERT INTO work_items (agent_id, task, memory_id, run_after, dedup_key, payload)
VALUES ($1, $2, $3, now() + make_interval(secs => $4), $5, $6)
ON CONFLICT (agent_id, task, memory_id, dedup_key) WHERE state IN ('pending', 'running') DO NOTHING;

-- name: work_claim
-- cross-agent: the worker serves every agent's queue; the claimed item is then handled
-- within its own agent.  An expired lease (a dead worker) makes an item claimable again.
UPDATE work_items w SET state = 'running', attempts = w.attempts + 1, locked_by = $2,
       lease_until = now() + make_interval(secs => $1), updated_at = now()
FROM (SELECT agent_id, id FROM work_items
      WHERE (state = 'pending' AND run_after <= now())
         OR (state = 'running' AND lease_until < now() AND attempts < $3)
      ORDER BY run_after, id
      LIMIT 1 FOR UPDATE SKIP LOCKED) c
WHERE w.agent_id = c.agent_id AND w.id = c.id
RETURNING w.agent_id, w.id, w.task, w.memory_id, w.attempts, w.payload;

-- name: work_fail_exhausted
-- cross-agent: items whose worker died on every one of their attempts stop here.
UPDATE work_items SET state = 'failed', lease_until = NULL, locked_by = NULL,
       last_error = COALESCE(last_error || '; ', '') || 'lease expired on the last attempt',
       updated_at = now()
WHERE state = 'running' AND lease_until < now() AND attempts >= $1;

-- name: work_extend_lease
-- Heartbeat while slow work (LLM calls) runs, so a live worker keeps its item.
UPDATE work_items SET lease_until = now() + make_interval(secs => $4), updated_at = now()
WHERE agent_id = $1 AND id = $2 AND locked_by = $3 AND state = 'running'
RETURNING id;

-- name: work_complete
-- Inside the result transaction: only the worker that still holds the lease may finish.
UPDATE work_items SET state = 'done', lease_until = NULL, updated_at = now()
WHERE agent_id = $1 AND id = $2 AND locked_by = $3 AND state = 'running'
RETURNING id;

-- name: work_retry
UPDATE work_items SET state = CASE WHEN attempts >= $4 THEN 'failed' ELSE 'pending' END,
       run_after = now() + make_interval(secs => $5), last_error = $6, locked_by = NULL,
       lease_until = NULL, updated_at = now()
WHERE agent_id = $1 AND id = $2 AND locked_by = $3 AND state = 'running'
RETURNING state;

-- name: work_open_for
-- Whether a memory still has open items of the given tasks (e.g. a close's follow-up).
SELECT EXISTS (SELECT 1 FROM work_items
               WHERE agent_id = $1 AND memory_id = $2 AND task = ANY($3::text[])
                 AND state IN ('pending', 'running'));

-- ---------------------------------------------------------------- llm calls

-- name: insert_llm_call
-- One HTTP attempt; created_at comes from the caller (when the attempt started).
INSERT INTO llm_calls (agent_id, purpose, model, prompt_tokens, completion_tokens,
                       tokens_source, latency_ms, outcome, error, created_at)
SELECT $1, $2::text, $3::text, $4::integer, $5::integer, $6::text, $7::integer,
       $8::text, $9::text, $10::timestamptz;

-- name: llm_usage_by_agent
-- Per purpose and model; $2 (optional) keeps calls made at or after that time.
SELECT purpose, model,
       count(*) AS calls,
       count(*) FILTER (WHERE outcome = 'ok') AS ok_calls,
       coalesce(sum(prompt_tokens), 0)::bigint AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::bigint AS completion_tokens,
       count(*) FILTER (WHERE tokens_source = 'estimated') AS estimated_calls,
       coalesce(sum(latency_ms), 0)::bigint AS latency_ms
FROM llm_calls
WHERE agent_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2)
GROUP BY purpose, model
ORDER BY purpose, model;

-- ---------------------------------------------------------------- working memory (issue 7)

-- name: conv_policy_get
SELECT policy FROM conversation_policies WHERE agent_id = $1;

-- name: conv_policy_set
INSERT INTO conversation_policies (agent_id, policy) VALUES ($1, $2)
ON CONFLICT (agent_id) DO UPDATE SET policy = EXCLUDED.policy, updated_at = now()
RETURNING policy;

-- name: conv_episode
SELECT e.state, e.message_count FROM episodes e
JOIN memories m ON m.agent_id = e.agent_id AND m.id = e.memory_id
WHERE e.agent_id = $1 AND e.memory_id = $2 AND m.status <> 'deleted';

-- name: conv_state_ensure
INSERT INTO conversation_state (agent_id, episode_id) VALUES ($1, $2)
ON CONFLICT (agent_id, episode_id) DO NOTHING;

-- name: conv_state_get
SELECT * FROM conversation_state WHERE agent_id = $1 AND episode_id = $2;

-- name: conv_state_cas
-- The fold lands only if nobody folded since it read the state (version $3).
UPDATE conversation_state SET watermark_seq = $4, watermark_hash = $5, summary_id = $6,
       story_id = $7, armed = $8, folded_message_count = $9, chapter_messages = $10,
       invalidated_reason = NULL, version = version + 1, updated_at = now()
WHERE agent_id = $1 AND episode_id = $2 AND version = $3
RETURNING version;

-- name: conv_state_invalidate
-- An edit, delete or stale watermark: start over from the raw messages ($3 says why).
UPDATE conversation_state SET watermark_seq = -1, watermark_hash = NULL, summary_id = NULL,
       story_id = NULL, folded_message_count = 0, chapter_messages = 0,
       invalidated_reason = $3, version = version + 1, updated_at = now()
WHERE agent_id = $1 AND episode_id = $2 AND ($4::bigint IS NULL OR version = $4)
RETURNING version;

-- name: conv_state_touch
-- Any edit or delete: a fold computed from the old text must not land (its CAS fails).
UPDATE conversation_state SET version = version + 1, updated_at = now()
WHERE agent_id = $1 AND episode_id = $2;

-- name: conv_state_armed
UPDATE conversation_state SET armed = $3 WHERE agent_id = $1 AND episode_id = $2;

-- name: conv_breaker_set
UPDATE conversation_state SET breaker_failures = $3, breaker_open_until = $4
WHERE agent_id = $1 AND episode_id = $2;

-- name: conv_summary_insert
INSERT INTO conversation_summaries (agent_id, episode_id, parent_id, level, op, depth,
                                    first_seq, last_seq, covered, content, chars, tokens,
                                    source, facets, notes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
RETURNING id;

-- name: conv_summaries_by_id
SELECT * FROM conversation_summaries
WHERE agent_id = $1 AND episode_id = $2 AND id = ANY($3::bigint[]);

-- name: conv_summary_supersede
UPDATE conversation_summaries SET status = 'superseded'
WHERE agent_id = $1 AND id = $2 AND status = 'current';

-- name: conv_summaries_invalidate
UPDATE conversation_summaries SET status = 'invalidated'
WHERE agent_id = $1 AND episode_id = $2 AND status = 'current';

-- name: conv_summary_history
SELECT * FROM conversation_summaries WHERE agent_id = $1 AND episode_id = $2
ORDER BY id LIMIT $3 OFFSET $4;

-- name: conv_messages_after
-- Live messages past the watermark, in order (soft-deleted ones are not part of it).
SELECT seq, role, content, name, tool_call_id, tokens, metadata, created_at
FROM episode_messages
WHERE agent_id = $1 AND episode_id = $2 AND seq > $3 AND deleted_at IS NULL
ORDER BY seq;

-- name: conv_message_at
SELECT seq, role, content, name, tool_call_id, tokens, metadata, created_at, deleted_at
FROM episode_messages WHERE agent_id = $1 AND episode_id = $2 AND seq = $3;

-- name: conv_message_before
-- The last live message at or before $3: the bridge a fold passes as context.
SELECT seq, role, content, name, tool_call_id, tokens, metadata, created_at
FROM episode_messages
WHERE agent_id = $1 AND episode_id = $2 AND seq <= $3 AND deleted_at IS NULL
ORDER BY seq DESC LIMIT 1;

-- name: conv_analyses_latest
-- One analysis per message: the newest created_at, ties to the larger id.
SELECT DISTINCT ON (seq) seq, id, content_hash, kind, content, created_at
FROM conversation_analyses
WHERE agent_id = $1 AND episode_id = $2 AND seq = ANY($3::integer[])
ORDER BY seq, created_at DESC, id DESC;

-- name: conv_analyses_insert
-- $3: [{seq, content_hash (hex), kind, content}]
INSERT INTO conversation_analyses (agent_id, episode_id, seq, content_hash, kind, content)
SELECT $1, $2, r.seq, decode(r.content_hash, 'hex'), r.kind, r.content
FROM jsonb_to_recordset($3::jsonb) AS r(seq integer, content_hash text, kind text,
                                        content text);

-- name: conv_message_for_update
SELECT seq, role, content, tokens, deleted_at, edits FROM episode_messages
WHERE agent_id = $1 AND episode_id = $2 AND seq = $3 FOR UPDATE;

-- name: conv_message_edit
-- The earlier version goes to `edits`; the raw text is never lost.
UPDATE episode_messages SET content = $4, tokens = $5, edited_at = now(),
       edits = edits || jsonb_build_array(jsonb_build_object(
           'content', content, 'tokens', tokens, 'edited_at', now()))
WHERE agent_id = $1 AND episode_id = $2 AND seq = $3
RETURNING edited_at;

-- name: conv_message_delete
-- Soft: the row and its content stay (the transcript is ground truth).
UPDATE episode_messages SET deleted_at = now()
WHERE agent_id = $1 AND episode_id = $2 AND seq = $3 AND deleted_at IS NULL
RETURNING deleted_at;
-- ---------------------------------------------------------------- maintenance (jobs)
-- The sweeps below are cross-agent: a nightly job serves every agent at once, in
-- primary-key order from a cursor ($1, $2) so that each batch is one short transaction
-- and a rerun after a kill continues where the work stopped.  Where a sweep takes an
-- agent filter, NULL means every agent.  Every row they write keeps its own agent_id.

-- name: batch_work_mem
-- A batch keeps up to a few thousand details in its CTEs: in memory, not spilled.
SET LOCAL work_mem = '64MB';

-- name: batch_async_commit
-- A job batch's commit does not wait for its WAL flush.  Safe because each batch is one
-- atomic transaction whose rows stop matching once done: a crash can lose only the
-- last batches (never part of one), which a rerun does again; and the job_runs row that
-- reports the run commits synchronously, flushing every batch's WAL before it.
SET LOCAL synchronous_commit = off;

-- name: episode_key_range
-- cross-agent: the next $3 episode keys after ($1, $2) in primary-key order: how many
-- and the last one.  A batch is the key range up to it, so every batch reads exactly
-- that many rows through the index, whatever share of them the job changes.
SELECT count(*)::int AS n,
       (array_agg(agent_id ORDER BY agent_id DESC, memory_id DESC))[1] AS last_agent,
       (array_agg(memory_id ORDER BY agent_id DESC, memory_id DESC))[1] AS last_id
FROM (SELECT agent_id, memory_id FROM episodes
      WHERE (agent_id, memory_id) > ($1::text, $2::uuid)
      ORDER BY agent_id, memory_id LIMIT $3) AS k;

-- name: episode_key_range_agent
-- The same within one agent (archive_episodes of a single agent).
SELECT count(*)::int AS n,
       (array_agg(agent_id ORDER BY memory_id DESC))[1] AS last_agent,
       (array_agg(memory_id ORDER BY memory_id DESC))[1] AS last_id
FROM (SELECT agent_id, memory_id FROM episodes
      WHERE agent_id = $1 AND memory_id > $2::uuid
      ORDER BY memory_id LIMIT $3) AS k;

-- name: trim_episodes_batch
-- cross-agent: one trim batch, the episodes with keys in (($1, $2), ($3, $4)] (every
-- table is bounded by that range, so each step is an index range scan).  Closed episodes
-- that ended before $5: detail beyond $6 characters moves to memory_archive (the hot row
-- keeps left(detail, $6)); a summary shorter than $8 characters gets one
-- summary_regenerate work item (once: an item it ever had, unless failed, counts); with
-- $9, episodes whose facts were never extracted get an episode_upgrade item.  $7 is the
-- job's clock.  octet_length reads the stored size without detoasting; the inner query
-- detoasts each detail once (`|| ''`, OFFSET 0 keeps it from being inlined: a
-- length(detail) test there would detoast it a second time, so the character count is
-- taken and tested on the detoasted copy) and the batch keeps only what the steps below
-- need.
WITH batch AS (
    SELECT agent_id, memory_id, left(d, $6) AS head, right(d, -$6) AS tail,
           chars, hashtextextended(d, 0) AS checksum
    FROM (SELECT agent_id, memory_id, d, length(d) AS chars
          FROM (SELECT e.agent_id, e.memory_id, e.detail || '' AS d
                FROM episodes e
                WHERE (e.agent_id, e.memory_id) > ($1::text, $2::uuid)
                  AND (e.agent_id, e.memory_id) <= ($3::text, $4::uuid)
                  AND e.state = 'closed' AND e.storage = 'hot' AND e.ended_at < $5
                  AND octet_length(e.detail) > $6
                OFFSET 0
                FOR UPDATE OF e) AS locked
          OFFSET 0) AS measured
    WHERE chars > $6
), cold AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, start_offset, content, reason,
                                archived_at, checksum)
    SELECT agent_id, memory_id, 'detail', $6, tail, 'trim', $7, checksum
    FROM batch
), hot AS (
    UPDATE episodes e SET detail = b.head, storage = 'trimmed'
    FROM batch b
    WHERE (e.agent_id, e.memory_id) > ($1::text, $2::uuid)
      AND (e.agent_id, e.memory_id) <= ($3::text, $4::uuid)
      AND e.agent_id = b.agent_id AND e.memory_id = b.memory_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT agent_id, memory_id, 'trimmed',
           jsonb_build_object('storage', 'hot', 'detail_chars', chars),
           jsonb_build_object('storage', 'trimmed', 'hot_chars', $6,
                              'cold_chars', chars - $6),
           'job:trim', $7
    FROM batch
), candidates AS (
    SELECT e.agent_id, e.memory_id, e.facts_state, e.storage, length(m.summary) AS chars
    FROM episodes e JOIN memories m ON m.agent_id = e.agent_id AND m.id = e.memory_id
    WHERE (e.agent_id, e.memory_id) > ($1::text, $2::uuid)
      AND (e.agent_id, e.memory_id) <= ($3::text, $4::uuid)
      AND (m.agent_id, m.id) > ($1::text, $2::uuid)
      AND (m.agent_id, m.id) <= ($3::text, $4::uuid)
      AND e.state = 'closed' AND e.ended_at < $5 AND m.status = 'active'
), short AS (
    SELECT c.agent_id, c.memory_id FROM candidates c
    WHERE c.chars < $8
      AND NOT EXISTS (SELECT 1 FROM work_items w
                      WHERE w.agent_id = c.agent_id AND w.memory_id = c.memory_id
                        AND w.task = 'summary_regenerate' AND w.state <> 'failed')
), unextracted AS (
    SELECT c.agent_id, c.memory_id FROM candidates c
    WHERE $9::boolean AND c.facts_state = 'not_extracted'
      AND c.storage IN ('hot', 'trimmed', 'restored')
      AND NOT EXISTS (SELECT 1 FROM work_items w
                      WHERE w.agent_id = c.agent_id AND w.memory_id = c.memory_id
                        AND w.task = 'episode_upgrade' AND w.state <> 'failed')
), queued AS (
    INSERT INTO work_items (agent_id, task, memory_id, run_after, payload)
    SELECT agent_id, 'summary_regenerate', memory_id, now(),
           '{"reason": "short summary"}'::jsonb
    FROM short
    UNION ALL
    SELECT agent_id, 'episode_upgrade', memory_id, now(), '{}'::jsonb FROM unextracted
    ON CONFLICT (agent_id, task, memory_id, dedup_key) WHERE state IN ('pending', 'running')
    DO NOTHING
)
SELECT (SELECT count(*) FROM batch)::int AS n,
       (SELECT coalesce(sum(chars - $6), 0) FROM batch)::bigint AS trimmed_chars,
       (SELECT count(*) FROM short)::int AS summaries_queued,
       (SELECT count(*) FROM unextracted)::int AS extractions_queued;

-- name: archive_episodes_batch
-- cross-agent: one archive batch over the key range (($1, $2), ($3, $4)] (see
-- trim_episodes_batch).  Closed episodes that ended before $5: the whole detail (a
-- trimmed one reassembled from its hot prefix and cold tail) and the transcript move to
-- memory_archive (start_offset 0); the hot detail becomes NULL, so readers take
-- left(coalesce(hot, ''), start_offset) || content.  Summary, metadata, links, chunks
-- and embeddings stay.  $6 is the job's clock.  The cold copy is inserted from the
-- stored value itself (not a detoasted copy), so a detail PostgreSQL had compressed
-- moves compressed, without being compressed again; its checksum and length come from
-- one detoasted copy (`|| ''` under OFFSET 0, evaluated once per row).
WITH batch AS (
    SELECT e.agent_id, e.memory_id, e.detail, e.storage
    FROM episodes e
    WHERE (e.agent_id, e.memory_id) > ($1::text, $2::uuid)
      AND (e.agent_id, e.memory_id) <= ($3::text, $4::uuid)
      AND e.state = 'closed' AND e.storage IN ('hot', 'trimmed') AND e.ended_at < $5
    FOR UPDATE OF e
), whole AS (
    SELECT agent_id, memory_id, detail, length(d) AS chars, hashtextextended(d, 0) AS checksum
    FROM (SELECT agent_id, memory_id, detail, detail || '' AS d
          FROM (SELECT b.agent_id, b.memory_id,
                       CASE WHEN a.memory_id IS NULL THEN b.detail
                            ELSE left(b.detail, a.start_offset) || a.content END AS detail
                FROM batch b
                LEFT JOIN memory_archive a
                       ON a.agent_id = b.agent_id AND a.memory_id = b.memory_id
                      AND a.part = 'detail'
                      AND (a.agent_id, a.memory_id) > ($1::text, $2::uuid)
                      AND (a.agent_id, a.memory_id) <= ($3::text, $4::uuid)
                WHERE b.detail IS NOT NULL
                OFFSET 0) AS joined
          OFFSET 0) AS detoasted
), cold_detail AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, start_offset, content, reason,
                                archived_at, checksum)
    SELECT agent_id, memory_id, 'detail', 0, detail, 'archive', $6, checksum
    FROM whole
    ON CONFLICT (agent_id, memory_id, part) DO UPDATE SET
        start_offset = 0, content = EXCLUDED.content, reason = 'archive',
        archived_at = EXCLUDED.archived_at, checksum = EXCLUDED.checksum
), transcript AS (
    SELECT m.agent_id, m.episode_id, jsonb_agg(to_jsonb(m) ORDER BY m.seq) AS messages
    FROM episode_messages m
    JOIN batch b ON m.agent_id = b.agent_id AND m.episode_id = b.memory_id
    WHERE (m.agent_id, m.episode_id) > ($1::text, $2::uuid)
      AND (m.agent_id, m.episode_id) <= ($3::text, $4::uuid)
    GROUP BY m.agent_id, m.episode_id
), cold_transcript AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, messages, reason, archived_at,
                                checksum)
    SELECT agent_id, episode_id, 'transcript', messages, 'archive', $6,
           hashtextextended(messages::text, 0)
    FROM transcript
), gone AS (
    DELETE FROM episode_messages m USING batch b
    WHERE (m.agent_id, m.episode_id) > ($1::text, $2::uuid)
      AND (m.agent_id, m.episode_id) <= ($3::text, $4::uuid)
      AND m.agent_id = b.agent_id AND m.episode_id = b.memory_id
), hot AS (
    UPDATE episodes e SET storage = 'archived', detail = NULL
    FROM batch b
    WHERE (e.agent_id, e.memory_id) > ($1::text, $2::uuid)
      AND (e.agent_id, e.memory_id) <= ($3::text, $4::uuid)
      AND e.agent_id = b.agent_id AND e.memory_id = b.memory_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT b.agent_id, b.memory_id, 'archived',
           jsonb_build_object('storage', b.storage),
           jsonb_build_object('storage', 'archived',
                              'detail_chars', coalesce(w.chars, 0),
                              'messages', coalesce(jsonb_array_length(t.messages), 0)),
           'job:archive', $6
    FROM batch b
    LEFT JOIN whole w ON w.agent_id = b.agent_id AND w.memory_id = b.memory_id
    LEFT JOIN transcript t ON t.agent_id = b.agent_id AND t.episode_id = b.memory_id
)
SELECT (SELECT count(*) FROM batch)::int AS n,
       (SELECT count(*) FROM transcript)::int AS archived_transcripts,
       (SELECT coalesce(sum(jsonb_array_length(messages)), 0) FROM transcript)::bigint
           AS archived_messages;

-- name: episode_storage_for_update
SELECT e.storage, e.detail FROM episodes e
WHERE e.agent_id = $1 AND e.memory_id = $2 FOR UPDATE OF e;

-- name: archive_parts
SELECT part, start_offset, reason, archived_at, length(content) AS chars,
       jsonb_array_length(messages) AS messages
FROM memory_archive WHERE agent_id = $1 AND memory_id = $2 ORDER BY part;

-- name: restore_detail
-- Reassembles the detail; returns whether it matches the checksum taken when it left.
UPDATE episodes e SET detail = left(coalesce(e.detail, ''), a.start_offset) || a.content
FROM memory_archive a
WHERE e.agent_id = $1 AND e.memory_id = $2
  AND a.agent_id = $1 AND a.memory_id = $2 AND a.part = 'detail'
RETURNING length(e.detail) AS chars,
          a.checksum IS NULL OR a.checksum = hashtextextended(e.detail, 0) AS verified;

-- name: restore_transcript
INSERT INTO episode_messages
SELECT r.* FROM memory_archive a,
     jsonb_populate_recordset(NULL::episode_messages, a.messages) r
WHERE a.agent_id = $1 AND a.memory_id = $2 AND a.part = 'transcript'
  AND r.agent_id = $1 AND r.episode_id = $2;

-- name: transcript_digest
-- The same digest the archive took: the transcript's rows as one jsonb array.
SELECT count(*)::int AS n,
       hashtextextended(jsonb_agg(to_jsonb(m) ORDER BY m.seq)::text, 0) AS checksum,
       (SELECT a.checksum FROM memory_archive a WHERE a.agent_id = $1 AND a.memory_id = $2
          AND a.part = 'transcript') AS archived_checksum
FROM episode_messages m WHERE m.agent_id = $1 AND m.episode_id = $2;

-- name: restore_finish
WITH gone AS (
    DELETE FROM memory_archive WHERE agent_id = $1 AND memory_id = $2 RETURNING part
)
UPDATE episodes SET storage = 'restored' WHERE agent_id = $1 AND memory_id = $2
RETURNING (SELECT array_agg(part ORDER BY part) FROM gone) AS parts;

-- name: retention_batch
-- cross-agent: the retention policy.  Cold parts stored before $1 are deleted for
-- good (audited per part); their episodes become 'expired'.  $3 the job's clock.
WITH batch AS (
    SELECT agent_id, memory_id, part FROM memory_archive
    WHERE archived_at < $1 ORDER BY archived_at LIMIT $2 FOR UPDATE
), gone AS (
    DELETE FROM memory_archive a USING batch b
    WHERE a.agent_id = b.agent_id AND a.memory_id = b.memory_id AND a.part = b.part
    RETURNING a.agent_id, a.memory_id, a.part, a.reason, a.archived_at,
              length(a.content) AS chars, jsonb_array_length(a.messages) AS messages
), hot AS (
    UPDATE episodes e SET storage = 'expired'
    FROM (SELECT DISTINCT agent_id, memory_id FROM batch) b
    WHERE e.agent_id = b.agent_id AND e.memory_id = b.memory_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT agent_id, memory_id, 'expired',
           jsonb_build_object('part', part, 'reason', reason, 'archived_at', archived_at,
                              'chars', chars, 'messages', messages),
           jsonb_build_object('storage', 'expired'), 'job:retention', $3
    FROM gone
)
SELECT count(*)::int AS n FROM batch;

-- name: lifecycle_promote_facts
-- cross-agent: active facts confirmed at least $1 times get the 'core' tag.
WITH hit AS (
    SELECT m.agent_id, m.id, m.tags, f.confirmation_count
    FROM memories m JOIN facts f ON f.agent_id = m.agent_id AND f.memory_id = m.id
    WHERE m.kind = 'fact' AND m.status = 'active' AND f.confirmation_count >= $1
      AND NOT ('core' = ANY(m.tags))
    LIMIT $2 FOR UPDATE OF m SKIP LOCKED
), up AS (
    UPDATE memories m SET tags = array_append(m.tags, 'core'), version = m.version + 1,
                          updated_at = $3
    FROM hit h WHERE m.agent_id = h.agent_id AND m.id = h.id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT agent_id, id, 'promoted', jsonb_build_object('tags', tags),
           jsonb_build_object('tags', array_append(tags, 'core'),
                              'confirmations', confirmation_count),
           'job:lifecycle', $3
    FROM hit
)
SELECT count(*)::int AS n FROM hit;

-- name: lifecycle_flag_procedures
-- cross-agent: active procedures used at least $1 times with effectiveness below $2
-- get the 'needs_review' tag (a person or agent decides what happens next).
WITH hit AS (
    SELECT m.agent_id, m.id, m.tags, p.activation_count, p.effectiveness
    FROM memories m JOIN procedures p ON p.agent_id = m.agent_id AND p.memory_id = m.id
    WHERE m.kind = 'procedure' AND m.status = 'active' AND p.activation_count >= $1
      AND p.effectiveness < $2 AND NOT ('needs_review' = ANY(m.tags))
    LIMIT $3 FOR UPDATE OF m SKIP LOCKED
), up AS (
    UPDATE memories m SET tags = array_append(m.tags, 'needs_review'),
                          version = m.version + 1, updated_at = $4
    FROM hit h WHERE m.agent_id = h.agent_id AND m.id = h.id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT agent_id, id, 'flagged', jsonb_build_object('tags', tags),
           jsonb_build_object('tags', array_append(tags, 'needs_review'),
                              'uses', activation_count, 'effectiveness', effectiveness),
           'job:lifecycle', $4
    FROM hit
)
SELECT count(*)::int AS n FROM hit;

-- name: lifecycle_retire_censors
-- cross-agent: active censors activated at least $1 times whose false positives exceed
-- the share $2 are retired (status archived: they stop warning and blocking).
WITH hit AS (
    SELECT m.agent_id, m.id, c.activation_count, c.false_positive_count
    FROM memories m JOIN censors c ON c.agent_id = m.agent_id AND c.memory_id = m.id
    WHERE m.kind = 'censor' AND m.status = 'active' AND c.activation_count >= $1
      AND c.false_positive_count > $2::double precision * c.activation_count
    LIMIT $3 FOR UPDATE OF m SKIP LOCKED
), up AS (
    UPDATE memories m SET status = 'archived', version = m.version + 1, updated_at = $4
    FROM hit h WHERE m.agent_id = h.agent_id AND m.id = h.id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT agent_id, id, 'retired', jsonb_build_object('status', 'active'),
           jsonb_build_object('status', 'archived', 'activations', activation_count,
                              'false_positives', false_positive_count),
           'job:lifecycle', $4
    FROM hit
)
SELECT count(*)::int AS n FROM hit;

-- name: compress_candidates
-- cross-agent: active procedures with more than $3 implementation notes, in key order.
SELECT m.agent_id, m.id, p.name, p.implementation_notes
FROM memories m JOIN procedures p ON p.agent_id = m.agent_id AND p.memory_id = m.id
WHERE (m.agent_id, m.id) > ($1::text, $2::uuid) AND m.kind = 'procedure'
  AND m.status = 'active' AND cardinality(p.implementation_notes) > $3
ORDER BY m.agent_id, m.id
LIMIT $4;

-- name: compress_candidates_count
-- cross-agent: how many procedures compress_candidates would page through ($1 notes).
SELECT count(*)
FROM memories m JOIN procedures p ON p.agent_id = m.agent_id AND p.memory_id = m.id
WHERE m.kind = 'procedure' AND m.status = 'active' AND cardinality(p.implementation_notes) > $1;

-- name: compress_write
-- Only when the notes are still the ones the LLM saw ($3); the old ones go to history.
WITH up AS (
    UPDATE procedures SET implementation_notes = $4::text[]
    WHERE agent_id = $1 AND memory_id = $2 AND implementation_notes = $3::text[]
    RETURNING memory_id
), touched AS (
    UPDATE memories SET version = version + 1, updated_at = $5
    WHERE agent_id = $1 AND id IN (SELECT memory_id FROM up)
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT $1, memory_id, 'compressed', jsonb_build_object('implementation_notes', $3::text[]),
           jsonb_build_object('implementation_notes', $4::text[], 'model', $6::text),
           'job:compress', $5
    FROM up
)
SELECT count(*)::int AS n FROM up;

-- name: expire_extraction_cache
-- cross-agent: cache rows past their expiry, a batch at a time.
WITH gone AS (
    DELETE FROM extraction_cache WHERE ctid = ANY(ARRAY(
        SELECT ctid FROM extraction_cache WHERE expires_at < $1 LIMIT $2))
    RETURNING 1
)
SELECT count(*)::int AS n FROM gone;

-- name: requeue_stuck_work
-- cross-agent: running items whose lease expired (their worker died): back to pending,
-- or failed once they used up $2 attempts.
WITH stuck AS (
    SELECT agent_id, id FROM work_items
    WHERE state = 'running' AND lease_until < $1
    LIMIT $3 FOR UPDATE SKIP LOCKED
), up AS (
    UPDATE work_items w SET
        state = CASE WHEN w.attempts >= $2 THEN 'failed' ELSE 'pending' END,
        lease_until = NULL, locked_by = NULL, run_after = $1, updated_at = $1,
        last_error = COALESCE(w.last_error || '; ', '') || 'lease expired (housekeeping)'
    FROM stuck s WHERE w.agent_id = s.agent_id AND w.id = s.id
    RETURNING w.state
)
SELECT count(*)::int AS n, count(*) FILTER (WHERE state = 'failed')::int AS failed FROM up;

-- name: stale_embeddings_batch
-- cross-agent: memories not embedded with the configured model $3, in key order.
SELECT agent_id, id, summary, version FROM memories
WHERE (agent_id, id) > ($1::text, $2::uuid) AND embedding_model IS DISTINCT FROM $3
  AND status <> 'deleted'
ORDER BY agent_id, id
LIMIT $4;

-- name: reembed_write
-- cross-agent: new vectors for a batch; a row changed meanwhile (version) is left for
-- the next run.  Re-embedding is not a content change: the version stays.
WITH u AS (
    SELECT * FROM unnest($1::text[], $2::uuid[], $3::integer[], $4::vector[])
        AS u(agent_id, id, version, embedding)
), up AS (
    UPDATE memories m SET embedding = u.embedding, embedding_model = $5
    FROM u WHERE m.agent_id = u.agent_id AND m.id = u.id AND m.version = u.version
    RETURNING 1
)
SELECT count(*)::int AS n FROM up;

-- name: stale_chunk_embeddings_batch
-- cross-agent: transcript chunks not embedded with the configured model $4.
SELECT agent_id, episode_id, chunk_no, content FROM episode_chunks
WHERE (agent_id, episode_id, chunk_no) > ($1::text, $2::uuid, $3::integer)
  AND embedding_model IS DISTINCT FROM $4
ORDER BY agent_id, episode_id, chunk_no
LIMIT $5;

-- name: reembed_chunks_write
-- cross-agent: chunks are verbatim and never rewritten, so no version check is needed.
WITH up AS (
    UPDATE episode_chunks c SET embedding = u.embedding, embedding_model = $5
    FROM unnest($1::text[], $2::uuid[], $3::integer[], $4::vector[])
        AS u(agent_id, episode_id, chunk_no, embedding)
    WHERE c.agent_id = u.agent_id AND c.episode_id = u.episode_id
      AND c.chunk_no = u.chunk_no
    RETURNING 1
)
SELECT count(*)::int AS n FROM up;

-- name: count_stale_embeddings
-- cross-agent: what re-embedding has left (dry runs report it without embedding).
SELECT (SELECT count(*) FROM memories
        WHERE embedding_model IS DISTINCT FROM $1 AND status <> 'deleted')::bigint AS memories,
       (SELECT count(*) FROM episode_chunks
        WHERE embedding_model IS DISTINCT FROM $1)::bigint AS chunks;

-- ---------------------------------------------------------------- job runs
-- job_runs is cluster-wide bookkeeping, not tenant data.

-- name: job_lock
-- Session-level: held by the job's own connection for the whole run, released when the
-- run ends or the process dies (the connection drops).
SELECT pg_try_advisory_lock(hashtext('nous_memory.job'), hashtext($1));

-- name: job_unlock
SELECT pg_advisory_unlock(hashtext('nous_memory.job'), hashtext($1));

-- name: job_run_start
INSERT INTO job_runs (job, slot, trigger, dry_run, runner, started_at)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id;

-- name: job_runs_abandon
-- Called while holding the job's lock: no run of it can be alive, so a 'running' row is
-- a run whose process died (its committed batches stay; this run continues them).
UPDATE job_runs SET status = 'failed', finished_at = greatest(clock_timestamp(), started_at),
       error = 'the runner stopped before the run finished (killed?)'
WHERE job = $1 AND status = 'running'
RETURNING id;

-- name: job_run_finish
UPDATE job_runs SET status = $2, counts = $3, note = $4, error = $5,
                    finished_at = greatest(clock_timestamp(), started_at)
WHERE id = $1;

-- name: job_run_skip
INSERT INTO job_runs (job, slot, trigger, dry_run, runner, started_at, finished_at, status,
                      note)
VALUES ($1, $2, $3, $4, $5, $6, greatest(clock_timestamp(), $6), 'skipped', $7)
RETURNING id;

-- name: job_slot_done
-- Whether a scheduled run of this job already succeeded for this slot.
SELECT EXISTS (SELECT 1 FROM job_runs WHERE job = $1 AND slot = $2 AND status = 'ok'
               AND NOT dry_run);

-- name: job_history
SELECT id, job, slot, trigger, started_at, finished_at, status, dry_run, counts, note,
       error, runner
FROM job_runs WHERE ($1::text IS NULL OR job = $1)
ORDER BY id DESC LIMIT $2;

-- name: archived_detail
-- An episode's whole detail when part of it is archived: the hot head as stored (raw, as
-- memory_archive_parts does; a validated record has its whitespace trimmed) and the rest.
SELECT left(COALESCE(e.detail, ''), a.start_offset) || a.content AS full_detail
FROM memory_archive a
LEFT JOIN episodes e ON e.agent_id = a.agent_id AND e.memory_id = a.memory_id
WHERE a.agent_id = $1 AND a.memory_id = $2 AND a.part = 'detail';

-- name: memory_resummarize_if
-- The summary_regenerate task: applies only if the summary is still the one it replaced.
UPDATE memories SET summary = $3, summary_source = $4, summary_tokens = $5, embedding = $6,
                    embedding_model = $7, version = version + 1, updated_at = now()
WHERE agent_id = $1 AND id = $2 AND summary = $8 AND status <> 'deleted'
RETURNING version;

-- name: job_run_by_id
SELECT id, job, slot, trigger, started_at, finished_at, status, dry_run, counts, note,
       error, runner
FROM job_runs WHERE id = $1;
-- ---------------------------------------------------------------- context (issue 5b)

-- name: context_always_on
-- Censors (matched against the query in Python) and pinned profile facts ($2: the
-- categories), considered on every call whatever the ranking says.  $3, $4: limits.
(SELECT m.id, m.kind, m.summary, m.importance, c.trigger_pattern
 FROM censors c JOIN memories m ON m.agent_id = c.agent_id AND m.id = c.memory_id
 WHERE c.agent_id = $1 AND m.status = 'active'
 ORDER BY m.importance DESC, m.id LIMIT $3)
UNION ALL
(SELECT m.id, m.kind, m.summary, m.importance, NULL
 FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
 WHERE f.agent_id = $1 AND m.status = 'active' AND lower(f.category) = ANY($2::text[])
 ORDER BY m.importance DESC, f.confirmation_count DESC, m.updated_at DESC, m.id LIMIT $4);

-- name: context_tier2
-- The complex records among the candidates ($2) with their unexpired extraction for this
-- query ($3 sha256, $4 max tokens).  The source text is sent only on a miss, capped at $5
-- characters for the hot-path truncation (the queued LLM extraction reads it whole).
SELECT m.id, m.kind, c.content AS cached, c.source AS cached_source,
       CASE WHEN c.content IS NULL THEN left(e.detail, $5) END AS detail,
       e.title, p.name,
       CASE WHEN c.content IS NULL THEN p.goals END AS goals,
       CASE WHEN c.content IS NULL THEN p.core_patterns END AS core_patterns,
       CASE WHEN c.content IS NULL THEN p.implementation_notes END AS notes
FROM memories m
LEFT JOIN episodes e ON m.kind = 'episode' AND e.agent_id = m.agent_id AND e.memory_id = m.id
LEFT JOIN procedures p
       ON m.kind = 'procedure' AND p.agent_id = m.agent_id AND p.memory_id = m.id
LEFT JOIN extraction_cache c
       ON c.agent_id = m.agent_id AND c.memory_id = m.id AND c.query_sha256 = $3
      AND c.max_tokens = $4 AND c.expires_at > now()
WHERE m.agent_id = $1 AND m.id = ANY($2::uuid[])
  AND ((m.kind = 'episode' AND length(e.detail) > 1000)
       OR (m.kind = 'procedure' AND cardinality(p.core_patterns) > 5));

-- name: extraction_source
-- The whole source text of one complex record, for the LLM extraction (worker).
SELECT m.kind, m.status, e.title, e.detail, p.name, p.goals, p.core_patterns,
       p.implementation_notes AS notes
FROM memories m
LEFT JOIN episodes e ON m.kind = 'episode' AND e.agent_id = m.agent_id AND e.memory_id = m.id
LEFT JOIN procedures p
       ON m.kind = 'procedure' AND p.agent_id = m.agent_id AND p.memory_id = m.id
WHERE m.agent_id = $1 AND m.id = $2;

-- name: extraction_cache_fresh
SELECT source FROM extraction_cache
WHERE agent_id = $1 AND memory_id = $2 AND query_sha256 = $3 AND max_tokens = $4
  AND expires_at > now();

-- name: extraction_cache_store
-- An LLM result replaces anything; a rule result never replaces a fresh LLM one.
INSERT INTO extraction_cache (agent_id, memory_id, query_sha256, max_tokens, content, source,
                              model, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))
ON CONFLICT (agent_id, memory_id, query_sha256, max_tokens) DO UPDATE SET
    content = EXCLUDED.content, source = EXCLUDED.source, model = EXCLUDED.model,
    created_at = now(), expires_at = EXCLUDED.expires_at
WHERE extraction_cache.source = 'rule' OR EXCLUDED.source = 'llm'
   OR extraction_cache.expires_at <= now();

-- name: memories_accessed
-- Deferred, batched access bookkeeping ($2 ids, $3 hit counts, $4 time of the last one);
-- not a change of the record, so version and updated_at stay.
UPDATE memories m SET access_count = m.access_count + u.n,
       last_accessed_at = GREATEST(m.last_accessed_at, $4::timestamptz)
FROM unnest($2::uuid[], $3::integer[]) AS u(id, n)
WHERE m.agent_id = $1 AND m.id = u.id;

-- ---------------------------------------------------------------- expand (issue 5b)

-- name: memory_by_ref
-- A short ref (kind + the first hex digits of the id) as a range on the primary key.
SELECT id FROM memories
WHERE agent_id = $1 AND id BETWEEN $2::uuid AND $3::uuid AND ($4::text IS NULL OR kind = $4)
  AND status <> 'deleted'
ORDER BY id LIMIT 2;

-- name: memory_archive_parts
-- full_detail: the hot head (raw, as stored) followed by the archived rest.
SELECT a.part, a.start_offset, a.content, a.messages, a.reason, a.archived_at,
       CASE WHEN a.part = 'detail'
            THEN left(COALESCE(e.detail, ''), a.start_offset) || a.content END AS full_detail
FROM memory_archive a
LEFT JOIN episodes e ON e.agent_id = a.agent_id AND e.memory_id = a.memory_id
WHERE a.agent_id = $1 AND a.memory_id = $2 ORDER BY a.part;

-- ---------------------------------------------------------------- recall (issue 5a)

-- name: recall_plan_settings
-- Recall's settings inside its transaction (a large agent's; a small agent's too when
-- there is no scan pool).  Filtered HNSW scans (this agent, these kinds) keep going until
-- the LIMIT is met; relaxed order is re-sorted by exact distance in the recall query.
-- $1, the plan cache mode: a large agent's index scans need a plan of their own
-- ('force_custom_plan': the planner sees how many rows this agent has); a small agent's
-- statement does not ('force_generic_plan').  $2, enable_seqscan: 'off' for a small
-- agent (see scan_session_settings), 'on' for a large one.
SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('plan_cache_mode', $1, true),
       set_config('enable_seqscan', $2, true);

-- name: scan_session_settings
-- The scan pool's sessions (db/connector.py), set once per connection; they run only a
-- small agent's recall.  Its statement needs no plan of its own: a generic plan saves
-- 5-8 ms of planning per call.  Its rows are read through agent_id indexes: a generic
-- plan guesses an agent's share of a table from the number of agents, and with one large
-- agent among few it would scan them all, so sequential scans are off.
SELECT set_config('plan_cache_mode', 'force_generic_plan', false),
       set_config('enable_seqscan', 'off', false);

-- name: recall_agent_rows
-- The most rows a small agent's recall would read from one table (every memory but the
-- deleted ones, every chunk), counted up to $2.
SELECT GREATEST(
    (SELECT count(*) FROM (SELECT 1 FROM memories
                           WHERE agent_id = $1 AND status <> 'deleted' LIMIT $2) AS m),
    (SELECT count(*) FROM (SELECT 1 FROM episode_chunks WHERE agent_id = $1 LIMIT $2) AS c));

-- name: recall
-- Hybrid recall in one statement.  $1 agent, $2 query text, $3 query vector, $4 model,
-- $5 kinds, $6 memory statuses, $7 include chunks, $8 candidates per leg, $9 k,
-- $10 RRF constant, $11..$16 priors (recency weight, half-life days, importance,
-- confidence, use weight, use saturation), $17/$18 weights of the text and vector legs
-- in the fusion, $19 how much a word of a chunk's context (weight D) counts against
-- one of its own text, $20 the priors' spread (largest factor / smallest), $21 true for
-- a small agent: its rows are read once (mem_rows, chunk_rows) and every leg works on
-- them in memory (an exact vector scan beats a filtered HNSW scan there, and is exact);
-- false for a large agent: HNSW indexes for the vector legs, the GIN indexes for the
-- text leg.  Each half is gated on $21, so only one of them runs.
-- Two legs, each over memories and episode chunks together (one corpus, so neither table
-- gets top ranks for free): vector (per table, merged by distance) and BM25 full text.
-- The full-text query is an OR of the text's lexemes (to_tsvector never fails on any
-- input; the tsvector's canonical text form re-parses as a tsquery), scored by BM25
-- (Lucene's always-positive idf) with each lexeme's document frequency counted over the
-- agent's rows.  A lexeme in half the documents or more carries no evidence under the
-- classic Robertson-Sparck Jones weight (zero or less), so it does not select documents:
-- it only adds to the score of the ones the other lexemes select (when every lexeme is
-- that common, the rarest ones select).  Measured on LoCoMo: recall unchanged.  Term
-- frequencies come from each selected row's tsvector cut down to the query's lexemes
-- (setweight marks them 'C', ts_filter keeps them).  Priors only scale a fused score by [min, max] factors, so an item whose fused
-- score times the spread is below the k-th best fused score cannot reach the top k: only
-- the rest are joined to their details.  Chunks never need episode_messages (archived
-- transcripts).
WITH gone AS (
    -- episodes whose chunks recall never returns
    SELECT COALESCE(array_agg(id), '{}') AS ids FROM memories
    WHERE agent_id = $1 AND status NOT IN ('active', 'archived') AND kind = 'episode'
),
tq AS (
    SELECT ARRAY(SELECT u.lexeme FROM unnest(v) AS u) AS lexemes
    FROM to_tsvector('english', $2) AS v
),
mem_rows AS MATERIALIZED (
    SELECT m.id, m.status, length(m.search_tsv) AS len, m.search_tsv AS tsv,
           CASE WHEN m.embedding_model = $4 THEN m.embedding <=> $3 END AS dist
    FROM memories m
    WHERE $21 AND m.agent_id = $1 AND m.status = ANY($6::text[]) AND m.kind = ANY($5::text[])
),
chunk_rows AS MATERIALIZED (
    SELECT c.episode_id, c.chunk_no, length(c.search_tsv) AS len, c.search_tsv AS tsv,
           CASE WHEN c.embedding_model = $4 THEN c.embedding <=> $3 END AS dist
    FROM gone, episode_chunks c
    WHERE $21 AND $7 AND c.agent_id = $1 AND c.episode_id <> ALL(gone.ids)
),
vec AS MATERIALIZED (
    (SELECT 'memory' AS source, id AS memory_id, NULL::integer AS chunk_no, dist
     FROM mem_rows WHERE status = 'active' AND dist IS NOT NULL ORDER BY dist, id LIMIT $8)
    UNION ALL
    (SELECT 'memory', id, NULL, dist FROM mem_rows
     WHERE status <> 'active' AND dist IS NOT NULL ORDER BY dist, id LIMIT $8)
    UNION ALL
    (SELECT 'chunk', episode_id, chunk_no, dist FROM chunk_rows
     WHERE dist IS NOT NULL ORDER BY dist, episode_id, chunk_no LIMIT $8)
    UNION ALL
    (SELECT 'memory', m.id, NULL, m.embedding <=> $3
     FROM memories m
     WHERE NOT $21 AND m.agent_id = $1 AND m.status = 'active' AND m.kind = ANY($5::text[])
       AND m.embedding_model = $4
     ORDER BY m.embedding <=> $3 LIMIT $8)
    UNION ALL
    -- archived (and superseded) rows are not in the HNSW index
    (SELECT 'memory', m.id, NULL, m.embedding <=> $3 FROM memories m
     WHERE NOT $21 AND m.agent_id = $1 AND m.status <> 'active' AND m.status = ANY($6::text[])
       AND m.kind = ANY($5::text[]) AND m.embedding_model = $4
     ORDER BY m.embedding <=> $3 LIMIT $8)
    UNION ALL
    (SELECT 'chunk', c.episode_id, c.chunk_no, c.embedding <=> $3
     FROM gone, episode_chunks c
     WHERE NOT $21 AND $7 AND c.agent_id = $1 AND c.embedding_model = $4
       AND c.episode_id <> ALL(gone.ids)
     ORDER BY c.embedding <=> $3 LIMIT $8)
),
qs AS MATERIALIZED (
    -- each query lexeme as a tsquery of its own
    SELECT t.lexeme, array_to_tsvector(ARRAY[t.lexeme])::text::tsquery AS q
    FROM tq, unnest(tq.lexemes) AS t(lexeme)
),
terms AS MATERIALIZED (
    -- each query lexeme's document frequency among the agent's rows (counted, not scored):
    -- one join over the rows in memory, or per lexeme through the GIN indexes
    SELECT qs.lexeme, COALESCE(n.df, 0) AS df
    FROM qs LEFT JOIN (SELECT q.lexeme, count(*) AS df  -- the rows stream past the lexemes
                       FROM (SELECT tsv FROM mem_rows UNION ALL SELECT tsv FROM chunk_rows) AS d
                       JOIN qs AS q ON d.tsv @@ q.q
                       GROUP BY q.lexeme) AS n USING (lexeme)
    WHERE $21
    UNION ALL
    SELECT qs.lexeme,
           (SELECT count(*) FROM memories m
            WHERE m.agent_id = $1 AND m.search_tsv @@ qs.q AND m.status = ANY($6::text[])
              AND m.kind = ANY($5::text[]))
           + (SELECT count(*) FROM gone, episode_chunks c
              WHERE $7 AND c.agent_id = $1 AND c.search_tsv @@ qs.q
                AND c.episode_id <> ALL(gone.ids))
    FROM qs WHERE NOT $21
),
corpus AS (
    SELECT sum(n)::float8 AS n, GREATEST(sum(total) / GREATEST(sum(n), 1), 1)::float8 AS avgdl
    FROM (SELECT count(*) AS n, sum(len) AS total FROM mem_rows
          UNION ALL
          SELECT count(*), sum(len) FROM chunk_rows
          UNION ALL
          SELECT count(*), sum(length(search_tsv)) FROM memories
          WHERE NOT $21 AND agent_id = $1 AND status = ANY($6::text[])
            AND kind = ANY($5::text[])
          UNION ALL
          SELECT count(*), sum(length(c.search_tsv)) FROM gone, episode_chunks c
          WHERE NOT $21 AND $7 AND c.agent_id = $1 AND c.episode_id <> ALL(gone.ids)
         ) AS parts
),
weights AS MATERIALIZED (
    SELECT t.lexeme, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf,
           t.df > 0 AND (2 * t.df < s.n
                         OR t.df = min(t.df) FILTER (WHERE t.df > 0) OVER ()) AS selects
    FROM terms t, corpus s
),
sel AS (
    SELECT replace(array_to_tsvector(array_agg(lexeme) FILTER (WHERE selects))::text,
                   ''' ''', ''' | ''')::tsquery AS q,
           array_agg(lexeme) AS lexemes
    FROM weights
),
docs AS (
    -- the selected documents: their length and their tsvector
    SELECT 'memory' AS source, r.id AS memory_id, NULL::integer AS chunk_no, r.len, r.tsv
    FROM sel, mem_rows r WHERE r.tsv @@ sel.q
    UNION ALL
    SELECT 'chunk', r.episode_id, r.chunk_no, r.len, r.tsv
    FROM sel, chunk_rows r WHERE r.tsv @@ sel.q
    UNION ALL
    SELECT 'memory', m.id, NULL, length(m.search_tsv), m.search_tsv
    FROM sel, memories m
    WHERE NOT $21 AND m.agent_id = $1 AND m.search_tsv @@ sel.q
      AND m.status = ANY($6::text[]) AND m.kind = ANY($5::text[])
    UNION ALL
    SELECT 'chunk', c.episode_id, c.chunk_no, length(c.search_tsv), c.search_tsv
    FROM sel, gone, episode_chunks c
    WHERE NOT $21 AND $7 AND c.agent_id = $1 AND c.search_tsv @@ sel.q
      AND c.episode_id <> ALL(gone.ids)
),
hits AS (
    -- a document's tsvector cut down to the query's lexemes (a handful of entries), each
    -- with its term frequency: a memory's straight from unnest (no per-document subquery,
    -- it runs for every selected document); in a chunk, a word of its own (weight A)
    -- counts 1 and one of its context (D) $19
    SELECT source, memory_id, chunk_no, len, (u).lexeme, cardinality((u).positions)::float8 AS tf
    FROM (SELECT d.source, d.memory_id, d.chunk_no, d.len,
                 unnest(ts_filter(setweight(d.tsv, 'C', sel.lexemes), '{c}')) AS u
          FROM sel, docs d WHERE d.source = 'memory') AS m
    UNION ALL
    SELECT d.source, d.memory_id, d.chunk_no, d.len, u.lexeme,
           sum(cardinality(u.positions)
               * CASE WHEN u.part = 'd' THEN $19::float8 ELSE 1 END) AS tf
    FROM sel, docs d
    CROSS JOIN LATERAL (
        SELECT 'a' AS part, f.lexeme, f.positions
        FROM unnest(ts_filter(setweight(ts_filter(d.tsv, '{a}'), 'C', sel.lexemes), '{c}')) AS f
        UNION ALL
        SELECT 'd', f.lexeme, f.positions
        FROM unnest(ts_filter(setweight(ts_filter(d.tsv, '{d}'), 'C', sel.lexemes),
                              '{c}')) AS f) AS u
    WHERE d.source = 'chunk'
    GROUP BY d.source, d.memory_id, d.chunk_no, d.len, u.lexeme
),
bm25 AS MATERIALIZED (
    SELECT h.source, h.memory_id, h.chunk_no,
           sum(w.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.len / s.avgdl))) AS score
    FROM hits h JOIN weights w USING (lexeme) CROSS JOIN corpus s
    GROUP BY h.source, h.memory_id, h.chunk_no
    ORDER BY score DESC, h.memory_id, h.chunk_no NULLS FIRST LIMIT $8
),
legs AS (
    SELECT source, memory_id, chunk_no, 'vector' AS leg, NULL::float8 AS score,
           row_number() OVER (ORDER BY dist, memory_id, chunk_no NULLS FIRST) AS rnk
    FROM vec
    UNION ALL
    SELECT source, memory_id, chunk_no, 'text', score,
           row_number() OVER (ORDER BY score DESC, memory_id, chunk_no NULLS FIRST)
    FROM bm25
),
fused AS (
    SELECT source, memory_id, chunk_no,
           sum(CASE leg WHEN 'text' THEN $17::float8 ELSE $18::float8 END / ($10 + rnk)) AS fused,
           min(rnk) FILTER (WHERE leg = 'vector') AS vector_rank,
           min(rnk) FILTER (WHERE leg = 'text') AS text_rank,
           max(score) FILTER (WHERE leg = 'text') AS text_score
    FROM legs GROUP BY source, memory_id, chunk_no
),
bar AS MATERIALIZED (
    SELECT CASE WHEN count(*) < $9 THEN 0 ELSE min(fused) END AS kth
    FROM (SELECT fused FROM fused ORDER BY fused DESC LIMIT $9) AS top
),
kept AS (
    SELECT f.* FROM fused f, bar WHERE f.fused * $20 >= bar.kth
),
found AS (
    SELECT f.*, m.kind, m.status, m.importance, m.access_count,
           CASE WHEN f.source = 'chunk' THEN c.content ELSE m.summary END AS text,
           CASE WHEN f.source = 'chunk' THEN c.tokens ELSE m.summary_tokens END AS tokens,
           CASE WHEN f.source = 'chunk' THEN c.message_metadata END AS message_metadata,
           CASE WHEN f.source = 'chunk' THEN COALESCE(c.started_at, c.created_at)
                ELSE m.created_at END AS created_at,
           CASE WHEN f.source = 'chunk' THEN c.ended_at
                WHEN m.kind = 'episode' THEN (SELECT ep.ended_at FROM episodes ep
                                              WHERE ep.agent_id = $1 AND ep.memory_id = f.memory_id)
           END AS ended_at,
           CASE WHEN f.source = 'chunk'
                THEN CASE WHEN c.embedding_model = $4 THEN 1 - (c.embedding <=> $3) END
                ELSE CASE WHEN m.embedding_model = $4 THEN 1 - (m.embedding <=> $3) END
           END AS cosine,
           CASE m.kind WHEN 'fact' THEN (SELECT fa.confidence FROM facts fa
                                          WHERE fa.agent_id = $1 AND fa.memory_id = f.memory_id)
                       WHEN 'decision' THEN (SELECT de.confidence FROM decisions de
                                             WHERE de.agent_id = $1 AND de.memory_id = f.memory_id)
           END AS confidence
    FROM kept f
    JOIN memories m ON m.agent_id = $1 AND m.id = f.memory_id
    LEFT JOIN episode_chunks c ON f.source = 'chunk' AND c.agent_id = $1
         AND c.episode_id = f.memory_id AND c.chunk_no = f.chunk_no
),
priced AS (
    SELECT r.*,
           $11 * power(0.5, GREATEST(0, extract(epoch FROM now()
                   - COALESCE(r.ended_at, r.created_at)))::float8 / 86400.0 / $12) AS p_recency,
           $13 * (r.importance - 0.5) AS p_importance,
           COALESCE($14 * (r.confidence - 0.5), 0) AS p_confidence,
           $15 * LEAST(1, ln(1 + r.access_count) / ln(1 + $16)) AS p_use
    FROM found r
)
SELECT source, memory_id, chunk_no, kind, status, text, tokens, message_metadata,
       created_at, ended_at, cosine, vector_rank::integer, text_rank::integer, text_score,
       fused, p_recency, p_importance, p_confidence, p_use,
       fused * (1 + p_recency + p_importance + p_confidence + p_use) AS final
FROM priced
ORDER BY final DESC, memory_id, chunk_no NULLS FIRST
LIMIT $9;
