"""The LLM client through the real openai client against the scripted HTTP server, with
usage rows in a real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import openai
import pytest
from pydantic import BaseModel

from nous_memory.db import Database
from nous_memory.errors import InvalidInputError, ServerError
from nous_memory.llm import (
    CallOutcome,
    LLMCall,
    LLMClient,
    LLMError,
    LLMOutputError,
    LLMRequestError,
    LLMUnavailableError,
    PostgresCallRecorder,
    strict_json_schema,
    usage_by_agent,
)
from nous_memory.testing import ScriptedLLMServer, StatusReply, TextReply
from nous_memory.tokens import count_tokens

MESSAGES = [{"role": "system", "content": "You summarise conversations."},
            {"role": "user", "content": "<transcript>we chose postgres</transcript>"}]
GOOD: dict[str, Any] = {"title": "Storage", "points": ["postgres chosen"]}


class Point(BaseModel):
    text: str
    weight: float | None = None


class Summary(BaseModel):
    title: str
    points: list[str]
    note: str | None = None


class Nested(BaseModel):
    headline: Point
    others: list[Point] = []


class ListRecorder:
    def __init__(self) -> None:
        self.calls: list[LLMCall] = []

    async def record(self, call: LLMCall) -> None:
        self.calls.append(call)

    @property
    def outcomes(self) -> list[str]:
        return [c.outcome.value for c in self.calls]


class BrokenRecorder:
    async def record(self, call: LLMCall) -> None:
        raise RuntimeError("recorder is down")


@pytest.fixture
async def server() -> AsyncIterator[ScriptedLLMServer]:
    async with ScriptedLLMServer() as scripted:
        yield scripted


@pytest.fixture
async def make_client(server: ScriptedLLMServer
                      ) -> AsyncIterator[Callable[..., LLMClient]]:
    """Clients on the scripted server with millisecond backoff unless told otherwise."""
    made: list[LLMClient] = []

    def make(**overrides: Any) -> LLMClient:
        options: dict[str, Any] = {"base_url": server.base_url, "model": "test-model",
                                   "max_attempts": 3, "backoff_base_s": 0.001,
                                   "backoff_max_s": 0.01, "timeout_s": 5.0}
        options.update(overrides)
        client = LLMClient(**options)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


class SleepLog:
    """An injected sleep that records the delays and does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


async def _ask(client: LLMClient, schema: type[BaseModel] = Summary,
               agent_id: str = "agent-a", purpose: str = "episode_close") -> Any:
    return await client.structured(agent_id=agent_id, purpose=purpose,
                                   messages=[dict(m) for m in MESSAGES], schema=schema,
                                   max_tokens=300)


# --- structured output -----------------------------------------------------------


async def test_json_schema_mode_success(server: ScriptedLLMServer,
                                        make_client: Callable[..., LLMClient]) -> None:
    server.reply_json(GOOD, usage=(11, 7))
    result = await _ask(make_client())
    assert result.value == Summary.model_validate(GOOD)
    assert (result.mode, result.attempts, result.model) == ("json_schema", 1, "test-model")
    assert (result.prompt_tokens, result.completion_tokens) == (11, 7)
    assert result.latency_ms >= 0
    [sent] = server.requests
    assert sent["model"] == "test-model"
    assert sent["max_tokens"] == 300
    assert sent["messages"] == MESSAGES
    fmt = sent["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Summary"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema == strict_json_schema(Summary)
    assert schema["required"] == ["title", "points", "note"]  # optional fields too
    assert schema["additionalProperties"] is False


def test_strict_schema_closes_nested_objects_and_drops_defaults() -> None:
    schema = strict_json_schema(Nested)
    point = schema["$defs"]["Point"]
    assert point["additionalProperties"] is False
    assert point["required"] == ["text", "weight"]
    assert "default" not in json.dumps(schema)
    assert schema["required"] == ["headline", "others"]
    # the schema still describes the model: a valid object passes pydantic
    assert Nested.model_validate({"headline": {"text": "a", "weight": None}, "others": []})


async def test_falls_back_to_json_object_and_remembers(
        make_client: Callable[..., LLMClient]) -> None:
    recorder = ListRecorder()
    async with ScriptedLLMServer(json_schema_supported=False) as plain:
        client = make_client(base_url=plain.base_url, recorder=recorder)
        plain.reply_json(GOOD)
        plain.reply_json({"title": "Second", "points": []})
        first = await _ask(client)
        assert (first.mode, first.attempts) == ("json_object", 2)
        assert not client.supports_json_schema
        second = await _ask(client)
        assert (second.mode, second.attempts) == ("json_object", 1)
        assert second.value.title == "Second"
        kinds = [r["response_format"]["type"] for r in plain.requests]
        assert kinds == ["json_schema", "json_object", "json_object"]
        fallback = plain.requests[1]["messages"]
        assert [m["role"] for m in fallback] == ["system", "system", "user"]
        assert json.dumps(strict_json_schema(Summary), separators=(",", ":")) in (
            fallback[1]["content"])
        assert fallback[0] == MESSAGES[0] and fallback[2] == MESSAGES[1]
    assert recorder.outcomes == ["request_error", "ok", "ok"]


@pytest.mark.parametrize(("bad", "quoted"), [
    (TextReply(text='{"title": "Storage", "points": ['), "Invalid JSON"),
    (TextReply(text=json.dumps({"title": "Storage"})), "points: Field required"),
])
async def test_invalid_output_is_repaired_once(server: ScriptedLLMServer,
                                               make_client: Callable[..., LLMClient],
                                               bad: TextReply, quoted: str) -> None:
    recorder = ListRecorder()
    server.enqueue(bad)
    server.reply_json(GOOD)
    result = await _ask(make_client(recorder=recorder))
    assert result.value == Summary.model_validate(GOOD)
    assert result.attempts == 2
    assert len(server.requests) == 2
    repair = server.requests[1]["messages"]
    assert repair[:2] == MESSAGES
    assert repair[2] == {"role": "assistant", "content": bad.text}
    assert repair[3]["role"] == "user" and quoted in repair[3]["content"]
    assert recorder.outcomes == ["invalid_output", "ok"]
    assert "Field required" in str(recorder.calls[0].error) or "JSON" in str(
        recorder.calls[0].error)


async def test_code_fenced_json_is_accepted(server: ScriptedLLMServer,
                                            make_client: Callable[..., LLMClient]) -> None:
    server.reply_text("```json\n" + json.dumps(GOOD) + "\n```")
    assert (await _ask(make_client())).value == Summary.model_validate(GOOD)
    assert len(server.requests) == 1


async def test_truncated_reply_says_so_in_the_repair(
        server: ScriptedLLMServer, make_client: Callable[..., LLMClient]) -> None:
    server.reply_text('{"title": "Sto', finish_reason="length")
    server.reply_json(GOOD)
    await _ask(make_client())
    assert "cut off at max_tokens" in server.requests[1]["messages"][-1]["content"]


async def test_invalid_twice_raises_output_error(server: ScriptedLLMServer,
                                                 make_client: Callable[..., LLMClient]) -> None:
    recorder = ListRecorder()
    server.reply_text("not json at all")
    server.reply_json({"title": 3})
    with pytest.raises(LLMOutputError, match="twice") as caught:
        await _ask(make_client(recorder=recorder))
    assert isinstance(caught.value, LLMError) and isinstance(caught.value, ServerError)
    assert len(server.requests) == 2
    assert recorder.outcomes == ["invalid_output", "invalid_output"]


# --- transport and status errors -------------------------------------------------


async def test_429_honours_retry_after(server: ScriptedLLMServer,
                                       make_client: Callable[..., LLMClient]) -> None:
    recorder = ListRecorder()
    sleeps = SleepLog()
    server.fail(429, "slow down", retry_after=3)
    server.reply_json(GOOD)
    result = await _ask(make_client(sleep=sleeps, backoff_base_s=0.5, backoff_max_s=8.0,
                                    recorder=recorder))
    assert result.attempts == 2
    assert sleeps.delays == [3.0]  # jitter alone would stay below 0.5 s
    assert recorder.outcomes == ["rate_limited", "ok"]
    assert recorder.calls[0].error == "HTTP 429: slow down"


async def test_retry_after_is_capped(server: ScriptedLLMServer,
                                     make_client: Callable[..., LLMClient]) -> None:
    sleeps = SleepLog()
    server.fail(503, retry_after=120)
    server.reply_json(GOOD)
    await _ask(make_client(sleep=sleeps, backoff_base_s=0.5, backoff_max_s=2.0))
    assert sleeps.delays == [2.0]


@pytest.mark.parametrize("status", [500, 503])
async def test_server_errors_until_attempts_run_out(server: ScriptedLLMServer,
                                                    make_client: Callable[..., LLMClient],
                                                    status: int) -> None:
    recorder = ListRecorder()
    sleeps = SleepLog()
    for _ in range(6):
        server.fail(status, "overloaded")
    client = make_client(max_attempts=4, sleep=sleeps, backoff_base_s=1.0,
                         backoff_max_s=3.0, recorder=recorder)
    with pytest.raises(LLMUnavailableError, match="after 4 attempts"):
        await _ask(client)
    assert len(server.requests) == 4
    assert server.pending == 2
    assert recorder.outcomes == ["server_error"] * 4
    # full jitter below the exponential cap (1, 2, then capped at 3); no sleep after the last
    assert len(sleeps.delays) == 3
    for delay, cap in zip(sleeps.delays, [1.0, 2.0, 3.0], strict=True):
        assert 0.0 <= delay <= cap


async def test_default_responder_is_a_500(server: ScriptedLLMServer,
                                          make_client: Callable[..., LLMClient]) -> None:
    with pytest.raises(LLMUnavailableError, match="no scripted response"):
        await _ask(make_client(max_attempts=2))
    assert len(server.requests) == 2


async def test_dropped_connection_is_retried(server: ScriptedLLMServer,
                                             make_client: Callable[..., LLMClient]) -> None:
    recorder = ListRecorder()
    server.drop()
    server.reply_json(GOOD)
    result = await _ask(make_client(recorder=recorder))
    assert result.value == Summary.model_validate(GOOD)
    assert result.attempts == 2 and len(server.requests) == 2
    assert recorder.outcomes == ["transport_error", "ok"]
    assert recorder.calls[0].prompt_tokens == recorder.calls[0].completion_tokens == 0


async def test_slow_reply_times_out_and_is_retried(server: ScriptedLLMServer,
                                                   make_client: Callable[..., LLMClient]
                                                   ) -> None:
    recorder = ListRecorder()
    server.reply_json({"title": "too late", "points": []}, delay_s=3.0)
    server.reply_json(GOOD)
    started = time.perf_counter()
    result = await _ask(make_client(timeout_s=0.3, recorder=recorder))
    assert time.perf_counter() - started < 2.0
    assert result.value.title == "Storage"
    assert result.attempts == 2
    assert recorder.outcomes == ["timeout", "ok"]
    assert recorder.calls[0].latency_ms >= 250


@pytest.mark.parametrize(("status", "message"), [
    (400, "This model's maximum context length is 8192 tokens"),
    (401, "Incorrect API key provided"),
    (422, "messages: field required"),
])
async def test_other_client_errors_fail_at_once(server: ScriptedLLMServer,
                                                make_client: Callable[..., LLMClient],
                                                status: int, message: str) -> None:
    recorder = ListRecorder()
    server.fail(status, message)
    server.reply_json(GOOD)
    client = make_client(recorder=recorder)
    with pytest.raises(LLMRequestError, match=f"HTTP {status}: {message}"):
        await _ask(client)
    assert len(server.requests) == 1
    assert client.supports_json_schema  # a 400 about something else keeps json_schema
    assert recorder.outcomes == ["request_error"]


async def test_invalid_arguments_are_client_errors(make_client: Callable[..., LLMClient],
                                                   server: ScriptedLLMServer) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await make_client().structured(agent_id=" ", purpose="", messages=[], schema=Summary,
                                       max_tokens=0)
    assert {p.field for p in caught.value.problems} == {
        "agent_id", "purpose", "messages", "max_tokens"}
    assert len(server.requests) == 0


# --- usage -----------------------------------------------------------------------


async def test_reported_usage_is_used(server: ScriptedLLMServer,
                                      make_client: Callable[..., LLMClient]) -> None:
    recorder = ListRecorder()
    server.reply_text("{}", usage=(500, 20))
    server.reply_json(GOOD, usage=(600, 30))
    result = await _ask(make_client(recorder=recorder), purpose="facts")
    assert (result.prompt_tokens, result.completion_tokens) == (1100, 50)  # both attempts
    assert [(c.prompt_tokens, c.completion_tokens) for c in recorder.calls] == [
        (500, 20), (600, 30)]
    assert not any(c.tokens_estimated for c in recorder.calls)
    call = recorder.calls[1]
    assert (call.agent_id, call.purpose, call.model) == ("agent-a", "facts", "test-model")
    assert call.outcome is CallOutcome.OK and call.error is None
    assert abs(call.created_at - datetime.now(UTC)) < timedelta(seconds=10)


async def test_missing_usage_is_estimated_and_flagged(
        server: ScriptedLLMServer, make_client: Callable[..., LLMClient]) -> None:
    recorder = ListRecorder()
    server.reply_json(GOOD, usage=False)
    result = await _ask(make_client(recorder=recorder))
    prompt = sum(count_tokens(m["content"]) for m in MESSAGES)
    completion = count_tokens(json.dumps(GOOD))
    assert (result.prompt_tokens, result.completion_tokens) == (prompt, completion)
    [call] = recorder.calls
    assert call.tokens_estimated
    assert (call.prompt_tokens, call.completion_tokens) == (prompt, completion)


async def test_recorder_failure_never_breaks_the_call(
        server: ScriptedLLMServer, make_client: Callable[..., LLMClient],
        caplog: pytest.LogCaptureFixture) -> None:
    server.reply_json(GOOD)
    with caplog.at_level(logging.WARNING, logger="nous_memory.llm.client"):
        result = await _ask(make_client(recorder=BrokenRecorder()))
    assert result.value == Summary.model_validate(GOOD)
    assert any("could not record LLM call" in r.getMessage() for r in caplog.records)


async def test_llm_calls_rows_and_usage_by_agent(server: ScriptedLLMServer,
                                                 make_client: Callable[..., LLMClient],
                                                 database_url: str) -> None:
    db = await Database.connect(database_url)
    try:
        client = make_client(recorder=PostgresCallRecorder(db))
        before = datetime.now(UTC)
        server.fail(500, "boom")
        server.drop()
        server.reply_json(GOOD, usage=(100, 10))
        await _ask(client, purpose="episode_close")
        server.reply_text("nope", usage=(50, 5))
        server.reply_json(GOOD, usage=False)
        await _ask(client, purpose="fact_classify")
        server.reply_json(GOOD, usage=(7, 3))
        await _ask(client, agent_id="agent-b", purpose="episode_close")

        conn = await asyncpg.connect(database_url)
        try:
            rows = await conn.fetch(
                "SELECT purpose, outcome, prompt_tokens, completion_tokens, tokens_source, "
                "error, latency_ms, created_at FROM llm_calls WHERE agent_id = 'agent-a' "
                "ORDER BY id")
        finally:
            await conn.close()
        assert [(r["purpose"], r["outcome"], r["tokens_source"]) for r in rows] == [
            ("episode_close", "server_error", "none"),
            ("episode_close", "transport_error", "none"),
            ("episode_close", "ok", "reported"),
            ("fact_classify", "invalid_output", "reported"),
            ("fact_classify", "ok", "estimated"),
        ]
        assert rows[0]["error"] == "HTTP 500: boom"
        assert rows[2]["error"] is None
        assert all(r["created_at"] >= before - timedelta(seconds=1) for r in rows)
        repair_round = server.requests[4]["messages"]
        assert repair_round[-2] == {"role": "assistant", "content": "nope"}
        assert (rows[4]["prompt_tokens"], rows[4]["completion_tokens"]) == (
            sum(count_tokens(m["content"]) for m in repair_round), count_tokens(json.dumps(GOOD)))

        usage = {(u.purpose, u.model): u for u in await usage_by_agent(db, "agent-a")}
        assert set(usage) == {("episode_close", "test-model"), ("fact_classify", "test-model")}
        close = usage["episode_close", "test-model"]
        assert (close.calls, close.ok_calls, close.prompt_tokens, close.completion_tokens,
                close.estimated_calls) == (3, 1, 100, 10, 0)
        assert close.latency_ms == sum(r["latency_ms"] for r in rows[:3])
        classify = usage["fact_classify", "test-model"]
        assert (classify.calls, classify.ok_calls, classify.estimated_calls) == (2, 1, 1)
        assert classify.prompt_tokens == 50 + rows[4]["prompt_tokens"]
        assert classify.total_tokens == classify.prompt_tokens + classify.completion_tokens

        [other] = await usage_by_agent(db, "agent-b")
        assert (other.calls, other.prompt_tokens, other.completion_tokens) == (1, 7, 3)
        assert await usage_by_agent(db, "agent-c") == []
        later = datetime.now(UTC) + timedelta(minutes=1)
        assert await usage_by_agent(db, "agent-a", since=later) == []
    finally:
        await db.close()


# --- the scripted server itself --------------------------------------------------


async def test_server_routes_and_error_bodies(server: ScriptedLLMServer) -> None:
    server.enqueue(StatusReply(status=429, message="later", retry_after="2"))
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        missing = await http.get("/models")
        assert missing.status_code == 404
        wrong_method = await http.get("/chat/completions")
        assert wrong_method.status_code == 405
        not_json = await http.post("/chat/completions", content=b"{oops")
        assert not_json.status_code == 400
        limited = await http.post("/chat/completions", json={"model": "m", "messages": []})
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "2"
        assert limited.json()["error"]["message"] == "later"
    assert server.requests[-1] == {"model": "m", "messages": []}


async def test_server_unsupported_json_schema_keeps_the_script() -> None:
    async with ScriptedLLMServer(json_schema_supported=False) as plain:
        plain.reply_json(GOOD)
        async with httpx.AsyncClient(base_url=plain.base_url) as http:
            rejected = await http.post("/chat/completions", json={
                "model": "m", "messages": [],
                "response_format": {"type": "json_schema", "json_schema": {}}})
        assert rejected.status_code == 400
        assert rejected.json()["error"]["param"] == "response_format"
        assert plain.pending == 1


async def test_server_stops_promptly_with_a_request_in_flight() -> None:
    plain = ScriptedLLMServer()
    await plain.serve()
    plain.reply_json(GOOD, delay_s=30)
    async with httpx.AsyncClient(base_url=plain.base_url, timeout=10) as http:
        pending = asyncio.ensure_future(http.post("/chat/completions", json={"messages": []}))
        for _ in range(500):  # the request has arrived and is being delayed
            if plain.requests:
                break
            await asyncio.sleep(0.01)
        assert plain.requests
        started = time.perf_counter()
        await plain.aclose()
        assert time.perf_counter() - started < 2.0
        with pytest.raises(httpx.TransportError):
            await pending


def test_server_in_a_background_thread_for_sync_code() -> None:
    with ScriptedLLMServer(default=lambda request: TextReply(text=request["model"])) as plain:
        with httpx.Client(base_url=plain.base_url) as http:
            reply = http.post("/chat/completions",
                              json={"model": "echo-me", "messages": [
                                  {"role": "user", "content": "hello there"}]})
        body = reply.json()
        assert body["choices"][0]["message"]["content"] == "echo-me"
        assert body["usage"]["prompt_tokens"] == count_tokens("hello there")
        url = plain.base_url
    with pytest.raises(httpx.TransportError), httpx.Client(base_url=url, timeout=2) as http:
        http.post("/chat/completions", json={})


async def test_scripted_server_streams_to_a_client_that_asks(server: ScriptedLLMServer) -> None:
    """``stream: true`` gets server-sent chunks the real openai client reads back whole
    (the AI SDK middleware's stream path is tested through this)."""
    server.reply_text("Mia lives in Porto", usage=(12, 4))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="unused") as client:
        stream = await client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": "Where?"}], stream=True,
            stream_options={"include_usage": True})
        deltas, finish, usage = [], None, None
        async for chunk in stream:
            if chunk.choices:
                deltas.append(chunk.choices[0].delta.content or "")
                finish = chunk.choices[0].finish_reason or finish
            usage = chunk.usage or usage
    assert "".join(deltas) == "Mia lives in Porto" and len(deltas) > 2
    assert finish == "stop"
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (12, 4)
