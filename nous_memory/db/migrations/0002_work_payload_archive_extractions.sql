-- Schema version 2.
--
-- Work items: any task name (the worker dispatches on it), a dedup key and a payload.
-- New tables: episode_extractions (the close's extraction, learned by a follow-up item),
-- memory_archive (cold storage), extraction_cache (tier-2 extractions).

ALTER TABLE work_items DROP CONSTRAINT work_items_task_check;
ALTER TABLE work_items ADD CONSTRAINT work_items_task_check
    CHECK (task ~ '^[a-z][a-z_]{0,62}$');
ALTER TABLE work_items ADD COLUMN dedup_key text NOT NULL DEFAULT '';
ALTER TABLE work_items ADD COLUMN payload jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(payload) = 'object');
DROP INDEX work_items_one_open;
CREATE UNIQUE INDEX work_items_one_open ON work_items (agent_id, task, memory_id, dedup_key)
    WHERE state IN ('pending', 'running');

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
-- left(hot detail, start_offset) || content; a transcript moved cold is one jsonb array of
-- its message rows.  expand() and restore read it; only retention or a purge deletes it.
CREATE TABLE memory_archive (
    agent_id      text        NOT NULL,
    memory_id     uuid        NOT NULL,
    part          text        NOT NULL CHECK (part IN ('detail', 'transcript')),
    start_offset  integer     NOT NULL DEFAULT 0 CHECK (start_offset >= 0),
    content       text,
    messages      jsonb       CHECK (messages IS NULL OR jsonb_typeof(messages) = 'array'),
    reason        text        NOT NULL CHECK (reason IN ('trim', 'archive')),
    archived_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, memory_id, part),
    CHECK ((part = 'detail') = (content IS NOT NULL)),
    CHECK ((part = 'transcript') = (messages IS NOT NULL))
);

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

CREATE INDEX extraction_cache_expiry ON extraction_cache (expires_at);
