-- Schema version 7.
--
-- Episodes say how their facts were extracted: none yet, by the rule extractor (no LLM
-- at close), or by the LLM.  The backfill job upgrades every closed episode whose facts
-- no LLM extracted, whatever its age; its partial index keeps that scan small.

ALTER TABLE episodes ADD COLUMN facts_extractor text NOT NULL DEFAULT 'none'
    CHECK (facts_extractor IN ('none', 'rules', 'llm'));
UPDATE episodes SET facts_extractor = 'llm' WHERE facts_state = 'extracted';
CREATE INDEX episodes_not_extracted ON episodes (agent_id, memory_id)
    WHERE facts_state = 'not_extracted';
