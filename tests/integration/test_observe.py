"""What an operator watches: /metrics parsed with prometheus-client's own parser (the
counters move with the calls), /ready apart from /health, the request id passed through
and returned, and JSON log lines that never hold a memory's text or a key."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel

from nous_memory import MemoryStore
from nous_memory.api import create_app
from nous_memory.api.observe import configure_logging
from nous_memory.testing import ScriptedLLMServer
from nous_memory.testing.llm_server import StatusReply
from tests.integration.http_helpers import asgi_client

KEY = "observe-suite-key-0123456789"
LIMITED = "observe-limited-key-0123456789"
SECRET_TEXT = "Ana keeps her spare key under the blue flowerpot"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str,
          **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


async def scrape(http: httpx.AsyncClient, **headers: str
                 ) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = await http.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


@pytest.fixture
async def http(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(create_app(store)) as client:
        yield client


async def test_counters_move_with_the_calls(http: httpx.AsyncClient) -> None:
    route = "/agents/{agent_id}/memories"
    before = await scrape(http)
    assert (await http.post("/agents/m1/memories", json={
        "kind": "fact", "content": "Tim prefers Celsius"})).status_code == 201
    assert (await http.get("/agents/m1/memories")).status_code == 200
    assert (await http.get("/agents/m1/memories?limit=0")).status_code == 422
    started = (await http.post("/agents/m1/episodes", json={})).json()
    await http.post(f"/agents/m1/episodes/{started['id']}/close")
    after = await scrape(http)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    requests = "nous_memory_http_requests_total"
    assert moved(requests, method="POST", route=route, status="201") == 1
    assert moved(requests, method="GET", route=route, status="200") == 1
    assert moved(requests, method="GET", route=route, status="422") == 1
    assert moved("nous_memory_http_request_seconds_count", method="GET", route=route) == 2
    waits = "nous_memory_embedding_queue_wait_seconds_count"  # any model's queue: the
    # registry is the process's, and other tests' queues have their own model labels
    assert total(after, waits, priority="interactive") - \
        total(before, waits, priority="interactive") >= 1
    assert value(after, "nous_memory_work_queue_items", task="episode_close",
                 state="pending") == 1
    assert value(after, "nous_memory_work_queue_oldest_seconds", task="episode_close",
                 state="pending") >= 0
    assert value(after, "nous_memory_db_pool_connections", state="max") >= 1
    assert not any("m1" in str(labels) for _, labels in after)  # no ids in labels


def total(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str,
          **labels: str) -> float:
    """The sum over every series of ``name`` that has these labels (others may vary)."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in found.items() if n == name and wanted <= have)


async def test_llm_calls_and_tokens_are_counted(llm_store: MemoryStore,
                                                llm_server: ScriptedLLMServer) -> None:
    class Answer(BaseModel):
        answer: str

    async with asgi_client(create_app(llm_store)) as client:
        before = await scrape(client)
        llm_server.fail(500)
        llm_server.reply_json({"answer": "yes"})
        assert llm_store.llm is not None
        await llm_store.llm.structured(agent_id="m2", purpose="probe", schema=Answer,
                                       messages=[{"role": "user", "content": "ok?"}])
        after = await scrape(client)
    calls, tokens = "nous_memory_llm_calls_total", "nous_memory_llm_tokens_total"
    for outcome in ("server_error", "ok"):
        assert (value(after, calls, purpose="probe", model="scripted", outcome=outcome)
                - value(before, calls, purpose="probe", model="scripted", outcome=outcome)) == 1
    assert value(after, tokens, purpose="probe", model="scripted", direction="prompt") > \
        value(before, tokens, purpose="probe", model="scripted", direction="prompt")


async def test_job_runs_are_counted(store: MemoryStore, http: httpx.AsyncClient) -> None:
    from jobs import JobRunner

    before = await scrape(http)
    await JobRunner(store).run("lifecycle")
    after = await scrape(http)
    name = "nous_memory_job_runs_total"
    assert value(after, name, job="lifecycle", status="ok") - \
        value(before, name, job="lifecycle", status="ok") == 1
    assert value(after, "nous_memory_job_run_seconds_count", job="lifecycle") >= 1


async def test_metrics_need_a_key_of_every_agent(store: MemoryStore) -> None:
    store.settings = store.settings.with_changes(api_keys=f"{KEY},{LIMITED}:only-one")
    async with asgi_client(create_app(store)) as client:
        assert (await client.get("/metrics")).status_code == 401
        assert (await client.get("/metrics", headers={"X-API-Key": LIMITED})).status_code == 403
        await scrape(client, **{"X-API-Key": KEY})
        assert (await client.get("/ready")).status_code == 200  # probes carry no key


async def test_ready_apart_from_health(store: MemoryStore, http: httpx.AsyncClient) -> None:
    ready = await http.get("/ready")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {
        "database": "ok", "model": "ok", "worker": "off"}}
    app = create_app(store)
    app.state.model_ready = False  # as while a served store exports its model
    async with asgi_client(app) as loading:
        assert (await loading.get("/health")).status_code == 200
        not_ready = await loading.get("/ready")
        assert not_ready.status_code == 503 and not_ready.json()["checks"]["model"] == "loading"


async def test_ready_sees_a_dead_worker(store: MemoryStore) -> None:
    app = create_app(store, run_worker=True)
    async with asgi_client(app) as client, app.router.lifespan_context(app):
        assert (await client.get("/ready")).json()["checks"]["worker"] == "running"
        task = app.state.worker_task
        task.cancel()
        with pytest.raises(BaseException):  # noqa: B017  (cancelled)
            await task
        response = await client.get("/ready")
        assert response.status_code == 503 and response.json()["checks"]["worker"] == "stopped"


async def test_request_id_passed_through_and_returned(http: httpx.AsyncClient) -> None:
    given = await http.get("/agents/r/memories", headers={"X-Request-ID": "trace-abc.123"})
    assert given.headers["x-request-id"] == "trace-abc.123"
    made = await http.get("/agents/r/memories")
    assert len(made.headers["x-request-id"]) == 32
    hostile = await http.get("/agents/r/memories", headers={"X-Request-ID": "a b\x7f" * 60})
    assert hostile.headers["x-request-id"] != "a b\x7f" * 60


async def test_json_logs_hold_no_text_and_no_key(store: MemoryStore) -> None:
    stream = io.StringIO()
    configure_logging("json", stream=stream)
    store.settings = store.settings.with_changes(api_keys=KEY)
    headers = {"Authorization": f"Bearer {KEY}", "X-Request-ID": "soak-1"}
    try:
        async with asgi_client(create_app(store)) as client:
            for i in range(20):  # a small soak over the write and read routes
                text = f"{SECRET_TEXT} number {i}"
                await client.post("/agents/soak/memories", headers=headers,
                                  json={"kind": "fact", "content": text})
                await client.post("/agents/soak/facts/learn", headers=headers,
                                  json={"content": text})
                await client.post("/agents/soak/recall", headers=headers,
                                  json={"query": text})
                await client.post("/agents/soak/memories", headers=headers,
                                  json={"kind": "fact", "content": text, "confidence": 9})
            await client.get("/agents/soak/memories?tag=" + "flowerpot", headers=headers)
    finally:
        logging.getLogger().handlers.clear()
    lines: list[dict[str, Any]] = [json.loads(line) for line in stream.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "nous_memory.access"]
    assert len(access) == 81 and {line["request_id"] for line in access} == {"soak-1"}
    assert {line["route"] for line in access} >= {"/agents/{agent_id}/recall"}
    assert all(line["agent_id"] == "soak" for line in access)
    log_text = stream.getvalue()
    assert "flowerpot" not in log_text and KEY not in log_text


async def test_json_logs_of_episodes_working_memory_and_the_worker(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer) -> None:
    """The rest of a soak: transcripts, prompts, edits, context and the close pipeline
    in the worker, with the LLM answering badly (its answer and its error echo the text):
    the log still holds none of the texts written."""
    stream = io.StringIO()
    configure_logging("json", stream=stream)
    headers = {"X-Request-ID": "soak-2"}
    try:
        async with asgi_client(create_app(llm_store, run_worker=False)) as client:
            for i in range(3):
                text = f"{SECRET_TEXT} in room {i}"
                started = await client.post("/agents/soak/episodes", headers=headers,
                                            json={"title": f"{SECRET_TEXT} {i}"})
                base = f"/agents/soak/episodes/{started.json()['id']}"
                calls = [
                    client.post(f"{base}/messages", headers=headers, json={"messages": [
                        {"role": "user", "content": text},
                        {"role": "assistant", "content": f"Noted: {text}"}]}),
                    client.post(f"{base}/prompt", headers=headers,
                                json={"system": SECRET_TEXT, "budget_tokens": 300,
                                      "query": text}),
                    client.patch(f"{base}/messages/0", headers=headers,
                                 json={"content": f"{text}, edited"}),
                    client.patch(f"{base}/messages/0", headers=headers,
                                 json={"content": f"{text}\x00"}),  # refused: a NUL
                    client.post(f"{base}/summary", headers=headers, json={"force": True}),
                    client.post("/agents/soak/context", headers=headers,
                                json={"query": text, "budget_tokens": 300}),
                    client.post(f"{base}/close", headers=headers)]
                for call in calls:
                    assert (await call).status_code < 500
            llm_server.reply_text(f"not JSON at all: {SECRET_TEXT}")
            llm_server.default = lambda request: StatusReply(
                status=500, message=f"upstream echoes {SECRET_TEXT}", error_type="server_error")
            assert await llm_store.worker().drain() >= 3
    finally:
        logging.getLogger().handlers.clear()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "nous_memory.access"]
    assert len(access) == 3 + 3 * 7 and {line["request_id"] for line in access} == {"soak-2"}
    assert any(line["logger"].startswith("nous_memory.") and line["logger"] !=
               "nous_memory.access" for line in lines)  # the worker's lines are in it too
    assert "flowerpot" not in stream.getvalue()
