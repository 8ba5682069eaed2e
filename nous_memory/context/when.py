"""The time a query names, resolved against the moment it is asked.

"What did I do two weeks ago?" asked on 5 May 2023 is about the days around 21 April
2023.  Rules only, for the phrases people use with an assistant: today, yesterday, N
days/weeks/months/years ago, last/this/past week, weekend, month or year, the past N
days/weeks/months, last <weekday> (and "the <weekday> two months ago"), in <month>
[year].  A window is half-open [start, end) in UTC, with a little slack around spans
that people round ("two weeks ago" is not to the day).  A query with no such phrase
names no time; a query with several takes the span that covers them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from ..words import MONTH_ABBREVIATIONS, MONTH_NAMES, UNIT_WORDS, WEEKDAY_NAMES

_NUMBERS = {"a couple of": 2, "a few": 3, "several": 3, "an": 1, "a": 1} | {
    word: n for n, word in enumerate(UNIT_WORDS[1:13], start=1)}  # one to twelve
_NUMBER = r"(\d{1,3}|" + "|".join(_NUMBERS) + ")"

_WEEKDAY = "(" + "|".join(WEEKDAY_NAMES) + ")"
_MONTH = "(" + "|".join([*MONTH_NAMES, *sorted(
    (short for shorts in MONTH_ABBREVIATIONS.values() for short in shorts),
    key=len, reverse=True)]) + ")"

# "Where do I live these days?": the present, which names no window and whose words are
# not the question's subject ("day" would match every turn that mentions a day)
_NOW = re.compile(r"\b(?:these days|nowadays|at the moment|right now|at present|as of now|"
                  r"currently|any more|anymore)\b", re.IGNORECASE)


def without_now(query: str) -> str:
    """The query's words for the full-text leg: phrases that only say "now" left out."""
    stripped = _NOW.sub(" ", query)
    return stripped if stripped.strip() else query


_AGO = re.compile(rf"\b{_NUMBER} (day|week|month|year)s? ago\b")
_PAST = re.compile(rf"\b(?:the )?(?:past|last) {_NUMBER} (day|week|month|year)s?\b")
_LAST = re.compile(r"\b(last|this|past|previous) (week|weekend|month|year)\b")
_WEEKDAY_AGO = re.compile(rf"\b(?:the )?{_WEEKDAY} {_NUMBER} (week|month)s? ago\b")
_LAST_WEEKDAY = re.compile(rf"\b(?:last|past|previous|on|this past) {_WEEKDAY}\b")
_IN_MONTH = re.compile(rf"\b(?:in|during|of|since) {_MONTH}(?:,? (\d{{4}}))?\b")
_DAY_WORDS = re.compile(r"\b(today|tonight|yesterday|last night|earlier today)\b")


@dataclass(frozen=True, slots=True)
class Window:
    """[start, end) in UTC."""

    start: datetime
    end: datetime


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS.get(text, 1)


def _midnight(d: date) -> datetime:
    return datetime.combine(d, time.min, tzinfo=UTC)


def _days(start: date, end_inclusive: date) -> tuple[datetime, datetime]:
    return _midnight(start), _midnight(end_inclusive + timedelta(days=1))


def _month_start(year: int, month: int) -> date:
    return date(year + (month - 1) // 12, (month - 1) % 12 + 1, 1)


def _months_back(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 - months
    return date(index // 12, index % 12 + 1, min(d.day, 28))


def _month_number(name: str) -> int:
    for i, full in enumerate(MONTH_NAMES, start=1):
        if full.startswith(name[:3]):
            return i
    raise ValueError(name)


def resolve(query: str, as_of: datetime) -> Window | None:
    """The window the query's time phrases name, or None when it names none."""
    text = " ".join(query.lower().split())
    today = as_of.astimezone(UTC).date()
    spans: list[tuple[datetime, datetime]] = []
    taken: list[tuple[int, int]] = []

    def add(match: re.Match[str], span: tuple[datetime, datetime]) -> None:
        if any(a < match.end() and match.start() < b for a, b in taken):
            return  # part of a longer phrase already read
        taken.append(match.span())
        spans.append(span)

    for m in _WEEKDAY_AGO.finditer(text):
        n, unit = _number(m.group(2)), m.group(3)
        back = n * 7 if unit == "week" else n * 30
        centre = today - timedelta(days=back)
        spans_days = 10 if unit == "month" else 4
        add(m, _days(centre - timedelta(days=spans_days), centre + timedelta(days=spans_days)))
    for m in _AGO.finditer(text):
        n, unit = _number(m.group(1)), m.group(2)
        if unit == "day":
            add(m, _days(today - timedelta(days=n + 1), today - timedelta(days=max(n - 1, 0))))
        elif unit == "week":
            centre = today - timedelta(days=7 * n)
            add(m, _days(centre - timedelta(days=4), centre + timedelta(days=4)))
        elif unit == "month":
            centre = _months_back(today, n)
            add(m, _days(centre - timedelta(days=16), centre + timedelta(days=16)))
        else:
            add(m, _days(date(today.year - n, 1, 1), date(today.year - n, 12, 31)))
    for m in _PAST.finditer(text):
        n, unit = _number(m.group(1)), m.group(2)
        back = {"day": n, "week": 7 * n, "month": 31 * n, "year": 366 * n}[unit]
        add(m, _days(today - timedelta(days=back), today))
    for m in _LAST_WEEKDAY.finditer(text):
        weekday = WEEKDAY_NAMES.index(m.group(1))
        back = (today.weekday() - weekday) % 7 or 7
        day = today - timedelta(days=back)
        add(m, _days(day - timedelta(days=1), day + timedelta(days=1)))
    for m in _LAST.finditer(text):
        which, unit = m.group(1), m.group(2)
        if unit in ("week", "weekend"):
            if which == "this":
                add(m, _days(today - timedelta(days=today.weekday()), today))
            else:
                monday = today - timedelta(days=today.weekday() + 7)
                add(m, _days(monday - timedelta(days=1), monday + timedelta(days=7)))
        elif unit == "month":
            if which == "this":
                add(m, _days(today.replace(day=1), today))
            else:
                first = _month_start(today.year, today.month - 1)
                add(m, _days(first, today.replace(day=1) - timedelta(days=1)))
        elif which == "this":
            add(m, _days(date(today.year, 1, 1), today))
        else:
            add(m, _days(date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)))
    for m in _IN_MONTH.finditer(text):
        month = _month_number(m.group(1))
        if m.group(1) == "may" and not m.group(2) and m.group(0).startswith(("of ", "since ")):
            continue  # "of may" is too often the verb
        year = int(m.group(2)) if m.group(2) else (
            today.year if month <= today.month else today.year - 1)
        first = date(year, month, 1)
        last = _month_start(year, month + 1) - timedelta(days=1)
        add(m, _days(first, last))
    for m in _DAY_WORDS.finditer(text):
        back = 0 if m.group(1) in ("today", "tonight", "earlier today") else 1
        day = today - timedelta(days=back)
        add(m, _days(day, day))
    if not spans:
        return None
    return Window(start=min(s for s, _ in spans), end=max(e for _, e in spans))
