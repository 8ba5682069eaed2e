-- Episodes: appends, transcripts, close processing, chunks and the close's follow-up.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- ---------------------------------------------------------------- episodes

-- name: episode_for_update
-- Row lock on the episode: appends and state changes of one episode are serialised.
SELECT e.state, e.message_count, e.title, e.started_at, e.ended_at, e.last_message_at,
       e.facts_state, e.facts_extractor, m.status, m.summary_source, e.user_id, m.people
FROM episodes e JOIN memories m ON m.agent_id = e.agent_id AND m.id = e.memory_id
WHERE e.agent_id = $1 AND e.memory_id = $2 AND m.status <> 'deleted'
FOR UPDATE OF e;

-- name: insert_messages
-- $3: [{seq, role, content, name, tool_call_id, tokens, metadata, created_at, person}]
INSERT INTO episode_messages (agent_id, episode_id, seq, role, content, name, tool_call_id,
                              tokens, metadata, created_at, person)
SELECT $1, $2, r.seq, r.role, r.content, r.name, r.tool_call_id, r.tokens,
       COALESCE(r.metadata, '{}'), COALESCE(r.created_at, now()), r.person
FROM jsonb_to_recordset($3::jsonb) AS r(seq integer, role text, content text, name text,
     tool_call_id text, tokens integer, metadata jsonb, created_at timestamptz, person text)
RETURNING created_at;

-- name: episode_add_people
-- The people of a conversation grow with the people who speak in it ($3, sorted keys):
-- the episode, its chunks and what is learned from it are theirs.
UPDATE memories SET people = ARRAY(SELECT DISTINCT p FROM unnest(people || $3::text[]) AS p
                                   ORDER BY p)
WHERE agent_id = $1 AND id = $2 AND NOT people @> $3::text[];

-- name: episode_after_append
-- Imported (backdated) messages move the start back to the first message.
UPDATE episodes SET message_count = $3,
                    last_message_at = GREATEST(COALESCE(last_message_at, $4), $4),
                    started_at = LEAST(COALESCE(started_at, $5), $5)
WHERE agent_id = $1 AND memory_id = $2;

-- name: episode_mark_closing
-- $3: the moment of the close (a parameter: Citus refuses now() inside COALESCE in an
-- UPDATE of a distributed table).
UPDATE episodes SET state = 'closing', facts_state = 'pending',
                    ended_at = GREATEST(COALESCE(ended_at, last_message_at, $3::timestamptz),
                                        started_at)
WHERE agent_id = $1 AND memory_id = $2 AND state = 'open'
RETURNING ended_at;

-- name: episode_messages
-- The transcript as readers see it: a message deleted while the episode was open is gone
-- from every read (its text stays in the row for the summary chain's audit).
SELECT seq, role, content, name, tool_call_id, tokens, metadata, created_at, person
FROM episode_messages
WHERE agent_id = $1 AND episode_id = $2 AND seq >= $3 AND deleted_at IS NULL
ORDER BY seq LIMIT $4;

-- name: episode_messages_latest
-- The newest $3 live messages, oldest first: what a session hands a model next.
SELECT seq, role, content, name, tool_call_id, tokens, metadata, created_at, person
FROM (SELECT seq, role, content, name, tool_call_id, tokens, metadata, created_at, person
      FROM episode_messages
      WHERE agent_id = $1 AND episode_id = $2 AND deleted_at IS NULL
      ORDER BY seq DESC LIMIT $3) AS newest
ORDER BY seq;

-- name: episode_messages_cold
-- A trimmed transcript's cold tail (memory_archive), as episode_messages' rows: an
-- upgrade of a trimmed episode reads the whole transcript.
SELECT r.seq, r.role, r.content, r.name, r.tool_call_id, r.tokens, r.metadata, r.created_at,
       r.person
FROM memory_archive a
CROSS JOIN LATERAL jsonb_populate_recordset(NULL::episode_messages, a.messages) AS r
WHERE a.agent_id = $1 AND a.memory_id = $2 AND a.part = 'transcript' AND r.deleted_at IS NULL
ORDER BY r.seq;

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

-- name: episode_facts_extractor
-- Who extracted the episode's facts: 'rules' (closed without an LLM) or 'llm'.
UPDATE episodes SET facts_extractor = $3 WHERE agent_id = $1 AND memory_id = $2;

-- name: episode_facts_source
-- Whether the close's follow-up has rule extraction to do (no LLM extraction pending).
SELECT facts_state, facts_extractor FROM episodes WHERE agent_id = $1 AND memory_id = $2;

-- name: episode_extraction_save
-- The close's extraction, to be learned by the follow-up item (an upgrade replaces it).
INSERT INTO episode_extractions (agent_id, episode_id, extraction) VALUES ($1, $2, $3)
ON CONFLICT (agent_id, episode_id)
-- EXCLUDED.created_at: the default, now() (Citus: DO UPDATE SET takes no now()).
DO UPDATE SET extraction = EXCLUDED.extraction, created_at = EXCLUDED.created_at,
              learned_at = NULL;

-- name: episode_extraction_pending
SELECT extraction FROM episode_extractions
WHERE agent_id = $1 AND episode_id = $2 AND learned_at IS NULL;

-- name: episode_extraction_learned
UPDATE episode_extractions SET learned_at = now()
WHERE agent_id = $1 AND episode_id = $2 AND learned_at IS NULL
RETURNING episode_id;

-- name: chunks_unembedded
-- content and context: a chunk is embedded as chunks.embedding_text(content, context)
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

-- name: memories_learned_from_episode
-- The facts and decisions whose provenance is this episode (any status but deleted).
SELECT r.* FROM memory_records r
WHERE r.agent_id = $1 AND r.status <> 'deleted' AND r.id IN (
    SELECT memory_id FROM facts WHERE agent_id = $1 AND source_episode_id = $2
    UNION ALL
    SELECT memory_id FROM decisions WHERE agent_id = $1 AND source_episode_id = $2)
ORDER BY r.kind DESC, r.created_at, r.id;
-- name: decisions_by_subject
-- The agent's active decisions on any of these subjects ($2, normalised as
-- episodes/decisions.py does: trimmed, lower case, single spaces), newest first: the
-- candidates a decision extracted at close may update instead of duplicating.
SELECT d.memory_id, d.description,
       lower(regexp_replace(btrim(d.subject), '\s+', ' ', 'g')) AS subject
FROM decisions d JOIN memories m ON m.agent_id = d.agent_id AND m.id = d.memory_id
WHERE d.agent_id = $1 AND m.agent_id = $1 AND m.status = 'active'
  AND lower(regexp_replace(btrim(d.subject), '\s+', ' ', 'g')) = ANY($2::text[])
ORDER BY m.created_at DESC, d.memory_id LIMIT $3;

-- name: episodes_by_source_key
-- The imported sessions among $2 (keys) this agent already has (a history import skips
-- them).
SELECT source_key FROM episodes WHERE agent_id = $1 AND source_key = ANY($2::text[]);

-- name: episode_message_times
-- When each live message of an episode was said: an extracted fact is valid from the
-- moment its message was said, not from when it was learned.
SELECT seq, created_at, person FROM episode_messages
WHERE agent_id = $1 AND episode_id = $2 AND deleted_at IS NULL;

-- ---------------------------------------------------------------- forgetting one message

-- name: forget_episode
-- The episode a message is forgotten from, locked (with its summary and the fields a
-- close derived from the transcript); any storage, so the caller can ask for a restore.
SELECT e.state, e.storage, e.title, e.detail, e.outcome, e.key_points, e.topics, e.lessons,
       e.message_count, m.summary, m.summary_source, m.embedding_model, m.version
FROM episodes e JOIN memories m ON m.agent_id = e.agent_id AND m.id = e.memory_id
WHERE e.agent_id = $1 AND e.memory_id = $2 AND m.status <> 'deleted'
FOR UPDATE OF e;

-- name: forget_message_row
-- The message as stored: a soft-deleted one still holds its text and earlier versions.
SELECT seq, content, edits, metadata, deleted_at FROM episode_messages
WHERE agent_id = $1 AND episode_id = $2 AND seq = $3;

-- name: forget_message_write
-- The message's new text ('' when deleted), no earlier versions; $6: deleted; $8: now
-- (a parameter: Citus plans no now() inside CASE).
UPDATE episode_messages SET content = $4, tokens = $5, edits = '[]'::jsonb, metadata = $7,
       deleted_at = CASE WHEN $6 THEN COALESCE(deleted_at, $8) ELSE deleted_at END,
       edited_at = $8
WHERE agent_id = $1 AND episode_id = $2 AND seq = $3;

-- name: forget_own_lexemes
-- A deleted message's own words: its lexemes (English text search: stemmed, stop words
-- dropped) that no remaining message ($2) has.  Reads no table.
SELECT coalesce(array_agg(l ORDER BY l), '{}'::text[]) FROM (
    SELECT unnest(tsvector_to_array(to_tsvector('english', $1))) AS l
    EXCEPT
    SELECT unnest(tsvector_to_array(to_tsvector('english', t))) FROM unnest($2::text[]) t
) own;

-- name: forget_texts_with_lexemes
-- Which texts ($1, numbered from 1) hold any of the lexemes $2.  Reads no table.
SELECT i FROM unnest($1::text[]) WITH ORDINALITY AS t(x, i)
WHERE tsvector_to_array(to_tsvector('english', x)) && $2::text[];

-- name: forget_chunks
-- Every chunk of the episode goes (the caller writes the rebuilt ones); what was
-- embedded, for the embedding cache.
DELETE FROM episode_chunks WHERE agent_id = $1 AND episode_id = $2
RETURNING content, context, embedding_model;

-- name: forget_episode_fields
UPDATE episodes SET title = $3, detail = $4, outcome = $5, key_points = $6, topics = $7,
       lessons = $8
WHERE agent_id = $1 AND memory_id = $2;

-- name: forget_extraction
SELECT extraction FROM episode_extractions WHERE agent_id = $1 AND episode_id = $2;

-- name: forget_extraction_write
-- The close's extraction without what came from the message (learned_at untouched: a
-- pending learn then learns only the rest).
UPDATE episode_extractions SET extraction = $3 WHERE agent_id = $1 AND episode_id = $2;

-- name: forget_facts
-- The facts learned from the episode.
SELECT f.memory_id AS id, f.source_seq, f.content, f.slot_value
FROM facts f WHERE f.agent_id = $1 AND f.source_episode_id = $2
ORDER BY f.valid_from, f.memory_id;

-- name: forget_fact_links
-- A fact's place in its supersession chain, as it is now (an earlier purge may have
-- mended it).
SELECT supersedes_id, superseded_by_id FROM facts
WHERE agent_id = $1 AND memory_id = $2 FOR UPDATE;


-- name: forget_mend_chain
-- A fact that goes leaves its chain whole: its predecessor ($3) leads to its successor
-- ($4) or, without one, holds again; the successor comes from the predecessor.
WITH before AS (
    UPDATE facts SET superseded_by_id = $4,
           valid_until = (SELECT s.valid_from FROM facts s
                          WHERE s.agent_id = $1 AND s.memory_id = $4)
    WHERE agent_id = $1 AND memory_id = $3 AND superseded_by_id = $2
    RETURNING memory_id
), revived AS (
    UPDATE memories SET status = 'active', version = version + 1, updated_at = now()
    WHERE agent_id = $1 AND id IN (SELECT memory_id FROM before) AND $4::uuid IS NULL
      AND status = 'superseded'
    RETURNING id
)
UPDATE facts SET supersedes_id = $3
WHERE agent_id = $1 AND memory_id = $4 AND supersedes_id = $2;

-- name: forget_decisions
SELECT d.memory_id AS id, d.description, d.context, d.pattern, d.reasons
FROM decisions d WHERE d.agent_id = $1 AND d.source_episode_id = $2;

-- name: forget_rolling
SELECT id, first_seq, last_seq, content, facets::text AS facets
FROM conversation_summaries WHERE agent_id = $1 AND episode_id = $2;

-- name: forget_rolling_delete
-- Rolling summaries that folded the message (or hold its trace); their children lose
-- the parent link first.
WITH orphans AS (
    UPDATE conversation_summaries SET parent_id = NULL
    WHERE agent_id = $1 AND episode_id = $2 AND parent_id = ANY($3::bigint[])
    RETURNING 1
)
DELETE FROM conversation_summaries
WHERE agent_id = $1 AND episode_id = $2 AND id = ANY($3::bigint[]);

-- name: forget_analyses
SELECT id, seq, content FROM conversation_analyses WHERE agent_id = $1 AND episode_id = $2;

-- name: forget_analyses_delete
DELETE FROM conversation_analyses WHERE agent_id = $1 AND episode_id = $2
  AND id = ANY($3::bigint[]);

-- name: forget_extraction_cache
DELETE FROM extraction_cache WHERE agent_id = $1 AND memory_id = $2;

-- name: forget_events
-- The audit values to look for the message's trace in: of these memories, and of any
-- memory whose event names the episode ($3: a fact of another episode it confirmed).
SELECT id, old_values, new_values
FROM memory_events WHERE agent_id = $1 AND (memory_id = ANY($2::uuid[])
    OR strpos(coalesce(old_values::text, '') || coalesce(new_values::text, ''), $3) > 0);

-- name: forget_events_scrub
-- An event that held the trace keeps its place in the trail, without its values.
UPDATE memory_events SET old_values = NULL, new_values = NULL
WHERE agent_id = $1 AND id = ANY($2::bigint[]);
