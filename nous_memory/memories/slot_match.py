"""Slots against questions and values: which attributes a question asks about, an
attribute's family, and when two values name the same thing."""

from __future__ import annotations

from .slot_words import (
    COUNT_PREFIX,
    EVENT_PREFIX,
    HABIT_PREFIX,
    PET_PREFIX,
    PREFERENCE_PREFIX,
    QUERY_WORDS,
    SCHEDULE_PREFIX,
)


def query_attributes(query: str) -> set[str]:
    """The attributes (or attribute prefixes) a question asks about, by its words."""
    words = {w.lower().strip("?.,!'").removesuffix("'s") for w in query.split()}
    return {attribute for attribute, cues in QUERY_WORDS.items() if words & cues}


def attribute_family(attribute: str) -> str:
    """An attribute's family for query matching: "pet:dog" -> "pet:", "home" -> "home"."""
    for prefix in (PET_PREFIX, COUNT_PREFIX, EVENT_PREFIX, SCHEDULE_PREFIX, PREFERENCE_PREFIX,
                   HABIT_PREFIX):
        if attribute.startswith(prefix):
            return prefix
    return attribute


def same_value(a: str, b: str) -> bool:
    """Two normalised values that name the same thing ("porto" / "porto, portugal")."""
    if not a or not b:
        return a == b
    return a == b or a.startswith(b + " ") or b.startswith(a + " ") or (
        a.startswith(b + ",") or b.startswith(a + ","))
