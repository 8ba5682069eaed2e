"""The exact-duplicate key of a fact: its text folded, then hashed.

The hash is unique per agent in the facts table, so two writers that learn the same
fact at once cannot both insert it; fact learning looks facts up by the same key.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_PUNCTUATION = re.compile(r"[^\w\s]+")


def normalize_fact(text: str) -> str:
    """Case, whitespace and punctuation folded: the exact-duplicate key of a fact."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCTUATION.sub(" ", folded).split())


def fact_hash(text: str) -> bytes:
    return hashlib.sha256(normalize_fact(text).encode("utf-8")).digest()
