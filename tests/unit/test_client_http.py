"""The client's retry rules, against a scripted transport: reads are retried after a
lost or refused response, writes only when the connection was never made."""

from __future__ import annotations

import httpx
import pytest

from nous_memory.client import AsyncMemoryClient, Transport
from nous_memory.errors import DatabaseUnavailableError, InvalidInputError, ServiceUnavailableError


def scripted(answers: list[int | type[Exception]], seen: list[str]) -> AsyncMemoryClient:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.headers.get('authorization')} "
                    f"{bool(request.headers.get('x-request-id'))}")
        answer = answers.pop(0)
        if isinstance(answer, type):
            raise answer("scripted", request=request)
        if answer == 200:
            return httpx.Response(200, json={"items": [], "next_cursor": None})
        if answer == 422:
            return httpx.Response(422, json={"detail": [{"field": "k", "reason": "too big"}]})
        return httpx.Response(answer, json={"detail": "database unavailable"},
                              headers={"Retry-After": "0"})

    http = httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://svc",
                             headers={"Authorization": "Bearer k"})
    return AsyncMemoryClient("http://svc", transport=Transport(
        "http://svc", http=http, max_attempts=3, backoff_s=0.001))


async def test_reads_are_retried_after_503_and_lost_responses() -> None:
    seen: list[str] = []
    client = scripted([503, httpx.ReadTimeout, 200], seen)
    assert (await client.list("a")).items == []
    assert seen == ["GET Bearer k True"] * 3


async def test_reads_give_up_after_max_attempts() -> None:
    seen: list[str] = []
    with pytest.raises(DatabaseUnavailableError):
        await scripted([503, 503, 503, 200], seen).list("a")
    assert len(seen) == 3


async def test_writes_are_not_retried_after_the_service_saw_them() -> None:
    seen: list[str] = []
    with pytest.raises(DatabaseUnavailableError):
        await scripted([503, 200], seen).remember("a", "fact", content="x y z")
    assert len(seen) == 1
    seen.clear()
    with pytest.raises(ServiceUnavailableError):
        await scripted([httpx.ReadTimeout, 200], seen).remember("a", "fact", content="x y")
    assert len(seen) == 1


async def test_writes_are_retried_when_nothing_reached_the_service() -> None:
    seen: list[str] = []
    client = scripted([httpx.ConnectError, 422], seen)
    with pytest.raises(InvalidInputError) as bad:
        await client.remember("a", "fact", content="x y z")
    assert bad.value.field == "k" and len(seen) == 2
