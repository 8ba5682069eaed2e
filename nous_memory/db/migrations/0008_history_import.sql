-- Schema version 8.
--
-- History import: an episode remembers the key of the session it was imported from, so
-- a second import of the same history skips it (unique per agent).  A fact remembers
-- the message it was learned from, so recall credits that turn and context shows the
-- two once.

ALTER TABLE episodes ADD COLUMN source_key text
    CHECK (length(source_key) BETWEEN 1 AND 200);
CREATE UNIQUE INDEX episodes_source_key ON episodes (agent_id, source_key)
    WHERE source_key IS NOT NULL;
ALTER TABLE facts ADD COLUMN source_seq integer CHECK (source_seq >= 0);
