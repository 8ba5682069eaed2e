"""When a stated plan happens: the date and time a statement names, resolved against the
moment it was said.  Pure, rules only.

"My dentist appointment is next Tuesday at 3pm", said on Thursday 2 May 2024, names
Tuesday 7 May 2024 15:00; "the report is now due on 3 March" names the next 3 March on
or after the day it was said.  A statement naming no day names no event; a time of day
alone ("at 3pm") is today's when still ahead, else tomorrow's.  Times are UTC: the store
keeps no time zone per user, and a day is what an assistant's reader needs.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from ..words import (
    MONTH_ABBREVIATIONS,
    MONTH_NAMES,
    UNIT_WORDS,
    WEEKDAY_ABBREVIATIONS,
    WEEKDAY_NAMES,
)

_MONTHS = {name: i for i, name in enumerate(MONTH_NAMES, start=1)} | {
    short: MONTH_NAMES.index(name) + 1 for name, shorts in MONTH_ABBREVIATIONS.items()
    for short in shorts}
_WEEKDAYS = {name: i for i, name in enumerate(WEEKDAY_NAMES)} | {
    short: WEEKDAY_NAMES.index(name) for name, shorts in WEEKDAY_ABBREVIATIONS.items()
    for short in shorts}
_NUMBERS = {w: i for i, w in enumerate(UNIT_WORDS)} | {"a": 1, "an": 1, "a couple of": 2,
                                                        "a few": 3}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = "(" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"

_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_MONTH_DAY = re.compile(rf"\b{_MONTH} {_DAY}\b(?:,? (\d{{4}}))?", re.I)
_DAY_MONTH = re.compile(rf"\b(?:the )?{_DAY} (?:of )?{_MONTH}\b(?:,? (\d{{4}}))?", re.I)
_NEXT_WEEKDAY = re.compile(rf"\b(next|this|coming|on|this coming) {_WEEKDAY}\b", re.I)
_BARE_WEEKDAY = re.compile(rf"\b{_WEEKDAY}\b", re.I)
_RELATIVE_DAY = re.compile(r"\b(tomorrow|tonight|today|day after tomorrow)\b", re.I)
_IN_SPAN = re.compile(r"\bin (\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True))
                      + r") (day|week|month)s?\b", re.I)
_NEXT_SPAN = re.compile(r"\bnext (week|month|weekend)\b", re.I)
_CLOCK = re.compile(r"\b(?:at |by |around )?(\d{1,2})(?::(\d{2}))? ?([ap])\.?m\.?\b"
                    r"|\b(?:at |by )(\d{1,2}):(\d{2})\b", re.I)
_RECURRING = re.compile(rf"\b(?:every|each) (?:{_WEEKDAY[1:-4]}|day|week|month|morning|"
                        r"evening|night)\b|\b(?:daily|weekly|monthly)\b", re.I)
_NOON = re.compile(r"\b(noon|midday|midnight)\b", re.I)


def _clock(text: str) -> time | None:
    match = _CLOCK.search(text)
    if match is not None:
        if match.group(1) is not None:
            hour, minute = int(match.group(1)) % 12, int(match.group(2) or 0)
            if match.group(3).lower() == "p":
                hour += 12
        else:
            hour, minute = int(match.group(4)), int(match.group(5))
        if hour < 24 and minute < 60:
            return time(hour, minute)
    noon = _NOON.search(text)
    if noon is not None:
        return time(0) if noon.group(1).lower() == "midnight" else time(12)
    return None


def _on_or_after(said: date, month: int, day: int, year: int | None) -> date | None:
    try:
        if year is not None:
            return date(year, month, day)
        found = date(said.year, month, day)
        return found if found >= said else date(said.year + 1, month, day)
    except ValueError:
        return None  # 31 February


def _day(text: str, said: date) -> date | None:
    """The calendar day ``text`` names, on or after ``said`` unless a year says otherwise."""
    if (m := _ISO.search(text)) is not None:
        try:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
    if (m := _MONTH_DAY.search(text)) is not None:
        return _on_or_after(said, _MONTHS[m.group(1).lower()], int(m.group(2)),
                            int(m.group(3)) if m.group(3) else None)
    if (m := _DAY_MONTH.search(text)) is not None:
        return _on_or_after(said, _MONTHS[m.group(2).lower()], int(m.group(1)),
                            int(m.group(3)) if m.group(3) else None)
    if (m := _RELATIVE_DAY.search(text)) is not None:
        word = m.group(1).lower()
        return said + timedelta(days={"tomorrow": 1, "day after tomorrow": 2}.get(word, 0))
    if (m := _NEXT_WEEKDAY.search(text)) is not None:
        target = _WEEKDAYS[m.group(2).lower()]
        if m.group(1).lower() == "next":  # that day of the week after the one said in
            return said + timedelta(days=7 - said.weekday() + target)
        return said + timedelta(days=(target - said.weekday()) % 7 or 7)
    if (m := _IN_SPAN.search(text)) is not None:
        n = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1).lower()]
        unit = m.group(2).lower()
        return said + timedelta(days=n * {"day": 1, "week": 7, "month": 30}[unit])
    if (m := _NEXT_SPAN.search(text)) is not None:
        unit = m.group(1).lower()
        if unit == "week":
            return said + timedelta(days=7 - said.weekday())  # the Monday after
        if unit == "weekend":
            return said + timedelta(days=(5 - said.weekday()) % 7 or 7)
        return date(said.year + said.month // 12, said.month % 12 + 1, 1)
    if (m := _BARE_WEEKDAY.search(text)) is not None and not re.search(
            rf"\b(?:every|on) {m.group(1)}s\b|\b{m.group(1)}s\b", text, re.I):
        target = _WEEKDAYS[m.group(1).lower()]
        return said + timedelta(days=(target - said.weekday()) % 7 or 7)
    return None


def event_time(text: str, said_at: datetime) -> datetime | None:
    """The moment ``text`` names (a day, and the time of day when given), resolved against
    ``said_at``; None when it names no day and no time of day."""
    if _RECURRING.search(text):
        return None  # a schedule, not an event
    said = said_at.astimezone(UTC) if said_at.tzinfo else said_at.replace(tzinfo=UTC)
    day = _day(text, said.date())
    clock = _clock(text)
    if day is None:
        if clock is None:
            return None
        moment = datetime.combine(said.date(), clock, tzinfo=UTC)
        return moment if moment >= said else moment + timedelta(days=1)
    return datetime.combine(day, clock or time(0), tzinfo=UTC)


def names_a_day(text: str) -> bool:
    """Whether ``text`` names a day at all (cheap check before resolving)."""
    return event_time(text, datetime(2000, 1, 1, tzinfo=UTC)) is not None
