-- Schema version 4.
--
-- Forgetting an agent (portability/erase.py) keeps a content-free receipt of the erasure.

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
