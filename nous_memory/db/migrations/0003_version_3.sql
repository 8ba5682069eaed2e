-- Schema version 3.
--
-- Recall at scale: the full-text indexes lead with agent_id (btree_gin), so a query's
-- common words no longer match every agent's rows; one agent's inactive rows get a small
-- partial btree (the vector leg over archived rows, the episodes whose chunks it skips).

CREATE EXTENSION IF NOT EXISTS btree_gin;

DROP INDEX memories_search_gin;
CREATE INDEX memories_search ON memories USING gin (agent_id, search_tsv);
CREATE INDEX memories_inactive ON memories (agent_id, kind) WHERE status <> 'active';

DROP INDEX episode_chunks_search;
CREATE INDEX episode_chunks_search ON episode_chunks USING gin (agent_id, search_tsv);
