"""The cursor the value patterns read with: a statement's word tokens (dates, clock
times, ordinals, numbers, currency marks and words), and numbers in digits or words."""

from __future__ import annotations

import re

from ..words import UNIT_WORDS
from .value_words import MONEY_SCALE, NUMBER_WORDS, SCALE, SPLIT_COMPOUNDS

NUMERAL = re.compile(r"[\d,]+(?:\.\d+)?")

_TOKEN = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"  # ISO or d/m dates
    r"|\d{1,2}[:.]\d{2}(?=\s*[ap]\.?m\b)|\d{1,2}:\d{2}"  # clock times
    r"|\d+(?:st|nd|rd|th)\b"  # 1st, 22nd
    r"|\d+(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"  # 1,200.50 / 3.5
    r"|[$€£¥₹%°]"
    r"|[A-Za-z]+(?:['\u2019-][A-Za-z]+)*")



class Scan:
    """A cursor over the tokens that fills slots; each pattern consumes what it reads."""

    def __init__(self, text: str) -> None:
        # a hyphenated compound is one word ("no-frills", "non-stop") unless it carries a
        # value ("mid-June", "twenty-five", "late-night")
        self.raw = [part for token in _TOKEN.findall(text) for part in (
            token.split("-") if "-" in token and any(
                p.lower() in SPLIT_COMPOUNDS for p in token.split("-")) else [token])]
        self.low = [t.lower().replace("\u2019", "'") for t in self.raw]
        self.slots: dict[str, set[str]] = {}
        self.i = 0

    def add(self, kind: str, value: str) -> None:
        self.slots.setdefault(kind, set()).add(value)

    def at(self, offset: int = 0) -> str:
        j = self.i + offset
        return self.low[j] if 0 <= j < len(self.low) else ""

    def number_at(self, offset: int = 0, *, money: bool = False
                  ) -> tuple[float, int] | None:
        """A number at ``i + offset`` (digits, words, "twenty five", "a"/"an" = 1) and
        how many tokens it spans."""
        word = self.at(offset)
        if word and word[0].isdigit() and NUMERAL.fullmatch(word):
            value, used = float(word.replace(",", "")), 1
        elif word in NUMBER_WORDS and word not in ("once", "twice", "thrice"):
            value, used = float(NUMBER_WORDS[word]), 1
            tens = NUMBER_WORDS[word]
            if tens >= 20 and tens % 10 == 0 and self.at(offset + 1) in UNIT_WORDS[1:10]:
                value, used = float(tens + NUMBER_WORDS[self.at(offset + 1)]), 2
        elif word == "half" and self.at(offset + 1) in ("a", "an"):
            value, used = 0.5, 2
        elif word in ("a", "an", "one"):
            value, used = 1.0, 1
        else:
            return None
        scales = MONEY_SCALE if money else SCALE
        if self.at(offset + used) in scales:
            value *= scales[self.at(offset + used)]
            used += 1
        return value, used
