-- Schema version 10.
--
-- Context assembly reads an agent's pinned profile facts on every call (the facts the
-- user stated, in a few categories).  Without an index on the category, that read went
-- through every fact of the agent: a fixed cost per call that grows with the agent.

CREATE INDEX facts_pinned ON facts (agent_id, lower(category))
    WHERE source_kind = 'user_stated';
