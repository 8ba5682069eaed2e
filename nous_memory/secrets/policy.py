"""What an agent keeps out of memory (the store's write paths apply it: memories/guard.py):
no database behind it, so the remote client shares the type."""

from __future__ import annotations

from enum import StrEnum

from ..errors import InvalidInputError


class SecretPolicy(StrEnum):
    """``redact`` (the default): each secret replaced by ``[redacted: <kind>]``;
    ``refuse``: the write fails naming the field and the kind; ``keep``: stored as given."""

    REDACT = "redact"
    REFUSE = "refuse"
    KEEP = "keep"


def parse_policy(value: object) -> SecretPolicy:
    try:
        return SecretPolicy(str(value))
    except ValueError:
        raise InvalidInputError.single(
            "secrets", "must be one of redact, refuse, keep") from None
