"""Translate asyncpg errors into the package's exceptions, in this one place.

A lost or reset connection shows up as many different driver errors depending on where
the statement was when it went (a server error such as "terminating connection due to
administrator command", a closed-connection interface error, asyncpg's "cannot switch
to state" when a rollback meets a half-finished protocol exchange, a bare socket error):
all of them are the one unavailable error, which surfaces as 503 with ``Retry-After``.
"""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator

import asyncpg

from ..errors import (
    ContentionError,
    DatabaseError,
    DatabaseUnavailableError,
    DuplicateError,
    FieldProblem,
    InvalidInputError,
    NousMemoryError,
)
from .outage import OUTAGE

_UNAVAILABLE = (
    asyncpg.PostgresConnectionError,  # class 08, ConnectionDoesNotExistError among them
    asyncpg.AdminShutdownError,  # 57P01: pg_terminate_backend, a fast or smart shutdown
    asyncpg.CrashShutdownError,  # 57P02: another backend crashed, the server restarts
    asyncpg.CannotConnectNowError,  # 57P03: starting up or shutting down
    asyncpg.TooManyConnectionsError,
    asyncpg.InterfaceError,  # e.g. "connection is closed", "the pool is closing"
    ConnectionError,
    socket.gaierror,
    TimeoutError,
    OSError,
)
# what a connection cut mid-exchange leaves in asyncpg's protocol state machine
_BROKEN_PROTOCOL = (asyncpg.InternalClientError,)
_STALE_CACHE = asyncpg.OutdatedSchemaCacheError  # a schema change, not an outage
_DRIVER = (asyncpg.PostgresError, asyncpg.InterfaceError, *_BROKEN_PROTOCOL, OSError,
           TimeoutError)


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (a driver error or ours) means the database cannot be reached."""
    if isinstance(exc, DatabaseUnavailableError):
        return True
    if isinstance(exc, _STALE_CACHE):
        return False
    return isinstance(exc, _UNAVAILABLE + _BROKEN_PROTOCOL)


def _key_column(exc: asyncpg.ForeignKeyViolationError) -> str:
    """The offending column of a (agent_id, x) key, without echoing stored values."""
    match = re.search(r"Key \(([^)]*)\)", exc.detail or "")
    columns = [c.strip() for c in match.group(1).split(",")] if match else []
    named = [c for c in columns if c != "agent_id"]
    return named[-1] if named else exc.column_name or "reference"


_CONSTRAINT = re.compile(r'unique constraint "([^"]+)"')


def _constraint_named(exc: asyncpg.UniqueViolationError) -> str | None:
    """The index its message names: a Citus coordinator passes a worker's error on
    without the constraint field (its message names the shard's index)."""
    match = _CONSTRAINT.search(str(exc))
    return match.group(1) if match else None


def translate(exc: BaseException) -> NousMemoryError:
    """Map one driver exception to the matching NousMemoryError."""
    if isinstance(exc, NousMemoryError):
        return exc
    if isinstance(exc, asyncpg.DeadlockDetectedError | asyncpg.SerializationError
                  | asyncpg.LockNotAvailableError):
        return ContentionError(f"another transaction held what this one needed "
                               f"({exc.sqlstate}); nothing was written, retry")
    if isinstance(exc, asyncpg.UniqueViolationError):
        return DuplicateError(f"duplicate record: {exc.detail or exc}",
                              constraint=exc.constraint_name or _constraint_named(exc))
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
    if is_unavailable(exc):
        OUTAGE.went_away(exc)
        return DatabaseUnavailableError(f"database unavailable: {exc or type(exc).__name__}")
    return DatabaseError(f"{type(exc).__name__}: {exc}")


@contextlib.contextmanager
def translated(*, reports: bool = True) -> Iterator[None]:
    """Re-raise driver errors as package errors, chained to the original; a block that
    completes tells the outage tracker the database is there, unless ``reports`` is
    false (a block that may not have reached the database the tracker watches)."""
    try:
        yield
    except NousMemoryError:
        raise
    except _DRIVER as exc:
        raise translate(exc) from exc
    if reports and OUTAGE.unsettled:
        OUTAGE.came_back()
