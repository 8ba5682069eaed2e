-- nous-memory schema: the single source of truth for the database layout.
--
-- schema-version: 14
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
    -- whose it is (people/): the person keys of the people it belongs to, a person's own
    -- facts and the conversations they were in; empty: the agent's as a whole, shared
    -- with everyone who talks to it.  A person reads theirs and the shared ones only.
    people            text[]      NOT NULL DEFAULT '{}',
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
    -- the person who said it (people/keys.py): whose a fact learned from it is
    person        text,
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
       END AS detail,
       m.people
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

-- ---------------------------------------------------------------- reads as functions

-- The read path's statements of one agent (the named queries recall_agent_rows, recall,
-- recall_current_of_slots, context_always_on, context_tier2, held verbatim: a test fails
-- when they differ) as functions of that agent.  On Citus the citus script distributes
-- them by their agent argument (create_distributed_function), so the coordinator hands a
-- call whole to the worker holding the agent's shards, and there nous_prepared runs the
-- statement on those shards, prepared once per session and shard group: a cached plan,
-- where a statement through the coordinator is planned there, and again on the worker,
-- on every call.  Where the shards are not on the node (a call that was not handed on)
-- the statement runs as it is.  On one PostgreSQL the store runs the named queries; the
-- functions exist, prepare the same statements over the tables and give the same rows.

CREATE FUNCTION nous_prepared(query text, agent text, statement text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    citus CONSTANT boolean := to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
    statement_name text := 'local';
    relations text[] := '{}';
    found text;
    rel text;
    shard bigint;
BEGIN
    IF citus THEN  -- a prepared statement per shard group (the agent's memories shard),
        -- used only while that shard is placed on this node: a copy a move left behind
        -- for a while is never read (the statement then runs on the distributed tables)
        shard := get_shard_id_for_distribution_column('memories', agent);
        IF NOT EXISTS (SELECT 1 FROM pg_dist_placement p
                       JOIN pg_dist_local_group g ON g.groupid = p.groupid
                       WHERE p.shardid = shard) THEN
            RETURN NULL;
        END IF;
        statement_name := shard::text;
    END IF;
    statement_name := format('nous_%s_%s_%s', query, statement_name, left(md5(statement), 8));
    -- a session setting remembers what the session prepared: pg_prepared_statements
    -- lists every statement with its text, a cost that grows with the shard groups a
    -- session serves (a Citus worker's session from the coordinator serves many).  A
    -- DEALLOCATE without DISCARD ALL (which resets the setting too) would leave the
    -- session's reads failing: nothing in the store or Citus does that
    IF current_setting('nous_prepared.' || statement_name, true) = 'yes' THEN
        RETURN statement_name;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_prepared_statements p WHERE p.name = statement_name) THEN
        -- prepared in a transaction that rolled back (a PREPARE stays, a setting does not)
        PERFORM set_config('nous_prepared.' || statement_name, 'yes', false);
        RETURN statement_name;
    END IF;
    -- each table the statement reads (after FROM, JOIN or a comma), by the relation that
    -- holds it here: on Citus the agent's shard, which must be on this node; on one
    -- PostgreSQL the table itself, schema-qualified
    FOR found IN SELECT DISTINCT m[1] FROM regexp_matches(
            statement, '(?:FROM|JOIN|,)\s+([a-z_]+)\M', 'g') AS m LOOP
        CONTINUE WHEN to_regclass(found) IS NULL;  -- a CTE, an alias, a column
        rel := NULL;
        IF citus THEN  -- (Citus's catalog only where it is)
            IF EXISTS (SELECT 1 FROM pg_dist_partition
                       WHERE logicalrelid = to_regclass(found)) THEN
                rel := shard_name(found::regclass, get_shard_id_for_distribution_column(
                    found::regclass, agent));
                IF to_regclass(rel) IS NULL THEN
                    RETURN NULL;  -- the shard is on another node: the statement as it is
                END IF;
            END IF;
        END IF;
        IF rel IS NULL THEN
            SELECT format('%I.%I', n.nspname, c.relname) INTO rel
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.oid = to_regclass(found);
        END IF;
        relations := relations || ARRAY[found, rel];
    END LOOP;
    FOR i IN 1 .. cardinality(relations) / 2 LOOP
        statement := regexp_replace(statement, '((?:FROM|JOIN|,)\s+)' || relations[2 * i - 1]
                                    || '\M', '\1' || relations[2 * i], 'g');
    END LOOP;
    EXECUTE format('PREPARE %I AS %s', statement_name, statement);
    PERFORM set_config('nous_prepared.' || statement_name, 'yes', false);
    RETURN statement_name;
END
$fn$;

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

CREATE FUNCTION nous_recall_agent_rows(
    agent text, bigint
) RETURNS TABLE (
    agent_rows bigint
)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = auto AS $fn$
DECLARE
    statement CONSTANT text := $q$
SELECT GREATEST(
    (SELECT count(*) FROM (SELECT 1 FROM memories
                           WHERE agent_id = $1 AND status <> 'deleted' LIMIT $2) AS m),
    (SELECT count(*) FROM (SELECT 1 FROM episode_chunks WHERE agent_id = $1 LIMIT $2) AS c))
    AS agent_rows
$q$;
    prepared CONSTANT text := nous_prepared('recall_agent_rows', agent, statement);
BEGIN
    IF prepared IS NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
        RETURN QUERY EXECUTE statement USING
            agent, $2;
    ELSE
        RETURN QUERY EXECUTE format('EXECUTE %I(%s)', prepared, concat_ws(', ',
            quote_nullable(agent), quote_nullable($2)));
    END IF;
END
$fn$;

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

CREATE FUNCTION nous_context_tier2(
    agent text, uuid[], bytea, integer, integer
) RETURNS TABLE (
    id uuid, kind text, cached text, cached_source text, detail text, title text,
    name text, goals text[], core_patterns text[], notes text[]
)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = auto AS $fn$
DECLARE
    statement CONSTANT text := $q$
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
       OR (m.kind = 'procedure' AND cardinality(p.core_patterns) > 5))
$q$;
    prepared CONSTANT text := nous_prepared('context_tier2', agent, statement);
BEGIN
    IF prepared IS NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
        RETURN QUERY EXECUTE statement USING
            agent, $2, $3, $4, $5;
    ELSE
        RETURN QUERY EXECUTE format('EXECUTE %I(%s)', prepared, concat_ws(', ',
            quote_nullable(agent), quote_nullable($2), quote_nullable($3),
            quote_nullable($4), quote_nullable($5)));
    END IF;
END
$fn$;
