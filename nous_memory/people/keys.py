"""A person's key: the one string that names a person in an agent.

Callers name people by a user id ("u_123") or a display name ("Ana"); the key is that
string trimmed and case-folded, so "Ana" and "ana " are one person and a header, a
tool argument and a message field agree without the caller normalising anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import AfterValidator

from ..errors import InvalidInputError

MAX_PERSON_CHARS = 128


def person_key(value: object, field: str = "user") -> str:
    """The key of a person given as ``value``; a clear error names ``field``."""
    if not isinstance(value, str):
        raise InvalidInputError.single(field, "must be a string (a user id or a name)")
    key = " ".join(value.split()).casefold()
    if not key:
        raise InvalidInputError.single(field, "must not be empty")
    if len(key) > MAX_PERSON_CHARS:
        raise InvalidInputError.single(field, f"longer than {MAX_PERSON_CHARS} characters")
    if not key.isprintable():
        raise InvalidInputError.single(field, "contains control characters")
    return key


def optional_person(value: object, field: str = "user") -> str | None:
    """``person_key`` of a value that may be absent (None: the agent's owner)."""
    return None if value is None else person_key(value, field)


def _validated(value: str) -> str:
    return person_key(value, "person")


# a person key as a model field takes (validated and normalised like person_key)
Person = Annotated[str, AfterValidator(_validated)]


def visible_to(people: Sequence[str], asker: str | None) -> bool:
    """Whether a memory of ``people`` is in the reads of ``asker`` (None: the owner)."""
    return asker is None or not people or asker in people
