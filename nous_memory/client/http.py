"""The client's HTTP layer: one httpx connection pool, the key header, timeouts, retries
with backoff for calls that are safe to repeat, and the service's error bodies turned
back into the package's own exceptions.

Only idempotent calls are retried after a response was lost (reads, and recall/context
which change nothing a caller sees); any call is retried when the connection was never
made, since the service then saw nothing.
"""

from __future__ import annotations

import asyncio
import random
import re
import ssl
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from ..errors import (
    AuthenticationError,
    ClientError,
    ConflictError,
    ContentionError,
    DatabaseUnavailableError,
    FieldProblem,
    InvalidInputError,
    NotFoundError,
    NousMemoryError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ServerError,
    ServiceUnavailableError,
)

RETRY_STATUSES = frozenset({502, 503, 504})
REQUEST_ID_HEADER = "X-Request-ID"
_NOT_FOUND = re.compile(r"^(?P<what>.+) (?P<ident>\S+) not found$")
_ADAPTERS: dict[object, TypeAdapter[Any]] = {}
T = TypeVar("T")


def agent_path(agent_id: str, *rest: object) -> str:
    """``/agents/{agent}/...``, each segment quoted whole (ids and refs such as
    ``episode:1a2b#c3``)."""
    return "/".join(["/agents", *(quote(str(p), safe="") for p in (agent_id, *rest))])


def parse(kind: type[T], data: Any) -> T:
    """A record (a pydantic model, a dataclass or a list of either) from its JSON; each
    adapter is built on first use, so a call pays only for the records it reads."""
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    parsed: T = adapter.validate_python(data)
    return parsed


def jsonable(value: Any) -> Any:
    """Arguments as JSON values (datetimes, UUIDs, pydantic models, enums)."""
    return to_jsonable_python(value)


def error_from(response: httpx.Response) -> NousMemoryError:
    """The exception the store would have raised for this error response."""
    status = response.status_code
    try:
        detail: Any = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = response.text[:500] or response.reason_phrase
    if status in (413, 422) and isinstance(detail, list) and detail:
        problems = [FieldProblem(str(p.get("field", "body")), str(p.get("reason", "invalid")))
                    for p in detail if isinstance(p, dict)]
        if problems:
            return (PayloadTooLargeError if status == 413 else InvalidInputError)(problems)
    message = str(detail)
    if _contention(response):
        return ContentionError(message)
    if status == 404:
        match = _NOT_FOUND.match(message)
        return (NotFoundError(match["what"], match["ident"]) if match
                else NotFoundError("resource", response.request.url.path))
    errors: dict[int, type[NousMemoryError]] = {
        401: AuthenticationError, 403: PermissionDeniedError, 409: ConflictError,
        503: DatabaseUnavailableError}
    if status in errors:
        return errors[status](message)
    if 400 <= status < 500:
        return ClientError(f"HTTP {status}: {message}")
    return ServerError(f"HTTP {status}: {message}")


def _contention(response: httpx.Response) -> bool:
    """Another transaction held what the call needed; the service wrote nothing."""
    return response.status_code == 409 and "Retry-After" in response.headers


class Transport:
    """Sends requests to one service; ``request`` raises the package's exceptions."""

    def __init__(self, base_url: str, *, api_key: str | None = None,
                 timeout_s: float = 30.0, connect_timeout_s: float = 5.0,
                 max_attempts: int = 3, backoff_s: float = 0.2, max_backoff_s: float = 5.0,
                 http: httpx.AsyncClient | None = None) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        verify: ssl.SSLContext | bool = True
        if base_url.startswith("http://"):
            # plain HTTP checks no certificate, so the CA bundle (tens of ms of a CLI
            # call) is not loaded; this context trusts no authority: TLS through it fails
            verify = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._http = http or httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, verify=verify,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def json(self, method: str, path: str, *, idempotent: bool,
                   body: Mapping[str, Any] | None = None,
                   params: Mapping[str, Any] | None = None,
                   headers: Mapping[str, str | bytes] | None = None) -> Any:
        """The decoded JSON of a successful response (None for 204)."""
        response = await self.request(method, path, idempotent=idempotent, body=body,
                                      params=params, headers=headers)
        return None if response.status_code == 204 else response.json()

    async def request(self, method: str, path: str, *, idempotent: bool,
                      body: Mapping[str, Any] | None = None,
                      params: Mapping[str, Any] | None = None,
                      content: bytes | AsyncIterable[bytes] | None = None,
                      headers: Mapping[str, str | bytes] | None = None) -> httpx.Response:
        query = {k: jsonable(v) for k, v in (params or {}).items() if v is not None}
        # as bytes: a person's name (X-User) goes as its UTF-8 bytes
        sent = {k.encode(): v if isinstance(v, bytes) else v.encode("latin-1")
                for k, v in {REQUEST_ID_HEADER: uuid.uuid4().hex, **(headers or {})}.items()}
        for attempt in range(1, self.max_attempts + 1):
            last = attempt == self.max_attempts
            try:
                response = await self._http.request(
                    method, path, params=query, headers=sent, content=content,
                    json=None if body is None else jsonable(body))
            except httpx.ConnectError as exc:  # nothing reached the service: any call
                if last or (content is not None and not isinstance(content, bytes)):
                    raise ServiceUnavailableError(f"cannot reach the service: {exc}") from exc
            except httpx.TransportError as exc:
                if last or not idempotent:
                    raise ServiceUnavailableError(
                        f"the service did not answer {method} {path}: "
                        f"{type(exc).__name__}") from exc
            else:
                if response.status_code < 400:
                    return response
                # contention left nothing written: any call may go again, if its body can
                contended = _contention(response) and not isinstance(content, AsyncIterable)
                if last or not (contended or (idempotent
                                and response.status_code in RETRY_STATUSES)):
                    raise error_from(response)
                await self._sleep(attempt, response.headers.get("Retry-After"))
                continue
            await self._sleep(attempt, None)
        raise AssertionError("unreachable")  # pragma: no cover

    @asynccontextmanager
    async def stream(self, path: str, *, params: Mapping[str, Any] | None = None
                     ) -> AsyncIterator[httpx.Response]:
        """A GET whose body is read as it arrives (not retried once it has started)."""
        request = self._http.build_request(
            "GET", path, params={k: jsonable(v) for k, v in (params or {}).items()},
            headers={REQUEST_ID_HEADER: uuid.uuid4().hex})
        try:
            response = await self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise ServiceUnavailableError(f"cannot reach the service: {exc}") from exc
        try:
            if response.status_code >= 400:
                await response.aread()
                raise error_from(response)
            yield response
        finally:
            await response.aclose()

    async def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s)
        if retry_after is not None and retry_after.isdigit():
            delay = min(float(retry_after), self.max_backoff_s)
        await asyncio.sleep(delay * (0.5 + random.random() / 2))  # jitter: no herd
