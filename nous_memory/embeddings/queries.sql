-- The embedding cache: a text's vector under the SHA-256 of the text, per agent and
-- model.  `-- name: x` starts a query; the comment lines after it say why.

-- name: embedding_cache_lookup
-- $3: sha256 digests of the texts; one round trip for a whole batch.
SELECT text_sha256, embedding
FROM embedding_cache
WHERE agent_id = $1 AND model = $2 AND text_sha256 = ANY($3::bytea[]);

-- name: embedding_cache_store
INSERT INTO embedding_cache (agent_id, model, text_sha256, embedding)
SELECT $1, $2, h, e FROM unnest($3::bytea[], $4::vector[]) AS u(h, e)
ON CONFLICT (agent_id, model, text_sha256) DO NOTHING;

-- name: embedding_cache_forget
DELETE FROM embedding_cache WHERE agent_id = $1 AND model = $2 AND text_sha256 = $3;
