"""A careless deployment is refused: no network bind without keys, no short keys, and an
unauthenticated /health tells nothing but that the service is up."""

from __future__ import annotations

import logging
import subprocess
import sys

import httpx
import pytest

from nous_memory import ConfigurationError, MemoryStore
from nous_memory.api import create_app
from nous_memory.api.auth import check_exposure, is_loopback, key_ring
from tests.integration.http_helpers import asgi_client

KEY = "deploy-key-0123456789"


def serve(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs ``nous-memory serve``; every case here must refuse before it binds."""
    return subprocess.run([sys.executable, "-m", "nous_memory.cli", "serve", *args],
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", **env},
                          capture_output=True, text=True, timeout=60, check=False)


def test_serve_refuses_the_network_without_keys() -> None:
    result = serve(["--host", "0.0.0.0", "--port", "1"], {})
    assert result.returncode == 1
    assert "refusing to serve on 0.0.0.0 without API keys" in result.stderr
    assert "NOUS_MEMORY_API_KEYS" in result.stderr
    result = serve(["--port", "1"], {"NOUS_MEMORY_API_HOST": "::"})
    assert result.returncode == 1 and "refusing to serve on ::" in result.stderr


def test_serve_refuses_short_keys() -> None:
    result = serve(["--port", "1"], {"NOUS_MEMORY_API_KEYS": "short-key"})
    assert result.returncode == 1
    assert "at least 16 characters" in result.stderr
    assert "short-key" not in result.stderr  # never echoes a key


def test_exposure_rules(caplog: pytest.LogCaptureFixture) -> None:
    ring = key_ring(KEY)
    for host in ("127.0.0.1", "127.8.9.10", "localhost", "::1", "[::1]"):
        assert is_loopback(host)
        check_exposure(host, None, insecure_opt_out=False)
    for host in ("0.0.0.0", "::", "10.0.0.5", "example.org", ""):
        assert not is_loopback(host)
        with pytest.raises(ConfigurationError):
            check_exposure(host, None, insecure_opt_out=False)
        check_exposure(host, ring, insecure_opt_out=False)
    with caplog.at_level(logging.WARNING, logger="nous_memory.api"):
        check_exposure("0.0.0.0", None, insecure_opt_out=True)
    assert "WITHOUT AUTHENTICATION" in caplog.text


async def test_health_without_a_key_says_only_up(store: MemoryStore) -> None:
    app = create_app(store, settings=store.settings.with_changes(api_keys=KEY))
    async with asgi_client(app) as http:
        for headers in ({}, {"X-API-Key": "wrong-key-0123456789"},
                        {"Authorization": "Basic " + KEY}):
            response = await http.get("/health", headers=headers)
            assert response.status_code == 200
            assert response.json() == {"status": "ok"}
        for headers in ({"X-API-Key": KEY}, {"Authorization": f"Bearer {KEY}"}):
            body = (await http.get("/health", headers=headers)).json()
            assert body["status"] == "ok"
            assert body["database"]["server_version"] and body["embedding"]["model"]


async def test_health_without_keys_configured_is_the_full_report(
        client: httpx.AsyncClient) -> None:
    body = (await client.get("/health")).json()
    assert set(body) == {"status", "database", "embedding"}
