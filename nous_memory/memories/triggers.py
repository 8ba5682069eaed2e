"""A censor's trigger: a phrase matched as words, or a ``/regex/`` in a linear-time engine.

Censors are matched against every context query and every learned fact, on the event
loop that serves every agent, so a trigger must never be able to stall it.  Regular
expressions run in RE2 (``google-re2``), whose matching time is linear in the text,
with a bounded pattern size and compiled-program memory; a pattern RE2 cannot run
(backreferences, lookaround) or that is too large is refused when the censor is written,
naming the field and the reason.  Phrases are matched on normalised words.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

from ..errors import longer_than
from .fact_key import normalize_fact

log = logging.getLogger(__name__)

MAX_REGEX_CHARS = 500
REGEX_MAX_MEM = 1 << 20  # bytes of compiled program; RE2 refuses patterns that need more


@dataclass(frozen=True, slots=True)
class Trigger:
    """A compiled trigger; ``matches`` runs in time linear in the text."""

    phrase: str | None
    regex: Any

    def matches(self, text: str) -> bool:
        if self.regex is not None:
            return self.regex.search(text) is not None
        return bool(self.phrase) and f" {self.phrase} " in f" {normalize_fact(text)} "


def is_regex(pattern: str) -> bool:
    pattern = pattern.strip()
    return len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/")


@lru_cache(maxsize=1_024)
def compile_trigger(pattern: str) -> Trigger:
    """The trigger of ``pattern``; raises ValueError saying why a regex cannot be used."""
    stripped = pattern.strip()
    if not is_regex(stripped):
        return Trigger(phrase=normalize_fact(stripped), regex=None)
    body = stripped[1:-1]
    if len(body) > MAX_REGEX_CHARS:
        raise ValueError(f"a /regex/ trigger is {longer_than(MAX_REGEX_CHARS, len(body))}")
    options = re2.Options()
    options.case_sensitive = False
    options.max_mem = REGEX_MAX_MEM
    options.never_capture = True
    options.log_errors = False
    try:
        return Trigger(phrase=None, regex=re2.compile(body, options))
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(f"not a regular expression the linear-time engine (RE2) can "
                         f"run: {reason}") from None


def valid_trigger(pattern: str) -> str:
    """Pydantic validator: refuse, at write time, a regex trigger that cannot be run."""
    compile_trigger(pattern)
    return pattern


def trigger_matches(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches ``text``; a stored pattern that no longer compiles
    (written before triggers were validated) matches nothing."""
    try:
        trigger = compile_trigger(pattern)
    except ValueError as exc:
        log.warning("censor trigger %r is ignored: %s", pattern[:80], exc)
        return False
    return trigger.matches(text)
