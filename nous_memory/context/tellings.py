"""A person's statements that name values ("tellings"), read for what they name.

What a later statement names decides whether it bears on an earlier value (``later.py``,
``retold.py``): numbers and times, days, name-like words inside a sentence, and for some
attributes a word of a known kind (a diet, a means of travel); what kind each value is
(a time is told otherwise only by a time); whether a statement is about its person or
about someone of theirs.  Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from itertools import pairwise
from uuid import UUID

from ..memories.ahead import plans_by_its_verb, states_a_plan
from ..memories.fact_slots import SELF, TITLE_DOT
from ..memories.slot_words import (
    CAR,
    CAR_BRANDS,
    COMMUTE,
    COMMUTE_MEANS,
    DIET,
    DIETS,
    PEOPLE,
    PHONE,
    PHONE_BRANDS,
)
from ..words import MONTH_NAMES, WEEKDAY_NAMES
from .model import Candidate, Section

MAX_LATER = 24  # statements compared per call (the most recent ones that name values)
MAX_SPOKEN = 64  # statements read for the names they hold
QUOTE_WORDS = 40  # a later statement shown above the value: its sentences with values

Key = tuple[UUID, int]  # a memory, and its chunk's number (-1: the memory itself)
_SPEAKER = re.compile(r"^([^:\n]{1,40}):\s*")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# a clause of a sentence: up to a comma, a semicolon or a joining "and" / "but" / "so"
_CLAUSE = re.compile(r"(?:[^,;]+?)(?=[,;]|\s(?:and|but|so)\s|$)", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9£$€][\w'\u2019.:/,-]*[\w%]|[A-Za-z0-9]")
_MY_PERSON = re.compile(r"\b(?:my|our)\s+(?P<who>\w+)(?:\s+(?P<then>\w+))?", re.IGNORECASE)
# attributes whose values are a known kind of word: a value of theirs need not be
# capitalised ("eating flexitarian these days")
VALUE_WORDS: Mapping[str, frozenset[str]] = {
    DIET: frozenset(DIETS), COMMUTE: frozenset(COMMUTE_MEANS), CAR: frozenset(CAR_BRANDS),
    PHONE: frozenset(PHONE_BRANDS)}
_KNOWN_VALUES = frozenset().union(*VALUE_WORDS.values())
_ASKING = re.compile(r"\W*(?:do|does|did|can|could|would|will|should|shall|is|are|was|were|"
                     r"have|has|any|whose|(?:what|how|why|where|when|which|who)"
                     r"(?:['\u2019]?(?:s|re|d|ll))?)\b", re.IGNORECASE)  # "whats" asks too
_NOT_VALUES = frozenset("i i'm im i've i'd i'll ok okay".split())


_TIME = re.compile(r"^\d{1,2}(?::\d\d)?(?:am|pm|h)?$|^\d{1,2}:\d\d$")
_CALENDAR = frozenset(WEEKDAY_NAMES) | frozenset(MONTH_NAMES) | frozenset(
    w + "s" for w in WEEKDAY_NAMES)


def value_kind(value: str) -> str:
    """What kind of value a word is: a time, a day or month, another number, a word of a
    known kind (a diet, a means of travel, ...), or a name.  A value is told otherwise
    only by a value of its kind: a dentist's "8 July at 3pm" does not retell "Porto"."""
    low = value.lower()
    if low in _CALENDAR or re.fullmatch(r"\d{1,2}(?:st|nd|rd|th)", low):
        return "day"
    if _TIME.match(low) and (":" in low or low.endswith(("am", "pm", "h"))):
        return "time"
    if any(ch.isdigit() for ch in low):
        return "number"
    for attribute, words in VALUE_WORDS.items():
        if low in words:
            return attribute
    return "name"


def kinds(values: Iterable[str]) -> frozenset[str]:
    return frozenset(value_kind(v) for v in values)


@dataclass(frozen=True, slots=True, kw_only=True)
class Later:
    """A person's statement that names values, said at ``said``."""

    cand: Candidate
    said: datetime
    speaker: str
    body: str
    values: frozenset[str]  # lower case


def words(text: str) -> frozenset[str]:
    return frozenset(_norm(t) for t in _TOKEN.findall(text))


def adjacent(text: str) -> frozenset[tuple[str, str]]:
    """The pairs of words written next to each other, in order (lower case)."""
    tokens = [_norm(t) for t in _TOKEN.findall(text)]
    return frozenset(pairwise(tokens))


def _norm(token: str) -> str:
    return token.lower().replace("\u2019", "'").removesuffix("'s").strip(".,:/-'$£€")


def sentences(body: str) -> list[str]:
    """A text's sentences, a title's full stop ("Dr. Fofana") not taken for an end."""
    return _SENTENCE.findall(TITLE_DOT.sub(r"\1", body))


def named_values(body: str, known: frozenset[str] = frozenset()) -> frozenset[str]:
    """What a statement names as so: numbers and times, and name-like words inside a
    sentence (capitalised, not its first word unless ``known`` holds it as a name named
    elsewhere, not "I"); never in a question or in what tells what is ahead (a plan
    replaces nothing yet): a clause planned by its own verb ("I'm at 32 miles a week and
    it'll peak at 45"), else the whole sentence ("Next month, I'm moving to Berlin")."""
    out: set[str] = set()
    for sentence in sentences(body):
        if _ASKING.match(sentence):
            continue  # "Is it 9:30?" asks; "Rent is $950, is that normal?" tells
        ahead: list[tuple[int, int]] = []
        if states_a_plan(sentence):
            ahead = [m.span() for m in _CLAUSE.finditer(sentence) if states_a_plan(m.group())]
            if not ahead or not all(plans_by_its_verb(sentence[a:b]) for a, b in ahead):
                continue  # a time ahead may reach the whole sentence: all of it is a plan
        tokens = list(_TOKEN.finditer(sentence))
        plan = 0  # the plan clauses and the tokens are both in order
        for index, match in enumerate(tokens):
            token, low = match.group(), _norm(match.group())
            while plan < len(ahead) and ahead[plan][1] <= match.start():
                plan += 1
            if not low or low in _NOT_VALUES or (
                    plan < len(ahead) and ahead[plan][0] <= match.start()):
                continue
            if index == 0 and not low.replace(":", "").replace(".", "").isdigit() and not (
                    len(tokens) > 1 and tokens[1].group()[:1].isupper()
                    and _norm(tokens[1].group()) not in _NOT_VALUES) and not (
                    token[0].isupper() and low in known):
                continue  # a sentence's first word, unless a name of two ("Henrik Dahl")
                # or one named inside another statement ("... so I found Lukas")
            if any(ch.isdigit() for ch in token) or low in _KNOWN_VALUES or (
                    token[0].isupper() and len(low) > 1):
                out.add(low)
    return frozenset(out)


def later_statements(candidates: Iterable[Candidate], *, past: bool = False) -> list[Later]:
    """The candidates that are a person's own statements naming values, newest first
    (``past``: those stating a value known to be past too)."""
    spoken: list[tuple[datetime, Candidate, str, str]] = []
    dated = sorted(((c.said_at, i, c) for i, c in enumerate(candidates)
                    if c.said_at is not None), reverse=True)
    for said, _, cand in dated:
        if cand.section is Section.NOW or (cand.stale_on is not None and not past):
            continue  # shown as current, or a value known to be past
        if cand.chunk_no is not None:
            found = _SPEAKER.match(cand.text)
            if found is None:
                continue
            speaker, body = found.group(1).strip().lower(), cand.text[found.end():]
            if speaker in ("assistant", "system", "tool"):
                continue
        elif cand.kind == "fact":
            speaker, body = "", cand.text
        else:
            continue
        spoken.append((said, cand, speaker, body))
    # a name said inside one statement is a name where another begins with it; a word
    # also written in lower case ("The Office", "the") is not taken for one
    read = [body for *_, body in spoken[:MAX_SPOKEN]]
    lower = frozenset(t for body in read for t in _TOKEN.findall(body) if t.islower())
    known = (frozenset().union(*(named_values(body) for body in read))
             | _opening_names(read)) - lower
    out: list[Later] = []
    for said, cand, speaker, body in spoken:  # newest first, as far as MAX_LATER
        if len(out) >= MAX_LATER:
            break
        values = named_values(body, known)
        if values:
            out.append(Later(cand=cand, said=said, speaker=speaker, body=body,
                             values=values))
    return out


def _opening_names(bodies: Iterable[str]) -> frozenset[str]:
    """Capitalised words that open sentences of two statements or more, once as the
    subject of a verb ("Harry's our captain", "Ingrid stepped down", "Femi is leading"):
    names, unless a pronoun or a word written in lower case elsewhere ("Honestly, ...",
    "Thanks for ..." open sentences too, but no verb follows them)."""
    seen: dict[str, int] = {}
    acting: set[str] = set()
    for body in bodies:
        for sentence in sentences(body):
            found = _OPENING.match(sentence)
            if found is None or found.group("word").lower() in _PRONOUNS:
                continue
            word = found.group("word").lower()
            seen[word] = seen.get(word, 0) + 1
            if found.group("verb"):
                acting.add(word)
    return frozenset(w for w, n in seen.items() if n >= 2 and w in acting)


# a capitalised word opening a sentence, and whether a verb follows it ("'s", a form of
# be / have / do, a past tense in -ed)
_OPENING = re.compile(r"\W*(?P<word>[A-Z][a-z]{2,})(?P<verb>['\u2019]s\b|\s+(?:is|was|has|had|"
                      r"does|did)\b|\s+[a-z]+ed\b)?")
# what opens a sentence as a subject and is no name ("It's", "That was", "Nobody has")
_PRONOUNS = frozenset("it that this there here let what who where when how he she they "
                      "everything everyone everybody nothing nobody something someone "
                      "somebody".split())


def about(subject: str, later: Later) -> bool:
    """Whether the statement is about the slot's subject: a person's own turn is about
    them unless it speaks of someone of theirs ("my sister ..."); the user's own values
    are borne on by the user's turns (or facts) only, never by another speaker's."""
    body = later.body
    if subject == SELF and later.speaker not in ("", "user"):
        return False
    if subject != SELF and later.speaker == subject:
        return _MY_PERSON.search(body) is None or not any(
            w in PEOPLE for w in words(body))  # a named person's own turn
    if subject == SELF:
        low = body.lower()
        if later.cand.kind == "fact" and not low.startswith(
                ("the user ", "the user's ", "i ", "i'm ", "i've ", "my ", "we ", "our ")):
            return False  # a fact says whom it is about first
        # a sentence naming values speaks of the person unless it is of someone of
        # theirs ("the bootcamp moved to 7:30. My wife still goes at 6:00": the user's)
        theirs, told = False, []
        for sentence in sentences(body):  # "My sister quit. She's at Canva now": hers
            theirs = _of_their_people(sentence) or (theirs and _THIRD.match(sentence) is not None)
            if named_values(sentence):
                told.append(theirs)
        return not all(told) if told else not _of_their_people(body)
    said = words(body)
    wanted = [w for w in subject.replace("user's", " ").split() if w]
    return bool(wanted) and all(w in said for w in wanted)


_THIRD = re.compile(r"\W*(?:he|she|they|his|her|their|him|them)\b", re.IGNORECASE)


def _of_their_people(text: str) -> bool:
    return any((w or "").lower().removesuffix("s") in PEOPLE
               for m in _MY_PERSON.finditer(text) for w in (m.group("who"), m.group("then")))


def _people(body: str) -> frozenset[str]:
    return frozenset(w for w in words(body) if w in PEOPLE) | named_values(body)


def same_subject(a: Later, b: Later) -> bool:
    """Both about the person themselves, or both about the same someone or something
    (a word naming them in both)."""
    a_self, b_self = about(SELF, a), about(SELF, b)
    if a_self and b_self:
        return True
    if a_self or b_self:
        return False
    return bool(_people(a.body) & _people(b.body))


def quote(later: Later) -> str:
    """The statement as shown above the value: its sentences naming values, whole."""
    kept = [s.strip() for s in sentences(later.body) if named_values(s)]
    shown = " ".join(kept or [later.body.strip()]).split()
    body = " ".join(shown[:QUOTE_WORDS]) + (" ..." if len(shown) > QUOTE_WORDS else "")
    return f"{later.speaker}: {body}" if later.speaker else body


def cosine(cosines: Mapping[tuple[Key, Key], float], a: Key, b: Key) -> float:
    return cosines.get((a, b), cosines.get((b, a), -1.0))


def key(cand: Candidate) -> Key:
    return (cand.memory_id, -1 if cand.chunk_no is None else cand.chunk_no)


_YEAR = re.compile(r"^(?:19|20)\d\d$")


@lru_cache(maxsize=4096)
def _value_part(value: str, as_name: bool) -> str:
    """One value as a pattern: an apostrophe of either kind; a name with its capital; a
    number not inside a longer one ("10" is not in "10:30", "2024-05-10" or "10.50")."""
    part = re.escape(value).replace("'", "['\u2019]")
    if value_kind(value) != "name":
        if value[:1].isdigit():
            return rf"(?<![\d:./,-]){part}(?![:./,-]?\d)"
        return part
    if as_name and value[:1].isalpha() and len(value[:1].upper()) == 1:
        return f"(?-i:{re.escape(value[:1].upper())}){part[len(re.escape(value[:1])):]}"
    return part


def value_regex(values: Iterable[str], *, as_names: bool = True) -> re.Pattern[str]:
    """Where a text states any of the values: with ``as_names`` a name with its capital
    ("Design Lead" is not the "design" of "human-centred design"); other values in any
    case.  No values: a pattern that matches nothing."""
    return _compiled(tuple(sorted({v for v in values if v})), as_names)


@lru_cache(maxsize=4096)
def _compiled(values: tuple[str, ...], as_names: bool) -> re.Pattern[str]:
    if not values:
        return _NOTHING
    parts = [_value_part(v, as_names) for v in values]
    return re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)", re.IGNORECASE)


_NOTHING = re.compile(r"(?!)")


def markable(value: str) -> bool:
    """A value distinctive enough to find in other texts: a word of three letters or
    more, a time or an amount; not a small number or a year (every date holds one)."""
    if any(ch.isalpha() for ch in value):
        return len(value) >= 3
    digits = sum(ch.isdigit() for ch in value)
    return (":" in value or digits >= 3) and not _YEAR.match(value)
