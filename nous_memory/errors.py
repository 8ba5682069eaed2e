"""One exception root for the package; driver errors are translated in ``db.errors``.

Client misuse (bad input, unknown ids, conflicts) is kept apart from server-side
trouble (database unavailable, schema mismatch) so callers can react to each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sized
from dataclasses import dataclass
from typing import Any


class NousMemoryError(Exception):
    """Root of every error raised by nous_memory."""


# --- client misuse ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One rejected field: its dotted path and why it was rejected."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


class ClientError(NousMemoryError):
    """The caller asked for something invalid; retrying the same call will fail again."""


class InvalidInputError(ClientError, ValueError):
    """Input failed validation.  ``problems`` names every bad field and the reason."""

    def __init__(self, problems: list[FieldProblem] | FieldProblem) -> None:
        self.problems = [problems] if isinstance(problems, FieldProblem) else list(problems)
        if not self.problems:
            raise ValueError("InvalidInputError needs at least one problem")
        super().__init__("; ".join(str(p) for p in self.problems))

    @classmethod
    def single(cls, field: str, reason: str) -> InvalidInputError:
        return cls(FieldProblem(field, reason))

    @property
    def field(self) -> str:
        return self.problems[0].field

    @property
    def reason(self) -> str:
        return self.problems[0].reason


class PayloadTooLargeError(InvalidInputError):
    """A single value is larger than the documented limit for its field."""


# --- the one wording of a limit ----------------------------------------------
# Python, REST, the CLI and the tools all say a limit the same way: the field, the limit
# and the size given, never the value itself (a model corrects itself from the numbers,
# and a megabyte echoed back helps nobody).


def longer_than(limit: int, got: int, unit: str = "characters") -> str:
    return f"longer than {limit} {unit} (got {got})"


def more_than(limit: int, got: int | None, unit: str = "items") -> str:
    return f"more than {limit} {unit}" + (f" (got {got})" if got is not None else "")


def out_of_range(low: object, high: object) -> str:
    return f"must be between {low} and {high}"


def a_or_an(word: str) -> str:
    """``word`` after its article: an episode, a fact, an integer, an array."""
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def is_size_reason(reason: str) -> bool:
    """Whether a reason says a value is over its size limit (-> PayloadTooLargeError)."""
    return reason.startswith(("longer than ", "more than "))


def reason_of(error: Mapping[str, Any]) -> str:
    """A pydantic error (one of ``ValidationError.errors()``) as a reason in the wording
    above; messages pydantic words without the value pass through."""
    kind = error.get("type")
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind == "string_too_long" and isinstance(value, str | bytes):
        return longer_than(ctx["max_length"], len(value))
    if kind == "too_long" and isinstance(value, Sized):
        return more_than(ctx["max_length"], len(value))
    bounds = {"less_than_equal": ("at most", "le"), "less_than": ("less than", "lt"),
              "greater_than_equal": ("at least", "ge"),
              "greater_than": ("greater than", "gt")}
    if kind in bounds:
        words, key = bounds[kind]
        bound = ctx.get(key)
        return f"must be {words} {bound:g}" if isinstance(bound, float) else \
            f"must be {words} {bound}"
    if kind == "string_too_short":
        return "must not be empty" if ctx.get("min_length") == 1 else \
            f"shorter than {ctx['min_length']} characters"
    if kind == "too_short":
        return f"fewer than {ctx.get('min_length')} items"
    return str(error.get("msg", "invalid")).removeprefix("Value error, ")


class NotFoundError(ClientError, LookupError):
    """No such record for this agent (also raised for another agent's ids)."""

    def __init__(self, what: str, ident: object) -> None:
        self.what = what
        self.ident = ident
        super().__init__(f"{what} {ident} not found")


class ConflictError(ClientError):
    """The record changed state in a way that makes the request impossible."""


class DuplicateError(ConflictError):
    """A record with the same key exists already (a unique constraint refused it).
    ``constraint`` names it (the index), when the database said: a caller that expects
    one duplicate must not take another for it."""

    def __init__(self, message: str, *, constraint: str | None = None) -> None:
        super().__init__(message)
        self.constraint = constraint

    def refused_by(self, index: str) -> bool:
        """Whether the unique index ``index`` refused it (on Citus, one of its shards':
        ``<index>_<shard id>``)."""
        name = self.constraint
        return name is not None and (name == index or (
            name.startswith(f"{index}_") and name[len(index) + 1:].isdigit()))


class ContentionError(ConflictError):
    """Another transaction held what this one needed (PostgreSQL chose it as a deadlock's
    victim, or a serialization failure): nothing was written, and the call can be
    retried as it is (HTTP 409)."""


class AuthenticationError(ClientError):
    """The service wants an API key and got none, or one it does not know (HTTP 401)."""


class PermissionDeniedError(ClientError):
    """The API key may not do this: another agent, or a role without the right (HTTP 403)."""


class WrongKindError(NousMemoryError, TypeError):
    """A memory's detail was read as another kind's (``memory.fact`` on an episode)."""

    def __init__(self, memory_id: object, kind: str, wanted: str) -> None:
        self.memory_id, self.kind, self.wanted = memory_id, kind, wanted
        super().__init__(f"memory {memory_id} is {a_or_an(kind)}, not "
                         f"{a_or_an(wanted)}")


# --- server side -----------------------------------------------------------


class ServerError(NousMemoryError):
    """Something outside the caller's request went wrong."""


class JobFailedError(ServerError):
    """A maintenance job run ended in failure (its committed batches stay done)."""


class DatabaseError(ServerError):
    """An unexpected error from PostgreSQL (translated from the driver)."""


class DatabaseUnavailableError(DatabaseError):
    """The database could not be reached or started."""


class ServiceUnavailableError(ServerError):
    """The memory service could not be reached, or did not answer in time (remote client)."""


class PgvectorMissingError(DatabaseError):
    """The target PostgreSQL has no ``vector`` extension available."""


class SchemaError(DatabaseError):
    """The database schema is missing, newer than this code, or inconsistent."""


class EmbeddingMismatchError(ServerError):
    """The embedder's dimension differs from the one the database was initialised with."""


class ConfigurationError(ServerError, ValueError):
    """Settings are inconsistent or invalid."""


# --- logs --------------------------------------------------------------------


def loggable(exc: BaseException) -> str:
    """What a log line says of an error: its class and, where the text is made of names
    and ids only, that text; never words a caller, the database or a model supplied
    (they can be a memory's).  The whole message stays where the error is recorded (the
    work item's last error, the LLM call's row), which the inspector shows."""
    name = type(exc).__name__
    if isinstance(exc, InvalidInputError):
        return f"{name} ({', '.join(p.field for p in exc.problems)})"
    if isinstance(exc, NotFoundError):
        return f"{name}: {exc}"
    text = getattr(exc, "log_text", None) if isinstance(exc, NousMemoryError) else None
    return f"{name}: {text}" if isinstance(text, str) and text else name
