-- nous-memory schema: the single source of truth for the database layout.
--
-- schema-version: 11
--
-- The migration runner applies this file to an empty database and records the
-- version above; numbered files in nous_memory/db/migrations/ upgrade databases
-- created from an older version of this file.  Every table carries agent_id and
-- every primary, unique and foreign key includes it (it is the tenant key and the
-- distribution column on Citus).  Lifecycles are text columns with CHECK
-- constraints (easier to extend in a migration than PostgreSQL enums).
-- `vector(384)` is the embedding dimension; it is rewritten when a database is
-- initialised for a model of another dimension, and recorded in store_meta.

CREATE EXTENSION IF NOT EXISTS vector;
-- GIN over (agent_id, tsvector): full-text search reads one agent's postings, not every
-- agent's rows that share a word (btree_gin is in contrib and trusted)
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE schema_version (
    version     integer     PRIMARY KEY,
    name        text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- Database-wide facts fixed at initialisation (embedding_dim, embedding_model).
CREATE TABLE store_meta (
    key         text        PRIMARY KEY,
    value       text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The supertype of every record.
CREATE TABLE memories (
    agent_id          text        NOT NULL CHECK (agent_id <> ''),
    id                uuid        NOT NULL,
    kind              text        NOT NULL
        CHECK (kind IN ('decision', 'fact', 'episode', 'procedure', 'censor')),
    status            text        NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'superseded', 'archived', 'deleted')),
    summary           text        NOT NULL,
    summary_source    text        NOT NULL
        CHECK (summary_source IN ('template', 'given', 'rule', 'llm')),
    summary_tokens    integer     NOT NULL CHECK (summary_tokens >= 0),
    embedding         vector(384),
    embedding_model   text,
    search_tsv        tsvector GENERATED ALWAYS AS (to_tsvector('english', summary)) STORED,
    importance        double precision NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    tags              text[]      NOT NULL DEFAULT '{}',
    version           integer     NOT NULL DEFAULT 1,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    last_accessed_at  timestamptz,
    access_count      integer     NOT NULL DEFAULT 0,
    deleted_at        timestamptz,
    PRIMARY KEY (agent_id, id),
    -- lets each detail table prove it points at a memory of its own kind
    UNIQUE (agent_id, id, kind),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL)),
    CHECK ((status = 'deleted') = (deleted_at IS NOT NULL))
)
-- rows up to a page stay whole: the default (about 2 kB) would move the 1.5 kB embedding
-- of an ordinary row to TOAST, and recall would fetch it from there row by row
WITH (toast_tuple_target = 8160);

CREATE INDEX memories_embedding_hnsw ON memories
    USING hnsw (embedding vector_cosine_ops) WHERE status = 'active';
CREATE INDEX memories_search ON memories USING gin (agent_id, search_tsv);
-- one agent's rows that are not active (archived, superseded, deleted): recall's
-- vector leg over the rows outside the HNSW index, the episodes whose chunks it skips
CREATE INDEX memories_inactive ON memories (agent_id, kind) WHERE status <> 'active';
CREATE INDEX memories_listing ON memories (agent_id, created_at DESC, id DESC);
CREATE INDEX memories_kind_listing ON memories (agent_id, kind, created_at DESC, id DESC);

CREATE TABLE decisions (
    agent_id    text    NOT NULL,
    memory_id   uuid    NOT NULL,
    kind        text    NOT NULL DEFAULT 'decision' CHECK (kind = 'decision'),
    description text    NOT NULL,
    outcome     text    NOT NULL DEFAULT 'pending'
        CHECK (outcome IN ('pending', 'success', 'failure', 'partial', 'abandoned')),
    confidence  double precision CHECK (confidence BETWEEN 0 AND 1),
    pattern     text,
    reasons     text[]  NOT NULL DEFAULT '{}',
    context     text,
    source_episode_id uuid,
    -- what the decision is about (a short label): a decision an episode's close extracts
    -- on the same subject, and close in meaning, updates this one instead of a duplicate
    subject     text,
    PRIMARY KEY (agent_id, memory_id),
    FOREIGN KEY (agent_id, memory_id, kind)
        REFERENCES memories (agent_id, id, kind) ON DELETE CASCADE
);

CREATE TABLE episodes (
    agent_id      text        NOT NULL,
    memory_id     uuid        NOT NULL,
    kind          text        NOT NULL DEFAULT 'episode' CHECK (kind = 'episode'),
    state         text        NOT NULL DEFAULT 'closed'
        CHECK (state IN ('open', 'closing', 'closed')),
    title         text,
    detail        text,
    started_at    timestamptz,
    ended_at      timestamptz,
    participants  text[]      NOT NULL DEFAULT '{}',
    outcome       text,
    lessons       text[]      NOT NULL DEFAULT '{}',
    user_id       text,
    key_points    text[]      NOT NULL DEFAULT '{}',
    topics        text[]      NOT NULL DEFAULT '{}',
    -- whether close processing extracted facts and decisions from the transcript
    facts_state   text        NOT NULL DEFAULT 'not_applicable'
        CHECK (facts_state IN ('not_applicable', 'pending', 'extracted', 'not_extracted')),
    message_count integer     NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    last_message_at timestamptz,
    -- where the detail and transcript live (maintenance jobs): all hot; detail beyond the
    -- hot prefix in memory_archive (trimmed); detail and transcript there (archived); back
    -- by request (restored, kept hot); cold detail deleted by the retention policy (expired)
    storage       text        NOT NULL DEFAULT 'hot'
        CHECK (storage IN ('hot', 'trimmed', 'archived', 'restored', 'expired')),
    -- how its facts were extracted: not yet, by the rule extractor (closed without an
    -- LLM), or by the LLM (the close, or a later upgrade of a rule-only episode)
    facts_extractor text      NOT NULL DEFAULT 'none'
        CHECK (facts_extractor IN ('none', 'rules', 'llm')),
    -- the imported session this episode holds (a history import's key: a second import of
    -- the same history skips it)
    source_key    text        CHECK (length(source_key) BETWEEN 1 AND 200),
    PRIMARY KEY (agent_id, memory_id),
    FOREIGN KEY (agent_id, memory_id, kind)
        REFERENCES memories (agent_id, id, kind) ON DELETE CASCADE,
    CHECK (ended_at IS NULL OR started_at IS NULL OR ended_at >= started_at)
);

CREATE TABLE facts (
    agent_id            text        NOT NULL,
    memory_id           uuid        NOT NULL,
    kind                text        NOT NULL DEFAULT 'fact' CHECK (kind = 'fact'),
    content             text        NOT NULL,
    subject             text,
    category            text,
    confidence          double precision CHECK (confidence BETWEEN 0 AND 1),
    source              text,
    source_kind         text        NOT NULL DEFAULT 'user_stated'
        CHECK (source_kind IN ('user_stated', 'extracted', 'inferred')),
    source_episode_id   uuid,
    -- sha256 of the normalised content (case, whitespace, punctuation folded)
    normalized_hash     bytea       NOT NULL CHECK (length(normalized_hash) = 32),
    confirmation_count  integer     NOT NULL DEFAULT 0 CHECK (confirmation_count >= 0),
    last_confirmed_at   timestamptz,
    supersedes_id       uuid,
    superseded_by_id    uuid,
    -- facts kept side by side because no rule could tell them apart (possible conflict)
    conflicts_with      uuid[]      NOT NULL DEFAULT '{}',
    -- the message of the source episode it was learned from (rule facts know their turn):
    -- recall credits the turn, context shows the two once
    source_seq          integer     CHECK (source_seq >= 0),
    -- the slot the fact fills (facts/slots.py): who it is about, which attribute, the
    -- value it gives it (normalised); slot_ended: it closes the value ("Max died").  A
    -- newer statement in the same slot supersedes, in the order things were said.
    slot_subject        text,
    slot_attribute      text,
    slot_value          text,
    slot_ended          boolean     NOT NULL DEFAULT false,
    -- when it was said (not when recorded) and until when it held (the successor's
    -- valid_from); NULL valid_from: a fact from before slots, not yet read by the backfill
    valid_from          timestamptz,
    valid_until         timestamptz,
    -- the moment a stated plan happens ("next Tuesday at 3pm"): the Upcoming section
    event_at            timestamptz,
    PRIMARY KEY (agent_id, memory_id),
    FOREIGN KEY (agent_id, memory_id, kind)
        REFERENCES memories (agent_id, id, kind) ON DELETE CASCADE,
    FOREIGN KEY (agent_id, source_episode_id)
        REFERENCES episodes (agent_id, memory_id),
    FOREIGN KEY (agent_id, supersedes_id)
        REFERENCES facts (agent_id, memory_id),
    FOREIGN KEY (agent_id, superseded_by_id)
        REFERENCES facts (agent_id, memory_id)
);

-- no ON DELETE SET NULL on keys that include agent_id (Citus refuses it): a purge clears
-- the links to the purged memory first (query purge_unlink)
ALTER TABLE decisions ADD FOREIGN KEY (agent_id, source_episode_id)
    REFERENCES episodes (agent_id, memory_id);
CREATE INDEX decisions_source_episode ON decisions (agent_id, source_episode_id)
    WHERE source_episode_id IS NOT NULL;
CREATE INDEX episodes_open ON episodes (last_message_at) WHERE state = 'open';
-- the backfill job's scan: episodes whose facts no LLM has extracted yet
CREATE INDEX episodes_not_extracted ON episodes (agent_id, memory_id)
    WHERE facts_state = 'not_extracted';
-- one episode per imported session and agent (a history import is idempotent)
CREATE UNIQUE INDEX episodes_source_key ON episodes (agent_id, source_key)
    WHERE source_key IS NOT NULL;

CREATE INDEX facts_source_episode ON facts (agent_id, source_episode_id)
    WHERE source_episode_id IS NOT NULL;
CREATE INDEX facts_normalized ON facts (agent_id, normalized_hash);
-- context assembly's always-on read: the facts the user stated, by category (the pins)
CREATE INDEX facts_pinned ON facts (agent_id, lower(category))
    WHERE source_kind = 'user_stated';
-- learn_fact's slot stage and context's "about the user now" read a slot's facts
CREATE INDEX facts_slot ON facts (agent_id, slot_subject, slot_attribute)
    WHERE slot_attribute IS NOT NULL;
-- the Upcoming section: an agent's dated plans in time order
CREATE INDEX facts_events ON facts (agent_id, event_at) WHERE event_at IS NOT NULL;

-- Deleting a fact (a purge, forgetting an agent) makes PostgreSQL look for the facts that
-- point at it through the supersession links; without these, every deleted fact costs
-- two scans of the whole table.  Partial: most facts have no link.
CREATE INDEX facts_supersedes ON facts (agent_id, supersedes_id)
    WHERE supersedes_id IS NOT NULL;
CREATE INDEX facts_superseded_by ON facts (agent_id, superseded_by_id)
    WHERE superseded_by_id IS NOT NULL;

CREATE TABLE procedures (
    agent_id              text    NOT NULL,
    memory_id             uuid    NOT NULL,
    kind                  text    NOT NULL DEFAULT 'procedure' CHECK (kind = 'procedure'),
    name                  text    NOT NULL,
    goals                 text[]  NOT NULL DEFAULT '{}',
    core_patterns         text[]  NOT NULL DEFAULT '{}',
    implementation_notes  text[]  NOT NULL DEFAULT '{}',
    activation_count      integer NOT NULL DEFAULT 0 CHECK (activation_count >= 0),
    success_count         integer NOT NULL DEFAULT 0 CHECK (success_count >= 0),
    failure_count         integer NOT NULL DEFAULT 0 CHECK (failure_count >= 0),
    effectiveness         double precision CHECK (effectiveness BETWEEN 0 AND 1),
    PRIMARY KEY (agent_id, memory_id),
    FOREIGN KEY (agent_id, memory_id, kind)
        REFERENCES memories (agent_id, id, kind) ON DELETE CASCADE
);

CREATE TABLE censors (
    agent_id              text    NOT NULL,
    memory_id             uuid    NOT NULL,
    kind                  text    NOT NULL DEFAULT 'censor' CHECK (kind = 'censor'),
    trigger_pattern       text    NOT NULL,
    action                text    NOT NULL CHECK (action IN ('warn', 'block', 'absolute')),
    reason                text    NOT NULL,
    activation_count      integer NOT NULL DEFAULT 0 CHECK (activation_count >= 0),
    false_positive_count  integer NOT NULL DEFAULT 0 CHECK (false_positive_count >= 0),
    PRIMARY KEY (agent_id, memory_id),
    FOREIGN KEY (agent_id, memory_id, kind)
        REFERENCES memories (agent_id, id, kind) ON DELETE CASCADE
);

-- The verbatim transcript of an episode: ground truth, never rewritten.
CREATE TABLE episode_messages (
    agent_id      text        NOT NULL,
    episode_id    uuid        NOT NULL,
    seq           integer     NOT NULL CHECK (seq >= 0),
    role          text        NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content       text        NOT NULL,
    name          text,
    tool_call_id  text,
    tokens        integer     NOT NULL CHECK (tokens >= 0),
    metadata      jsonb       NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- working memory: edits and deletes of an open episode's messages keep the
    -- raw text; `edits` holds every earlier version [{content, tokens, edited_at}]
    edited_at     timestamptz,
    deleted_at    timestamptz,
    edits         jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(edits) = 'array'),
    PRIMARY KEY (agent_id, episode_id, seq),
    FOREIGN KEY (agent_id, episode_id)
        REFERENCES episodes (agent_id, memory_id) ON DELETE CASCADE
);

-- Verbatim, turn-aligned pieces of a transcript: embedded and full-text indexed so
-- recall reaches the exact words; they survive close.
CREATE TABLE episode_chunks (
    agent_id          text        NOT NULL,
    episode_id        uuid        NOT NULL,
    chunk_no          integer     NOT NULL CHECK (chunk_no >= 0),
    first_seq         integer     NOT NULL,
    last_seq          integer     NOT NULL,
    content           text        NOT NULL,
    tokens            integer     NOT NULL CHECK (tokens >= 0),
    speakers          text[]      NOT NULL DEFAULT '{}',
    started_at        timestamptz,
    ended_at          timestamptz,
    -- each covered message's metadata, in order (e.g. a source id per turn)
    message_metadata  jsonb       NOT NULL DEFAULT '[]',
    embedding         vector(384),
    embedding_model   text,
    -- the turns just before the chunk (chunks.index_text): embedded and indexed with it,
    -- weight D in search_tsv so the chunk's own words (weight A) can count for more
    context           text        NOT NULL DEFAULT '',
    search_tsv        tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', content), 'A')
        || setweight(to_tsvector('english', context), 'D')) STORED,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, episode_id, chunk_no),
    FOREIGN KEY (agent_id, episode_id)
        REFERENCES episodes (agent_id, memory_id) ON DELETE CASCADE,
    CHECK (last_seq >= first_seq)
)
WITH (toast_tuple_target = 8160);  -- as memories: keep embedding and tsvector in the row

CREATE INDEX episode_chunks_hnsw ON episode_chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX episode_chunks_search ON episode_chunks USING gin (agent_id, search_tsv);

-- Durable deferred work, claimed with FOR UPDATE SKIP LOCKED under a lease.
CREATE TABLE work_items (
    agent_id      text        NOT NULL,
    id            bigint      GENERATED ALWAYS AS IDENTITY,
    -- the worker dispatches on task; an item whose task has no handler fails with a reason
    task          text        NOT NULL CHECK (task ~ '^[a-z][a-z_]{0,62}$'),
    memory_id     uuid        NOT NULL,
    -- distinguishes open items of one (task, memory), e.g. one per query for extractions
    dedup_key     text        NOT NULL DEFAULT '',
    payload       jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(payload) = 'object'),
    state         text        NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'running', 'done', 'failed')),
    attempts      integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    run_after     timestamptz NOT NULL DEFAULT now(),
    lease_until   timestamptz,
    locked_by     text,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, id)
);

-- at most one open item per (agent, task, memory): enqueueing twice is a no-op
CREATE UNIQUE INDEX work_items_one_open ON work_items (agent_id, task, memory_id, dedup_key)
    WHERE state IN ('pending', 'running');
CREATE INDEX work_items_ready ON work_items (run_after) WHERE state IN ('pending', 'running');
-- the work a memory has had (maintenance jobs queue an item once, not every night)
CREATE INDEX work_items_by_memory ON work_items (agent_id, memory_id, task);

-- Audit history of every change.  No foreign key: the trail outlives a purge.
CREATE TABLE memory_events (
    agent_id    text        NOT NULL,
    id          bigint      GENERATED ALWAYS AS IDENTITY,
    memory_id   uuid        NOT NULL,
    event       text        NOT NULL CHECK (event IN (
        'created', 'confirmed', 'updated', 'superseded', 'trimmed',
        'archived', 'restored', 'deleted', 'purged',
        -- maintenance jobs: lifecycle rules, procedure compression, retention
        'promoted', 'flagged', 'retired', 'compressed', 'expired')),
    old_values  jsonb,
    new_values  jsonb,
    actor       text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, id)
);

CREATE INDEX memory_events_by_memory ON memory_events (agent_id, memory_id, id);

-- The close's LLM extraction, kept as returned (cleaned).  Its facts and decisions are
-- learned by a follow-up work item (embeddings and dedup stay off the close path);
-- learned_at marks that done.  Kept afterwards as the provenance of what was learned.
CREATE TABLE episode_extractions (
    agent_id    text        NOT NULL,
    episode_id  uuid        NOT NULL,
    extraction  jsonb       NOT NULL CHECK (jsonb_typeof(extraction) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    learned_at  timestamptz,
    PRIMARY KEY (agent_id, episode_id),
    FOREIGN KEY (agent_id, episode_id)
        REFERENCES episodes (agent_id, memory_id) ON DELETE CASCADE
);

-- Cold storage (trim and archive jobs).  Full episode detail is
-- left(coalesce(hot detail, ''), start_offset) || content (trim keeps a hot prefix of
-- start_offset characters; archive moves all of it, start_offset 0, hot detail NULL); a
-- transcript moved cold is one jsonb array of its message rows (to_jsonb of each
-- episode_messages row, in seq order).  expand() and restore read it; only retention or
-- a purge deletes it.
CREATE TABLE memory_archive (
    agent_id      text        NOT NULL,
    memory_id     uuid        NOT NULL,
    part          text        NOT NULL CHECK (part IN ('detail', 'transcript')),
    start_offset  integer     NOT NULL DEFAULT 0 CHECK (start_offset >= 0),
    -- stored out of line, never compressed on the way in (ALTER below)
    content       text,
    messages      jsonb
        CHECK (messages IS NULL OR jsonb_typeof(messages) = 'array'),
    reason        text        NOT NULL CHECK (reason IN ('trim', 'archive')),
    archived_at   timestamptz NOT NULL DEFAULT now(),
    -- hashtextextended(original, 0) of the whole original (the full detail, or the
    -- transcript's jsonb text): a fast 64-bit checksum restore verifies before it commits
    checksum      bigint,
    PRIMARY KEY (agent_id, memory_id, part),
    CHECK ((part = 'detail') = (content IS NOT NULL)),
    CHECK ((part = 'transcript') = (messages IS NOT NULL))
);
-- STORAGE EXTERNAL: out of line, never compressed on the way in.  pglz (this server has
-- no lz4) costs the jobs more CPU than it saves on cold data that is rarely read; a detail
-- PostgreSQL had already compressed in episodes moves as it is (compressed).  Set here,
-- not in CREATE TABLE, which takes a column's STORAGE only from PostgreSQL 16 on.
ALTER TABLE memory_archive ALTER COLUMN content SET STORAGE EXTERNAL,
    ALTER COLUMN messages SET STORAGE EXTERNAL;

-- Tier-2 query-time extractions of complex records, keyed by (memory, query, size).
CREATE TABLE extraction_cache (
    agent_id      text        NOT NULL,
    memory_id     uuid        NOT NULL,
    query_sha256  bytea       NOT NULL CHECK (length(query_sha256) = 32),
    max_tokens    integer     NOT NULL CHECK (max_tokens > 0),
    content       text        NOT NULL,
    source        text        NOT NULL CHECK (source IN ('llm', 'rule')),
    model         text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (agent_id, memory_id, query_sha256, max_tokens)
);

CREATE INDEX memory_archive_age ON memory_archive (archived_at);

CREATE INDEX extraction_cache_expiry ON extraction_cache (expires_at);

-- Embeddings by (agent, model, sha256 of text), so a repeated text is embedded once.
CREATE TABLE embedding_cache (
    agent_id     text        NOT NULL,
    model        text        NOT NULL,
    text_sha256  bytea       NOT NULL CHECK (length(text_sha256) = 32),
    embedding    vector(384) NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, model, text_sha256)
);

-- One row per maintenance job run (jobs/): cluster-wide, not tenant data.  `slot` is
-- the schedule's fire time the run belongs to: at most one ok scheduled run per slot.
-- A run killed mid-way stays 'running' with no finished_at.
CREATE TABLE job_runs (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job          text        NOT NULL CHECK (job ~ '^[a-z][a-z_]{0,62}$'),
    slot         timestamptz,
    trigger      text        NOT NULL CHECK (trigger IN ('schedule', 'catch_up', 'manual')),
    started_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at  timestamptz,
    status       text        NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'ok', 'failed', 'skipped')),
    dry_run      boolean     NOT NULL DEFAULT false,
    counts       jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(counts) = 'object'),
    note         text,
    error        text,
    runner       text        NOT NULL,
    CHECK ((status = 'running') = (finished_at IS NULL))
);

CREATE INDEX job_runs_by_job ON job_runs (job, started_at DESC);
CREATE UNIQUE INDEX job_runs_one_ok_per_slot ON job_runs (job, slot)
    WHERE status = 'ok' AND NOT dry_run AND slot IS NOT NULL;

-- Every memory with its kind's detail as one JSON object (the read model of get/list).
CREATE VIEW memory_records AS
SELECT m.agent_id, m.id, m.kind, m.status, m.summary, m.summary_source, m.summary_tokens,
       m.embedding_model, m.importance, m.tags, m.version, m.created_at, m.updated_at,
       m.last_accessed_at, m.access_count, m.deleted_at,
       CASE m.kind
           WHEN 'decision'  THEN to_jsonb(dd) - ARRAY['agent_id', 'memory_id']
           WHEN 'fact'      THEN to_jsonb(df) - ARRAY['agent_id', 'memory_id', 'normalized_hash']
           WHEN 'episode'   THEN to_jsonb(de) - ARRAY['agent_id', 'memory_id']
           WHEN 'procedure' THEN to_jsonb(dp) - ARRAY['agent_id', 'memory_id']
           WHEN 'censor'    THEN to_jsonb(dc) - ARRAY['agent_id', 'memory_id']
       END AS detail
FROM memories m
LEFT JOIN decisions  dd ON m.kind = 'decision'  AND dd.agent_id = m.agent_id AND dd.memory_id = m.id
LEFT JOIN facts      df ON m.kind = 'fact'      AND df.agent_id = m.agent_id AND df.memory_id = m.id
LEFT JOIN episodes   de ON m.kind = 'episode'   AND de.agent_id = m.agent_id AND de.memory_id = m.id
LEFT JOIN procedures dp ON m.kind = 'procedure' AND dp.agent_id = m.agent_id AND dp.memory_id = m.id
LEFT JOIN censors    dc ON m.kind = 'censor'    AND dc.agent_id = m.agent_id AND dc.memory_id = m.id;

-- One row per HTTP attempt to an LLM, failed ones included, so cost and reliability
-- per agent is a query.  tokens_source: 'reported' by the server's usage, 'estimated'
-- locally (the server sent no usage), or 'none' (no completion, nothing billed).
CREATE TABLE llm_calls (
    agent_id           text        NOT NULL CHECK (agent_id <> ''),
    id                 bigint      GENERATED ALWAYS AS IDENTITY,
    purpose            text        NOT NULL,
    model              text        NOT NULL,
    prompt_tokens      integer     NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens  integer     NOT NULL CHECK (completion_tokens >= 0),
    tokens_source      text        NOT NULL
        CHECK (tokens_source IN ('reported', 'estimated', 'none')),
    latency_ms         integer     NOT NULL CHECK (latency_ms >= 0),
    outcome            text        NOT NULL CHECK (outcome IN (
        'ok', 'invalid_output', 'rate_limited', 'server_error', 'transport_error',
        'timeout', 'request_error')),
    error              text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, id),
    CHECK (tokens_source <> 'none' OR (prompt_tokens = 0 AND completion_tokens = 0))
);

CREATE INDEX llm_calls_by_time ON llm_calls (agent_id, created_at);

-- ---------------------------------------------------------------- working memory

-- Per-agent overrides of the conversation summary policy (knob -> value); code and
-- settings supply the defaults, a call may override again.
CREATE TABLE conversation_policies (
    agent_id    text        PRIMARY KEY CHECK (agent_id <> ''),
    policy      jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(policy) = 'object'),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per summarised conversation: the watermark (last folded message and a hash of
-- its content), the chain heads, hysteresis and the circuit breaker.  `version` is the
-- compare-and-swap token: a fold only lands if nobody folded since it read the row.
CREATE TABLE conversation_state (
    agent_id            text        NOT NULL,
    episode_id          uuid        NOT NULL,
    watermark_seq       integer     NOT NULL DEFAULT -1 CHECK (watermark_seq >= -1),
    watermark_hash      bytea       CHECK (watermark_hash IS NULL OR length(watermark_hash) = 32),
    summary_id          bigint,
    story_id            bigint,
    version             bigint      NOT NULL DEFAULT 0,
    armed               boolean     NOT NULL DEFAULT false,
    folded_message_count integer    NOT NULL DEFAULT 0 CHECK (folded_message_count >= 0),
    chapter_messages    integer     NOT NULL DEFAULT 0 CHECK (chapter_messages >= 0),
    breaker_failures    integer     NOT NULL DEFAULT 0 CHECK (breaker_failures >= 0),
    breaker_open_until  timestamptz,
    invalidated_reason  text,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, episode_id),
    FOREIGN KEY (agent_id, episode_id)
        REFERENCES episodes (agent_id, memory_id) ON DELETE CASCADE,
    CHECK ((watermark_seq = -1) = (watermark_hash IS NULL))
);

-- The chain of summaries: every fold, compaction, chapter and story summary is a record
-- (audit; only the heads named in conversation_state are current).
CREATE TABLE conversation_summaries (
    agent_id      text        NOT NULL,
    id            bigint      GENERATED ALWAYS AS IDENTITY,
    episode_id    uuid        NOT NULL,
    parent_id     bigint,
    level         text        NOT NULL CHECK (level IN ('chapter', 'story')),
    op            text        NOT NULL
        CHECK (op IN ('fold', 'compaction', 'rebuild', 'chapter_close')),
    depth         integer     NOT NULL CHECK (depth >= 0),
    first_seq     integer     NOT NULL,
    last_seq      integer     NOT NULL,
    covered       integer     NOT NULL CHECK (covered >= 0),
    content       text        NOT NULL,
    chars         integer     NOT NULL CHECK (chars >= 0),
    tokens        integer     NOT NULL CHECK (tokens >= 0),
    source        text        NOT NULL CHECK (source IN ('llm', 'rule')),
    facets        jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(facets) = 'object'),
    status        text        NOT NULL DEFAULT 'current'
        CHECK (status IN ('current', 'superseded', 'invalidated')),
    notes         text[]      NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, id),
    FOREIGN KEY (agent_id, episode_id)
        REFERENCES episodes (agent_id, memory_id) ON DELETE CASCADE,
    CHECK (last_seq >= first_seq - 1)
);

CREATE INDEX conversation_summaries_by_episode
    ON conversation_summaries (agent_id, episode_id, id);

-- Per-message analyses (a rule summary of each message, tool results by kind).  A
-- message may have several (re-analysed after an edit, or by two workers at once): the
-- latest wins (newest created_at, ties to the larger id).  An empty text is a gap.
CREATE TABLE conversation_analyses (
    agent_id      text        NOT NULL,
    id            bigint      GENERATED ALWAYS AS IDENTITY,
    episode_id    uuid        NOT NULL,
    seq           integer     NOT NULL CHECK (seq >= 0),
    content_hash  bytea       NOT NULL CHECK (length(content_hash) = 32),
    kind          text        NOT NULL,
    content       text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, id),
    FOREIGN KEY (agent_id, episode_id)
        REFERENCES episodes (agent_id, memory_id) ON DELETE CASCADE
);

CREATE INDEX conversation_analyses_latest
    ON conversation_analyses (agent_id, episode_id, seq, created_at DESC, id DESC);

-- ---------------------------------------------------------------- erasure audit

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

-- ---------------------------------------------------------------- API keys

-- Keys made at run time (nous-memory keys, POST /keys, the inspector): a name, a role
-- (read-only; read-write; owner: also export, import, erasure and keys) and the agents
-- it may act for (NULL: every agent).  The secret is shown once and only its SHA-256 is
-- kept.  Revoked keys stay as the record of who could do what until when; a live name
-- is unique, so a rotation revokes the old row and inserts a new one under the name.
-- Not tenant data: no agent_id.
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
