-- Schema version 14.
--
-- People: whose each memory is.  memories.people holds the people a memory belongs to
-- (their person keys, people/keys.py): a person's own facts, the conversations they were
-- in; empty, the agent's as a whole (shared with everyone who talks to it).  A message
-- knows its person (episode_messages.person).  The read path's statements take the
-- person asking as their last parameter (NULL: the agent's owner, who reads everything),
-- so the read functions are made again with it.  agent_settings: what an agent keeps out
-- of memory (secrets).

ALTER TABLE memories ADD COLUMN people text[] NOT NULL DEFAULT '{}';
ALTER TABLE episode_messages ADD COLUMN person text;

-- A conversation started for a user before people existed is that user's, and so are its
-- user turns and the facts learned from it: nothing that was one person's becomes
-- everyone's on upgrade.  The key as people/keys.py makes it (trimmed, spaces collapsed,
-- case folded; lower() folds as casefold() does for every script but a few letters such
-- as the German sharp s).
UPDATE memories m SET people = ARRAY[k.person]
FROM (SELECT agent_id, memory_id,
             lower(regexp_replace(btrim(user_id), '\s+', ' ', 'g')) AS person
      FROM episodes WHERE btrim(COALESCE(user_id, '')) <> '') AS k
WHERE m.agent_id = k.agent_id AND m.id = k.memory_id;

UPDATE episode_messages em SET person = m.people[1]
FROM memories m
WHERE m.agent_id = em.agent_id AND m.id = em.episode_id AND em.role = 'user'
  AND cardinality(m.people) = 1;

UPDATE memories m SET people = e.people
FROM facts f JOIN memories e ON e.agent_id = f.agent_id AND e.id = f.source_episode_id
WHERE m.agent_id = f.agent_id AND m.id = f.memory_id AND cardinality(e.people) = 1;

-- What an agent keeps out of memory (memories/guard.py): the secrets a write holds
-- (passwords, keys, card numbers, codes) are 'redact'ed (the default: a typed placeholder
-- stands for each), 'refuse'd (the write fails naming the field and the kind) or kept
-- ('keep', the owner's explicit choice).  No row: the default.
CREATE TABLE agent_settings (
    agent_id    text        PRIMARY KEY CHECK (agent_id <> ''),
    secrets     text        NOT NULL DEFAULT 'redact'
        CHECK (secrets IN ('redact', 'refuse', 'keep')),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE OR REPLACE VIEW memory_records AS
SELECT m.agent_id, m.id, m.kind, m.status, m.summary, m.summary_source, m.summary_tokens,
       m.embedding_model, m.importance, m.tags, m.version, m.created_at, m.updated_at,
       m.last_accessed_at, m.access_count, m.deleted_at,
       CASE m.kind
           WHEN 'decision'  THEN to_jsonb(dd) - ARRAY['agent_id', 'memory_id']
           WHEN 'fact'      THEN to_jsonb(df) - ARRAY['agent_id', 'memory_id', 'normalized_hash']
           WHEN 'episode'   THEN to_jsonb(de) - ARRAY['agent_id', 'memory_id']
           WHEN 'procedure' THEN to_jsonb(dp) - ARRAY['agent_id', 'memory_id']
           WHEN 'censor'    THEN to_jsonb(dc) - ARRAY['agent_id', 'memory_id']
       END AS detail,
       m.people
FROM memories m
LEFT JOIN decisions  dd ON m.kind = 'decision'  AND dd.agent_id = m.agent_id AND dd.memory_id = m.id
LEFT JOIN facts      df ON m.kind = 'fact'      AND df.agent_id = m.agent_id AND df.memory_id = m.id
LEFT JOIN episodes   de ON m.kind = 'episode'   AND de.agent_id = m.agent_id AND de.memory_id = m.id
LEFT JOIN procedures dp ON m.kind = 'procedure' AND dp.agent_id = m.agent_id AND dp.memory_id = m.id
LEFT JOIN censors    dc ON m.kind = 'censor'    AND dc.agent_id = m.agent_id AND dc.memory_id = m.id;

DROP FUNCTION nous_recall(text, text, vector, text, text[], text[], boolean, bigint, bigint, bigint, double precision, double precision, double precision, double precision, double precision, integer, double precision, double precision, double precision, double precision, boolean, double precision, timestamptz, timestamptz, timestamptz, double precision, bigint, bigint, text[], text[], uuid[], integer[], double precision[], text[], bigint[], tsvector[]);

CREATE FUNCTION nous_recall(
    agent text, text, vector, text, text[], text[], boolean, bigint, bigint, bigint,
    double precision, double precision, double precision, double precision,
    double precision, integer, double precision, double precision, double precision,
    double precision, boolean, double precision, timestamptz, timestamptz, timestamptz,
    double precision, bigint, bigint, text[], text[], uuid[], integer[],
    double precision[], text[], bigint[], tsvector[], text[]
) RETURNS TABLE (
    source text, memory_id uuid, chunk_no integer, kind text, status text, text text,
    tokens integer, message_metadata jsonb, created_at timestamptz,
    ended_at timestamptz, said_at timestamptz, cosine double precision,
    vector_rank integer, text_rank integer, text_score double precision,
    fused double precision, p_recency double precision, p_importance double precision,
    p_confidence double precision, p_use double precision, p_speaker double precision,
    p_time double precision, first_seq integer, last_seq integer,
    source_episode_id uuid, source_seq integer, superseded_by jsonb, lexemes text[],
    final double precision, stale_on timestamptz, slot_key text, successors uuid[],
    valid_from timestamptz
)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    statement CONSTANT text := $q$
WITH gone AS (
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
    SELECT regexp_split_to_array(lower($2), '[^[:alnum:]]+') AS words
),
given AS MATERIALIZED (
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
    SELECT t.lexeme, array_to_tsvector(ARRAY[t.lexeme])::text::tsquery AS q
    FROM tq, unnest(tq.lexemes) AS t(lexeme)
),
terms AS MATERIALIZED (
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
    SELECT 'memory' AS source, r.id AS memory_id, NULL::integer AS chunk_no, r.len, r.tsv
    FROM sel, mem_rows r WHERE r.tsv @@ sel.q
    UNION ALL
    SELECT 'chunk', r.episode_id, r.chunk_no, r.len, r.tsv
    FROM sel, chunk_rows r WHERE r.tsv @@ sel.q
    UNION ALL
    SELECT source, memory_id, chunk_no, length(tsv), tsv FROM given WHERE part = 'doc'
),
hits AS (
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
           CASE WHEN f.dist IS NOT NULL THEN 1 - f.dist
                WHEN f.source = 'chunk'
                THEN CASE WHEN c.embedding_model = $4 THEN 1 - (c.embedding <=> $3) END
                ELSE CASE WHEN m.embedding_model = $4 THEN 1 - (m.embedding <=> $3) END
           END AS cosine,
           CASE m.kind WHEN 'fact' THEN fa.confidence
                       WHEN 'decision' THEN (SELECT de.confidence FROM decisions de
                                             WHERE de.agent_id = $1 AND de.memory_id = f.memory_id)
           END AS confidence,
           CASE WHEN f.source = 'chunk' THEN tf.stale_on
                WHEN m.kind = 'fact' AND m.status = 'superseded'
                THEN COALESCE(fa.valid_until, m.updated_at)
                WHEN m.kind = 'episode' THEN tf.stale_on
           END AS stale_on,
           CASE WHEN f.source = 'chunk' THEN tf.slot_key
                WHEN m.kind = 'episode' THEN tf.stale_key
                WHEN fa.slot_attribute IS NOT NULL
                THEN fa.slot_subject || '|' || fa.slot_attribute
           END AS slot_key,
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
LIMIT $9
$q$;
    prepared CONSTANT text := nous_prepared('recall', agent, statement);
BEGIN
    IF prepared IS NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
        RETURN QUERY EXECUTE statement USING
            agent, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
            $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31,
            $32, $33, $34, $35, $36, $37;
    ELSE
        RETURN QUERY EXECUTE format('EXECUTE %I(%s)', prepared, concat_ws(', ',
            quote_nullable(agent), quote_nullable($2), quote_nullable($3),
            quote_nullable($4), quote_nullable($5), quote_nullable($6),
            quote_nullable($7), quote_nullable($8), quote_nullable($9),
            quote_nullable($10), quote_nullable($11), quote_nullable($12),
            quote_nullable($13), quote_nullable($14), quote_nullable($15),
            quote_nullable($16), quote_nullable($17), quote_nullable($18),
            quote_nullable($19), quote_nullable($20), quote_nullable($21),
            quote_nullable($22), quote_nullable($23), quote_nullable($24),
            quote_nullable($25), quote_nullable($26), quote_nullable($27),
            quote_nullable($28), quote_nullable($29), quote_nullable($30),
            quote_nullable($31), quote_nullable($32), quote_nullable($33),
            quote_nullable($34), quote_nullable($35), quote_nullable($36),
            quote_nullable($37)));
    END IF;
END
$fn$;

DROP FUNCTION nous_recall_current_of_slots(text, text[], vector, text, uuid[]);

CREATE FUNCTION nous_recall_current_of_slots(
    agent text, text[], vector, text, uuid[], text[]
) RETURNS TABLE (
    source text, memory_id uuid, chunk_no integer, kind text, status text, text text,
    tokens integer, message_metadata jsonb, created_at timestamptz,
    ended_at timestamptz, said_at timestamptz, cosine double precision,
    vector_rank integer, text_rank integer, text_score double precision,
    fused double precision, p_recency double precision, p_importance double precision,
    p_confidence double precision, p_use double precision, p_speaker double precision,
    p_time double precision, first_seq integer, last_seq integer,
    source_episode_id uuid, source_seq integer, superseded_by jsonb, lexemes text[],
    final double precision, stale_on timestamptz, slot_key text, successors uuid[],
    valid_from timestamptz
)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = auto AS $fn$
DECLARE
    statement CONSTANT text := $q$
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
LIMIT 20
$q$;
    prepared CONSTANT text := nous_prepared('recall_current_of_slots', agent, statement);
BEGIN
    IF prepared IS NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
        RETURN QUERY EXECUTE statement USING
            agent, $2, $3, $4, $5, $6;
    ELSE
        RETURN QUERY EXECUTE format('EXECUTE %I(%s)', prepared, concat_ws(', ',
            quote_nullable(agent), quote_nullable($2), quote_nullable($3),
            quote_nullable($4), quote_nullable($5),
            quote_nullable($6)));
    END IF;
END
$fn$;

DROP FUNCTION nous_context_always_on(text, text[], bigint, bigint, vector, text, text[], text[], text[], integer, timestamptz, bigint);

CREATE FUNCTION nous_context_always_on(
    agent text, text[], bigint, bigint, vector, text, text[], text[], text[], integer,
    timestamptz, bigint, text[]
) RETURNS TABLE (
    id uuid, kind text, summary text, importance double precision,
    trigger_pattern text, category text, cosine double precision, part text,
    slot_subject text, slot_attribute text, valid_from timestamptz,
    event_at timestamptz, own boolean, slot_value text, old_values jsonb
)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = auto AS $fn$
DECLARE
    statement CONSTANT text := $q$
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
 ORDER BY f.event_at, m.id LIMIT $12)
$q$;
    prepared CONSTANT text := nous_prepared('context_always_on', agent, statement);
BEGIN
    IF prepared IS NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
        RETURN QUERY EXECUTE statement USING
            agent, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13;
    ELSE
        RETURN QUERY EXECUTE format('EXECUTE %I(%s)', prepared, concat_ws(', ',
            quote_nullable(agent), quote_nullable($2), quote_nullable($3),
            quote_nullable($4), quote_nullable($5), quote_nullable($6),
            quote_nullable($7), quote_nullable($8), quote_nullable($9),
            quote_nullable($10), quote_nullable($11), quote_nullable($12),
            quote_nullable($13)));
    END IF;
END
$fn$;
