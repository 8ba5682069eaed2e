-- Working memory: summary policy, fold state, summary records, message edits.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- ---------------------------------------------------------------- working memory

-- name: conv_policy_get
SELECT policy FROM conversation_policies WHERE agent_id = $1;

-- name: conv_policy_set
INSERT INTO conversation_policies (agent_id, policy) VALUES ($1, $2)
-- EXCLUDED.updated_at is the column default, now(): Citus takes only a column or an
-- immutable expression in DO UPDATE SET of a distributed table.
ON CONFLICT (agent_id) DO UPDATE SET policy = EXCLUDED.policy,
                                     updated_at = EXCLUDED.updated_at
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
-- The earlier version goes to `edits` ($6: a one-element array made by the caller from
-- the locked row, with $7, the moment of the edit); the raw text is never lost.  Citus
-- refuses a non-immutable function over columns in an UPDATE's SET, so the entry is not
-- built here.
UPDATE episode_messages SET content = $4, tokens = $5, edited_at = $7,
       edits = edits || $6::jsonb
WHERE agent_id = $1 AND episode_id = $2 AND seq = $3
RETURNING edited_at;

-- name: conv_message_delete
-- Soft: the row and its content stay (the transcript is ground truth).
UPDATE episode_messages SET deleted_at = now()
WHERE agent_id = $1 AND episode_id = $2 AND seq = $3 AND deleted_at IS NULL
RETURNING deleted_at;
