"""Retry pacing: exponential backoff with full jitter, or the server's Retry-After.

Full jitter (a uniform draw below the exponential cap) spreads the retries of many
workers hitting the same rate limit instead of having them return in lockstep.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Delay before retry number ``attempt`` (1 = the first retry), never above ``max_s``."""

    base_s: float
    max_s: float

    def delay(self, attempt: int, *, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_s)
        cap = min(self.max_s, self.base_s * 2.0 ** max(attempt - 1, 0))
        return rng.uniform(0.0, cap)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, or ``retry-after`` as
    seconds or an HTTP date.  None when absent or unreadable."""
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def _seconds(text: str | None) -> float | None:
    try:
        number = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return max(number, 0.0) if math.isfinite(number) else None
