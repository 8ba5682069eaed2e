"""Request bodies: a size cap enforced before anything parses them, and JSON decoding.

Bodies are decoded here rather than by FastAPI so that every malformed body, like every
invalid field, reaches the caller as an ``InvalidInputError`` in the one 422 format.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from mcp_types import INVALID_REQUEST
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import FieldProblem, InvalidInputError, PayloadTooLargeError, longer_than
from ..memories.params import lone_surrogate_at
from ..tools.mcp_lines import HEAD_BYTES, Refusal, peek_id

MAX_BODY_BYTES = 8 * 1024 * 1024
"""Largest accepted request body (8 MiB); larger ones get 413 before they are parsed."""


def too_large_reason(max_bytes: int, got: int | None) -> str:
    """The body's size in the one wording of a limit (the size, when it is known)."""
    return longer_than(max_bytes, got, "bytes") if got is not None else \
        f"longer than {max_bytes} bytes"


def too_large_payload(max_bytes: int, got: int | None = None) -> dict[str, Any]:
    """The 413 body, in the same shape as the 422 one."""
    return {"detail": [{"field": "body", "reason": too_large_reason(max_bytes, got)}]}


class BodySizeLimit:
    """ASGI middleware answering 413 to bodies over ``max_bytes``.

    A declared Content-Length is checked first; a chunked body is read (and counted)
    before the app sees it, so an oversize body is never parsed or buffered in full.
    Paths matching ``streamed`` (an upload read as it arrives, such as an import) are
    passed through unbuffered under their own, larger limit: the route counts what it
    reads (``bounded_stream``) and this checks only a declared length.  On ``rpc_path``
    (MCP) the 413 is a JSON-RPC error carrying the request's id when its head shows it.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES, *,
                 streamed: re.Pattern[str] | None = None,
                 streamed_max_bytes: int = MAX_BODY_BYTES,
                 rpc_path: str | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.streamed = streamed
        self.streamed_max_bytes = streamed_max_bytes
        self.rpc_path = rpc_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        streamed = self.streamed is not None and self.streamed.match(scope["path"])
        limit = self.streamed_max_bytes if streamed else self.max_bytes
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            head = b""
            if scope["path"] == self.rpc_path:  # its first piece shows the id to answer
                first = await receive()
                head = first.get("body", b"")[:HEAD_BYTES]
            await self._reject(scope, send, limit, int(declared), head)
            return
        if streamed:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left; nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                head = b"".join(chunks)[:HEAD_BYTES] if chunks else chunk[:HEAD_BYTES]
                await self._reject(scope, send, self.max_bytes, None, head)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, replay(b"".join(chunks), receive), send)

    async def _reject(self, scope: Scope, send: Send, max_bytes: int, got: int | None,
                      head: bytes) -> None:
        if scope["path"] == self.rpc_path:
            refusal = Refusal(peek_id(head.decode("utf-8", "replace")), INVALID_REQUEST,
                              "Invalid request: the body is " + too_large_reason(max_bytes,
                                                                                 got))
            await _send(send, refusal.encoded())
            return
        await _send(send, json.dumps(too_large_payload(max_bytes, got)).encode())


async def _send(send: Send, payload: bytes) -> None:
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": payload})


class BodyTooLargeError(PayloadTooLargeError):
    """A streamed body went past its limit while it was read (HTTP 413)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(FieldProblem("body", too_large_reason(max_bytes, None)))


async def bounded_stream(request: Request, max_bytes: int) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive; ``BodyTooLargeError`` once past ``max_bytes``."""
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLargeError(max_bytes)
        yield chunk


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive callable that hands over the buffered body once, then defers to the client."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object, or InvalidInputError naming ``body``."""
    raw = await request.body()
    if not raw.strip():
        raise InvalidInputError.single("body", "missing; expected a JSON object")
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        raise InvalidInputError.single("body", "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError.single(
            "body", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InvalidInputError.single("body", "JSON nested too deeply") from None
    if not isinstance(value, dict):
        raise InvalidInputError.single("body", f"expected a JSON object, got {_json_type(value)}")
    where = lone_surrogate_at(value)
    if where is not None:
        raise InvalidInputError.single(
            where, "contains a lone UTF-16 surrogate (such as \\ud800), which is not valid "
                   "Unicode text")
    return value


async def optional_json_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object; an absent body is an empty one."""
    return await json_object(request) if (await request.body()).strip() else {}


def unknown_fields(body: dict[str, Any], allowed: tuple[str, ...] | frozenset[str]
                   ) -> list[FieldProblem]:
    """A problem for each name of ``body`` the route does not take."""
    return [FieldProblem(name, "unknown field") for name in body if name not in allowed]


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a number"
