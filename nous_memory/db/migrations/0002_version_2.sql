-- Schema version 2.
--
-- Work items: any task name (the worker dispatches on it), a dedup key and a payload.
-- New tables: episode_extractions (the close's extraction, learned by a follow-up item),
-- memory_archive (cold storage), extraction_cache (tier-2 extractions), job_runs
-- (maintenance jobs).  Episodes say where their detail lives (storage); more audit events.
-- Working memory: message edits and deletes keep the raw text; the conversation tables.
-- Recall: chunks keep the turns before them as indexed context (weighted tsvector); rows
-- with embeddings stay untoasted so the vector leg reads them in place.

ALTER TABLE work_items DROP CONSTRAINT work_items_task_check;
ALTER TABLE work_items ADD CONSTRAINT work_items_task_check
    CHECK (task ~ '^[a-z][a-z_]{0,62}$');
ALTER TABLE work_items ADD COLUMN dedup_key text NOT NULL DEFAULT '';
ALTER TABLE work_items ADD COLUMN payload jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(payload) = 'object');
DROP INDEX work_items_one_open;
CREATE UNIQUE INDEX work_items_one_open ON work_items (agent_id, task, memory_id, dedup_key)
    WHERE state IN ('pending', 'running');
CREATE INDEX work_items_by_memory ON work_items (agent_id, memory_id, task);

ALTER TABLE memories SET (toast_tuple_target = 8160);
ALTER TABLE episode_chunks SET (toast_tuple_target = 8160);
ALTER TABLE episode_chunks ADD COLUMN context text NOT NULL DEFAULT '';
ALTER TABLE episode_chunks ALTER COLUMN search_tsv SET EXPRESSION AS (
    setweight(to_tsvector('english', content), 'A')
    || setweight(to_tsvector('english', context), 'D'));

ALTER TABLE episodes ADD COLUMN storage text NOT NULL DEFAULT 'hot'
    CHECK (storage IN ('hot', 'trimmed', 'archived', 'restored', 'expired'));

ALTER TABLE memory_events DROP CONSTRAINT memory_events_event_check;
ALTER TABLE memory_events ADD CONSTRAINT memory_events_event_check
    CHECK (event IN (
        'created', 'confirmed', 'updated', 'superseded', 'trimmed',
        'archived', 'restored', 'deleted', 'purged',
        -- maintenance jobs: lifecycle rules, procedure compression, retention
        'promoted', 'flagged', 'retired', 'compressed', 'expired'));

ALTER TABLE episode_messages ADD COLUMN edited_at timestamptz;
ALTER TABLE episode_messages ADD COLUMN deleted_at timestamptz;
ALTER TABLE episode_messages ADD COLUMN edits jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(edits) = 'array');

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

-- ---------------------------------------------------------------- working memory (issue 7)

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
