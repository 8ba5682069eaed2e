-- API keys made at run time (table api_keys, coordinator-local: no agent_id).

-- name: key_create
-- A new key; a live name is unique (api_keys_live_name), so a taken one fails here.
INSERT INTO api_keys (name, secret_sha256, prefix, role, agents, created_by)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, name, prefix, role, agents, created_at, created_by, revoked_at, revoked_by;

-- name: key_lookup
-- The live key behind a presented secret: one probe of the unique index on the digest,
-- on every authenticated request, so a revocation holds on every replica at once.
SELECT name, role, agents FROM api_keys WHERE secret_sha256 = $1 AND revoked_at IS NULL;

-- name: key_list
-- Every key as its owner sees it (never the digest); revoked ones only when asked.
SELECT id, name, prefix, role, agents, created_at, created_by, revoked_at, revoked_by
FROM api_keys WHERE revoked_at IS NULL OR $1
ORDER BY name, created_at;

-- name: key_revoke
-- Revoke the live key of a name; the row stays as the record of what it could do.
UPDATE api_keys SET revoked_at = now(), revoked_by = $2
WHERE name = $1 AND revoked_at IS NULL
RETURNING id, name, prefix, role, agents, created_at, created_by, revoked_at, revoked_by;
