-- The read path: recall, context assembly's reads, tier-2 extraction cache, expand, access counts.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- ---------------------------------------------------------------- context

-- name: context_always_on
-- Censors (matched against the query in Python) and pinned profile facts ($2: the
-- categories), considered on every call whatever the ranking says.  $3, $4: limits.
-- Only facts the user stated (or an owner confirmed by setting source_kind) are pinned:
-- an extracted "rule" must never become a standing instruction by itself.  Pins are the
-- $4 closest in meaning to the query ($5, its vector; $6 the model), so an agent with
-- hundreds of profile facts gets the relevant ones, with their raw cosine.  The facts
-- branch reads its rows through facts_pinned, not through every fact of the agent.
-- "About the user now" (part 'now', through facts_slot): the current facts of slots
-- whose attribute the query asks about ($7: attributes and attribute families such as
-- 'pet:'), whose subject it names ($8: its words), or one of the core attributes ($9)
-- of the user's own slots, plus the $10 closest slot facts by meaning; at most $10 each.
-- "Upcoming" (part 'event', through facts_events): plans after $11 (as_of), soonest
-- first, $12 of them.  A current slot value comes with its slot's old values (value,
-- until when it held), so a recalled text stating one is marked older.  Every branch is
-- scoped to the agent.  $13: who is asking (people/; NULL: the owner), as person keys
-- that a memory's people must all hold (one person; a group's members): every fact
-- branch keeps to theirs and the shared ones, a slot's old values to the fact's people.
(SELECT m.id, m.kind, m.summary, m.importance, c.trigger_pattern, NULL::text AS category,
        NULL::float8 AS cosine, 'censor' AS part, NULL::text AS slot_subject,
        NULL::text AS slot_attribute, NULL::timestamptz AS valid_from,
        NULL::timestamptz AS event_at, false AS own, NULL::text AS slot_value,
        NULL::jsonb AS old_values
 FROM censors c JOIN memories m ON m.agent_id = c.agent_id AND m.id = c.memory_id
 WHERE c.agent_id = $1 AND m.status = 'active'
   AND ($13::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $13::text[])
 ORDER BY m.importance DESC, m.id LIMIT $3)
UNION ALL
(SELECT m.id, m.kind, m.summary, m.importance, NULL, lower(f.category),
        CASE WHEN m.embedding_model = $6 THEN 1 - (m.embedding <=> $5) END, 'pin',
        f.slot_subject, f.slot_attribute, f.valid_from, NULL, true, f.slot_value, NULL
 FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
 WHERE f.agent_id = $1 AND m.status = 'active' AND lower(f.category) = ANY($2::text[])
   AND ($13::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $13::text[])
   AND f.source_kind = 'user_stated'
 ORDER BY (CASE WHEN m.embedding_model = $6 THEN m.embedding <=> $5 END) NULLS LAST,
          m.importance DESC, m.id LIMIT $4)
UNION ALL
(SELECT s.*, (SELECT jsonb_agg(jsonb_build_array(o.slot_value, o.valid_until))
              FROM facts o JOIN memories om ON om.agent_id = o.agent_id AND om.id = o.memory_id
              WHERE o.agent_id = $1 AND o.slot_subject = s.slot_subject
                AND o.slot_attribute = s.slot_attribute AND om.status = 'superseded'
                AND NOT o.slot_ended AND o.slot_value <> ''
                AND om.people = (SELECT x.people FROM memories x
                                 WHERE x.agent_id = $1 AND x.id = s.id)) AS old_values
 FROM ((SELECT m.id, m.kind, m.summary, m.importance, NULL::text AS trigger_pattern,
               lower(f.category) AS category,
               CASE WHEN m.embedding_model = $6 THEN 1 - (m.embedding <=> $5) END AS cosine,
               'now' AS part, f.slot_subject, f.slot_attribute, f.valid_from, f.event_at,
               f.slot_subject = 'user' OR f.slot_subject = lower(f.subject) AS own,
               f.slot_value
        FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
        WHERE f.agent_id = $1 AND f.slot_attribute IS NOT NULL AND m.status = 'active'
          AND ($13::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $13::text[])
          AND (f.slot_attribute = ANY($7::text[])
               OR split_part(f.slot_attribute, ':', 1) || ':' = ANY($7::text[])
               OR f.slot_subject = ANY($8::text[])
               OR (f.slot_attribute = ANY($9::text[])
                   AND (f.slot_subject = 'user' OR f.slot_subject = lower(f.subject))))
        ORDER BY (CASE WHEN m.embedding_model = $6 THEN m.embedding <=> $5 END) NULLS LAST,
                 m.id
        LIMIT $10 * 3)
       UNION ALL
       (SELECT m.id, m.kind, m.summary, m.importance, NULL, lower(f.category),
               CASE WHEN m.embedding_model = $6 THEN 1 - (m.embedding <=> $5) END, 'near',
               f.slot_subject, f.slot_attribute, f.valid_from, f.event_at,
               f.slot_subject = 'user' OR f.slot_subject = lower(f.subject), f.slot_value
        FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
        WHERE f.agent_id = $1 AND f.slot_attribute IS NOT NULL AND m.status = 'active'
          AND ($13::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $13::text[])
        ORDER BY (CASE WHEN m.embedding_model = $6 THEN m.embedding <=> $5 END) NULLS LAST,
                 m.id
        LIMIT $10)) s)
UNION ALL
(SELECT m.id, m.kind, m.summary, m.importance, NULL, lower(f.category),
        CASE WHEN m.embedding_model = $6 THEN 1 - (m.embedding <=> $5) END, 'event',
        f.slot_subject, f.slot_attribute, f.valid_from, f.event_at,
        f.slot_subject IS NULL OR f.slot_subject = 'user' OR f.slot_subject = lower(f.subject),
        f.slot_value, NULL
 FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
 WHERE f.agent_id = $1 AND f.event_at >= $11 AND m.status = 'active'
   AND ($13::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $13::text[])
 ORDER BY f.event_at, m.id LIMIT $12);

-- name: context_later_cosines
-- How close in meaning the statements that might bear on one another are, pairwise: the
-- current values shown and the people's statements among the candidates, each an item
-- ($2 memory ids, $3 chunk numbers, -1 for a memory itself).  Raw cosine of the stored
-- vectors of the query's model ($4) only; a few dozen items a call at most.  With each,
-- how many people its memory (a chunk: its conversation) belongs to: a turn that names
-- no one in a conversation of several people says nothing of whose value it is.
WITH items AS (
    SELECT k.memory_id, k.chunk_no, c.embedding, cardinality(e.people) AS people
    FROM unnest($2::uuid[], $3::int[]) AS k(memory_id, chunk_no)
    JOIN episode_chunks c ON c.agent_id = $1 AND c.episode_id = k.memory_id
                         AND c.chunk_no = k.chunk_no
    JOIN memories e ON e.agent_id = $1 AND e.id = c.episode_id
    WHERE c.embedding_model = $4
    UNION ALL
    SELECT k.memory_id, -1, m.embedding, cardinality(m.people)
    FROM unnest($2::uuid[], $3::int[]) AS k(memory_id, chunk_no)
    JOIN memories m ON m.agent_id = $1 AND m.id = k.memory_id
    WHERE k.chunk_no = -1 AND m.embedding_model = $4)
SELECT a.memory_id AS a_id, a.chunk_no AS a_chunk, b.memory_id AS b_id,
       b.chunk_no AS b_chunk, 1 - (a.embedding <=> b.embedding) AS cosine,
       a.people AS a_people, b.people AS b_people
FROM items a JOIN items b ON (a.memory_id, a.chunk_no) < (b.memory_id, b.chunk_no);

-- name: context_tier2
-- The complex records among the candidates ($2) with their unexpired extraction for this
-- query ($3 sha256, $4 max tokens).  The source text is sent only on a miss, capped at $5
-- characters for the hot-path truncation (the queued LLM extraction reads it whole).
-- An episode without detail (a conversation built with start/append/close) has its
-- transcript as detail: its verbatim chunks in order, which stay hot when the jobs move
-- the transcript's messages to cold storage.
SELECT m.id, m.kind, c.content AS cached, c.source AS cached_source,
       CASE WHEN c.content IS NULL
            THEN left(COALESCE(e.detail, (
                SELECT string_agg(t.content, E'\n' ORDER BY t.chunk_no)
                FROM (SELECT k.chunk_no, k.content,
                             sum(length(k.content) + 1) OVER (ORDER BY k.chunk_no) AS upto
                      FROM episode_chunks k
                      WHERE k.agent_id = $1 AND k.episode_id = m.id) AS t
                WHERE t.upto - length(t.content) - 1 < $5::integer)), $5::integer) END AS detail,
       e.title, p.name,
       CASE WHEN c.content IS NULL THEN p.goals END AS goals,
       CASE WHEN c.content IS NULL THEN p.core_patterns END AS core_patterns,
       CASE WHEN c.content IS NULL THEN p.implementation_notes END AS notes
FROM memories m
LEFT JOIN episodes e ON m.kind = 'episode' AND e.agent_id = m.agent_id AND e.memory_id = m.id
LEFT JOIN LATERAL (
    SELECT sum(length(k.content) + 1) - 1 AS chars FROM episode_chunks k
    WHERE e.detail IS NULL AND k.agent_id = $1 AND k.episode_id = m.id
) AS transcript ON m.kind = 'episode'
LEFT JOIN procedures p
       ON m.kind = 'procedure' AND p.agent_id = m.agent_id AND p.memory_id = m.id
LEFT JOIN extraction_cache c
       ON c.agent_id = m.agent_id AND c.memory_id = m.id AND c.query_sha256 = $3
      AND c.max_tokens = $4 AND c.expires_at > now()
WHERE m.agent_id = $1 AND m.id = ANY($2::uuid[])
  AND ((m.kind = 'episode' AND COALESCE(length(e.detail), transcript.chars) > 1000)
       OR (m.kind = 'procedure' AND cardinality(p.core_patterns) > 5));

-- name: extraction_source
-- The whole source text of one complex record, for the LLM extraction (worker): an
-- episode's detail, or without one its transcript (its chunks, as in context_tier2).
SELECT m.kind, m.status, e.title,
       COALESCE(e.detail, (SELECT left(string_agg(k.content, E'\n' ORDER BY k.chunk_no),
                                       1000000)
                           FROM episode_chunks k
                           WHERE k.agent_id = $1 AND k.episode_id = $2)) AS detail,
       p.name, p.goals, p.core_patterns, p.implementation_notes AS notes
FROM memories m
LEFT JOIN episodes e ON m.kind = 'episode' AND e.agent_id = m.agent_id AND e.memory_id = m.id
LEFT JOIN procedures p
       ON m.kind = 'procedure' AND p.agent_id = m.agent_id AND p.memory_id = m.id
WHERE m.agent_id = $1 AND m.id = $2;

-- name: extraction_cache_fresh
SELECT source FROM extraction_cache
WHERE agent_id = $1 AND memory_id = $2 AND query_sha256 = $3 AND max_tokens = $4
  AND expires_at > now();

-- name: extraction_cache_store
-- An LLM result replaces anything; a rule result never replaces a fresh LLM one.
-- EXCLUDED.created_at is the column default, now(): Citus refuses a function in DO UPDATE
-- SET and its WHERE on a distributed table.
INSERT INTO extraction_cache (agent_id, memory_id, query_sha256, max_tokens, content, source,
                              model, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))
ON CONFLICT (agent_id, memory_id, query_sha256, max_tokens) DO UPDATE SET
    content = EXCLUDED.content, source = EXCLUDED.source, model = EXCLUDED.model,
    created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
WHERE extraction_cache.source = 'rule' OR EXCLUDED.source = 'llm'
   OR extraction_cache.expires_at <= EXCLUDED.created_at;

-- name: memories_accessed
-- Deferred, batched access bookkeeping ($2 ids, $3 hit counts, $4 time of the last one);
-- not a change of the record, so version and updated_at stay.
UPDATE memories m SET access_count = m.access_count + u.n,
       last_accessed_at = GREATEST(m.last_accessed_at, $4::timestamptz)
FROM unnest($2::uuid[], $3::integer[]) AS u(id, n)
WHERE m.agent_id = $1 AND m.id = u.id;

-- ---------------------------------------------------------------- expand

-- name: memory_by_ref
-- A short ref (kind + the first hex digits of the id) as a range on the primary key.
SELECT id FROM memories
WHERE agent_id = $1 AND id BETWEEN $2::uuid AND $3::uuid AND ($4::text IS NULL OR kind = $4)
  AND status <> 'deleted'
ORDER BY id LIMIT 2;

-- name: memory_archive_parts
-- full_detail: the hot head (raw, as stored) followed by the archived rest.
SELECT a.part, a.start_offset, a.content, a.messages, a.reason, a.archived_at,
       CASE WHEN a.part = 'detail'
            THEN left(COALESCE(e.detail, ''), a.start_offset) || a.content END AS full_detail
FROM memory_archive a
LEFT JOIN episodes e ON e.agent_id = a.agent_id AND e.memory_id = a.memory_id
WHERE a.agent_id = $1 AND a.memory_id = $2 ORDER BY a.part;

-- ---------------------------------------------------------------- recall

-- name: recall_plan_settings
-- The ranking statement's settings inside its transaction, when there is no scan pool
-- (its sessions have them already: scan_session_settings).  $1, the plan cache mode:
-- 'force_generic_plan' (recall reads no index whose choice depends on the agent's size);
-- on Citus 'force_custom_plan' (a generic plan has no agent_id to pick the shard with).
SELECT set_config('plan_cache_mode', $1, true),
       set_config('enable_seqscan', 'off', true);

-- name: recall_index_settings
-- A large agent's index reads (recall_index_legs), inside their transaction: a plan of
-- their own ('force_custom_plan', so the agent's own partial indexes qualify); HNSW scans
-- that keep going until the LIMIT is met when rows are filtered out (other agents' in a
-- shared index, other kinds), in relaxed order (the statement sorts by exact distance);
-- and $1 candidates kept while searching the graph (hnsw.ef_search: bench/tenancy.py
-- measures what the agreement with an exact search costs).
SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search', $1::integer::text, true);

-- name: recall_scan_small
-- On Citus, the scan settings must act where the statement runs, a worker: set_config
-- stays on the coordinator, SET LOCAL goes on to the workers of the transaction
-- (citus.propagate_set_commands = 'local', set by the Citus script).
SET LOCAL enable_seqscan = off;

-- name: recall_scan_large
-- (see recall_scan_small)
SET LOCAL hnsw.iterative_scan = relaxed_order;

-- name: recall_scan_large_ef
-- (see recall_scan_small) hnsw.ef_search as recall_index_settings sets it, as a SET
-- LOCAL statement built by PostgreSQL (SET takes no parameter; the value is an integer).
SELECT format('SET LOCAL hnsw.ef_search = %s', $1::integer);

-- name: recall_agent_rows
-- The most rows a small agent's recall would read from one table (every memory but the
-- deleted ones, every chunk), counted up to $2.
SELECT GREATEST(
    (SELECT count(*) FROM (SELECT 1 FROM memories
                           WHERE agent_id = $1 AND status <> 'deleted' LIMIT $2) AS m),
    (SELECT count(*) FROM (SELECT 1 FROM episode_chunks WHERE agent_id = $1 LIMIT $2) AS c))
    AS agent_rows;

-- name: recall_corpus
-- A large agent's BM25 corpus: its documents (every memory but the deleted ones, every
-- chunk) and their total length in lexemes.  Counting them reads every row of the agent
-- (bench/tenancy.py: about 200 ms at 100,000 memories), so recall over the indexes takes
-- them as parameters, counted once in a while (context/recall.py), not on every call.
SELECT (SELECT count(*) FROM memories WHERE agent_id = $1 AND status <> 'deleted')
       + (SELECT count(*) FROM episode_chunks WHERE agent_id = $1) AS documents,
       COALESCE((SELECT sum(length(search_tsv)) FROM memories
                 WHERE agent_id = $1 AND status <> 'deleted'), 0)
       + COALESCE((SELECT sum(length(search_tsv)) FROM episode_chunks
                   WHERE agent_id = $1), 0) AS lexemes;

-- name: recall_index_legs
-- A large agent's candidates, read through the indexes: its own (maintenance/indexes.py)
-- once built, the shared ones filtered by agent_id until then.  Planned for this agent (a
-- custom plan: the planner sees agent_id = '<agent>' hold, which its partial indexes
-- need) and short, so planning it costs a fraction of planning all of recall, which then
-- ranks these candidates with a generic plan.  One row per candidate, by ``part``:
-- 'vector' and 'time' (a vector leg's row and its distance), 'doc' (a document the text
-- leg selects, with its tsvector: recall scores it without reading it again), 'term' (a
-- query lexeme and its document frequency).  The parameters are
-- recall's: $1 agent, $2 query text, $3 query vector, $4 model, $5 kinds, $6 memory
-- statuses, $7 include chunks, $8 candidates per leg; then $9 the agent's corpus size
-- (recall_corpus: documents), $10/$11 the time the query names, or NULL; $12 who is
-- asking (as recall's $37).
-- Which lexemes select documents follows recall's rule (weights): those in fewer than
-- half the documents, or the rarest when every one is that common.
WITH gone AS (
    SELECT COALESCE(array_agg(id), '{}') AS ids FROM memories m
    WHERE agent_id = $1 AND kind = 'episode'
      AND (status NOT IN ('active', 'archived')
           OR NOT ($12::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $12::text[]))
),
qs AS MATERIALIZED (
    SELECT u.lexeme, array_to_tsvector(ARRAY[u.lexeme])::text::tsquery AS q
    FROM unnest(to_tsvector('english', $2)) AS u
),
anyq AS (
    SELECT replace(array_to_tsvector(array_agg(lexeme))::text, ''' ''', ''' | ''')::tsquery AS q
    FROM qs
),
matched AS MATERIALIZED (
    -- the documents holding any query lexeme, read once through the text indexes (one
    -- bitmap scan per table, not one per lexeme)
    SELECT 'memory' AS source, m.id AS memory_id, NULL::integer AS chunk_no, m.search_tsv AS tsv
    FROM anyq, memories m
    WHERE m.agent_id = $1 AND m.search_tsv @@ anyq.q AND m.status = ANY($6::text[])
      AND m.kind = ANY($5::text[])
      AND ($12::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $12::text[])
    UNION ALL
    SELECT 'chunk', c.episode_id, c.chunk_no, c.search_tsv
    FROM anyq, gone, episode_chunks c
    WHERE $7 AND c.agent_id = $1 AND c.search_tsv @@ anyq.q AND c.episode_id <> ALL(gone.ids)
),
terms AS MATERIALIZED (
    SELECT qs.lexeme, (SELECT count(*) FROM matched d WHERE d.tsv @@ qs.q) AS df FROM qs
),
sel AS (
    SELECT replace(array_to_tsvector(array_agg(lexeme))::text, ''' ''', ''' | ''')::tsquery AS q
    FROM (SELECT lexeme, df, min(df) FILTER (WHERE df > 0) OVER () AS rarest FROM terms) AS t
    WHERE df > 0 AND (2 * df < $9 OR df = rarest)
)
(SELECT 'vector' AS part, 'memory' AS source, m.id AS memory_id, NULL::integer AS chunk_no,
        m.embedding <=> $3 AS dist, NULL::text AS lexeme, NULL::bigint AS df,
        NULL::tsvector AS tsv
 FROM memories m
 WHERE m.agent_id = $1 AND m.status = 'active' AND m.kind = ANY($5::text[])
   AND m.embedding_model = $4
   AND ($12::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $12::text[])
 ORDER BY m.embedding <=> $3 LIMIT $8)
UNION ALL
-- archived (and superseded) rows are not in the HNSW indexes
(SELECT 'vector', 'memory', m.id, NULL, m.embedding <=> $3, NULL, NULL, NULL FROM memories m
 WHERE m.agent_id = $1 AND m.status <> 'active' AND m.status = ANY($6::text[])
   AND m.kind = ANY($5::text[]) AND m.embedding_model = $4
   AND ($12::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $12::text[])
 ORDER BY m.embedding <=> $3 LIMIT $8)
UNION ALL
(SELECT 'vector', 'chunk', c.episode_id, c.chunk_no, c.embedding <=> $3, NULL, NULL, NULL
 FROM gone, episode_chunks c
 WHERE $7 AND c.agent_id = $1 AND c.embedding_model = $4 AND c.episode_id <> ALL(gone.ids)
 ORDER BY c.embedding <=> $3 LIMIT $8)
UNION ALL
(SELECT 'time', 'chunk', c.episode_id, c.chunk_no, c.embedding <=> $3, NULL, NULL, NULL
 FROM gone, episode_chunks c
 WHERE $7 AND $10::timestamptz IS NOT NULL AND c.agent_id = $1
   AND c.embedding_model = $4 AND c.episode_id <> ALL(gone.ids)
   AND COALESCE(c.started_at, c.created_at) >= $10::timestamptz
   AND COALESCE(c.started_at, c.created_at) < $11::timestamptz
 ORDER BY c.embedding <=> $3 LIMIT $8)
UNION ALL
SELECT 'doc', d.source, d.memory_id, d.chunk_no, NULL, NULL, NULL, d.tsv
FROM sel, matched d WHERE d.tsv @@ sel.q
UNION ALL
SELECT 'term', NULL, NULL, NULL, NULL, lexeme, df, NULL FROM terms;

-- name: recall
-- Hybrid recall in one statement.  $1 agent, $2 query text, $3 query vector, $4 model,
-- $5 kinds, $6 memory statuses, $7 include chunks, $8 candidates per leg, $9 k,
-- $10 RRF constant, $11..$16 priors (recency weight, half-life days, importance,
-- confidence, use weight, use saturation), $17/$18 weights of the text and vector legs
-- in the fusion, $19 how much a word of a chunk's context (weight D) counts against
-- one of its own text, $20 the priors' spread (largest factor / smallest), $21 true for
-- a small agent: its rows are read once (mem_rows, chunk_rows) and every leg works on
-- them in memory (an exact vector scan beats a filtered HNSW scan there, and is exact);
-- false for a large agent, whose candidates recall_index_legs has read through the
-- indexes and which come in as $29..$36 (one array per column of its rows; empty for a
-- small agent).  So this statement reads no index whose choice depends on the agent's
-- size, and one generic plan serves every agent.  $22: the speaker
-- prior, for a chunk spoken by someone the query names (every word of the name is a
-- word of the query, case folded).  $23: the moment the query is asked (as_of: the
-- reference of recency).  $24/$25: the time the query names (a relative phrase resolved
-- against as_of), or NULL; $26: its prior, for an item said within it.  A third leg
-- (time) ranks the chunks said within that time by vector distance, so what happened
-- then is a candidate even when the query's words and meaning point elsewhere.
-- $27/$28: a large agent's BM25 corpus (recall_corpus: documents and their total length),
-- 0 and 0 for a small one, whose corpus is counted from its rows in memory.  $37: who
-- is asking (people/; NULL: the owner), as person keys a memory's people must all hold:
-- only memories that are theirs or shared, and the chunks of conversations they were in
-- or that are shared.
-- Each row also carries what recall's final ordering needs (context/ordering.py): the
-- query lexemes it matched, when it was said, a chunk's turns and a fact's
-- source turn.
-- Two legs, each over memories and episode chunks together (one corpus, so neither table
-- gets top ranks for free): vector (per table, merged by distance) and BM25 full text.
-- The full-text query is an OR of the text's lexemes (to_tsvector never fails on any
-- input; the tsvector's canonical text form re-parses as a tsquery), scored by BM25
-- (Lucene's always-positive idf) with each lexeme's document frequency counted over the
-- agent's rows.  A lexeme in half the documents or more carries no evidence under the
-- classic Robertson-Sparck Jones weight (zero or less), so it does not select documents:
-- it only adds to the score of the ones the other lexemes select (when every lexeme is
-- that common, the rarest ones select).  Measured on LoCoMo: recall unchanged.  Term
-- frequencies come from each selected row's tsvector cut down to the query's lexemes
-- (setweight marks them 'C', ts_filter keeps them).  Priors only scale a fused score by
-- [min, max] factors, so an item whose fused score times the spread is below the k-th
-- best fused score cannot reach the top k: only the rest are joined to their details.  Chunks never need episode_messages (archived
-- transcripts).
WITH gone AS (
    -- episodes whose chunks recall never returns
    SELECT COALESCE(array_agg(id), '{}') AS ids FROM memories m
    WHERE agent_id = $1 AND kind = 'episode'
      AND (status NOT IN ('active', 'archived')
           OR NOT ($37::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $37::text[]))
),
tq AS (
    SELECT ARRAY(SELECT u.lexeme FROM unnest(v) AS u) AS lexemes
    FROM to_tsvector('english', $2) AS v
),
qwords AS (
    -- the query's words, case folded (for the speaker prior)
    SELECT regexp_split_to_array(lower($2), '[^[:alnum:]]+') AS words
),
given AS MATERIALIZED (
    -- a large agent's candidates, read through the indexes by recall_index_legs (none
    -- for a small agent)
    SELECT * FROM unnest($29::text[], $30::text[], $31::uuid[], $32::integer[],
                         $33::float8[], $34::text[], $35::bigint[], $36::tsvector[])
        AS g(part, source, memory_id, chunk_no, dist, lexeme, df, tsv)
),
mem_rows AS MATERIALIZED (
    SELECT m.id, m.status, length(m.search_tsv) AS len, m.search_tsv AS tsv,
           CASE WHEN m.embedding_model = $4 THEN m.embedding <=> $3 END AS dist
    FROM memories m
    WHERE $21 AND m.agent_id = $1 AND m.status = ANY($6::text[]) AND m.kind = ANY($5::text[])
      AND ($37::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $37::text[])
),
chunk_rows AS MATERIALIZED (
    SELECT c.episode_id, c.chunk_no, length(c.search_tsv) AS len, c.search_tsv AS tsv,
           CASE WHEN c.embedding_model = $4 THEN c.embedding <=> $3 END AS dist,
           COALESCE(c.started_at, c.created_at) AS said_at
    FROM gone, episode_chunks c
    WHERE $21 AND $7 AND c.agent_id = $1 AND c.episode_id <> ALL(gone.ids)
),
vec AS MATERIALIZED (
    (SELECT 'memory' AS source, id AS memory_id, NULL::integer AS chunk_no, dist
     FROM mem_rows WHERE status = 'active' AND dist IS NOT NULL ORDER BY dist, id LIMIT $8)
    UNION ALL
    (SELECT 'memory', id, NULL, dist FROM mem_rows
     WHERE status <> 'active' AND dist IS NOT NULL ORDER BY dist, id LIMIT $8)
    UNION ALL
    (SELECT 'chunk', episode_id, chunk_no, dist FROM chunk_rows
     WHERE dist IS NOT NULL ORDER BY dist, episode_id, chunk_no LIMIT $8)
    UNION ALL
    SELECT source, memory_id, chunk_no, dist FROM given WHERE part = 'vector'
),
timed AS MATERIALIZED (
    (SELECT 'chunk' AS source, episode_id AS memory_id, chunk_no, dist FROM chunk_rows c
     WHERE $24::timestamptz IS NOT NULL AND dist IS NOT NULL
       AND c.said_at >= $24::timestamptz AND c.said_at < $25::timestamptz
     ORDER BY dist, episode_id, chunk_no LIMIT $8)
    UNION ALL
    SELECT source, memory_id, chunk_no, dist FROM given WHERE part = 'time'
),
qs AS MATERIALIZED (
    -- each query lexeme as a tsquery of its own
    SELECT t.lexeme, array_to_tsvector(ARRAY[t.lexeme])::text::tsquery AS q
    FROM tq, unnest(tq.lexemes) AS t(lexeme)
),
terms AS MATERIALIZED (
    -- each query lexeme's document frequency among the agent's rows (counted, not scored):
    -- one join over the rows in memory, or per lexeme through the GIN indexes
    SELECT qs.lexeme, COALESCE(n.df, 0) AS df
    FROM qs LEFT JOIN (SELECT q.lexeme, count(*) AS df  -- the rows stream past the lexemes
                       FROM (SELECT tsv FROM mem_rows UNION ALL SELECT tsv FROM chunk_rows) AS d
                       JOIN qs AS q ON d.tsv @@ q.q
                       GROUP BY q.lexeme) AS n USING (lexeme)
    WHERE $21
    UNION ALL
    SELECT lexeme, df FROM given WHERE part = 'term'
),
corpus AS (
    SELECT sum(n)::float8 AS n, GREATEST(sum(total) / GREATEST(sum(n), 1), 1)::float8 AS avgdl
    FROM (SELECT count(*) AS n, sum(len) AS total FROM mem_rows
          UNION ALL
          SELECT count(*), sum(len) FROM chunk_rows
          UNION ALL
          SELECT $27::bigint, $28::bigint WHERE NOT $21  -- recall_corpus, counted apart
         ) AS parts
),
weights AS MATERIALIZED (
    SELECT t.lexeme, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf,
           t.df > 0 AND (2 * t.df < s.n
                         OR t.df = min(t.df) FILTER (WHERE t.df > 0) OVER ()) AS selects
    FROM terms t, corpus s
),
sel AS (
    SELECT replace(array_to_tsvector(array_agg(lexeme) FILTER (WHERE selects))::text,
                   ''' ''', ''' | ''')::tsquery AS q,
           array_agg(lexeme) AS lexemes
    FROM weights
),
docs AS (
    -- the selected documents: their length and their tsvector
    SELECT 'memory' AS source, r.id AS memory_id, NULL::integer AS chunk_no, r.len, r.tsv
    FROM sel, mem_rows r WHERE r.tsv @@ sel.q
    UNION ALL
    SELECT 'chunk', r.episode_id, r.chunk_no, r.len, r.tsv
    FROM sel, chunk_rows r WHERE r.tsv @@ sel.q
    UNION ALL
    SELECT source, memory_id, chunk_no, length(tsv), tsv FROM given WHERE part = 'doc'
),
hits AS (
    -- a document's tsvector cut down to the query's lexemes (a handful of entries), each
    -- with its term frequency: a memory's straight from unnest (no per-document subquery,
    -- it runs for every selected document); in a chunk, a word of its own (weight A)
    -- counts 1 and one of its context (D) $19
    SELECT source, memory_id, chunk_no, len, (u).lexeme, cardinality((u).positions)::float8 AS tf
    FROM (SELECT d.source, d.memory_id, d.chunk_no, d.len,
                 unnest(ts_filter(setweight(d.tsv, 'C', sel.lexemes), '{c}')) AS u
          FROM sel, docs d WHERE d.source = 'memory') AS m
    UNION ALL
    SELECT d.source, d.memory_id, d.chunk_no, d.len, u.lexeme,
           sum(cardinality(u.positions)
               * CASE WHEN u.part = 'd' THEN $19::float8 ELSE 1 END) AS tf
    FROM sel, docs d
    CROSS JOIN LATERAL (
        SELECT 'a' AS part, f.lexeme, f.positions
        FROM unnest(ts_filter(setweight(ts_filter(d.tsv, '{a}'), 'C', sel.lexemes), '{c}')) AS f
        UNION ALL
        SELECT 'd', f.lexeme, f.positions
        FROM unnest(ts_filter(setweight(ts_filter(d.tsv, '{d}'), 'C', sel.lexemes),
                              '{c}')) AS f) AS u
    WHERE d.source = 'chunk'
    GROUP BY d.source, d.memory_id, d.chunk_no, d.len, u.lexeme
),
bm25 AS MATERIALIZED (
    SELECT h.source, h.memory_id, h.chunk_no,
           sum(w.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.len / s.avgdl))) AS score
    FROM hits h JOIN weights w USING (lexeme) CROSS JOIN corpus s
    GROUP BY h.source, h.memory_id, h.chunk_no
    ORDER BY score DESC, h.memory_id, h.chunk_no NULLS FIRST LIMIT $8
),
legs AS (
    SELECT source, memory_id, chunk_no, 'vector' AS leg, NULL::float8 AS score, dist,
           row_number() OVER (ORDER BY dist, memory_id, chunk_no NULLS FIRST) AS rnk
    FROM vec
    UNION ALL
    SELECT source, memory_id, chunk_no, 'time', NULL, dist,
           row_number() OVER (ORDER BY dist, memory_id, chunk_no NULLS FIRST)
    FROM timed
    UNION ALL
    SELECT source, memory_id, chunk_no, 'text', score, NULL,
           row_number() OVER (ORDER BY score DESC, memory_id, chunk_no NULLS FIRST)
    FROM bm25
),
fused AS (
    SELECT source, memory_id, chunk_no,
           sum(CASE leg WHEN 'text' THEN $17::float8 ELSE $18::float8 END / ($10 + rnk)) AS fused,
           bool_or(leg = 'time') AS in_time,
           min(rnk) FILTER (WHERE leg = 'vector') AS vector_rank,
           min(rnk) FILTER (WHERE leg = 'text') AS text_rank,
           max(score) FILTER (WHERE leg = 'text') AS text_score,
           min(dist) AS dist
    FROM legs GROUP BY source, memory_id, chunk_no
),
bar AS MATERIALIZED (
    SELECT CASE WHEN count(*) < $9 THEN 0 ELSE min(fused) END AS kth
    FROM (SELECT fused FROM fused ORDER BY fused DESC LIMIT $9) AS top
),
kept AS (
    SELECT f.* FROM fused f, bar WHERE f.fused * $20 >= bar.kth
),
found AS (
    SELECT f.*, m.kind, m.status, m.importance, m.access_count,
           CASE WHEN f.source = 'chunk' THEN c.content ELSE m.summary END AS text,
           CASE WHEN f.source = 'chunk' THEN c.tokens ELSE m.summary_tokens END AS tokens,
           CASE WHEN f.source = 'chunk' THEN c.message_metadata
                WHEN fa.source_seq IS NOT NULL THEN (
                    SELECT jsonb_build_array(k.message_metadata -> (fa.source_seq - k.first_seq))
                    FROM episode_chunks k
                    WHERE k.agent_id = $1 AND k.episode_id = fa.source_episode_id
                      AND fa.source_seq BETWEEN k.first_seq AND k.last_seq LIMIT 1)
           END AS message_metadata,
           c.first_seq, c.last_seq, fa.source_episode_id, fa.source_seq,
           -- a chunk whose fact a later fact superseded: where the newer one was said
           CASE WHEN f.source = 'chunk' THEN (
               SELECT jsonb_agg(jsonb_build_array(nf.source_episode_id, nf.source_seq))
               FROM facts sf JOIN facts nf ON nf.agent_id = $1
                                          AND nf.memory_id = sf.superseded_by_id
               JOIN memories nm ON nm.agent_id = $1 AND nm.id = nf.memory_id
               WHERE sf.agent_id = $1 AND sf.source_episode_id = f.memory_id
                 AND sf.source_seq BETWEEN c.first_seq AND c.last_seq
                 AND nf.source_seq IS NOT NULL
                 AND ($37::text[] IS NULL OR cardinality(nm.people) = 0
                      OR nm.people @> $37::text[]))
           END AS superseded_by,
           -- the query lexemes it holds; a chunk's context words marked '~' (weaker)
           CASE WHEN f.source = 'chunk' THEN ARRAY(
                    SELECT u.lexeme FROM sel, unnest(ts_filter(setweight(
                        ts_filter(c.search_tsv, '{a}'), 'C', sel.lexemes), '{c}')) AS u
                    UNION
                    SELECT '~' || u.lexeme FROM sel, unnest(ts_filter(setweight(
                        ts_filter(c.search_tsv, '{d}'), 'C', sel.lexemes), '{c}')) AS u)
                ELSE ARRAY(SELECT u.lexeme FROM sel, unnest(ts_filter(setweight(
                        m.search_tsv, 'C', sel.lexemes), '{c}')) AS u)
           END AS lexemes,
           CASE WHEN f.source = 'chunk' THEN COALESCE(c.started_at, c.created_at)
                WHEN fa.source_episode_id IS NOT NULL THEN (
                    SELECT COALESCE(se.started_at, se.ended_at) FROM episodes se
                    WHERE se.agent_id = $1 AND se.memory_id = fa.source_episode_id)
                WHEN m.kind = 'episode' THEN (SELECT COALESCE(ep.started_at, ep.ended_at)
                                              FROM episodes ep WHERE ep.agent_id = $1
                                                AND ep.memory_id = f.memory_id)
                ELSE m.created_at END AS said_at,
           f.source = 'chunk' AND EXISTS (
               SELECT 1 FROM unnest(c.speakers) AS sp(name)
               WHERE array_remove(regexp_split_to_array(lower(sp.name), '[^[:alnum:]]+'), '')
                     <@ (SELECT words FROM qwords)
                 AND lower(sp.name) ~ '[[:alnum:]]') AS named,
           CASE WHEN f.source = 'chunk' THEN COALESCE(c.started_at, c.created_at)
                ELSE m.created_at END AS created_at,
           CASE WHEN f.source = 'chunk' THEN c.ended_at
                WHEN m.kind = 'episode' THEN (SELECT ep.ended_at FROM episodes ep
                                              WHERE ep.agent_id = $1 AND ep.memory_id = f.memory_id)
           END AS ended_at,
           -- a vector leg's distance when it has one (its vector is not read again)
           CASE WHEN f.dist IS NOT NULL THEN 1 - f.dist
                WHEN f.source = 'chunk'
                THEN CASE WHEN c.embedding_model = $4 THEN 1 - (c.embedding <=> $3) END
                ELSE CASE WHEN m.embedding_model = $4 THEN 1 - (m.embedding <=> $3) END
           END AS cosine,
           CASE m.kind WHEN 'fact' THEN fa.confidence
                       WHEN 'decision' THEN (SELECT de.confidence FROM decisions de
                                             WHERE de.agent_id = $1 AND de.memory_id = f.memory_id)
           END AS confidence,
           -- what is no longer true: a superseded fact, or a turn whose every learned fact
           -- was superseded, with when (the successor was said); context marks it older
           -- (an episode: when one of the values said in it stopped holding)
           CASE WHEN f.source = 'chunk' THEN tf.stale_on
                WHEN m.kind = 'fact' AND m.status = 'superseded'
                THEN COALESCE(fa.valid_until, m.updated_at)
                WHEN m.kind = 'episode' THEN tf.stale_on
           END AS stale_on,
           -- the slot it states (a turn or an episode: of the facts learned from it)
           CASE WHEN f.source = 'chunk' THEN tf.slot_key
                WHEN m.kind = 'episode' THEN tf.stale_key
                WHEN fa.slot_attribute IS NOT NULL
                THEN fa.slot_subject || '|' || fa.slot_attribute
           END AS slot_key,
           -- the facts that replaced the values it states (the current ones to show first)
           CASE WHEN f.source = 'chunk' OR m.kind = 'episode' THEN tf.successors
                WHEN m.kind = 'fact' AND m.status = 'superseded'
                THEN ARRAY[fa.superseded_by_id]
           END AS successors,
           fa.valid_from
    FROM kept f
    JOIN memories m ON m.agent_id = $1 AND m.id = f.memory_id
    LEFT JOIN facts fa ON f.source = 'memory' AND m.kind = 'fact' AND fa.agent_id = $1
         AND fa.memory_id = f.memory_id
    LEFT JOIN episode_chunks c ON f.source = 'chunk' AND c.agent_id = $1
         AND c.episode_id = f.memory_id AND c.chunk_no = f.chunk_no
    LEFT JOIN LATERAL (
        -- the values said in a turn (or an episode): a value whose slot has no current
        -- fact among them stopped holding when its successor was said
        SELECT bool_or(g.current) AS any_current,
               min(g.until) FILTER (WHERE NOT g.current) AS stale_on,
               min(g.key) FILTER (WHERE g.slotted) AS slot_key,
               min(g.key) FILTER (WHERE g.slotted AND NOT g.current) AS stale_key,
               array_agg(g.successor) FILTER (WHERE NOT g.current AND g.successor IS NOT NULL)
                   AS successors
        FROM (SELECT COALESCE(tfa.slot_subject || '|' || tfa.slot_attribute,
                              tfa.memory_id::text) AS key,
                     (array_agg(tfa.superseded_by_id ORDER BY tfa.valid_until DESC NULLS LAST)
                         FILTER (WHERE tm.status = 'superseded'))[1] AS successor,
                     bool_or(tfa.slot_attribute IS NOT NULL) AS slotted,
                     bool_or(tm.status = 'active') AS current,
                     min(COALESCE(tfa.valid_until, tm.updated_at))
                         FILTER (WHERE tm.status = 'superseded') AS until
              FROM facts tfa JOIN memories tm ON tm.agent_id = $1 AND tm.id = tfa.memory_id
              WHERE (f.source = 'chunk' OR m.kind = 'episode')  -- others read nothing
                AND tfa.agent_id = $1 AND tfa.source_episode_id = f.memory_id
                AND ((f.source = 'chunk' AND tfa.source_seq BETWEEN c.first_seq AND c.last_seq)
                     OR (f.source = 'memory' AND m.kind = 'episode'
                         AND tfa.slot_attribute IS NOT NULL))
                AND tm.status IN ('active', 'superseded')
                -- what the asker may read: another person's change is not theirs to see
                AND ($37::text[] IS NULL OR cardinality(tm.people) = 0
                     OR tm.people @> $37::text[])
              GROUP BY 1) g) tf ON true
),
priced AS (
    SELECT r.*,
           $11 * power(0.5, GREATEST(0, extract(epoch FROM $23::timestamptz
                   - COALESCE(r.ended_at, r.said_at, r.created_at)))::float8 / 86400.0 / $12)
               AS p_recency,
           $13 * (r.importance - 0.5) AS p_importance,
           COALESCE($14 * (r.confidence - 0.5), 0) AS p_confidence,
           $15 * LEAST(1, ln(1 + r.access_count) / ln(1 + $16)) AS p_use,
           CASE WHEN r.named THEN $22::float8 ELSE 0 END AS p_speaker,
           CASE WHEN r.in_time OR (r.said_at >= $24::timestamptz AND r.said_at < $25::timestamptz)
                THEN $26::float8 ELSE 0 END AS p_time
    FROM found r
)
SELECT source, memory_id, chunk_no, kind, status, text, tokens, message_metadata,
       created_at, ended_at, said_at, cosine, vector_rank::integer, text_rank::integer,
       text_score, fused, p_recency, p_importance, p_confidence, p_use, p_speaker, p_time,
       first_seq, last_seq, source_episode_id, source_seq, superseded_by, lexemes,
       fused * (1 + p_recency + p_importance + p_confidence + p_use + p_speaker + p_time)
           AS final,
       stale_on, slot_key, successors, valid_from
FROM priced
ORDER BY final DESC, memory_id, chunk_no NULLS FIRST
LIMIT $9;

-- name: deleted_memory_by_ref
-- A short ref of a soft-deleted memory: only a restore reaches what every read hides.
SELECT id FROM memories
WHERE agent_id = $1 AND id BETWEEN $2::uuid AND $3::uuid AND ($4::text IS NULL OR kind = $4)
  AND status = 'deleted'
ORDER BY id LIMIT 2;

-- name: recall_current_of_slots
-- The current (active) facts of the slots ($2 keys "subject|attribute") that a recalled
-- stale item states, and the active facts that replaced its values ($5 ids), as recall's
-- rows (their cosine to $3 with model $4): the current value goes before the old one even
-- when the ranking did not find it.  $6: who is asking (as context_always_on's $13).
SELECT 'memory' AS source, m.id AS memory_id, NULL::integer AS chunk_no, m.kind, m.status,
       m.summary AS text, m.summary_tokens AS tokens,
       CASE WHEN f.source_seq IS NOT NULL THEN (
           SELECT jsonb_build_array(k.message_metadata -> (f.source_seq - k.first_seq))
           FROM episode_chunks k
           WHERE k.agent_id = $1 AND k.episode_id = f.source_episode_id
             AND f.source_seq BETWEEN k.first_seq AND k.last_seq LIMIT 1)
       END AS message_metadata,
       m.created_at, NULL::timestamptz AS ended_at,
       COALESCE(f.valid_from, m.created_at) AS said_at,
       CASE WHEN m.embedding_model = $4 THEN 1 - (m.embedding <=> $3) END AS cosine,
       NULL::integer AS vector_rank, NULL::integer AS text_rank, NULL::float8 AS text_score,
       0::float8 AS fused, 0::float8 AS p_recency, 0::float8 AS p_importance,
       0::float8 AS p_confidence, 0::float8 AS p_use, 0::float8 AS p_speaker,
       0::float8 AS p_time, NULL::integer AS first_seq, NULL::integer AS last_seq,
       f.source_episode_id, f.source_seq, NULL::jsonb AS superseded_by,
       '{}'::text[] AS lexemes, 0::float8 AS final, NULL::timestamptz AS stale_on,
       f.slot_subject || '|' || f.slot_attribute AS slot_key, NULL::uuid[] AS successors,
       f.valid_from
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND m.status = 'active'
  AND ($6::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $6::text[])
  AND (f.slot_subject || '|' || f.slot_attribute = ANY($2::text[])
       OR f.memory_id = ANY($5::uuid[]))
ORDER BY f.valid_from DESC NULLS LAST
LIMIT 20;

-- name: upcoming_events
-- An agent's plans from $2 until $3 (event_at, through facts_events), soonest first, at
-- most $4: current facts only (a moved plan's old date was superseded); $5 who is
-- asking (as context_always_on's $13).
SELECT m.id, m.summary, f.event_at, f.valid_from, f.slot_subject, f.slot_attribute
FROM facts f JOIN memories m ON m.agent_id = f.agent_id AND m.id = f.memory_id
WHERE f.agent_id = $1 AND f.event_at >= $2 AND f.event_at < $3 AND m.status = 'active'
  AND ($5::text[] IS NULL OR cardinality(m.people) = 0 OR m.people @> $5::text[])
ORDER BY f.event_at, m.id
LIMIT $4;

-- ---------------------------------------------------------------- the same, delegated

-- name: recall_delegated
-- recall as its function (schema.sql, "reads as functions"), for a Citus cluster where
-- the function is distributed by its agent argument: the coordinator hands the call
-- whole to the agent's worker.  Outside a transaction (Citus delegates a call only there).
SELECT * FROM nous_recall($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36,
                          $37);

-- name: recall_agent_rows_delegated
-- (see recall_delegated)
SELECT * FROM nous_recall_agent_rows($1, $2);

-- name: recall_current_of_slots_delegated
-- (see recall_delegated)
SELECT * FROM nous_recall_current_of_slots($1, $2, $3, $4, $5, $6);

-- name: context_always_on_delegated
-- (see recall_delegated)
SELECT * FROM nous_context_always_on($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                                      $13);

-- name: context_tier2_delegated
-- (see recall_delegated)
SELECT * FROM nous_context_tier2($1, $2, $3, $4, $5);
