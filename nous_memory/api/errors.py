"""Every error the API returns is shaped here, in one place.

422 bodies list ``{"field", "reason"}`` problems whether the store or FastAPI rejected
the input; other errors carry one message.  Server-side failures are logged in full and
reported without internals (DSNs, SQL, driver messages).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from ..episodes.lifecycle import OversizeMessageError
from ..errors import (
    ClientError,
    ConflictError,
    ContentionError,
    DatabaseUnavailableError,
    InvalidInputError,
    NotFoundError,
    NousMemoryError,
    reason_of,
)
from .body import BodyTooLargeError

log = logging.getLogger("nous_memory.api")

UNAVAILABLE_MESSAGE = "database unavailable; try again later"
INTERNAL_MESSAGE = "internal server error"
RETRY_AFTER_SECONDS = "5"
CONTENTION_RETRY_AFTER_SECONDS = "1"  # a deadlock or a lock wait: over in a moment

_SOURCES = frozenset({"body", "query", "path", "header", "cookie"})


class Problem(BaseModel):
    """One rejected field and why."""

    field: str = Field(examples=["confidence"])
    reason: str = Field(examples=["Input should be less than or equal to 1"])


class ValidationFailure(BaseModel):
    """422: the request was well-formed HTTP but some fields were invalid."""

    detail: list[Problem]


class ErrorMessage(BaseModel):
    """Any other error: one human-readable message."""

    detail: str


def problem_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the given error statuses."""
    described: dict[int, tuple[type[BaseModel], str]] = {
        401: (ErrorMessage, "Missing or unknown API key"),
        403: (ErrorMessage, "The API key may not act for this agent"),
        404: (ErrorMessage, "No such memory for this agent"),
        409: (ErrorMessage, "A conflicting change; with Retry-After, another "
                            "transaction held what this one needed and nothing was "
                            "written: the same call can be retried"),
        413: (ValidationFailure, "Request body over the size limit"),
        422: (ValidationFailure, "Invalid input; every bad field is listed"),
        503: (ErrorMessage, "Database unavailable"),
    }
    return {code: {"model": described[code][0], "description": described[code][1]}
            for code in codes}


def _field(loc: Sequence[int | str]) -> str:
    """``("query", "status", 0)`` -> ``status[0]``: the same paths the store uses."""
    parts = list(loc[1:] if loc and loc[0] in _SOURCES and len(loc) > 1 else loc)
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "body"


def _problems(items: list[dict[str, str]], status: int = 422) -> JSONResponse:
    return JSONResponse({"detail": items}, status_code=status)


async def request_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return _problems([
        {"field": _field(err.get("loc", ())), "reason": reason_of(err)}
        for err in exc.errors()
    ])


async def nous_memory_error(request: Request, exc: Exception) -> JSONResponse:
    """Map the package's exception hierarchy to HTTP statuses."""
    if isinstance(exc, OversizeMessageError | BodyTooLargeError):  # over a size limit
        return _problems([{"field": p.field, "reason": p.reason} for p in exc.problems], 413)
    if isinstance(exc, InvalidInputError):  # includes PayloadTooLargeError
        return _problems([{"field": p.field, "reason": p.reason} for p in exc.problems])
    if isinstance(exc, NotFoundError):
        return JSONResponse({"detail": str(exc)}, status_code=404)
    if isinstance(exc, ContentionError):  # nothing was written: the same call, again
        return JSONResponse({"detail": str(exc)}, status_code=409,
                            headers={"Retry-After": CONTENTION_RETRY_AFTER_SECONDS})
    if isinstance(exc, ConflictError):
        return JSONResponse({"detail": str(exc)}, status_code=409)
    if isinstance(exc, ClientError):  # a client error without a more specific status
        return JSONResponse({"detail": str(exc)}, status_code=400)
    if isinstance(exc, DatabaseUnavailableError):
        # the outage itself is logged once, when it starts (db.outage), not per request
        log.debug("database unavailable during %s %s: %s",
                  request.method, request.url.path, exc)
        return JSONResponse({"detail": UNAVAILABLE_MESSAGE}, status_code=503,
                            headers={"Retry-After": RETRY_AFTER_SECONDS})
    log.error("unhandled %s during %s %s", type(exc).__name__, request.method,
              request.url.path, exc_info=exc)
    return JSONResponse({"detail": INTERNAL_MESSAGE}, status_code=500)


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, request_validation_error)
    app.add_exception_handler(NousMemoryError, nous_memory_error)
