-- Schema version 11.
--
-- Facts know what they describe: a slot (subject, attribute, value), the time a fact was
-- said (valid_from) and until when it held (valid_until), and the moment a stated plan
-- happens (event_at).  Existing facts keep valid_from NULL: the backfill job reads their
-- slots with the rules (Python) and dates them by their source episode.

ALTER TABLE facts ADD COLUMN slot_subject text;
ALTER TABLE facts ADD COLUMN slot_attribute text;
ALTER TABLE facts ADD COLUMN slot_value text;
ALTER TABLE facts ADD COLUMN slot_ended boolean NOT NULL DEFAULT false;
ALTER TABLE facts ADD COLUMN valid_from timestamptz;
ALTER TABLE facts ADD COLUMN valid_until timestamptz;
ALTER TABLE facts ADD COLUMN event_at timestamptz;

CREATE INDEX facts_slot ON facts (agent_id, slot_subject, slot_attribute)
    WHERE slot_attribute IS NOT NULL;
CREATE INDEX facts_events ON facts (agent_id, event_at) WHERE event_at IS NOT NULL;
