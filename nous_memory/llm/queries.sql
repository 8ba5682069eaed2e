-- LLM call records: one row per HTTP attempt, totals per agent.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- ---------------------------------------------------------------- llm calls

-- name: insert_llm_call
-- One HTTP attempt; created_at comes from the caller (when the attempt started).
INSERT INTO llm_calls (agent_id, purpose, model, prompt_tokens, completion_tokens,
                       tokens_source, latency_ms, outcome, error, created_at)
SELECT $1, $2::text, $3::text, $4::integer, $5::integer, $6::text, $7::integer,
       $8::text, $9::text, $10::timestamptz;

-- name: llm_usage_by_agent
-- Per purpose and model; $2 (optional) keeps calls made at or after that time.
SELECT purpose, model,
       count(*) AS calls,
       count(*) FILTER (WHERE outcome = 'ok') AS ok_calls,
       coalesce(sum(prompt_tokens), 0)::bigint AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::bigint AS completion_tokens,
       count(*) FILTER (WHERE tokens_source = 'estimated') AS estimated_calls,
       coalesce(sum(latency_ms), 0)::bigint AS latency_ms
FROM llm_calls
WHERE agent_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2)
GROUP BY purpose, model
ORDER BY purpose, model;

-- name: llm_usage_by_day
-- Per UTC day and purpose (the task that called the LLM), newest day first, over the
-- last $2 days: attempts, failures (no usable answer) and tokens.
SELECT (created_at AT TIME ZONE 'UTC')::date AS day, purpose,
       count(*) AS calls,
       count(*) FILTER (WHERE outcome <> 'ok') AS failed_calls,
       coalesce(sum(prompt_tokens), 0)::bigint AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::bigint AS completion_tokens
FROM llm_calls
WHERE agent_id = $1 AND created_at >= now() - make_interval(days => $2)
GROUP BY 1, 2
ORDER BY 1 DESC, 2;
