"""Value slots: what a statement commits to about when, how much, how often, which one,
and which way, as typed and normalised values.  Pure functions, no I/O.

``value_slots("Lunch moved to the last Friday of May at 1pm")`` gives
``{"weekday": {"fri"}, "ordinal": {"last"}, "month": {"5"}, "time": {"1:00"},
"daypart": {"afternoon"}}``.  Two statements that both fill a kind with different
values disagree on a value (a moved month, a "first" that became "last", 3pm that became
the morning, 5 km that became 5 miles, "likes" that became "dislikes"), whatever their
wording; a kind only one of them fills is a detail, not a change (``rules.changed_values``
compares them).  Polarity is always compared: "not", "never", "no longer", "quit ..."
against none of them is a change.

One scan over word tokens (a regex tokeniser, then a cursor that tries the multi-word
patterns at each word some pattern can start with); well under a millisecond per
statement, and cached, since dedup reads each statement several times.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container
from functools import lru_cache

from .value_scan import Scan
from .value_words import (
    AMBIGUOUS_CALENDAR,
    AXIS_OF,
    CESSATION,
    CURRENCY_SYMBOLS,
    CURRENCY_WORDS,
    DAYPARTS,
    FREQUENCY_ADVERBS,
    INFLECTED,
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    ORDER_WORDS,
    ORDINALS,
    PASSIVE,
    PERIODIC,
    SEASONS,
    TIME_NOUNS,
    TIME_UNITS,
    TRIGGERS,
    UNITS,
    WEEKDAYS,
)

Slots = dict[str, frozenset[str]]

_CLOCK = re.compile(r"\d{1,2}[:.]\d{2}")
_ISO_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}")
_SLASH_DATE = re.compile(r"\d{1,2}/\d{1,2}(?:/\d{2,4})?")
_DAY = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?")
_YEAR = re.compile(r"(1[89]|20)\d\d")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")

def _num(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def _lemma(word: str, vocabulary: Container[str]) -> str:
    """``word`` or the base form in ``vocabulary`` it inflects ("loving" -> "love")."""
    return INFLECTED.get(word, word) if INFLECTED.get(word, word) in vocabulary else word


# ---------------------------------------------------------------------- patterns
# Each returns how many tokens it consumed at the cursor (0: no match).


def _clock(s: Scan) -> int:
    word = s.at()
    hour: int | None = None
    minute = 0
    used = 0
    if _CLOCK.fullmatch(word) and (":" in word or s.at(1) in ("am", "pm")):
        hour, minute, used = int(word[:-3]), int(word[-2:]), 1
    elif word.isdigit() and int(word) <= 24 and (
            s.at(1) in ("am", "pm", "o'clock", "oclock") or
            (s.at(1) in ("a", "p") and s.at(2) == "m")):
        hour, used = int(word), 1
    elif word in ("noon", "midday"):
        s.add("time", "12:00")
        s.add("daypart", "afternoon")
        return 1
    elif word == "midnight":
        s.add("time", "12:00")
        s.add("daypart", "night")
        return 1
    elif word in ("half", "quarter") and s.at(1) in ("past", "to") and (
            hour_said := s.number_at(2)) is not None and s.at(2) not in ("a", "an"):
        base = int(hour_said[0]) % 12
        minute = 30 if word == "half" else 15
        if s.at(1) == "to":
            base, minute = (base - 1) % 12, 60 - minute
        s.add("time", f"{base or 12}:{minute:02d}")
        return 3
    if hour is None or hour > 24 or minute > 59:
        return 0
    meridiem = s.at(used)
    if meridiem in ("a", "p") and s.at(used + 1) == "m":
        meridiem, used = meridiem + "m", used + 2
    elif meridiem in ("am", "pm", "o'clock", "oclock"):
        used += 1
    if meridiem == "pm" and hour < 12:
        hour += 12
    elif meridiem == "am" and hour == 12:
        hour = 0
    s.add("time", f"{hour % 12 or 12}:{minute:02d}")  # 12-hour; the daypart says which
    if meridiem in ("am", "pm") or hour > 12 or hour == 0:
        s.add("daypart", "morning" if 5 <= hour < 12 else "afternoon" if 12 <= hour < 17
              else "evening" if 17 <= hour < 21 else "night")
    return used


def _date(s: Scan) -> int:
    word = s.at()
    if _ISO_DATE.fullmatch(word):
        parts = word.split("-")
        s.add("year", parts[0])
        s.add("month", str(int(parts[1])))
        s.add("day", str(int(parts[2])))
        return 1
    if _SLASH_DATE.fullmatch(word):
        s.add("date", "/".join(str(int(p)) for p in word.split("/")))
        return 1
    month = _month_at(s, 0)
    if month is not None:
        s.add("month", month)
        day = _day_at(s, 1)
        if day is not None:
            s.add("day", day)
        return 1 if day is None else 2
    day = _day_at(s, 0)
    gap = 2 if s.at(1) == "of" else 1
    month = _month_at(s, gap) if day is not None else None
    if day is not None and month is not None:
        s.add("day", day)
        s.add("month", month)
        return gap + 1
    return 0


def _month_at(s: Scan, offset: int) -> str | None:
    word = s.at(offset)
    if word not in MONTHS:
        return None
    j = s.i + offset
    if word in AMBIGUOUS_CALENDAR:
        # "May I", "march on": capitalised, and not the first word unless a day or a
        # year follows
        if not s.raw[j][0].isupper():
            return None
        if j == 0 and not (_day_at(s, offset + 1) or _year(s.at(offset + 1))):
            return None
    elif len(word) <= 4 and word not in ("june", "july") and not s.raw[j][0].isupper():
        return None  # "dec", "oct" in lower case are rarely months
    return str(MONTHS[word])


def _day_at(s: Scan, offset: int) -> str | None:
    match = _DAY.fullmatch(s.at(offset))
    if match and 1 <= int(match.group(1)) <= 31:
        return str(int(match.group(1)))
    return None


def _year(word: str) -> bool:
    return bool(_YEAR.fullmatch(word))


def _relative(s: Scan) -> int:
    word = s.at()
    fixed = {"today": ("day", 0), "tonight": ("day", 0), "tomorrow": ("day", 1),
             "yesterday": ("day", -1)}
    if word == "day" and s.at(1) in ("after", "before") and s.at(2) in (
            "tomorrow", "yesterday"):
        s.add("relative", f"day{'+2' if s.at(2) == 'tomorrow' else '-2'}")
        return 3
    if word in fixed:
        unit, shift = fixed[word]
        s.add("relative", f"{unit}{shift:+d}")
        if word == "tonight":
            s.add("daypart", "night")
        return 1
    shifts = {"next": 1, "last": -1, "this": 0, "past": -1, "coming": 1, "following": 1,
              "previous": -1}
    if word in shifts and (s.at(1) in TIME_NOUNS or _month_at(s, 1)):
        noun = s.at(1)
        unit = TIME_UNITS.get(noun.removesuffix("s"), "")
        if unit:
            s.add("relative", f"{unit}{shifts[word]:+d}")
            return 2
        s.add("ordinal", ORDINALS.get(word, word))  # "next Tuesday", "last summer"
        return 1
    if word in ("in", "within") and (number := s.number_at(1)) is not None:
        ahead = TIME_UNITS.get(s.at(1 + number[1]).removesuffix("s"))
        if ahead:
            s.add("relative", f"{ahead}+{_num(number[0])}")
            return 2 + number[1]
    number = s.number_at()
    if number is not None:
        unit = TIME_UNITS.get(s.at(number[1]).removesuffix("s"), "")
        if unit and s.at(number[1] + 1) in ("ago", "earlier", "before"):
            s.add("relative", f"{unit}-{_num(number[0])}")
            return number[1] + 2
        if unit and s.at(number[1] + 1) in ("from", "later"):
            s.add("relative", f"{unit}+{_num(number[0])}")
            return number[1] + 2 + (s.at(number[1] + 2) == "now")
    return 0


def _frequency(s: Scan) -> int:
    word = s.at()
    if word in PERIODIC:
        s.add("frequency", f"1/1 {PERIODIC[word]}")
        return 1
    if word in ("every", "each", "per") or (word in ("a", "an") and s.i > 0 and (
            s.low[s.i - 1] in ("once", "twice", "thrice", "times"))):
        step, used = "1", 1
        if s.at(1) == "other":
            step, used = "2", 2
        elif (number := s.number_at(1)) is not None and s.at(1) not in ("a", "an"):
            step, used = _num(number[0]), 1 + number[1]
        noun = s.at(used)
        unit = (TIME_UNITS.get(noun.removesuffix("s")) or WEEKDAYS.get(noun.removesuffix("s"))
                or DAYPARTS.get(noun) or (SEASONS.get(noun) if noun != "fall" else None))
        if unit is None:
            return 0
        times = s.slots.pop("times", None)
        s.add("frequency", f"{next(iter(times)) if times else '1'}/{step} {unit}")
        if noun.removesuffix("s") in WEEKDAYS:
            s.add("weekday", WEEKDAYS[noun.removesuffix("s")])
        return used + 1
    if word in ("once", "twice", "thrice"):
        s.add("times", str(NUMBER_WORDS[word]))
        return 1
    number = s.number_at()
    if number is not None and s.at(number[1]) == "times" and s.at(number[1] + 1) in (
            "a", "an", "per", "every", "each"):
        s.add("times", _num(number[0]))
        return number[1] + 1
    return 0


def _amount(s: Scan) -> int:
    """Prices ($20, 20 euros, EUR 20, 1.5k dollars), durations and quantities."""
    word = s.at()
    if word in CURRENCY_SYMBOLS or (word.upper() in CURRENCY_WORDS.values()
                                    and s.number_at(1) and s.at(1) not in ("a", "an")):
        number = s.number_at(1, money=True)
        if number is None or s.at(1) in ("a", "an", "one"):
            return 0
        code = CURRENCY_SYMBOLS.get(word) or word.upper()
        s.add("price", f"{_num(number[0])} {code}")
        return 1 + number[1]
    number = s.number_at()
    if number is None:
        return 0
    value, used = number
    if s.at(used) in CURRENCY_SYMBOLS:
        s.add("price", f"{_num(value)} {CURRENCY_SYMBOLS[s.at(used)]}")
        return used + 1
    noun = s.at(used)
    if noun in CURRENCY_WORDS:
        s.add("price", f"{_num(value)} {CURRENCY_WORDS[noun]}")
        return used + 1
    unit = TIME_UNITS.get(noun.removesuffix("s")) if noun != "second" or word != "a" else None
    if unit:
        s.add("duration", f"{_num(value)} {unit}")
        return used + 1
    if noun in UNITS or (noun in ("°",) and s.at(used + 1) in ("c", "f")):
        s.add("quantity", f"{_num(value)} {UNITS[noun]}")
        return used + 1 + (noun == "°" and s.at(used + 1) in ("c", "f"))
    if word in ("a", "an", "half"):
        return 0
    if _year(word) and "." not in word and "," not in word:
        s.add("year", word)
    else:
        s.add("number", _num(value))
    return used


def _words(s: Scan) -> int:
    """Single words: weekdays, seasons, ordinals, dayparts, order, frequency, axes."""
    word, raw = s.at(), s.raw[s.i]
    bare = word.removesuffix("s") if word.endswith("s") and word[:-1] in WEEKDAYS else word
    if bare in WEEKDAYS and ((bare not in AMBIGUOUS_CALENDAR and len(bare) > 4) or
                             (raw[0].isupper() and s.i > 0)):
        s.add("weekday", WEEKDAYS[bare])
    elif word in SEASONS and (word != "fall" or (s.i > 0 and s.low[s.i - 1] in (
            "the", "this", "next", "last", "in", "every", "early", "late", "of"))):
        s.add("season", SEASONS[word])
    elif word == "second" and s.i > 0 and s.low[s.i - 1] in ("a", "one", "per"):
        return 1  # a unit of time, not a position
    elif word in ORDINALS and word not in ("following", "prior") and not (
            word == "next" and s.at(1) == "to"):
        s.add("ordinal", ORDINALS[word])
    elif _ORDINAL.fullmatch(word):
        s.add("ordinal", word[:-2])
    elif word in DAYPARTS:
        s.add("daypart", DAYPARTS[word])
    elif word in ORDER_WORDS:
        s.add("order", ORDER_WORDS[word])
    elif word in FREQUENCY_ADVERBS:
        s.add("often", FREQUENCY_ADVERBS[word])
    if word in ("no", "any") and s.at(1) in ("more", "longer"):
        s.add("polarity", "negative")  # "no longer", "not ... any more"
        return 2
    if word in NEGATIONS or word.endswith("n't") or word == "anymore":
        s.add("polarity", "negative")
    elif _lemma(word, CESSATION) in CESSATION and s.at(1).endswith("ing"):
        s.add("polarity", "negative")  # "quit smoking", "stopped eating meat"
    elif word in ("gave", "give", "given", "giving", "gives") and s.at(1) == "up":
        s.add("polarity", "negative")
    elif (word == "used" and s.at(1) == "to" and s.at(-1) not in PASSIVE) or (
            word == "formerly"):
        s.add("tense", "past")
    lemma = _lemma(word, AXIS_OF)
    if lemma in AXIS_OF:
        axis, side = AXIS_OF[lemma]
        s.add("axis:" + axis, side)
    return 1


_PATTERNS: tuple[Callable[[Scan], int], ...] = (
    _clock, _date, _relative, _frequency, _amount, _words)


@lru_cache(maxsize=4096)
def value_slots(text: str) -> Slots:
    """The typed, normalised values of a statement (see the module docstring)."""
    scan = Scan(text)
    while scan.i < len(scan.low):
        word = scan.low[scan.i]
        if word[0].isalpha() and word not in TRIGGERS and "'" not in word:
            scan.i += 1  # most words start no pattern: one set lookup
            continue
        for pattern in _PATTERNS:
            used = pattern(scan)
            if used:
                break
        scan.i += max(used, 1)
    scan.slots.pop("times", None)
    return {kind: frozenset(values) for kind, values in scan.slots.items()}
