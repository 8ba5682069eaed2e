"""What is ahead rather than what is so: a plan is not yet a slot's value.

"We're moving to Berlin in April" said in October fills no home: it is a plan, dated
where the day can be read (``event_time``), and shown as upcoming.  Told by the grammar
of the future (a future auxiliary or intention, a time still to come), never by a list
of what people plan.
"""

from __future__ import annotations

import re
from datetime import datetime

from .event_time import event_time
from .fact_slots import Slot, read_slot
from .slot_words import DEADLINE, EVENT_PREFIX

# a statement about what is ahead: a day it names is the moment of a plan
_AHEAD = re.compile(r"\b(?:will|going to|plans? to|planning to|scheduled|booked|due|"
                    r"appointment|meeting|interview|flight|reservation|coming up|upcoming|"
                    r"is on|are on|moved to|rescheduled|postponed|pushed)\b", re.I)


# what is ahead, by the grammar of the future: a future auxiliary or intention, or a
# progressive or present verb with a time still to come ("is moving next month")
_FUTURE_VERB = (r"\b(?:will|won't|shall|'ll|going to|gonna|plans? to|planning to|about to|"
                r"intends? to|hopes? to|hoping to|thinking of|considering)\b")
_FUTURE = re.compile(
    _FUTURE_VERB + r"|\b(?:next|upcoming|tomorrow|soon)\b"
    r"(?! to\b| door\b)|\bin (?:a|an|one|two|three|four|five|six|a few|a couple of|\d+) "
    r"(?:days?|weeks?|months?|years?)\b", re.I)
_BY_VERB = re.compile(_FUTURE_VERB, re.I)


# the arranged future: a progressive verb and a month to come ("we're moving to Berlin
# in April", said in October); "moved ... in April" or "living here since April" is not
_ARRANGED = re.compile(
    r"\b(?:is|are|am|'m|'re)\s+(?:\w+\s+)?\w+ing\b.*\bin (?:january|february|march|"
    r"april|may|june|july|august|september|october|november|december)\b", re.I)


def states_a_plan(content: str) -> bool:
    """Whether a statement tells what is ahead rather than what is so: a move planned for
    next month is not yet the home."""
    return _FUTURE.search(content) is not None or _ARRANGED.search(content) is not None


def plans_by_its_verb(clause: str) -> bool:
    """Whether a clause tells what is ahead by its own verb ("it'll peak at 45"), not by a
    time that may reach the whole sentence ("Next month, I'm moving to Berlin")."""
    return _BY_VERB.search(clause) is not None


def slot_and_event(content: str, said_at: datetime) -> tuple[Slot | None, datetime | None]:
    """A fact's slot, and the moment of the plan it states (a day on or after the day it
    was said, in a statement about what is ahead), read from its content.  A planned
    value of a lasting attribute ("is moving to Berlin next month") fills no slot yet: it
    is a plan, dated where the day can be read."""
    slot = read_slot(content)
    event = None
    dated = slot is not None and (slot.attribute.startswith(EVENT_PREFIX)
                                  or slot.attribute == DEADLINE)
    lasting = slot is not None and not dated and not slot.ended
    if dated or lasting or _AHEAD.search(content) or states_a_plan(content):
        moment = event_time(content, said_at)
        if moment is not None and moment.date() >= said_at.date():
            event = moment
    if lasting and (states_a_plan(content)
                    or (event is not None and event.date() > said_at.date())):
        slot = None  # "we're moving to Berlin in April": a plan until April
    elif lasting:
        event = None
    return slot, event
