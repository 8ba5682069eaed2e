"""What went wrong with one HTTP attempt, and whether trying again can help."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .backoff import retry_after_seconds
from .replies import Mode
from .usage import CallOutcome, short_error

if TYPE_CHECKING:
    import openai

# Words a server's 400 uses when it lacks structured output (OpenAI, vLLM, llama.cpp...).
_REJECTS_SCHEMA = ("response_format", "json_schema")


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """One failed attempt: its recorded outcome, a short error, and how to go on."""

    outcome: CallOutcome
    error: str
    retryable: bool
    retry_after: float | None = None
    schema_rejected: bool = False


def classify(exc: BaseException, mode: Mode) -> Failure:
    """Transport trouble, timeouts, 429 and 5xx are retryable; other 4xx are not."""
    import openai  # already loaded: only an openai call fails this way
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return Failure(outcome=CallOutcome.TIMEOUT, error="request timed out", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return Failure(outcome=CallOutcome.TRANSPORT_ERROR, retryable=True,
                       error=short_error(f"connection error: {type(cause).__name__}: {cause}"))
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        error = short_error(f"HTTP {status}: {server_message(exc)}")
        retry_after = retry_after_seconds(exc.response.headers)
        if status == 429:
            return Failure(outcome=CallOutcome.RATE_LIMITED, error=error, retryable=True,
                           retry_after=retry_after)
        if status >= 500:
            return Failure(outcome=CallOutcome.SERVER_ERROR, error=error, retryable=True,
                           retry_after=retry_after)
        said = f"{exc.message} {exc.param or ''} {exc.body}".lower()
        rejected = (status == 400 and mode == "json_schema"
                    and any(word in said for word in _REJECTS_SCHEMA))
        return Failure(outcome=CallOutcome.REQUEST_ERROR, error=error, retryable=False,
                       schema_rejected=rejected)
    if isinstance(exc, openai.APIResponseValidationError):
        return Failure(outcome=CallOutcome.SERVER_ERROR, retryable=True,
                       error=short_error(f"unreadable response: {exc.message}"))
    return Failure(outcome=CallOutcome.REQUEST_ERROR, retryable=False,
                   error=short_error(f"{type(exc).__name__}: {exc}"))


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own error message, without the client's "Error code: ..." wrapping."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return exc.message
