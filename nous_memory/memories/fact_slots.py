"""What a fact describes: its slot (subject, attribute) and the value it gives it.

Pure, rules only.  ``read_slot("The user moved to Porto last month.")`` gives
``Slot(subject="user", attribute="home", value="porto")``; ``"Omar moved to Toronto."``
gives Omar's home, another slot.  Two facts in one slot with different values are two
values of one attribute over time: the one said later is current (``facts/learning.py``
supersedes by slot, in the order things were said).  An *ending* ("our dog Max died",
"no longer vegetarian", "the trip is cancelled") closes the slot's value.

The reader works on facts as the store holds them: one third-person sentence about a
subject ("The user ...", a name, "The user's sister Ana ...", "The grant report ...").
What it cannot read gets no slot, and such a fact is deduplicated as before, by meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .slot_match import attribute_family, query_attributes, same_value
from .slot_words import (
    ATTRIBUTE_SYNONYMS,
    CAR,
    CAR_BRANDS,
    COMMUTE,
    COMMUTE_MEANS,
    COUNT_PREFIX,
    DEADLINE,
    DIET,
    DIETS,
    EMPLOYER,
    EVENT_NOUNS,
    EVENT_PREFIX,
    HABIT_PREFIX,
    HOME,
    JOB_NOUNS,
    JOB_TITLE,
    NAME,
    PARTNER,
    PEOPLE,
    PET_PREFIX,
    PET_SPECIES,
    PHONE,
    PHONE_BRANDS,
    PREFERENCE_PREFIX,
    RESCHEDULE,
    SCHEDULE_PREFIX,
    SCHOOL,
    VALUE_STOPS,
)

SELF = "user"
MAX_PART_CHARS = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """A subject's attribute and the value a statement gives it (normalised, lower case);
    ``ended``: the statement closes the value ("died", "no longer", "cancelled").
    ``replaces``: a value it says is gone ("switched from coffee to tea": coffee)."""

    subject: str
    attribute: str
    value: str
    ended: bool = False
    replaces: str | None = None

    @property
    def key(self) -> str:
        return f"{self.subject}|{self.attribute}"


_WORD = re.compile(r"[A-Za-z0-9][\w'.:-]*[\w]|[A-Za-z0-9]")
_SUBJECT = re.compile(
    r"^(?P<owner>(?i:the user|user|we|i)|[A-Z][\w'-]*(?: [A-Z][\w'-]*)?)"
    r"(?:'s (?P<rest>.+?))?"
    r"(?=\s(?:is|are|was|were|has|have|had|will|does|doesn't|do|don't|did|didn't|no|now|"
    r"just|recently|finally|officially|also|still|moved|lives|live|works|work|got|"
    r"passed|died|started|joined|left|quit|adopted|switched|changed|became|bought|"
    r"drives|takes|goes|go|went|uses|use|eats|eat|married|broke|got|gets|sold|"
    r"switched|commutes|rides|walks|relocated|ran|retired|turned|cancelled|canceled|"
    r"stopped|gave|welcomed|rescued|accepted|landed|signed|enrolled|transferred|"
    r"graduated|divorced|split|separated|can|can't|prefers|loves|drinks|has|took|"
    r"qualified|trained|retrained|finished|completed|was|hired)\b)")
_THE_THING = re.compile(r"^(?i:the|a|an|our|their|his|her) (?P<thing>[a-z][\w -]{2,60}?)"
                        r"(?=\s(?:is|are|was|were|has|got|had|will|moved|now)\b)")
_ARTICLES = re.compile(r"^(?:(?:a|an|the|his|her|their|our|its|my|some|new|brand new|"
                       r"another|one|two)\s+)+", re.I)
_OWNER_WORDS = re.compile(r"\b(?:the user's|his|her|their|our)\s+", re.I)
_ENDED = re.compile(
    r"\b(?:died|passed away|passed|was put down|put to sleep|ran away|went missing|"
    r"(?:was|were|is|got|has been|have been) (?:cancell?ed|called off|rehomed)|"
    r"cancell?ed|called off|no longer|not .* any ?more|anymore|any longer|broke up|"
    r"split up|separated|divorced|retired|quit|gave up|stopped|left|sold|lost)\b", re.I)


def _clean(value: str) -> str:
    """The value as compared: lower case, no article, owner or closing punctuation."""
    value = _OWNER_WORDS.sub("", value.strip(" .,;:!\"'"))
    value = _ARTICLES.sub("", value)
    return " ".join(value.lower().split())[:MAX_PART_CHARS]


_NAMED = re.compile(r"(?:is|was|has been|got|is now)\s+(?:now\s+)?(?:named|called)\s+"
                    r"((?-i:[A-Z])[\w'-]+(?: (?-i:[A-Z])[\w'-]+)*)", re.I)
_CALLED = re.compile(r"^(?:(?!\b(?:and|but|or|has|have|had)\b)[\w ]){0,30}?\b(?:called|named) "
                     r"((?-i:[A-Z])[\w'-]+(?: (?-i:[A-Z])[\w'-]+)*)")


def _value(text: str, *, names_only: bool = False) -> str:
    """The value phrase at the start of ``text``, cut before when/why/with-whom words
    and at the first comma or clause mark."""
    called = _CALLED.search(text)
    if called is not None:  # "a startup called Fintly": the name is the value
        return _clean(called.group(1))
    words: list[str] = []
    for word in _WORD.findall(re.split(r"[,;()!?]|:(?!\d)", text, maxsplit=1)[0]):
        low = word.lower().rstrip(".")
        if words and low in VALUE_STOPS and not (low in ("of", "at") and names_only):
            break
        if names_only and words and not word[0].isupper() and low not in ("of", "de", "the"):
            break
        words.append(word.rstrip("."))
        if len(words) >= 6:
            break
    return _clean(" ".join(words))


def _subject(owner: str) -> str:
    low = owner.lower()
    return SELF if low in ("the user", "user", "we", "i") else low


# where one clause ends and another, with a subject of its own, begins
_CLAUSES = re.compile(r"\s*;\s*|(?<=[a-z0-9])\.\s+(?=[A-Z])")
# a title's dot is not a sentence's end: "my new GP is Dr. Okafor" keeps its value whole
TITLE_DOT = re.compile(r"\b(Dr|Mr|Mrs|Ms|Mx|Prof|St|Mt|Sr|Jr|Rev|Capt|Col|Gen|Lt|Sgt)"
                       r"\.(?=\s+[A-Z])")


@lru_cache(maxsize=4096)
def read_slot(text: str) -> Slot | None:
    """The slot a fact sentence fills, or None when no rule reads one.  A text of
    several clauses ("Pepper passed away; we adopted a puppy named Juno") is read clause
    by clause: the first slot of the user's own, else the first slot."""
    text = " ".join(text.replace("\u2019", "'").split())
    if not text or len(text) > 400:
        return None
    parts = [p for p in _CLAUSES.split(TITLE_DOT.sub(r"\1", text)) if p.strip()]
    if len(parts) > 1:
        slots = [slot for part in parts if (slot := _read_clause(part)) is not None]
        return next((s for s in slots if s.subject == SELF), slots[0] if slots else None)
    return _read_clause(text)


def _read_clause(text: str) -> Slot | None:
    sentence = text.rstrip(".!")
    if not sentence:
        return None
    match = _SUBJECT.match(sentence)
    if match is None:
        thing = _THE_THING.match(sentence)
        if thing is None:
            return None
        return _about_thing(_clean(thing.group("thing")), sentence[thing.end():].strip())
    subject = _subject(match.group("owner"))
    predicate = sentence[match.end():].strip()
    rest = match.group("rest")
    if rest is None:
        return _predicate(subject, predicate)
    return _possessive(subject, rest, predicate)


def _possessive(owner: str, rest: str, predicate: str) -> Slot | None:
    """"<owner>'s <rest> <predicate>": a relative, a pet, or one of the owner's things."""
    words = rest.split()
    head = words[0].lower()
    name = " ".join(w for w in words[1:] if w[:1].isupper())
    if head in PET_SPECIES or (len(words) > 1 and words[1].lower() in PET_SPECIES
                               and not words[0][:1].isupper()):
        species = PET_SPECIES.get(head) or PET_SPECIES[words[1].lower()]
        ended = bool(_ENDED.search(predicate))
        called = _NAMED.match(predicate)
        if not name and called is not None:  # "the user's cat is named Miso": its name
            name = called.group(1)
        value = _clean(name) if name else species
        return Slot(subject=owner, attribute=PET_PREFIX + species, value=value, ended=ended)
    if head in PEOPLE or head in ("best", "older", "younger", "little", "big"):
        if name:
            return _predicate(_clean(name), predicate)
        relation = " ".join(w.lower() for w in words if not w[:1].isupper())
        return _predicate(f"{owner}'s {relation}", predicate)
    attribute = _attribute_of(" ".join(w.lower() for w in words))
    low = predicate.lower()
    if (days := _RECURRING_DAYS.search(low)) is not None:
        return Slot(subject=owner, attribute=SCHEDULE_PREFIX + _activity(attribute),
                    value=_clean(days.group(0)))
    if set(attribute.split()) & EVENT_NOUNS or RESCHEDULE.search(low):
        return _event(owner, attribute, predicate)
    got = re.match(r"(?:is|are|was|has been|is now|are now|changed to|became|will be)\s+"
                   r"(?:now |still |currently )?(?P<v>.+)", predicate, re.I)
    if got is None:
        return None
    value = got.group("v")
    if re.match(r"(?:cancell?ed|called off|over|no more)\b", value, re.I):
        return Slot(subject=owner, attribute=attribute, value="", ended=True)
    if attribute in (HOME,):
        return Slot(subject=owner, attribute=HOME, value=_value(value, names_only=True)
                    or _value(value))
    cleaned = _value(value)
    return Slot(subject=owner, attribute=attribute, value=cleaned) if cleaned else None


_DAYS = r"(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends|weekdays)"
_RECURRING_DAYS = re.compile(rf"\b(?:every \w+day|{_DAYS}(?:(?:,| and| &) {_DAYS})*)\b")
_ACTIVITY_NOUNS = frozenset("class classes lesson lessons practice session sessions "
                            "training workout day days time times schedule slot".split())


def _activity(words: str) -> str:
    """"yoga class" -> "yoga": the activity a schedule is of."""
    kept = [w for w in words.split() if w not in _ACTIVITY_NOUNS]
    return " ".join(kept) or words


def _attribute_of(words: str) -> str:
    words = _clean(words).replace("favorite", "favourite")
    if words in ATTRIBUTE_SYNONYMS:
        return ATTRIBUTE_SYNONYMS[words]
    if words.startswith("favourite "):
        return PREFERENCE_PREFIX + words.removeprefix("favourite ")
    return words


def _event(subject: str, noun: str, predicate: str) -> Slot:
    attribute = DEADLINE if noun.endswith(("deadline", "due date")) else EVENT_PREFIX + noun
    if re.search(r"\b(?:cancell?ed|called off|off)\b", predicate, re.I):
        return Slot(subject=subject, attribute=attribute, value="", ended=True)
    when = re.sub(r"^(?:is|was|has been|got|will be)?\s*(?:now\s+)?(?:moved|pushed|postponed|"
                  r"rescheduled|changed|shifted|set|booked|scheduled|planned|due)?\s*"
                  r"(?:back|up)?\s*(?:to|for|on|at)?\s*", "", predicate, flags=re.I)
    return Slot(subject=subject, attribute=attribute, value=_value(when))


def _about_thing(thing: str, predicate: str) -> Slot | None:
    """"The grant report is now due on 3 March", "The dentist appointment moved to ..."."""
    low = predicate.lower()
    due = re.search(r"\bdue\b(?: (?:on|by))?\s+(?P<v>.+)", predicate, re.I)
    if due is not None:
        return Slot(subject=thing, attribute=DEADLINE, value=_value(due.group("v")))
    if thing.split()[-1] in EVENT_NOUNS or RESCHEDULE.search(low):
        return _event(SELF, thing, predicate)
    return None


_PATTERNS: list[tuple[re.Pattern[str], str]] = [(re.compile(p, re.I), a) for p, a in (
    (r"\b(?:lives?|living|resides?|is based|are based|is now based|settled|"
     r"(?:has|have|got|bought|rented|found) (?:a |an )?(?:new )?(?:home|place|house|flat|"
     r"apartment|condo))\s+(?:back )?(?:in|at|near)\s+(?P<v>.+)", HOME),
    (r"\b(?:moved|moving|relocated|relocating|moves|relocates)\s+(?:back\s+|all the way\s+"
     r"|over\s+|out\s+|again,?\s+|once more,?\s+)?(?:to|into)\s+(?P<v>.+)", HOME),
    (r"\b(?:calls?)\s+(?P<v>(?-i:[A-Z]).+?)\s+home\b", HOME),
    (r"\b(?:works?|working|worked) as (?:a |an |the )?(?P<v>.+)", JOB_TITLE),
    (r"\b(?:got |was |been |has been )?promoted to (?:a |an |the )?(?P<v>.+)", JOB_TITLE),
    (r"\b(?:is|became|is now|has become|started as|starts as) (?:a |an |the )?"
     r"(?P<v>(?:[\w-]+ ){0,3}(?:" + "|".join(sorted(JOB_NOUNS)) + r"))\b", JOB_TITLE),
    (r"\b(?:new (?:job|role|position) as) (?:a |an |the )?(?P<v>.+)", JOB_TITLE),
    # what one became ("qualified as a paramedic", "hired as an analyst") and a job taken
    # by its title ("took the kitchen manager job"): a title ends in a job noun
    (r"\b(?:qualified|trained|retrained|hired|employed|certified|re-?qualified|"
     r"signed on|taken on|kept on) as (?:a |an |the )?"
     r"(?P<v>(?:[\w-]+ ){0,3}(?:" + "|".join(sorted(JOB_NOUNS)) + r"))\b", JOB_TITLE),
    (r"\b(?:took|accepted|got|landed|started|began|taking|accepting|starting|got offered|"
     r"was offered) (?:the |a |an |my |that |this )?(?:new )?"
     r"(?P<v>(?:[\w-]+ ){0,2}(?:" + "|".join(sorted(JOB_NOUNS)) + r")) "
     r"(?:job|role|position|post|gig)\b", JOB_TITLE),
    (r"\b(?:works?|working|is working|is employed|employed) (?:at|for|with)\s+(?P<v>.+)",
     EMPLOYER),
    (r"\b(?:joined|joins|is joining|will join|started at|starts at|moved to a job at|"
     r"(?:started|starts|accepted|took|got|landed|began) (?:a |an |the )?(?:new )?"
     r"(?:job|position|role|gig|internship|offer)(?: \w+)? (?:at|with|from))\s+(?P<v>.+)",
     EMPLOYER),
    (r"\b(?:left|quit|resigned from|lost|retired from)\s+(?:(?:his|her|their|the user's|"
     r"the)\s+)?(?:job|position|role)\b(?:\s+(?:at|with)\s+(?P<v>.+))?", "-" + EMPLOYER),
    (r"\b(?:left|quit|resigned from|was laid off from|got laid off from|was fired from|"
     r"retired from|got fired from)\s+(?P<v>(?-i:[A-Z]).+)", "-" + EMPLOYER),
    (r"\b(?:is dating|is seeing|is married to|married|is engaged to|got engaged to|"
     r"got married to|is in a relationship with|moved in with)\s+(?P<v>(?-i:[A-Z]).+)", PARTNER),
    (r"\b(?:broke up with|split up with|separated from|divorced)\s+(?P<v>.+)",
     "-" + PARTNER),
    (r"\b(?:drives?|driving|bought|got|leased|owns?|is driving)\s+(?:a |an |the )?(?:new |"
     r"used |second-hand )?(?P<v>(?:\w+ )?(?:" + "|".join(sorted(CAR_BRANDS)) +
     r")\b.*)", CAR),
    (r"\b(?:uses?|using|has|got|bought|switched to|upgraded to|moved to|is on)\s+(?:a |an |"
     r"the )?(?:new )?(?P<v>(?:" + "|".join(sorted(PHONE_BRANDS)) + r")\b.*)", PHONE),
    (r"\b(?:commutes?|gets? to work|goes to work|travels to work)\s+(?:by|on|via)\s+"
     r"(?:the |a )?(?P<v>\w+)", COMMUTE),
    (r"\b(?:bikes|cycles|walks|drives|takes the (?:bus|train|subway|tram|ferry)|rides "
     r"(?:a |the )?(?:bike|scooter))\s+to (?:work|the office)\b(?P<v>)", COMMUTE),
    (r"\b(?:is|went|became|turned|has gone|is now|eats|going|has been)\s+(?:fully |"
     r"strictly |mostly |now |completely |no longer |not )?(?P<v>"
     + "|".join(sorted(DIETS)) + r")\b", DIET),
    (r"\b(?:is|went|started|follows|doing|on|tries|started eating)\s+(?:a |the )?"
     r"(?P<v>[\w-]+) diet\b", DIET),
    (r"\b(?:(?:is|was) (?:called|named)|goes by|name is)\s+(?P<v>(?-i:[A-Z])[\w'-]+)", NAME),
    (r"\b(?:studies|is studying|enrolled (?:at|in)|attends|goes to school at|is at)\s+"
     r"(?P<v>(?-i:[A-Z]).+)", SCHOOL),
)]
_HAS_COUNT = re.compile(
    r"\b(?:has|have|now has|owns|got)\s+(?P<n>\d+|one|two|three|four|five|six|seven|eight|"
    r"nine|ten|eleven|twelve)\s+(?:\w+\s+)?(?P<noun>[a-z]+s)\b", re.I)
_GETS_PET = re.compile(
    r"\b(?:has|have|got|adopted|rescued|bought|brought home|welcomed|took in|is getting|"
    r"fosters?)\s+(?:a |an |another |our |their |two |new |little )*(?:(?P<breed>[\w-]+) )?"
    r"(?P<species>" + "|".join(sorted(PET_SPECIES, key=len, reverse=True)) + r")\b"
    r"(?:,? (?:and )?(?:named|called)(?: (?:him|her|it|them))? (?P<name>(?-i:[A-Z])[\w'-]+))?")
_COUNTS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten "
                                       "eleven twelve".split())}
_SWITCH = re.compile(r"\b(?:switched|switching|changed|moved|went)\s+from\s+(?P<old>.+?)\s+"
                     r"to\s+(?P<v>.+)|\b(?P<v2>[\w ]+?)\s+instead of\s+(?P<old2>[\w ]+)",
                     re.I)
_SCHEDULE = re.compile(
    r"\b(?P<act>(?:goes|go|going) to (?:the )?[a-z]+|has [a-z]+(?: class| lessons?| "
    r"practice)?|[a-z]+s|does [a-z]+|plays [a-z]+)\s+(?:on|every)\s+(?P<v>(?:mondays?|"
    r"tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekends?|weekdays?)"
    r"(?:(?:,| and| &) (?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|"
    r"sundays?))*)", re.I)


def _predicate(subject: str, predicate: str) -> Slot | None:
    """The slot of "<subject> <predicate>" (a predicate with no possessive before it)."""
    pet = _GETS_PET.search(predicate)
    if pet is not None and not re.search(r"\b(?:lives?|moved)\b", predicate[:pet.start()]):
        species = PET_SPECIES[pet.group("species").lower()]
        name = pet.group("name")
        return Slot(subject=subject, attribute=PET_PREFIX + species,
                    value=_clean(name) if name else species)
    switch = _SWITCH.search(predicate)
    if switch is not None:
        new = _value(switch.group("v") or switch.group("v2") or "")
        old = _clean(switch.group("old") or switch.group("old2") or "")
        if new and old:
            means = _means(switch.group("v") or switch.group("v2") or "")
            if means and _means(old):
                return Slot(subject=subject, attribute=COMMUTE, value=means, replaces=old)
            return Slot(subject=subject, attribute=HABIT_PREFIX + old, value=new,
                        replaces=old)
    for pattern, attribute in _PATTERNS:
        found = pattern.search(predicate)
        if found is None:
            continue
        ended = attribute.startswith("-")
        attribute = attribute.removeprefix("-")
        raw = found.group("v") or ""
        if attribute == COMMUTE:
            word = (raw or found.group(0)).lower()
            value = next((m for w, m in COMMUTE_MEANS.items() if w in word.split()), "")
            return Slot(subject=subject, attribute=COMMUTE, value=value) if value else None
        value = _value(raw, names_only=attribute in (HOME, EMPLOYER, PARTNER, SCHOOL)
                       and raw[:1].isupper()) or _value(raw)
        if not value and not ended:
            continue
        before = predicate[:found.start("v")] if found.group("v") is not None else ""
        if ended or re.search(r"\b(?:no longer|not|n't|never)\b", before, re.I):
            return Slot(subject=subject, attribute=attribute, value=value, ended=True)
        return Slot(subject=subject, attribute=attribute, value=value)
    count = _HAS_COUNT.search(predicate)
    if count is not None:
        number = count.group("n").lower()
        return Slot(subject=subject, attribute=COUNT_PREFIX + count.group("noun").lower(),
                    value=str(_COUNTS.get(number, number)))
    schedule = _SCHEDULE.search(predicate)
    if schedule is not None:
        act = _activity(_clean(re.sub(r"^(?:goes|go|going) to |^(?:has|does|plays) ", "",
                                      schedule.group("act"), flags=re.I)))
        return Slot(subject=subject, attribute=SCHEDULE_PREFIX + act,
                    value=_clean(schedule.group("v")))
    return _habit_end(subject, predicate)


def _means(text: str) -> str:
    """The means of travel a phrase names ("bikes to work": bike), or ""."""
    for word in text.lower().split():
        means = COMMUTE_MEANS.get(word) or COMMUTE_MEANS.get(word.removesuffix("s"))
        if means:
            return means
    return ""


def _habit_end(subject: str, predicate: str) -> Slot | None:
    """"quit smoking", "no longer drinks coffee", "stopped eating meat": an ended habit."""
    found = re.search(r"\b(?:quit|stopped|gave up|no longer|doesn't \w+ any ?more)\s+"
                      r"(?P<v>[a-z][\w -]+)", predicate, re.I)
    if found is None:
        return None
    value = _value(found.group("v"))
    return Slot(subject=subject, attribute=HABIT_PREFIX + value, value=value, ended=True) \
        if value else None


__all__ = ["CAR", "DIET", "EMPLOYER", "HOME", "JOB_TITLE", "NAME", "PARTNER", "PHONE",
           "SELF", "Slot", "attribute_family", "query_attributes", "read_slot",
           "same_value"]
