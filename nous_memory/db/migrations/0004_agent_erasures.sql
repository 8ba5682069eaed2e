-- Schema version 4.
--
-- Forgetting an agent (portability/erase.py) keeps a content-free receipt of the erasure,
-- and deleting facts no longer scans the facts table for supersession links.

-- One row per agent erased by forget_agent, kept after the agent is gone.  It holds no
-- content and not even the agent id: only its SHA-256 (whoever knows the id can ask
-- whether and when it was erased), how many rows each table lost, and who asked.  Not
-- tenant data, so it has no agent_id: erasing the agent must not erase its receipt.
CREATE TABLE agent_erasures (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_sha256  bytea       NOT NULL CHECK (length(agent_sha256) = 32),
    erased_at     timestamptz NOT NULL DEFAULT now(),
    row_counts    jsonb       NOT NULL CHECK (jsonb_typeof(row_counts) = 'object'),
    total_rows    bigint      NOT NULL CHECK (total_rows >= 0),
    -- the surface or person that asked (cli, api, python, or a name given with --actor)
    actor         text        NOT NULL CHECK (actor <> '')
);

CREATE INDEX agent_erasures_by_agent ON agent_erasures (agent_sha256, erased_at);

-- Deleting a fact (a purge, forgetting an agent) makes PostgreSQL look for the facts that
-- point at it through the supersession links; without these, every deleted fact costs
-- two scans of the whole table.  Partial: most facts have no link.
CREATE INDEX facts_supersedes ON facts (agent_id, supersedes_id)
    WHERE supersedes_id IS NOT NULL;
CREATE INDEX facts_superseded_by ON facts (agent_id, superseded_by_id)
    WHERE superseded_by_id IS NOT NULL;
