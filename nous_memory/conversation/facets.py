"""Structured facets kept beside the prose: participants, decisions, action items,
unresolved threads and entities.  Bounded lists, newest kept, duplicates folded."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

ITEM_CHARS = 160
LIMITS = {"participants": 20, "decisions": 12, "action_items": 12, "unresolved": 8,
          "entities": 60}
STOPWORDS = frozenset(
    "I A An The This That These Those It Its He She We They You Your My Our Their His Her "
    "Me Us Them And But Or So If Then When While What Which Who Whom Whose Where Why How "
    "Yes No Not Oh Ok Okay Hey Hi Hello Thanks Thank Sure Well Also Just Really Wow Great "
    "Good Nice Cool Awesome Yeah Yep Nope Please Sorry Let Lets Here There Is Are Was Were "
    "Be Been Do Does Did Have Has Had Can Could Will Would Should May Might Must Shall "
    "All Any Some Every Each Both Either Neither One Two For From To In On At By With As "
    "Of About After Before Since Until Maybe Actually Anyway Still Even Absolutely Definitely "
    "Totally Glad Love Haha Lol Right True Exactly Agreed Congrats Congratulations Wishing "
    "Take Keep Make Made Got Get Go Going Gonna Went See Saw Look Looks Know Knew Think "
    "Thought Feel Felt Yours Mine Ours Theirs Myself Yourself Monday Tuesday Wednesday "
    "Thursday Friday Saturday Sunday".split())
_NAME = re.compile(r"\b[A-Z][a-zA-Z'\u2019-]*[a-zA-Z]\b|\b[A-Z]\b")
_POSSESSIVE = re.compile(r"['\u2019]s$")
_NUMBER = re.compile(r"\b\d[\d,.:/-]*\d\b|\b\d\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_DECISION = re.compile(r"\b(decided|decide|agreed|we'll go with|chose|choose|going with|"
                       r"settled on|will use|picked)\b", re.I)
_ACTION = re.compile(r"\b(I'll|I will|we'll|we will|need to|have to|remind|todo|to-do|"
                     r"going to|plan to|promise)\b", re.I)


class Facets(BaseModel):
    """The structured side of a summary (JSON beside the prose)."""

    model_config = ConfigDict(extra="ignore")

    participants: list[str] = []
    decisions: list[str] = []
    action_items: list[str] = []
    unresolved: list[str] = []
    entities: list[str] = []


# sentence openers that are not names: imperatives and the like a chat starts with
OPENERS = frozenset(
    "Add Ask Book Bring Buy Call Can't Check Close Compare Count Describe Don't Explain "
    "Find Give Help Remember Remind Show Tell Open Pick Plan Read Send Set Start Stop Try "
    "Visit Walk Write Note Noted Perfect Fine Done Alright Absolutely Certainly Hmm Okay "
    "Interesting Understood Got Next First Second Third Last Today Tomorrow Yesterday "
    "Tonight Morning Evening Afternoon Also Another Other Question Answer Turn Topic Number "
    "Based According Given Sounds Happy Let's I'm I've I'd I'll It's That's There's "
    "What's Here's You're We're They're".split())


def names_in(text: str) -> list[str]:
    """The people, places and things ``text`` names (capitalised words that are not
    common openers), in order of appearance; numbers are not names."""
    names = [_POSSESSIVE.sub("", w) for w in _NAME.findall(text)]
    return [n for n in names if n not in STOPWORDS and n not in OPENERS and len(n) > 1]


def decision_or_action(text: str) -> bool:
    """Whether ``text`` states a decision or a commitment."""
    return bool(_DECISION.search(text) or _ACTION.search(text))


def entities_in(text: str) -> list[str]:
    """Capitalised names and numbers, in order of appearance (the retention measure's unit;
    facets list :func:`names_in`, without the numbers)."""
    names = [_POSSESSIVE.sub("", w) for w in _NAME.findall(text)]
    found = [n for n in names if n not in STOPWORDS and len(n) > 1]
    return found + _NUMBER.findall(text)


def _bounded(items: Iterable[str], limit: int) -> list[str]:
    """Newest last; a repeated item moves to the end; at most ``limit`` kept."""
    kept: dict[str, str] = {}
    for item in items:
        text = " ".join(str(item).replace("\x00", "").split())[:ITEM_CHARS]
        if text:
            kept.pop(text.lower(), None)
            kept[text.lower()] = text
    return list(kept.values())[-limit:]


def merge(old: Facets, new: Facets) -> Facets:
    data: dict[str, Any] = {}
    for key, limit in LIMITS.items():
        data[key] = _bounded([*getattr(old, key), *getattr(new, key)], limit)
    return Facets(**data)


def clean(facets: Facets) -> Facets:
    """Model output is untrusted: bounded lists of bounded strings."""
    return merge(Facets(), facets)


def rule_facets(lines: Sequence[tuple[str, str]]) -> Facets:
    """Facets of (speaker, text) pairs by pattern: decisions, commitments, open questions."""
    participants, decisions, actions, unresolved, entities = [], [], [], [], []
    for speaker, text in lines:
        if speaker not in ("assistant", "tool", "system", "user"):
            participants.append(speaker)
        for sentence in _SENTENCE.split(text):
            if _DECISION.search(sentence):
                decisions.append(f"{speaker}: {sentence}")
            elif _ACTION.search(sentence):
                actions.append(f"{speaker}: {sentence}")
            if sentence.rstrip().endswith("?"):
                unresolved.append(f"{speaker}: {sentence}")
        entities.extend(names_in(text))
    return clean(Facets(participants=participants, decisions=decisions, action_items=actions,
                        unresolved=unresolved[-LIMITS["unresolved"]:], entities=entities))


def render(facets: Facets) -> str:
    """Facets as compact text for the summary block of a prompt."""
    parts = []
    for key, label in (("participants", "Participants"), ("entities", "Entities"),
                       ("decisions", "Decisions"), ("action_items", "Action items"),
                       ("unresolved", "Unresolved")):
        values = getattr(facets, key)
        if values:
            sep = ", " if key in ("participants", "entities") else "; "
            parts.append(f"{label}: {sep.join(values)}")
    return "\n".join(parts)
