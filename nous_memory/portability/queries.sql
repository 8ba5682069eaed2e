-- Export, import and forgetting an agent.  Most of their statements are derived from
-- the typed rows (db/bulk.py); these are the fixed ones.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- name: portability_agent_exists
-- Whether the agent has anything an export carries (memories or a working-memory policy).
SELECT EXISTS (SELECT 1 FROM memories WHERE agent_id = $1)
    OR EXISTS (SELECT 1 FROM conversation_policies WHERE agent_id = $1);

-- name: portability_lock_agent
-- Imports and erasures of one agent take turns with each other and with fact learning
-- (the same key as lock_agent_facts), until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext('nous_memory.facts'), hashtext($1));

-- name: portability_other_model_rows
-- Imported rows whose vectors another model made: the housekeeping job re-embeds them.
SELECT (SELECT count(*) FROM memories
        WHERE agent_id = $1 AND embedding_model IS DISTINCT FROM $2
          AND embedding IS NOT NULL)
     + (SELECT count(*) FROM episode_chunks
        WHERE agent_id = $1 AND embedding_model IS DISTINCT FROM $2
          AND embedding IS NOT NULL);

-- name: erasure_record
-- The receipt of a forgotten agent: a hash of its id, never the id or any content.
INSERT INTO agent_erasures (agent_sha256, row_counts, total_rows, actor)
VALUES ($1, $2, $3, $4)
RETURNING id, erased_at;


-- name: erasure_unlink_agent
-- Before an erasure: the links between the agent's own memories (a fact's or decision's
-- source episode, a fact's supersession chain) become NULL, so its tables can be emptied
-- in any order; the keys carry no ON DELETE SET NULL (Citus refuses it on keys that
-- include the distribution column).
-- (A data-modifying WITH runs to completion whether or not the statement reads it.)
WITH facts_unlinked AS (
    UPDATE facts SET source_episode_id = NULL, supersedes_id = NULL, superseded_by_id = NULL
    WHERE agent_id = $1
      AND (source_episode_id IS NOT NULL OR supersedes_id IS NOT NULL
           OR superseded_by_id IS NOT NULL)
)
UPDATE decisions SET source_episode_id = NULL
WHERE agent_id = $1 AND source_episode_id IS NOT NULL;

-- ---------------------------------------------------------------- people

-- name: person_memories
-- A person's memories (people/): theirs alone and the conversations they were in, any
-- status (an export carries the history too; the erasure of a person reads these).
SELECT id, people FROM memories WHERE agent_id = $1 AND $2::text = ANY(people);

-- name: person_leave_memories
-- A forgotten person leaves the memories they shared with others ($3 ids): the others
-- keep them, the person is no longer among their people.
UPDATE memories SET people = array_remove(people, $2::text)
WHERE agent_id = $1 AND id = ANY($3::uuid[]);

-- name: person_leave_messages
-- ... and the messages they said in them are no longer anyone's in particular.
UPDATE episode_messages SET person = NULL
WHERE agent_id = $1 AND episode_id = ANY($3::uuid[]) AND person = $2::text;
