-- Schema version 4.
--
-- Citus-ready foreign keys: Citus refuses ON DELETE SET NULL (even PostgreSQL 15's
-- column-list form) on a foreign key that includes the distribution column (agent_id).
-- The four links between memories (a fact's or decision's source episode, a fact's
-- supersession chain) become plain keys; a purge clears the links to the purged memory
-- first (query purge_unlink), which is what SET NULL did.

ALTER TABLE facts
    DROP CONSTRAINT facts_agent_id_source_episode_id_fkey,
    DROP CONSTRAINT facts_agent_id_supersedes_id_fkey,
    DROP CONSTRAINT facts_agent_id_superseded_by_id_fkey,
    ADD CONSTRAINT facts_agent_id_source_episode_id_fkey FOREIGN KEY (agent_id, source_episode_id)
        REFERENCES episodes (agent_id, memory_id),
    ADD CONSTRAINT facts_agent_id_supersedes_id_fkey FOREIGN KEY (agent_id, supersedes_id)
        REFERENCES facts (agent_id, memory_id),
    ADD CONSTRAINT facts_agent_id_superseded_by_id_fkey FOREIGN KEY (agent_id, superseded_by_id)
        REFERENCES facts (agent_id, memory_id);

ALTER TABLE decisions
    DROP CONSTRAINT decisions_agent_id_source_episode_id_fkey,
    ADD CONSTRAINT decisions_agent_id_source_episode_id_fkey
        FOREIGN KEY (agent_id, source_episode_id) REFERENCES episodes (agent_id, memory_id);
