-- Schema version 6.
--
-- Decisions carry a subject (what they are about): a decision extracted at an episode's
-- close on the same subject as an existing one, and close in meaning, updates that one's
-- outcome instead of becoming a duplicate.

ALTER TABLE decisions ADD COLUMN subject text;
