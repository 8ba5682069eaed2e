"""Translate asyncpg errors into the package's exceptions, in this one place."""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator

import asyncpg

from ..errors import (
    ConflictError,
    DatabaseError,
    DatabaseUnavailableError,
    FieldProblem,
    InvalidInputError,
    NousMemoryError,
)

_UNAVAILABLE = (
    asyncpg.CannotConnectNowError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.TooManyConnectionsError,
    asyncpg.InterfaceError,
    ConnectionError,
    socket.gaierror,
    TimeoutError,
    OSError,
)


def _key_column(exc: asyncpg.ForeignKeyViolationError) -> str:
    """The offending column of a (agent_id, x) key, without echoing stored values."""
    match = re.search(r"Key \(([^)]*)\)", exc.detail or "")
    columns = [c.strip() for c in match.group(1).split(",")] if match else []
    named = [c for c in columns if c != "agent_id"]
    return named[-1] if named else exc.column_name or "reference"


def translate(exc: BaseException) -> NousMemoryError:
    """Map one driver exception to the matching NousMemoryError."""
    if isinstance(exc, NousMemoryError):
        return exc
    if isinstance(exc, asyncpg.UniqueViolationError):
        return ConflictError(f"duplicate record: {exc.detail or exc}")
    if isinstance(exc, asyncpg.ForeignKeyViolationError):
        return InvalidInputError(FieldProblem(
            _key_column(exc), "refers to a record that does not exist for this agent"))
    if isinstance(exc, asyncpg.CheckViolationError | asyncpg.NotNullViolationError):
        return InvalidInputError(
            FieldProblem(exc.column_name or exc.constraint_name or "value", str(exc))
        )
    if isinstance(exc, asyncpg.CharacterNotInRepertoireError
                  | asyncpg.UntranslatableCharacterError):
        return InvalidInputError(FieldProblem("text", f"not valid text for PostgreSQL: {exc}"))
    if isinstance(exc, asyncpg.StringDataRightTruncationError):
        return InvalidInputError(FieldProblem("text", str(exc)))
    if isinstance(exc, asyncpg.DataError):  # a value the column's type cannot hold
        return InvalidInputError(FieldProblem("value", str(exc)))
    if isinstance(exc, _UNAVAILABLE):
        return DatabaseUnavailableError(f"database unavailable: {exc}")
    return DatabaseError(f"{type(exc).__name__}: {exc}")


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Re-raise driver errors as package errors, chained to the original."""
    try:
        yield
    except NousMemoryError:
        raise
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:
        raise translate(exc) from exc
