"""Shared pieces of the REST tests: an in-process client and the 422 body reader."""

from __future__ import annotations

import socket

import httpx
from fastapi import FastAPI


def asgi_client(app: FastAPI) -> httpx.AsyncClient:
    """An httpx client that calls the app in-process (no socket)."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def fields_of(response: httpx.Response) -> list[str]:
    """The fields named by an error body, checking the one error shape on the way."""
    body = response.json()
    assert set(body) == {"detail"}
    assert all(set(p) == {"field", "reason"} and p["reason"] for p in body["detail"])
    return [p["field"] for p in body["detail"]]


async def post_body(client: httpx.AsyncClient, url: str, body: object) -> httpx.Response:
    """POST ``body`` as JSON, or as raw bytes labelled JSON (to send malformed JSON)."""
    if isinstance(body, bytes):
        return await client.post(url, content=body, headers={"content-type": "application/json"})
    return await client.post(url, json=body)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now (for a served instance)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
