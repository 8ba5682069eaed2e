-- Fact consolidation: the hash lookup, nearest active facts, confirmations, supersession chains.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

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
-- Of the same people ($3) only: one person's statement never confirms, merges into or
-- brings back another's fact, nor a shared one (its history would hold their words).
SELECT m.id, m.status, f.confidence
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.normalized_hash = $2 AND m.status IN ('active', 'superseded')
  AND m.people = $3::text[]
ORDER BY m.status = 'active' DESC, m.updated_at DESC
LIMIT 1;

-- name: nearest_active_facts
-- Raw cosine similarity to this agent's active facts embedded with the same model, of
-- the same people ($5) only: one person's new value never supersedes another's.
SELECT m.id, f.content, 1 - (m.embedding <=> $2) AS cosine, f.slot_subject, f.slot_attribute
FROM memories m JOIN facts f ON f.agent_id = m.agent_id AND f.memory_id = m.id
WHERE m.agent_id = $1 AND m.kind = 'fact' AND m.status = 'active' AND m.embedding_model = $3
  AND m.people = $5::text[]
ORDER BY m.embedding <=> $2
LIMIT $4;

-- name: fact_for_update
-- Any status: a past value of a slot is confirmed too (under the agent's fact lock).
SELECT f.content, f.confidence FROM facts f
JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.memory_id = $2 AND m.status IN ('active', 'superseded')
FOR UPDATE OF f;

-- name: fact_confirm
-- $4/$5: new wording and its hash when a better wording is kept, else NULL.
UPDATE facts SET confirmation_count = confirmation_count + 1, last_confirmed_at = now(),
                 confidence = $3, content = COALESCE($4, content),
                 normalized_hash = COALESCE($5, normalized_hash)
WHERE agent_id = $1 AND memory_id = $2;

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
-- direction, oldest first: in the order they were said (a value imported late goes
-- where it was said).
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
LEFT JOIN facts f ON f.agent_id = $1 AND f.memory_id = r.id
WHERE r.agent_id = $1 AND r.id IN (SELECT memory_id FROM chain)
ORDER BY COALESCE(f.valid_from, r.created_at), r.created_at, r.id;

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

-- ---------------------------------------------------------------- possible conflicts

-- name: fact_conflict_pairs
-- The review queue: pairs of active facts flagged as a possible conflict, each pair
-- once (the lower id first when both sides carry the flag), newest first.
SELECT a.memory_id AS fact_id, other AS other_id
FROM facts a
CROSS JOIN LATERAL unnest(a.conflicts_with) AS other
JOIN memories ma ON ma.agent_id = a.agent_id AND ma.id = a.memory_id
JOIN memories mb ON mb.agent_id = a.agent_id AND mb.id = other
WHERE a.agent_id = $1 AND cardinality(a.conflicts_with) > 0
  AND ma.status = 'active' AND mb.status = 'active'
  AND (a.memory_id < other OR NOT EXISTS (
      SELECT 1 FROM facts x
      WHERE x.agent_id = $1 AND x.memory_id = other AND a.memory_id = ANY(x.conflicts_with)))
ORDER BY greatest(ma.created_at, mb.created_at) DESC, a.memory_id, other
LIMIT $2;

-- name: fact_conflicts_for_update
-- Both sides of a flagged pair, locked: each one's flags and status.
SELECT f.memory_id, f.conflicts_with, f.confidence, m.status
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.memory_id = ANY($2::uuid[])
FOR UPDATE OF f;

-- name: fact_unflag_conflict
-- Drops the "possible conflict" link from $2 to $3 (called both ways).
UPDATE facts SET conflicts_with = array_remove(conflicts_with, $3)
WHERE agent_id = $1 AND memory_id = $2;

-- name: memory_records_by_ids
SELECT * FROM memory_records WHERE agent_id = $1 AND id = ANY($2::uuid[]);

-- name: fact_link_successor
-- A restored fact kept as an older version of $3 (the version current now).
UPDATE facts SET superseded_by_id = $3 WHERE agent_id = $1 AND memory_id = $2;

-- name: fact_link_predecessor
-- $2 now supersedes $3, when $2 names no predecessor yet (one link per fact: an older
-- one it already names stays, and the chain still reaches $3 through $3's own link).
UPDATE facts SET supersedes_id = $3
WHERE agent_id = $1 AND memory_id = $2 AND supersedes_id IS NULL;

-- name: fact_stated
-- What a fact says and when it was last stated (created or confirmed), for a restore
-- that must tell the newer of two versions.
SELECT f.content, f.confidence, greatest(m.created_at, f.last_confirmed_at) AS stated_at
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.memory_id = $2;

-- name: facts_in_slot
-- Every fact of one slot ($2 subject, $3 attribute), current and past, with when it was
-- said (a fact from before slots: when it was recorded).  Through facts_slot.  Of the
-- same people ($4): each person's slot has a timeline of its own; and the agent's shared
-- facts of a slot about that very person (its subject their key: "Ana lives in Lisbon"
-- told by the backend, then Ana's own "I moved to Porto"), which their own word updates.
SELECT f.memory_id AS id, m.status, f.content, f.slot_value, f.slot_ended, f.superseded_by_id,
       COALESCE(f.valid_from, m.created_at) AS said_at, m.people
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.slot_subject = $2 AND f.slot_attribute = $3
  AND f.slot_attribute IS NOT NULL AND m.status IN ('active', 'superseded')
  AND (m.people = $4::text[] OR (cardinality(m.people) = 0 AND f.slot_subject = ANY($4::text[])))
ORDER BY said_at, m.created_at
FOR UPDATE OF f;

-- name: fact_valid_until
-- Until when a fact held: the moment its successor was said ($3; NULL: it holds again).
UPDATE facts SET valid_until = $3 WHERE agent_id = $1 AND memory_id = $2;

-- name: fact_relink
-- A past value placed between two others: $2 now leads to $3 (its successor), and $3
-- comes from $2; confidence untouched.
UPDATE facts SET superseded_by_id = CASE WHEN memory_id = $2 THEN $3 ELSE superseded_by_id END,
                 supersedes_id = CASE WHEN memory_id = $3 THEN $2 ELSE supersedes_id END
WHERE agent_id = $1 AND memory_id IN ($2, $3);

-- name: fact_said_at
-- When a fact was said (a fact from before slots: when it was recorded).
SELECT COALESCE(f.valid_from, m.created_at)
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.memory_id = $2;

-- name: fact_cosine
-- Raw cosine of a stored fact to a new statement's vector ($3; $4 the model): what a
-- slot decision reports as its similarity.
SELECT CASE WHEN embedding_model = $4 THEN 1 - (embedding <=> $3) END
FROM memories WHERE agent_id = $1 AND id = $2;
