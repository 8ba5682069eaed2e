"""The kinds of secret, and a candidate span before overlaps are settled."""

from __future__ import annotations

from typing import Any, NamedTuple

import re2

PASSWORD = "password"
API_KEY = "api key"
CARD = "card number"
CVV = "card security code"
IBAN = "iban"
BANK = "bank account"
OTP = "one-time code"
PIN = "pin"
GOV_ID = "government id"
KINDS = (PASSWORD, API_KEY, CARD, CVV, IBAN, BANK, OTP, PIN, GOV_ID)


class Found(NamedTuple):
    """A candidate: ``rank`` 0 for a checked shape, higher for weaker evidence; of two
    that overlap the lower rank wins."""

    start: int
    end: int
    kind: str
    rank: int


def compile_pattern(pattern: str, *, case_sensitive: bool = True,
                    longest: bool = False) -> Any:
    """An RE2 pattern: linear-time matching, so no text can stall the write path
    (``longest``: of the matches at a place, the longest, not the first alternative)."""
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.longest_match = longest
    options.log_errors = False
    return re2.compile(pattern, options)
