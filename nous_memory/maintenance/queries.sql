-- Maintenance jobs: trim, archive, restore, retention, lifecycle, compression, housekeeping, job runs.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- ---------------------------------------------------------------- maintenance (jobs)
-- A nightly job serves every agent, one agent at a time: a cross-agent, read-only list
-- of the agents with work (*_agents: $n the last agent of the previous page, $n+1 the
-- page size), then the sweep's batches for each agent, every statement scoped by
-- agent_id = $1 (Citus routes it to the agent's shard group, where row locks and
-- modifying CTEs are allowed; across shards they are not).  Batches are short
-- transactions in primary-key order, so a rerun after a kill continues where the work
-- stopped.

-- name: batch_work_mem
-- A batch keeps up to a few thousand details in its CTEs: in memory, not spilled.
SET LOCAL work_mem = '64MB';

-- name: batch_async_commit
-- A job batch's commit does not wait for its WAL flush.  Safe because each batch is one
-- atomic transaction whose rows stop matching once done: a crash can lose only the
-- last batches (never part of one), which a rerun does again; and the job_runs row that
-- reports the run commits synchronously, flushing every batch's WAL before it.
SET LOCAL synchronous_commit = off;

-- name: episode_agents
-- cross-agent, read-only: the agents that have episodes, a page at a time.
SELECT agent_id FROM episodes WHERE agent_id > $1
GROUP BY agent_id ORDER BY agent_id LIMIT $2;

-- name: episode_key_range_agent
-- The next $3 episode keys of agent $1 after $2 in primary-key order: how many and the
-- last one.  A batch is the key range up to it, so every batch reads exactly that many
-- rows through the index, whatever share of them the job changes.
SELECT count(*)::int AS n,
       (array_agg(agent_id ORDER BY memory_id DESC))[1] AS last_agent,
       (array_agg(memory_id ORDER BY memory_id DESC))[1] AS last_id
FROM (SELECT agent_id, memory_id FROM episodes
      WHERE agent_id = $1 AND memory_id > $2::uuid
      ORDER BY memory_id LIMIT $3) AS k;

-- name: trim_episodes_batch
-- One trim batch: agent $1's episodes with memory_id in ($2, $3] (every table is bounded
-- by that range, so each step is an index range scan).  Closed episodes that ended
-- before $4: detail beyond $5 characters moves to memory_archive (the hot row keeps
-- left(detail, $5)).  Also returned, for trim_queue_work: the episodes whose summary is
-- shorter than $7 characters, and with $8 those whose facts were never extracted.  $6 is
-- the job's clock.  octet_length reads the stored size without detoasting; the inner
-- query detoasts each detail once (`|| ''`, OFFSET 0 keeps it from being inlined: a
-- length(detail) test there would detoast it a second time, so the character count is
-- taken and tested on the detoasted copy) and the batch keeps only what the steps below
-- need.
WITH batch AS (
    SELECT agent_id, memory_id, left(d, $5) AS head, right(d, -$5) AS tail,
           chars, hashtextextended(d, 0) AS checksum
    FROM (SELECT agent_id, memory_id, d, length(d) AS chars
          FROM (SELECT e.agent_id, e.memory_id, e.detail || '' AS d
                FROM episodes e
                WHERE e.agent_id = $1 AND e.memory_id > $2::uuid AND e.memory_id <= $3::uuid
                  AND e.state = 'closed' AND e.storage = 'hot' AND e.ended_at < $4
                  AND octet_length(e.detail) > $5
                OFFSET 0
                FOR UPDATE OF e) AS locked
          OFFSET 0) AS measured
    WHERE chars > $5
), cold AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, start_offset, content, reason,
                                archived_at, checksum)
    SELECT $1, memory_id, 'detail', $5, tail, 'trim', $6, checksum
    FROM batch
), hot AS (
    UPDATE episodes e SET detail = b.head, storage = 'trimmed'
    FROM batch b
    WHERE e.agent_id = $1 AND e.memory_id > $2::uuid AND e.memory_id <= $3::uuid
      AND e.agent_id = b.agent_id AND e.memory_id = b.memory_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT $1, memory_id, 'trimmed',
           jsonb_build_object('storage', 'hot', 'detail_chars', chars),
           jsonb_build_object('storage', 'trimmed', 'hot_chars', $5,
                              'cold_chars', chars - $5),
           'job:trim', $6
    FROM batch
), candidates AS (
    SELECT e.memory_id, e.facts_state, e.storage, length(m.summary) AS chars
    FROM episodes e JOIN memories m ON m.agent_id = e.agent_id AND m.id = e.memory_id
    WHERE e.agent_id = $1 AND e.memory_id > $2::uuid AND e.memory_id <= $3::uuid
      AND m.agent_id = $1 AND m.id > $2::uuid AND m.id <= $3::uuid
      AND e.state = 'closed' AND e.ended_at < $4 AND m.status = 'active'
)
SELECT (SELECT count(*) FROM batch)::int AS n,
       (SELECT coalesce(sum(chars - $5), 0) FROM batch)::bigint AS trimmed_chars,
       ARRAY(SELECT memory_id FROM candidates WHERE chars < $7) AS short_ids,
       ARRAY(SELECT memory_id FROM candidates
             WHERE $8::boolean AND facts_state = 'not_extracted'
               AND storage IN ('hot', 'trimmed', 'restored')) AS unextracted_ids;

-- name: trim_queue_work
-- The work a trim batch found for agent $1, queued on the coordinator's queue (a
-- statement of its own: Citus does not join the queue with distributed tables): a
-- $4 item (the summary task) for each of the episodes $2 with a short summary, a $5
-- item (the upgrade task) for each of $3 with unextracted facts; once per episode (an
-- item it ever had, unless failed, counts).
WITH short AS (
    SELECT u.id FROM unnest($2::uuid[]) AS u(id)
    WHERE NOT EXISTS (SELECT 1 FROM work_items w
                      WHERE w.agent_id = $1 AND w.memory_id = u.id
                        AND w.task = $4 AND w.state <> 'failed')
), unextracted AS (
    SELECT u.id FROM unnest($3::uuid[]) AS u(id)
    WHERE NOT EXISTS (SELECT 1 FROM work_items w
                      WHERE w.agent_id = $1 AND w.memory_id = u.id
                        AND w.task = $5 AND w.state <> 'failed')
), queued AS (
    INSERT INTO work_items (agent_id, task, memory_id, run_after, payload)
    SELECT $1, $4, id, now(), '{"reason": "short summary"}'::jsonb
    FROM short
    UNION ALL
    SELECT $1, $5, id, now(), '{}'::jsonb FROM unextracted
    ON CONFLICT (agent_id, task, memory_id, dedup_key) WHERE state IN ('pending', 'running')
    DO NOTHING
)
SELECT (SELECT count(*) FROM short)::int AS summaries_queued,
       (SELECT count(*) FROM unextracted)::int AS extractions_queued;

-- name: trim_transcripts_batch
-- The transcript half of a trim batch: agent $1's episodes with memory_id in ($2, $3]
-- (see trim_episodes_batch).  Closed episodes that ended before $4 and have no transcript
-- in cold storage yet: the messages beyond a hot head (those starting at or past $5
-- characters of the transcript's text) move to memory_archive as one 'transcript' part
-- (start_offset: how many messages stay hot), the head stays readable where it was.  The
-- checksum is the archive's digest of the whole transcript (restore_transcript puts the
-- tail back beside the head, and transcript_digest checks the whole).  Chunks, their
-- embeddings and the summary stay hot, so recall and tier 2 do not change.  $6 is the
-- job's clock.
WITH eps AS (
    SELECT e.agent_id, e.memory_id, e.storage FROM episodes e
    WHERE e.agent_id = $1 AND e.memory_id > $2::uuid AND e.memory_id <= $3::uuid
      AND e.state = 'closed' AND e.storage IN ('hot', 'trimmed') AND e.ended_at < $4
      AND NOT EXISTS (SELECT 1 FROM memory_archive a
                      WHERE a.agent_id = e.agent_id AND a.memory_id = e.memory_id
                        AND a.part = 'transcript')
    FOR UPDATE OF e
), measured AS (
    SELECT m.agent_id, m.episode_id, m.seq, to_jsonb(m) AS row,
           sum(length(m.content)) OVER (PARTITION BY m.agent_id, m.episode_id ORDER BY m.seq)
               - length(m.content) AS offset_chars
    FROM episode_messages m
    JOIN eps ON m.agent_id = eps.agent_id AND m.episode_id = eps.memory_id
    WHERE m.agent_id = $1 AND m.episode_id > $2::uuid AND m.episode_id <= $3::uuid
), batch AS (
    SELECT agent_id, episode_id,
           jsonb_agg(row ORDER BY seq) FILTER (WHERE offset_chars >= $5) AS tail,
           count(*) FILTER (WHERE offset_chars < $5)::int AS head,
           count(*) FILTER (WHERE offset_chars >= $5)::int AS cold,
           min(seq) FILTER (WHERE offset_chars >= $5) AS first_cold,
           hashtextextended(jsonb_agg(row ORDER BY seq)::text, 0) AS checksum
    FROM measured GROUP BY agent_id, episode_id
    HAVING count(*) FILTER (WHERE offset_chars >= $5) > 0
), cold AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, start_offset, messages, reason,
                                archived_at, checksum)
    SELECT $1, episode_id, 'transcript', head, tail, 'trim', $6, checksum FROM batch
), gone AS (
    DELETE FROM episode_messages m USING batch b
    WHERE m.agent_id = $1 AND m.episode_id > $2::uuid AND m.episode_id <= $3::uuid
      AND m.agent_id = b.agent_id AND m.episode_id = b.episode_id AND m.seq >= b.first_cold
), hot AS (
    UPDATE episodes e SET storage = 'trimmed'
    FROM batch b
    WHERE e.agent_id = $1 AND e.memory_id > $2::uuid AND e.memory_id <= $3::uuid
      AND e.agent_id = b.agent_id AND e.memory_id = b.episode_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT $1, b.episode_id, 'trimmed',
           jsonb_build_object('storage', eps.storage, 'messages', b.head + b.cold),
           jsonb_build_object('storage', 'trimmed', 'hot_messages', b.head,
                              'cold_messages', b.cold),
           'job:trim', $6
    FROM batch b JOIN eps ON eps.agent_id = b.agent_id AND eps.memory_id = b.episode_id
)
SELECT (SELECT count(*) FROM batch)::int AS n,
       (SELECT coalesce(sum(cold), 0) FROM batch)::bigint AS trimmed_messages;

-- name: archive_episodes_batch
-- One archive batch: agent $1's episodes with memory_id in ($2, $3] (see
-- trim_episodes_batch).  Closed episodes that ended before $4: the whole detail (a
-- trimmed one reassembled from its hot prefix and cold tail) and the transcript (a trimmed
-- one's hot head and cold tail as one part) move to memory_archive (start_offset 0); the
-- hot detail becomes NULL, so readers take left(coalesce(hot, ''), start_offset) ||
-- content.  Summary, metadata, links, chunks
-- and embeddings stay.  $5 is the job's clock.  The cold copy is inserted from the
-- stored value itself (not a detoasted copy), so a detail PostgreSQL had compressed
-- moves compressed, without being compressed again; its checksum and length come from
-- one detoasted copy (`|| ''` under OFFSET 0, evaluated once per row).
WITH batch AS (
    SELECT e.agent_id, e.memory_id, e.detail, e.storage
    FROM episodes e
    WHERE e.agent_id = $1 AND e.memory_id > $2::uuid AND e.memory_id <= $3::uuid
      AND e.state = 'closed' AND e.storage IN ('hot', 'trimmed') AND e.ended_at < $4
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
                      AND a.agent_id = $1 AND a.memory_id > $2::uuid AND a.memory_id <= $3::uuid
                WHERE b.detail IS NOT NULL
                OFFSET 0) AS joined
          OFFSET 0) AS detoasted
), cold_detail AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, start_offset, content, reason,
                                archived_at, checksum)
    SELECT $1, memory_id, 'detail', 0, detail, 'archive', $5, checksum
    FROM whole
    ON CONFLICT (agent_id, memory_id, part) DO UPDATE SET
        start_offset = 0, content = EXCLUDED.content, reason = 'archive',
        archived_at = EXCLUDED.archived_at, checksum = EXCLUDED.checksum
), transcript AS (
    -- the hot messages, and a trimmed transcript's cold tail with them: one whole part
    SELECT r.agent_id, r.episode_id, jsonb_agg(r.row ORDER BY r.seq) AS messages
    FROM (SELECT m.agent_id, m.episode_id, m.seq, to_jsonb(m) AS row
          FROM episode_messages m
          JOIN batch b ON m.agent_id = b.agent_id AND m.episode_id = b.memory_id
          WHERE m.agent_id = $1 AND m.episode_id > $2::uuid AND m.episode_id <= $3::uuid
          UNION ALL
          SELECT a.agent_id, a.memory_id, (x.row ->> 'seq')::int, x.row
          FROM memory_archive a
          JOIN batch b ON a.agent_id = b.agent_id AND a.memory_id = b.memory_id
          CROSS JOIN LATERAL jsonb_array_elements(a.messages) AS x(row)
          WHERE a.agent_id = $1 AND a.memory_id > $2::uuid AND a.memory_id <= $3::uuid
            AND a.part = 'transcript') AS r
    GROUP BY r.agent_id, r.episode_id
), cold_transcript AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, messages, reason, archived_at,
                                checksum)
    SELECT $1, episode_id, 'transcript', messages, 'archive', $5,
           hashtextextended(messages::text, 0)
    FROM transcript
    ON CONFLICT (agent_id, memory_id, part) DO UPDATE SET
        start_offset = 0, messages = EXCLUDED.messages, reason = 'archive',
        archived_at = EXCLUDED.archived_at, checksum = EXCLUDED.checksum
), gone AS (
    DELETE FROM episode_messages m USING batch b
    WHERE m.agent_id = $1 AND m.episode_id > $2::uuid AND m.episode_id <= $3::uuid
      AND m.agent_id = b.agent_id AND m.episode_id = b.memory_id
), hot AS (
    UPDATE episodes e SET storage = 'archived', detail = NULL
    FROM batch b
    WHERE e.agent_id = $1 AND e.memory_id > $2::uuid AND e.memory_id <= $3::uuid
      AND e.agent_id = b.agent_id AND e.memory_id = b.memory_id
), moved AS (
    -- each episode's audit values, gathered without a join (the planner, blind to these
    -- CTEs' sizes, would nest a loop over one inside another: quadratic in the batch)
    SELECT memory_id, max(storage) AS storage, sum(chars) AS chars,
           sum(messages) AS messages
    FROM (SELECT memory_id, storage, 0 AS chars, 0 AS messages FROM batch
          UNION ALL SELECT memory_id, NULL, chars, 0 FROM whole
          UNION ALL SELECT episode_id, NULL, 0, jsonb_array_length(messages)
          FROM transcript) AS parts
    GROUP BY memory_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT $1, memory_id, 'archived', jsonb_build_object('storage', storage),
           jsonb_build_object('storage', 'archived', 'detail_chars', chars,
                              'messages', messages),
           'job:archive', $5
    FROM moved
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

-- name: retention_agents
-- cross-agent, read-only: the agents with cold parts stored before $1, a page at a time.
SELECT agent_id FROM memory_archive WHERE archived_at < $1 AND agent_id > $2
GROUP BY agent_id ORDER BY agent_id LIMIT $3;

-- name: retention_batch
-- The retention policy for agent $1: cold parts stored before $2 are deleted for good
-- (audited per part), $3 at a time; their episodes become 'expired'.  $4 the job's clock.
WITH batch AS (
    SELECT agent_id, memory_id, part FROM memory_archive
    WHERE agent_id = $1 AND archived_at < $2 ORDER BY archived_at LIMIT $3 FOR UPDATE
), gone AS (
    DELETE FROM memory_archive a USING batch b
    WHERE a.agent_id = $1
      AND a.agent_id = b.agent_id AND a.memory_id = b.memory_id AND a.part = b.part
    RETURNING a.agent_id, a.memory_id, a.part, a.reason, a.archived_at,
              length(a.content) AS chars, jsonb_array_length(a.messages) AS messages
), hot AS (
    UPDATE episodes e SET storage = 'expired'
    FROM (SELECT DISTINCT agent_id, memory_id FROM batch) b
    WHERE e.agent_id = $1 AND e.agent_id = b.agent_id AND e.memory_id = b.memory_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT $1, memory_id, 'expired',
           jsonb_build_object('part', part, 'reason', reason, 'archived_at', archived_at,
                              'chars', chars, 'messages', messages),
           jsonb_build_object('storage', 'expired'), 'job:retention', $4
    FROM gone
)
SELECT count(*)::int AS n FROM batch;

-- name: lifecycle_promote_agents
-- cross-agent, read-only: the agents lifecycle_promote_facts has work for ($1 as there),
-- a page at a time.
SELECT m.agent_id
FROM memories m JOIN facts f ON f.agent_id = m.agent_id AND f.memory_id = m.id
WHERE m.kind = 'fact' AND m.status = 'active' AND f.confirmation_count >= $1
  AND NOT ('core' = ANY(m.tags)) AND m.agent_id > $2
GROUP BY m.agent_id ORDER BY m.agent_id LIMIT $3;

-- name: lifecycle_promote_facts
-- Agent $1's active facts confirmed at least $2 times get the 'core' tag, $3 at a time.
WITH hit AS (
    SELECT m.agent_id, m.id, m.tags, f.confirmation_count
    FROM memories m JOIN facts f ON f.agent_id = m.agent_id AND f.memory_id = m.id
    WHERE m.agent_id = $1 AND m.kind = 'fact' AND m.status = 'active'
      AND f.confirmation_count >= $2 AND NOT ('core' = ANY(m.tags))
    LIMIT $3 FOR UPDATE OF m SKIP LOCKED
), up AS (
    UPDATE memories m SET tags = array_append(m.tags, 'core'), version = m.version + 1,
                          updated_at = $4
    FROM hit h WHERE m.agent_id = $1 AND m.agent_id = h.agent_id AND m.id = h.id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT $1, id, 'promoted', jsonb_build_object('tags', tags),
           jsonb_build_object('tags', array_append(tags, 'core'),
                              'confirmations', confirmation_count),
           'job:lifecycle', $4
    FROM hit
)
SELECT count(*)::int AS n FROM hit;

-- name: lifecycle_flag_agents
-- cross-agent, read-only: the agents lifecycle_flag_procedures has work for ($1, $2 as
-- there), a page at a time.
SELECT m.agent_id
FROM memories m JOIN procedures p ON p.agent_id = m.agent_id AND p.memory_id = m.id
WHERE m.kind = 'procedure' AND m.status = 'active' AND p.activation_count >= $1
  AND p.effectiveness < $2 AND NOT ('needs_review' = ANY(m.tags)) AND m.agent_id > $3
GROUP BY m.agent_id ORDER BY m.agent_id LIMIT $4;

-- name: lifecycle_flag_procedures
-- Agent $1's active procedures used at least $2 times with effectiveness below $3 get
-- the 'needs_review' tag (a person or agent decides what happens next), $4 at a time.
WITH hit AS (
    SELECT m.agent_id, m.id, m.tags, p.activation_count, p.effectiveness
    FROM memories m JOIN procedures p ON p.agent_id = m.agent_id AND p.memory_id = m.id
    WHERE m.agent_id = $1 AND m.kind = 'procedure' AND m.status = 'active'
      AND p.activation_count >= $2 AND p.effectiveness < $3
      AND NOT ('needs_review' = ANY(m.tags))
    LIMIT $4 FOR UPDATE OF m SKIP LOCKED
), up AS (
    UPDATE memories m SET tags = array_append(m.tags, 'needs_review'),
                          version = m.version + 1, updated_at = $5
    FROM hit h WHERE m.agent_id = $1 AND m.agent_id = h.agent_id AND m.id = h.id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT $1, id, 'flagged', jsonb_build_object('tags', tags),
           jsonb_build_object('tags', array_append(tags, 'needs_review'),
                              'uses', activation_count, 'effectiveness', effectiveness),
           'job:lifecycle', $5
    FROM hit
)
SELECT count(*)::int AS n FROM hit;

-- name: lifecycle_retire_agents
-- cross-agent, read-only: the agents lifecycle_retire_censors has work for ($1, $2 as
-- there), a page at a time.
SELECT m.agent_id
FROM memories m JOIN censors c ON c.agent_id = m.agent_id AND c.memory_id = m.id
WHERE m.kind = 'censor' AND m.status = 'active' AND c.activation_count >= $1
  AND c.false_positive_count > $2::double precision * c.activation_count
  AND m.agent_id > $3
GROUP BY m.agent_id ORDER BY m.agent_id LIMIT $4;

-- name: lifecycle_retire_censors
-- Agent $1's active censors activated at least $2 times whose false positives exceed the
-- share $3 are retired (status archived: they stop warning and blocking), $4 at a time.
WITH hit AS (
    SELECT m.agent_id, m.id, c.activation_count, c.false_positive_count
    FROM memories m JOIN censors c ON c.agent_id = m.agent_id AND c.memory_id = m.id
    WHERE m.agent_id = $1 AND m.kind = 'censor' AND m.status = 'active'
      AND c.activation_count >= $2
      AND c.false_positive_count > $3::double precision * c.activation_count
    LIMIT $4 FOR UPDATE OF m SKIP LOCKED
), up AS (
    UPDATE memories m SET status = 'archived', version = m.version + 1, updated_at = $5
    FROM hit h WHERE m.agent_id = $1 AND m.agent_id = h.agent_id AND m.id = h.id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT $1, id, 'retired', jsonb_build_object('status', 'active'),
           jsonb_build_object('status', 'archived', 'activations', activation_count,
                              'false_positives', false_positive_count),
           'job:lifecycle', $5
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

-- name: expired_cache_agents
-- cross-agent, read-only: the agents with extraction cache rows past their expiry ($1),
-- a page at a time.
SELECT agent_id FROM extraction_cache WHERE expires_at < $1 AND agent_id > $2
GROUP BY agent_id ORDER BY agent_id LIMIT $3;

-- name: expire_extraction_cache
-- Agent $1's cache rows past their expiry ($2), $3 at a time, by primary key.
WITH gone AS (
    DELETE FROM extraction_cache
    WHERE agent_id = $1 AND (memory_id, query_sha256, max_tokens) IN (
        SELECT memory_id, query_sha256, max_tokens FROM extraction_cache
        WHERE agent_id = $1 AND expires_at < $2 LIMIT $3)
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

-- ---------------------------------------------------------------- fact backfill

-- name: backfill_upgrade_candidates
-- cross-agent (or agent $4; NULL: all), read-only: the next $3 episodes after ($1, $2)
-- in key order that the LLM backfill may upgrade: closed, facts_state 'not_extracted'
-- (closed without an LLM, its facts from the rules or none), the transcript still hot and
-- the summary still the rule's (an upgrade never overwrites an edited one).
-- backfill_upgrades_enqueue then skips those the queue already has.  (Two statements:
-- Citus does not join the coordinator's queue with distributed tables.)
SELECT e.agent_id, e.memory_id
FROM episodes e JOIN memories m ON m.agent_id = e.agent_id AND m.id = e.memory_id
WHERE e.facts_state = 'not_extracted' AND e.state = 'closed'
  AND ($4::text IS NULL OR e.agent_id = $4)
  AND (e.agent_id, e.memory_id) > ($1::text, $2::uuid)
  AND e.storage IN ('hot', 'trimmed', 'restored')
  AND m.status = 'active' AND m.summary_source = 'rule'
ORDER BY e.agent_id, e.memory_id
LIMIT $3;

-- name: backfill_upgrades_enqueue
-- Of the candidate episodes ($1 agent ids, $2 memory ids, in key order), up to $3 get a
-- $4 work item (the upgrade task): with $5 false those never tried (no upgrade item at all),
-- with $5 true those whose upgrades all failed (retried after the others).  The k-th
-- item of the run ($7 queued before this call) is due at now() + k * $6 seconds, so the
-- worker spreads the LLM calls.  Queued episodes stop qualifying, so each run continues
-- where the last one stopped.
WITH picked AS (
    SELECT c.agent_id, c.memory_id, c.n
    FROM unnest($1::text[], $2::uuid[]) WITH ORDINALITY AS c(agent_id, memory_id, n)
    WHERE NOT EXISTS (SELECT 1 FROM work_items w
                      WHERE w.agent_id = c.agent_id AND w.memory_id = c.memory_id
                        AND w.task = $4 AND w.state <> 'failed')
      AND $5::boolean = EXISTS (SELECT 1 FROM work_items f
                                WHERE f.agent_id = c.agent_id AND f.memory_id = c.memory_id
                                  AND f.task = $4 AND f.state = 'failed')
    ORDER BY c.n
    LIMIT $3
), queued AS (
    INSERT INTO work_items (agent_id, task, memory_id, run_after, payload)
    SELECT agent_id, $4, memory_id,
           now() + make_interval(secs => $6::float8 * ($7 + row_number() OVER (
               ORDER BY n) - 1)),
           '{"reason": "backfill"}'::jsonb
    FROM picked
    ON CONFLICT (agent_id, task, memory_id, dedup_key) WHERE state IN ('pending', 'running')
    DO NOTHING
    RETURNING agent_id
)
SELECT count(*)::int FROM queued;

-- name: backfill_upgrades_left
-- cross-agent (or agent $1; NULL: all): closed episodes whose facts no LLM has extracted,
-- by whether the backfill can reach them (archived transcripts are cold: restore first).
SELECT count(*) FILTER (WHERE e.storage IN ('hot', 'trimmed', 'restored'))::int AS waiting,
       count(*) FILTER (WHERE e.storage NOT IN ('hot', 'trimmed', 'restored'))::int
           AS archived
FROM episodes e
WHERE e.facts_state = 'not_extracted' AND e.state = 'closed'
  AND ($1::text IS NULL OR $1::text = e.agent_id);

-- name: backfill_rules_candidates
-- cross-agent (or agent $4; NULL: all), read-only, without an LLM: the next $3 episodes
-- after ($1, $2) in key order that no extractor has read (closed before the rule
-- extractor existed); backfill_rules_enqueue gives them an episode_learn item.
SELECT e.agent_id, e.memory_id
FROM episodes e
WHERE e.facts_state = 'not_extracted' AND e.facts_extractor = 'none'
  AND e.state = 'closed' AND ($4::text IS NULL OR e.agent_id = $4)
  AND (e.agent_id, e.memory_id) > ($1::text, $2::uuid)
  AND e.storage IN ('hot', 'trimmed', 'restored')
ORDER BY e.agent_id, e.memory_id
LIMIT $3;

-- name: backfill_rules_enqueue
-- Of the candidate episodes ($1 agent ids, $2 memory ids), up to $3 without an open
-- $4 item (the learning task) get one: its rule pass learns their stated facts and marks them
-- 'rules'.
WITH picked AS (
    SELECT c.agent_id, c.memory_id
    FROM unnest($1::text[], $2::uuid[]) WITH ORDINALITY AS c(agent_id, memory_id, n)
    WHERE NOT EXISTS (SELECT 1 FROM work_items w
                      WHERE w.agent_id = c.agent_id AND w.memory_id = c.memory_id
                        AND w.task = $4 AND w.state IN ('pending', 'running'))
    ORDER BY c.n
    LIMIT $3
), queued AS (
    INSERT INTO work_items (agent_id, task, memory_id, run_after, payload)
    SELECT agent_id, $4, memory_id, now(), '{"reason": "backfill"}'::jsonb
    FROM picked
    ON CONFLICT (agent_id, task, memory_id, dedup_key) WHERE state IN ('pending', 'running')
    DO NOTHING
    RETURNING agent_id
)
SELECT count(*)::int FROM queued;

-- ---------------------------------------------------------------- large agents' own indexes
-- (maintenance/indexes.py)

-- name: agent_index_candidates
-- cross-agent, read-only: the agents with more than $1 rows in memories (deleted ones
-- aside) or in episode_chunks, as recall counts them, the largest first, at most $2.
SELECT agent_id, max(n)::bigint AS rows
FROM (SELECT agent_id, count(*) AS n FROM memories WHERE status <> 'deleted'
      GROUP BY agent_id HAVING count(*) > $1
      UNION ALL
      SELECT agent_id, count(*) FROM episode_chunks
      GROUP BY agent_id HAVING count(*) > $1) AS sizes
GROUP BY agent_id ORDER BY max(n) DESC, agent_id LIMIT $2;

-- name: agent_indexes_present
-- The large agents' own indexes that exist, by name (the catalog: no agent's rows), and
-- whether each is valid (a CREATE INDEX CONCURRENTLY that failed leaves an invalid one).
SELECT c.relname::text AS name, i.indisvalid AS valid
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid IN ('memories'::regclass, 'episode_chunks'::regclass)
  AND c.relname ~ '^agent_(mem|chunk)_(vec|text)_[0-9a-f]{16}$';

-- name: agent_index_build_settings
-- The building session's memory: an HNSW graph that fits in maintenance_work_mem is built
-- several times faster than one that does not.
SELECT set_config('maintenance_work_mem', $1, false);

-- name: agent_index_create_ddl
-- One agent's own index, as DDL text built by PostgreSQL: %I quotes the name and table,
-- %L the agent id.  $1 name, $2 table, $3 access method and columns (a fixed shape from
-- maintenance/indexes.py), $4 agent id, $5 the rest of the predicate.
SELECT format('CREATE INDEX CONCURRENTLY %I ON %I USING %s WHERE agent_id = %L%s',
              $1::text, $2::text, $3::text, $4::text, $5::text);

-- name: agent_index_drop_ddl
SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', $1::text);

-- name: slots_unread_facts
-- cross-agent (or agent $4; NULL: all), read-only: the next $3 facts after ($1, $2) in
-- key order that no slot reader has seen (stored before facts had slots: valid_from NULL),
-- with when each was said: its message, else its episode's start, else when recorded.
SELECT f.agent_id, f.memory_id, f.content,
       COALESCE((SELECT em.created_at FROM episode_messages em
                 WHERE em.agent_id = f.agent_id AND em.episode_id = f.source_episode_id
                   AND em.seq = f.source_seq),
                (SELECT e.started_at FROM episodes e
                 WHERE e.agent_id = f.agent_id AND e.memory_id = f.source_episode_id),
                m.created_at) AS said_at
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.valid_from IS NULL AND ($4::text IS NULL OR f.agent_id = $4)
  AND (f.agent_id, f.memory_id) > ($1::text, $2::uuid)
ORDER BY f.agent_id, f.memory_id
LIMIT $3;

-- name: slots_set
-- One agent's facts ($2 ids) with the slots the rules read and when they were said; a
-- fact already read (valid_from set) is left alone.
UPDATE facts f
SET slot_subject = u.subject, slot_attribute = u.attribute, slot_value = u.value,
    slot_ended = u.ended, valid_from = u.said_at, event_at = u.event_at
FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::boolean[],
            $7::timestamptz[], $8::timestamptz[])
     AS u(id, subject, attribute, value, ended, said_at, event_at)
WHERE f.agent_id = $1 AND f.memory_id = u.id AND f.valid_from IS NULL;

-- ---------------------------------------------------------------- whole-table sweeps
-- The same batches on a single PostgreSQL, over every agent at once: one pass per job in
-- primary-key order, so the work is bounded by batches, not by agents (a store of many
-- small agents would otherwise pay a transaction per agent per step).  Each is the
-- per-agent statement it names, over the batch's keys instead of one agent's key range;
-- every row written keeps its own agent_id.  A batch is its keys ($1 agent ids, $2
-- memory ids, from episode_keys) and the range of agents they belong to ($3 to $4, which
-- bounds every read of a table): the planner knows how many keys there are, where a row
-- comparison such as (agent_id, memory_id) > ($1, $2) would be estimated from its first
-- column alone (a range inside one large agent then looks like a row or like the whole
-- agent, and the plan goes quadratic).  A batch within one agent runs the per-agent
-- statement instead (its estimates are exact there; maintenance/batches.py).  Citus
-- refuses row locks across shards, so on Citus the per-agent forms run instead
-- (maintenance/batches.py picks; db/distribution.py, SINGLE_NODE_ONLY).

-- name: batch_custom_plans
-- Each whole-table batch is planned for its own keys and the tables as they are now (the
-- archive grows during a run): a cached generic plan would keep the estimates of the
-- first batches.  Planning costs about a millisecond and a half a batch.
SET LOCAL plan_cache_mode = force_custom_plan;

-- name: batch_index_scans
-- ... and reads every table through its primary key, within the batch's agents: the
-- planner would otherwise hash a scan of the whole episodes table once per batch
-- (quadratic in the table's size over a run).
SET LOCAL enable_seqscan = off;

-- name: episode_keys
-- cross-agent, read-only: the next $3 episode keys after ($1, $2) in primary-key order,
-- as two arrays (episode_key_range_agent over every agent).
SELECT count(*)::int AS n,
       coalesce(array_agg(agent_id ORDER BY agent_id, memory_id), '{}') AS agents,
       coalesce(array_agg(memory_id ORDER BY agent_id, memory_id), '{}') AS ids
FROM (SELECT agent_id, memory_id FROM episodes
      WHERE (agent_id, memory_id) > ($1::text, $2::uuid)
      ORDER BY agent_id, memory_id LIMIT $3) AS k;

-- name: trim_episodes_all_agents
-- cross-agent: trim_episodes_batch over the keys $1, $2 of agents $3 to $4 ($5-$9 there
-- $4-$8), with trim_queue_work in the same statement ($10 the summary task, $11 the
-- upgrade task): one statement a batch.
WITH keys AS MATERIALIZED (
    SELECT * FROM unnest($1::text[], $2::uuid[]) AS k(agent_id, memory_id)
), batch AS (
    SELECT agent_id, memory_id, left(d, $6) AS head, right(d, -$6) AS tail,
           chars, hashtextextended(d, 0) AS checksum
    FROM (SELECT agent_id, memory_id, d, length(d) AS chars
          FROM (SELECT e.agent_id, e.memory_id, e.detail || '' AS d
                FROM keys k
                JOIN episodes e ON e.agent_id = k.agent_id AND e.memory_id = k.memory_id
                WHERE e.agent_id BETWEEN $3 AND $4
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
    WHERE e.agent_id BETWEEN $3 AND $4 AND e.agent_id = b.agent_id AND e.memory_id = b.memory_id
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
    FROM keys k
    JOIN episodes e ON e.agent_id = k.agent_id AND e.memory_id = k.memory_id
    JOIN memories m ON m.agent_id = k.agent_id AND m.id = k.memory_id
    WHERE e.agent_id BETWEEN $3 AND $4 AND m.agent_id BETWEEN $3 AND $4
      AND e.state = 'closed' AND e.ended_at < $5 AND m.status = 'active'
), short AS (
    SELECT c.agent_id, c.memory_id FROM candidates c
    WHERE c.chars < $8
      AND NOT EXISTS (SELECT 1 FROM work_items w
                      WHERE w.agent_id = c.agent_id AND w.memory_id = c.memory_id
                        AND w.task = $10 AND w.state <> 'failed')
), unextracted AS (
    SELECT c.agent_id, c.memory_id FROM candidates c
    WHERE $9::boolean AND c.facts_state = 'not_extracted'
      AND c.storage IN ('hot', 'trimmed', 'restored')
      AND NOT EXISTS (SELECT 1 FROM work_items w
                      WHERE w.agent_id = c.agent_id AND w.memory_id = c.memory_id
                        AND w.task = $11 AND w.state <> 'failed')
), queued AS (
    INSERT INTO work_items (agent_id, task, memory_id, run_after, payload)
    SELECT agent_id, $10, memory_id, now(), '{"reason": "short summary"}'::jsonb
    FROM short
    UNION ALL
    SELECT agent_id, $11, memory_id, now(), '{}'::jsonb FROM unextracted
    ON CONFLICT (agent_id, task, memory_id, dedup_key) WHERE state IN ('pending', 'running')
    DO NOTHING
)
SELECT (SELECT count(*) FROM batch)::int AS n,
       (SELECT coalesce(sum(chars - $6), 0) FROM batch)::bigint AS trimmed_chars,
       (SELECT count(*) FROM short)::int AS summaries_queued,
       (SELECT count(*) FROM unextracted)::int AS extractions_queued;

-- name: trim_transcripts_all_agents
-- cross-agent: trim_transcripts_batch over the keys $1, $2 of agents $3 to $4 ($5-$7
-- there $4-$6).
WITH eps AS (
    SELECT e.agent_id, e.memory_id, e.storage
    FROM unnest($1::text[], $2::uuid[]) AS k(agent_id, memory_id)
    JOIN episodes e ON e.agent_id = k.agent_id AND e.memory_id = k.memory_id
    WHERE e.agent_id BETWEEN $3 AND $4
      AND e.state = 'closed' AND e.storage IN ('hot', 'trimmed') AND e.ended_at < $5
      AND NOT EXISTS (SELECT 1 FROM memory_archive a
                      WHERE a.agent_id = e.agent_id AND a.memory_id = e.memory_id
                        AND a.part = 'transcript')
    FOR UPDATE OF e
), measured AS (
    SELECT m.agent_id, m.episode_id, m.seq, to_jsonb(m) AS row,
           sum(length(m.content)) OVER (PARTITION BY m.agent_id, m.episode_id ORDER BY m.seq)
               - length(m.content) AS offset_chars
    FROM episode_messages m
    JOIN eps ON m.agent_id = eps.agent_id AND m.episode_id = eps.memory_id
    WHERE m.agent_id BETWEEN $3 AND $4
), batch AS (
    SELECT agent_id, episode_id,
           jsonb_agg(row ORDER BY seq) FILTER (WHERE offset_chars >= $6) AS tail,
           count(*) FILTER (WHERE offset_chars < $6)::int AS head,
           count(*) FILTER (WHERE offset_chars >= $6)::int AS cold,
           min(seq) FILTER (WHERE offset_chars >= $6) AS first_cold,
           hashtextextended(jsonb_agg(row ORDER BY seq)::text, 0) AS checksum
    FROM measured GROUP BY agent_id, episode_id
    HAVING count(*) FILTER (WHERE offset_chars >= $6) > 0
), cold AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, start_offset, messages, reason,
                                archived_at, checksum)
    SELECT agent_id, episode_id, 'transcript', head, tail, 'trim', $7, checksum FROM batch
), gone AS (
    DELETE FROM episode_messages m USING batch b
    WHERE m.agent_id BETWEEN $3 AND $4
      AND m.agent_id = b.agent_id AND m.episode_id = b.episode_id AND m.seq >= b.first_cold
), hot AS (
    UPDATE episodes e SET storage = 'trimmed'
    FROM batch b
    WHERE e.agent_id BETWEEN $3 AND $4 AND e.agent_id = b.agent_id AND e.memory_id = b.episode_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT b.agent_id, b.episode_id, 'trimmed',
           jsonb_build_object('storage', eps.storage, 'messages', b.head + b.cold),
           jsonb_build_object('storage', 'trimmed', 'hot_messages', b.head,
                              'cold_messages', b.cold),
           'job:trim', $7
    FROM batch b JOIN eps ON eps.agent_id = b.agent_id AND eps.memory_id = b.episode_id
)
SELECT (SELECT count(*) FROM batch)::int AS n,
       (SELECT coalesce(sum(cold), 0) FROM batch)::bigint AS trimmed_messages;

-- name: archive_episodes_all_agents
-- cross-agent: archive_episodes_batch over the keys $1, $2 of agents $3 to $4 ($5, $6
-- there $4, $5).
WITH batch AS (
    SELECT e.agent_id, e.memory_id, e.detail, e.storage
    FROM unnest($1::text[], $2::uuid[]) AS k(agent_id, memory_id)
    JOIN episodes e ON e.agent_id = k.agent_id AND e.memory_id = k.memory_id
    WHERE e.agent_id BETWEEN $3 AND $4
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
                      AND a.part = 'detail' AND a.agent_id BETWEEN $3 AND $4
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
    SELECT r.agent_id, r.episode_id, jsonb_agg(r.row ORDER BY r.seq) AS messages
    FROM (SELECT m.agent_id, m.episode_id, m.seq, to_jsonb(m) AS row
          FROM episode_messages m
          JOIN batch b ON m.agent_id = b.agent_id AND m.episode_id = b.memory_id
          WHERE m.agent_id BETWEEN $3 AND $4
          UNION ALL
          SELECT a.agent_id, a.memory_id, (x.row ->> 'seq')::int, x.row
          FROM memory_archive a
          JOIN batch b ON a.agent_id = b.agent_id AND a.memory_id = b.memory_id
          CROSS JOIN LATERAL jsonb_array_elements(a.messages) AS x(row)
          WHERE a.agent_id BETWEEN $3 AND $4 AND a.part = 'transcript') AS r
    GROUP BY r.agent_id, r.episode_id
), cold_transcript AS (
    INSERT INTO memory_archive (agent_id, memory_id, part, messages, reason, archived_at,
                                checksum)
    SELECT agent_id, episode_id, 'transcript', messages, 'archive', $6,
           hashtextextended(messages::text, 0)
    FROM transcript
    ON CONFLICT (agent_id, memory_id, part) DO UPDATE SET
        start_offset = 0, messages = EXCLUDED.messages, reason = 'archive',
        archived_at = EXCLUDED.archived_at, checksum = EXCLUDED.checksum
), gone AS (
    DELETE FROM episode_messages m USING batch b
    WHERE m.agent_id BETWEEN $3 AND $4 AND m.agent_id = b.agent_id AND m.episode_id = b.memory_id
), hot AS (
    UPDATE episodes e SET storage = 'archived', detail = NULL
    FROM batch b
    WHERE e.agent_id BETWEEN $3 AND $4 AND e.agent_id = b.agent_id AND e.memory_id = b.memory_id
), moved AS (
    -- as in archive_episodes_batch: no join of one CTE with another
    SELECT agent_id, memory_id, max(storage) AS storage, sum(chars) AS chars,
           sum(messages) AS messages
    FROM (SELECT agent_id, memory_id, storage, 0 AS chars, 0 AS messages FROM batch
          UNION ALL SELECT agent_id, memory_id, NULL, chars, 0 FROM whole
          UNION ALL SELECT agent_id, episode_id, NULL, 0, jsonb_array_length(messages)
          FROM transcript) AS parts
    GROUP BY agent_id, memory_id
), audit AS (
    INSERT INTO memory_events (agent_id, memory_id, event, old_values, new_values, actor,
                               created_at)
    SELECT agent_id, memory_id, 'archived', jsonb_build_object('storage', storage),
           jsonb_build_object('storage', 'archived', 'detail_chars', chars,
                              'messages', messages),
           'job:archive', $6
    FROM moved
)
SELECT (SELECT count(*) FROM batch)::int AS n,
       (SELECT count(*) FROM transcript)::int AS archived_transcripts,
       (SELECT coalesce(sum(jsonb_array_length(messages)), 0) FROM transcript)::bigint
           AS archived_messages;

-- name: retention_all_agents
-- cross-agent: retention_batch over every agent ($1-$3 there $2-$4), the oldest first.
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

-- name: lifecycle_promote_facts_all_agents
-- cross-agent: lifecycle_promote_facts over every agent ($1-$3 there $2-$4).
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

-- name: lifecycle_flag_procedures_all_agents
-- cross-agent: lifecycle_flag_procedures over every agent ($1-$4 there $2-$5).
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

-- name: lifecycle_retire_censors_all_agents
-- cross-agent: lifecycle_retire_censors over every agent ($1-$4 there $2-$5).
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

-- name: expire_extraction_cache_all_agents
-- cross-agent: expire_extraction_cache over every agent ($1, $2 there $2, $3), through
-- the expiry index: the batch's keys first (materialized), then the rows by key.
WITH batch AS MATERIALIZED (
    SELECT agent_id, memory_id, query_sha256, max_tokens FROM extraction_cache
    WHERE expires_at < $1 LIMIT $2
), gone AS (
    DELETE FROM extraction_cache c USING batch b
    WHERE c.agent_id = b.agent_id AND c.memory_id = b.memory_id
      AND c.query_sha256 = b.query_sha256 AND c.max_tokens = b.max_tokens
    RETURNING 1
)
SELECT count(*)::int AS n FROM gone;
