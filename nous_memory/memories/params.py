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

from ..errors import FieldProblem, InvalidInputError, reason_of
from .kinds import Status, Tag, aware_timestamp, is_utf8

VISIBLE_STATUSES = (Status.ACTIVE, Status.SUPERSEDED, Status.ARCHIVED)
MAX_ACTOR_CHARS = 200


def parse_actor(actor: object) -> str:
    """Who asked for an owner's operation, as its audit and receipt name them."""
    name = actor.strip() if isinstance(actor, str) else ""
    if not name or len(name) > MAX_ACTOR_CHARS or not name.isprintable():
        raise InvalidInputError.single(
            "actor", f"1-{MAX_ACTOR_CHARS} printable characters naming who asked")
    return name


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


# The one reading of a time every surface shares (Python, REST, tools, CLI, imports), and
# its one reason; the bad value is never echoed back.
TIME_REASON = "must be an ISO 8601 date and time, e.g. 2024-05-01T12:00:00Z"
_MAX_TIME_CHARS = 64


def read_time(value: object) -> datetime | None:
    """A datetime, or ISO 8601 text, as an aware time (naive means UTC); None when it is
    neither, or outside the years 1 to 9999."""
    if isinstance(value, str) and len(value) <= _MAX_TIME_CHARS:
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    try:
        return aware_timestamp(value)
    except ValueError:
        return None


def check_time(value: object, field: str, problems: list[FieldProblem]) -> datetime | None:
    """``read_time``, adding the problem to ``problems`` when ``value`` is not a time."""
    moment = read_time(value)
    if moment is None:
        problems.append(FieldProblem(field, TIME_REASON))
    return moment


def parse_time(value: object, field: str) -> datetime | None:
    """``None`` stays ``None``; anything else must be a time (``read_time``)."""
    if value is None:
        return None
    moment = read_time(value)
    if moment is None:
        raise InvalidInputError.single(field, TIME_REASON)
    return moment


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
