"""Caller arguments (ids, enum values, timestamps, statuses) parsed into typed values.

Each failure is an ``InvalidInputError`` that names the field, so every surface (Python,
REST, CLI) reports bad arguments the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import TypeAdapter, ValidationError

from ..errors import InvalidInputError, reason_of
from .kinds import Status, Tag, Timestamp, is_utf8

VISIBLE_STATUSES = (Status.ACTIVE, Status.SUPERSEDED, Status.ARCHIVED)


def parse_memory_id(value: object, field: str = "memory_id") -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise InvalidInputError.single(field, "not a memory id (UUID)") from None


def parse_enum(enum: Any, value: object, field: str) -> Any:
    try:
        return enum(str(value))
    except ValueError:
        allowed = ", ".join(e.value for e in enum)
        raise InvalidInputError.single(field, f"must be one of {allowed}") from None


_TIME = TypeAdapter(Timestamp)


def parse_time(value: object, field: str) -> datetime | None:
    """A datetime or ISO 8601 text; naive means UTC."""
    if value is None:
        return None
    try:
        parsed: datetime = _TIME.validate_python(value)
    except ValidationError:
        raise InvalidInputError.single(field, "not a timestamp (ISO 8601, e.g. "
                                              "2026-01-31T09:30:00Z)") from None
    return parsed


def parse_statuses(status: Status | str | Sequence[Status | str] | None) -> list[str]:
    """The statuses a listing asks for; none means every visible one (not deleted)."""
    if status is None:
        return [s.value for s in VISIBLE_STATUSES]
    values = [status] if isinstance(status, str) else list(status)
    return [parse_enum(Status, v, "status").value for v in values]


_TAG = TypeAdapter(Tag)


def parse_tag(value: object, field: str = "tag") -> str:
    """One tag, by the rules a stored tag follows."""
    try:
        return _TAG.validate_python(value)
    except ValidationError as exc:
        raise InvalidInputError.single(field, reason_of(exc.errors(include_url=False)[0])
                                       ) from None


def lone_surrogate_at(value: Any) -> str | None:
    """The path of a key or string holding a lone surrogate (JSON allows "\\ud800"; no
    UTF-8 text, so no database, can hold it), or None.  Checked once for a whole request
    body, so no route or tool meets such a string halfway through its work."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if not is_utf8(item):
                return where or "body"
        elif isinstance(item, dict):
            for key, inner in item.items():
                here = f"{where}.{_printable(key)}" if where else _printable(key)
                if not is_utf8(key):
                    return here
                stack.append((here, inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", inner) for i, inner in enumerate(item))
    return None


def _printable(key: str) -> str:
    return key.encode("utf-8", "backslashreplace").decode("utf-8")
