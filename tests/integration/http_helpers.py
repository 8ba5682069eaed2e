"""Shared pieces of the REST tests: an in-process client and the 422 body reader."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

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


def start_server(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``nous-memory serve`` on 127.0.0.1:port in a subprocess, as deployed."""
    # the log goes to a file: an unread pipe would fill and stall the server
    with tempfile.NamedTemporaryFile(prefix="nous-serve-", suffix=".log",
                                     delete=False) as log:
        return subprocess.Popen(
            [sys.executable, "-m", "nous_memory.cli", "serve", "--host", "127.0.0.1",
             "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_healthy(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("serve did not become healthy")
