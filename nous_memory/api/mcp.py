"""``/mcp``: the agent tools over MCP streamable HTTP, inside the REST service.

Stateless JSON mode: every POST is answered on its own (no session affinity, so any
replica can answer and nothing is kept per client).  GET and DELETE get 405: there is
no session to end, and a standing event stream would hold a task open for nothing.
With API keys configured each request needs one, and the key's agents are the only
ones its tool calls may name; without keys the service is loopback-only (as the REST
API) and the endpoint also checks the Host and Origin headers, so a web page cannot
reach it by DNS rebinding (unless the operator said another layer authenticates: then
the Host is that proxy's).  Each body is checked as the stdio transport checks a line
(``tools.mcp_lines``) before the SDK reads it, so both transports answer bad input alike:
a JSON-RPC error with the request's id when the body shows it, and a log line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import METHOD_NOT_FOUND, PARSE_ERROR
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from ..access import KeyGrant
from ..db.audit import ACTOR
from ..errors import DatabaseUnavailableError, InvalidInputError
from ..tools import ToolBox
from ..tools.mcp_lines import Refusal, check_line
from ..tools.mcp_server import build_server
from .auth import API_KEY_HEADER, KeyRing, grant_for, presented_key
from .body import replay
from .people import USER_HEADER, asking

log = logging.getLogger("nous_memory.mcp")

PATH = "/mcp"
_KEY_STATE = "nous_memory_api_key"
_USER_STATE = "nous_memory_user"
_LOOPBACK = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])


class LineGuard:
    """Answers a POST whose body is not one JSON-RPC message the server can take (bad
    JSON or UTF-8, a batch, a lone surrogate, an overlong method) with the error, and
    passes the rest on unchanged.  The body is whole here (``BodySizeLimit`` read it)."""

    def __init__(self, app: StreamableHTTPASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        verdict = check_line(body)
        if verdict is None:
            verdict = Refusal(None, PARSE_ERROR, "Parse error: the body is empty")
        if isinstance(verdict, Refusal):
            log.warning("mcp: refused a request body of %d bytes: %s", len(body),
                        verdict.message)
            payload = verdict.encoded()
            status = 200 if verdict.code == METHOD_NOT_FOUND else 400  # as the SDK answers
            await send({"type": "http.response.start", "status": status, "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
            return
        await self._app(scope, replay(body, receive), send)


class KeyGuard:
    """401 without a known key, 403 for a read-only one (the tools write); the key found
    rides along in the request state and names the request's audit events.  So does the
    person of the ``X-User`` header (a bad one: 422), whom every tool call of the request
    acts for: the person comes from the connection, never from a tool argument."""

    def __init__(self, app: LineGuard, ring: KeyRing | None, app_state: Any) -> None:
        self._app = app
        self._ring = ring
        self._state = app_state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._ring is not None:
            presented = presented_key(Request(scope))
            key = await grant_for(self._state, self._ring, presented) if presented else None
            if key is None:
                reason = "unknown API key" if presented else (
                    f"missing API key; send 'Authorization: Bearer KEY' or '{API_KEY_HEADER}'")
                await _refuse(send, 401, reason)
                return
            if not key.can("read-write"):
                await _refuse(send, 403, f"this API key's role ({key.role}) may not call "
                                         "the agent tools, which write; it needs read-write")
                return
            scope.setdefault("state", {})[_KEY_STATE] = key
            ACTOR.set(key.name)  # reset by the Observe middleware when the request ends
        if scope["type"] == "http":
            try:
                person = asking(Headers(scope=scope).get(USER_HEADER))
            except InvalidInputError as exc:
                await _refuse_input(send, exc)
                return
            scope.setdefault("state", {})[_USER_STATE] = person
        await self._app(scope, receive, send)


async def _refuse_input(send: Send, exc: InvalidInputError) -> None:
    """422 in the REST API's shape: the field (the header) and the reason."""
    body = json.dumps({"detail": [{"field": p.field, "reason": p.reason}
                                  for p in exc.problems]}).encode()
    await send({"type": "http.response.start", "status": 422, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _refuse(send: Send, status: int, reason: str) -> None:
    body = json.dumps({"detail": reason}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer")]})
    await send({"type": "http.response.body", "body": body})


class McpEndpoint:
    """The ``/mcp`` route and the lifetime its session manager needs."""

    def __init__(self, app: FastAPI, ring: KeyRing | None, *, proxied: bool = False) -> None:
        """``proxied``: another layer authenticates (insecure_no_auth_on_network), so the
        Host is the proxy's and only it decides who gets through."""
        self._app = app
        self._ring = ring
        self._boxes: dict[frozenset[str] | None, ToolBox] = {}  # one per key's agent set
        server = build_server(self._toolbox_for)
        self.manager = StreamableHTTPSessionManager(
            app=server, json_response=True, stateless=True,
            security_settings=_LOOPBACK if ring is None and not proxied else None)
        self.route = KeyGuard(LineGuard(StreamableHTTPASGIApp(self.manager)), ring, app.state)

    def _toolbox_for(self, ctx: ServerRequestContext[Any]) -> ToolBox:
        store = self._app.state.store
        if store is None:
            raise DatabaseUnavailableError("the store is not open")
        request = ctx.request
        key: KeyGrant | None = None
        user: str | None = None
        if isinstance(request, Request):
            key = request.scope.get("state", {}).get(_KEY_STATE)
            user = request.scope.get("state", {}).get(_USER_STATE)
        if self._ring is not None and key is None:  # KeyGuard let no such request through
            raise PermissionError("an MCP request without a checked API key")
        agents = key.agents if key is not None else None
        box = self._boxes.get(agents)
        if box is None or box.store is not store:
            box = self._boxes[agents] = ToolBox(store, allowed_agents=agents,
                                                actor="mcp-http")
        return box if user is None else box.acting_for(user)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield
