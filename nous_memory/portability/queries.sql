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

