"""English words the rule-based parts read text with: calendar names, small numbers,
negations.  One home, so the date parser, the recall time filter and the fact rules
agree on what a weekday or a negation is."""

from __future__ import annotations

import re

WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                 "sunday")  # in ``date.weekday()`` order
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")  # month 1 first
# the usual short forms, beside each full name
WEEKDAY_ABBREVIATIONS = {"monday": ("mon",), "tuesday": ("tue", "tues"),
                         "wednesday": ("wed",), "thursday": ("thu", "thur", "thurs"),
                         "friday": ("fri",), "saturday": ("sat",), "sunday": ("sun",)}
MONTH_ABBREVIATIONS = {"january": ("jan",), "february": ("feb",), "march": ("mar",),
                       "april": ("apr",), "may": (), "june": ("jun",), "july": ("jul",),
                       "august": ("aug",), "september": ("sep", "sept"),
                       "october": ("oct",), "november": ("nov",), "december": ("dec",)}
# zero to nineteen, in order: word i is the number i
UNIT_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve "
              "thirteen fourteen fifteen sixteen seventeen eighteen nineteen").split()
TENS_WORDS = "twenty thirty forty fifty sixty seventy eighty ninety".split()  # 20, 30, ...
# words that negate the clause they stand in ("n't" is read apart)
CLAUSE_NEGATIONS = frozenset("not no never none nobody nothing neither nor without "
                             "cannot".split())

# the words of a courtesy that says nothing of its own: "Happy to help with that.",
# "Thanks for the update!", "Noted, let me know if there's anything else."
COURTESY_WORDS = frozenset(
    "thanks thank you so much very ok okay okey sure great cool nice awesome perfect good "
    "happy glad to help with that this it anytime any time welcome no problem noted got "
    "it understood will do sounds absolutely of course you're youre re for the update "
    "let me know if anything else i can there all right alright yes yeah yep no nope hi "
    "hello hey bye goodbye see later have a day night lovely wonderful appreciate it "
    "that's thats gotcha done fine me too haha lol wow cheers and be always here is "
    "there's".split())
_COURTESY_TOKENS = re.compile(r"[a-z']+|\d+")


def courtesy_only(text: str) -> bool:
    """Whether a short text is nothing but courtesy words (a turn with no content)."""
    words = _COURTESY_TOKENS.findall(text.lower())
    return len(words) <= 12 and all(w in COURTESY_WORDS for w in words)
