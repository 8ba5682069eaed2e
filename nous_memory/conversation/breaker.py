"""The circuit breaker of LLM summarising, persisted per conversation.

After ``breaker_failures`` consecutive failed steps (an LLM error, an unusable or
not-smaller answer) it opens: rules are used until ``breaker_cooldown_s`` has passed.
Then one step may try the LLM again (half-open): success closes it, failure re-opens it.
The counts live in ``conversation_state``, so every process sees the same breaker.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .policy import Policy


def allows(open_until: datetime | None, now: datetime) -> bool:
    return open_until is None or now >= open_until


def after_step(failures: int, *, failed: bool, policy: Policy,
               now: datetime) -> tuple[int, datetime | None]:
    """(failures, open_until) after a step that did or did not fail."""
    if not failed:
        return 0, None
    failures += 1
    if failures >= policy.breaker_failures:
        return failures, now + timedelta(seconds=policy.breaker_cooldown_s)
    return failures, None
