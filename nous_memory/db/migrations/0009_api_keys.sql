-- Schema version 9.
--
-- API keys kept in the database: created, listed, revoked and rotated at run time, each
-- scoped to its agents and a role; only a SHA-256 of the secret is stored.

CREATE TABLE api_keys (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text        NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    secret_sha256 bytea      NOT NULL UNIQUE CHECK (length(secret_sha256) = 32),
    prefix       text        NOT NULL CHECK (length(prefix) BETWEEN 4 AND 16),
    role         text        NOT NULL CHECK (role IN ('read-only', 'read-write', 'owner')),
    agents       text[]      CHECK (agents IS NULL OR cardinality(agents) BETWEEN 1 AND 1000),
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   text        NOT NULL CHECK (created_by <> ''),
    revoked_at   timestamptz,
    revoked_by   text
);

CREATE UNIQUE INDEX api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;
