"""A scripted OpenAI-compatible server on loopback, for testing LLM paths for real.

LLM behaviour is tested through the real ``openai`` client, so the double sits at the
HTTP layer: a tiny HTTP/1.1 server on asyncio streams that answers
POST /v1/chat/completions (and /v1/embeddings) from a queue of steps; a request with
``stream: true`` gets a text reply as server-sent chunks (the AI SDK streams so).  Raw
streams rather than an ASGI server because a "dropped connection" step must really abort
the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections import deque
from typing import Any

from ..tokens import count_tokens
from .embedder import FakeEmbedder
from .script import (
    Delayed,
    DropConnection,
    JSONReply,
    Responder,
    ScriptStep,
    StatusReply,
    TextReply,
    ToolCallReply,
    Usage,
)
from .wire import error_body, error_type_for, write_json, write_stream

_CHAT_PATH = "/v1/chat/completions"
_EMBEDDINGS_PATH = "/v1/embeddings"
_LINE_LIMIT = 64 * 1024
_MAX_HEADERS = 100


def _no_script(request: dict[str, Any]) -> ScriptStep:
    return StatusReply(status=500, message="no scripted response left for this request",
                       error_type="server_error")


class _BadHTTP(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ScriptedLLMServer:
    """An OpenAI-compatible chat completions endpoint on 127.0.0.1 that plays a script.

    Each request consumes one queued step; with the queue empty ``default`` decides
    (by default an HTTP 500 saying there is no scripted response).  Every parsed
    request body is kept in ``requests`` (the newest ``max_recorded``).  Use it as
    ``async with`` on the running loop, or ``start()``/``stop()`` (or ``with``) to run
    it in a background thread for synchronous code.
    """

    def __init__(self, *, json_schema_supported: bool = True, default: Responder = _no_script,
                 max_body_bytes: int = 8 * 1024 * 1024, max_connections: int = 64,
                 max_recorded: int = 10_000) -> None:
        self.json_schema_supported = json_schema_supported
        self.default = default
        self.requests: deque[dict[str, Any]] = deque(maxlen=max_recorded)
        self.embedding_requests: deque[dict[str, Any]] = deque(maxlen=max_recorded)
        self.embedding_dimension = 384
        self._max_body = max_body_bytes
        self._max_connections = max_connections
        self._script: deque[ScriptStep] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._thread_stop: asyncio.Event | None = None

    # -- scripting -------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("ScriptedLLMServer is not running")
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def pending(self) -> int:
        """Steps not consumed yet."""
        with self._lock:
            return len(self._script)

    def enqueue(self, *steps: ScriptStep) -> None:
        with self._lock:
            self._script.extend(steps)

    def reply_json(self, content: dict[str, Any], *, usage: Usage = True,
                   finish_reason: str = "stop", delay_s: float = 0.0) -> None:
        self._add(JSONReply(content=content, usage=usage, finish_reason=finish_reason), delay_s)

    def reply_text(self, text: str, *, usage: Usage = True, finish_reason: str = "stop",
                   delay_s: float = 0.0) -> None:
        self._add(TextReply(text=text, usage=usage, finish_reason=finish_reason), delay_s)

    def fail(self, status: int, message: str = "scripted error", *,
             retry_after: float | str | None = None, error_type: str | None = None,
             param: str | None = None, code: str | None = None, delay_s: float = 0.0) -> None:
        self._add(StatusReply(status=status, message=message, retry_after=retry_after,
                              error_type=error_type, param=param, code=code), delay_s)

    def reply_tool_calls(self, *calls: tuple[str, dict[str, Any] | str],
                         text: str | None = None, delay_s: float = 0.0) -> None:
        self._add(ToolCallReply(calls=calls, text=text), delay_s)

    def drop(self, *, delay_s: float = 0.0) -> None:
        self._add(DropConnection(), delay_s)

    def _add(self, step: ScriptStep, delay_s: float) -> None:
        self.enqueue(Delayed(seconds=delay_s, then=step) if delay_s > 0 else step)

    def _next_step(self, request: dict[str, Any]) -> ScriptStep:
        with self._lock:
            if self._script:
                return self._script.popleft()
        try:
            return self.default(request)
        except Exception as exc:  # a broken responder is reported to the client, not hidden
            return StatusReply(status=500, message=f"default responder failed: {exc!r}")

    # -- lifecycle ---------------------------------------------------------------

    async def __aenter__(self) -> ScriptedLLMServer:
        await self.serve()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __enter__(self) -> ScriptedLLMServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def serve(self) -> None:
        """Listen on a free loopback port, on the running event loop."""
        if self._server is not None:
            raise RuntimeError("ScriptedLLMServer is already running")
        self._server = await asyncio.start_server(self._on_connection, host="127.0.0.1",
                                                  port=0, limit=_LINE_LIMIT)
        self._port = self._server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        """Stop listening and cut every open connection (pending delays included)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()
        self._port = None

    def start(self) -> None:
        """Serve from a background thread with its own event loop (for sync callers)."""
        if self._thread is not None:
            raise RuntimeError("ScriptedLLMServer is already running")
        ready = threading.Event()
        failures: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(self._serve_in_thread(ready))
            except BaseException as exc:
                failures.append(exc)
                ready.set()

        self._thread = threading.Thread(target=run, name="scripted-llm-server", daemon=True)
        self._thread.start()
        if not ready.wait(timeout=30) or failures:
            self._thread = None
            raise RuntimeError("ScriptedLLMServer did not start") from (
                failures[0] if failures else None)

    def stop(self) -> None:
        thread, loop, stop = self._thread, self._thread_loop, self._thread_stop
        if thread is None or loop is None or stop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop may already be gone
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        self._thread = self._thread_loop = self._thread_stop = None

    async def _serve_in_thread(self, ready: threading.Event) -> None:
        self._thread_loop = asyncio.get_running_loop()
        self._thread_stop = asyncio.Event()
        await self.serve()
        ready.set()
        try:
            await self._thread_stop.wait()
        finally:
            await self.aclose()

    # -- HTTP --------------------------------------------------------------------

    async def _on_connection(self, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
        if self._server is None or len(self._connections) >= self._max_connections:
            writer.transport.abort()
            return
        # Our own task, so aclose() can cancel it: cancelling the task asyncio made for
        # this callback makes Python 3.11 log a spurious "Exception in callback".
        task = asyncio.create_task(self._connection(reader, writer))
        self._connections.add(task)
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        finally:
            self._connections.discard(task)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except _BadHTTP as exc:
            with contextlib.suppress(ConnectionError):
                await write_json(writer, exc.status, error_body(str(exc), "invalid_request_error"))
        finally:
            writer.close()  # flushes what was written; a no-op after an abort

    async def _exchange(self, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection should end."""
        request = await self._read_request(reader)
        if request is None:
            return False
        method, path, headers, raw = request
        keep_alive = headers.get("connection", "").lower() != "close"
        if path == _EMBEDDINGS_PATH and method == "POST":
            await self._embeddings(writer, raw)
            return keep_alive
        if path != _CHAT_PATH:
            await write_json(writer, 404, error_body(f"no route for {path}", "not_found_error"))
            return keep_alive
        if method != "POST":
            await write_json(writer, 405, error_body("use POST", "invalid_request_error"))
            return keep_alive
        try:
            body = json.loads(raw)
        except ValueError as exc:
            body = exc
        if not isinstance(body, dict):
            await write_json(writer, 400, error_body("body is not a JSON object",
                                                  "invalid_request_error"))
            return keep_alive
        self.requests.append(body)
        response_format = body.get("response_format")
        if (not self.json_schema_supported and isinstance(response_format, dict)
                and response_format.get("type") == "json_schema"):
            step: ScriptStep = StatusReply(
                status=400, message="response_format type 'json_schema' is not supported "
                "by this model; use 'json_object'", error_type="invalid_request_error",
                param="response_format")
        else:
            step = self._next_step(body)
        while isinstance(step, Delayed):
            await asyncio.sleep(step.seconds)
            step = step.then
        if isinstance(step, DropConnection):
            writer.transport.abort()
            return False
        if isinstance(step, StatusReply):
            extra = {} if step.retry_after is None else {"retry-after": str(step.retry_after)}
            await write_json(writer, step.status, error_body(
                step.message, step.error_type or error_type_for(step.status), step.param,
                step.code), extra)
            return keep_alive
        if isinstance(step, ToolCallReply):
            completion = self._completion(body, step.text, step.usage, step.finish_reason)
            completion["choices"][0]["message"]["tool_calls"] = [
                {"id": f"call_{next(self._ids)}", "type": "function", "function": {
                    "name": name, "arguments": args if isinstance(args, str)
                    else json.dumps(args)}} for name, args in step.calls]
            await write_json(writer, 200, completion)
            return keep_alive
        text = json.dumps(step.content) if isinstance(step, JSONReply) else step.text
        completion = self._completion(body, text, step.usage, step.finish_reason)
        if body.get("stream") is True:
            await write_stream(writer, completion)
            return keep_alive
        await write_json(writer, 200, completion)
        return keep_alive

    async def _embeddings(self, writer: asyncio.StreamWriter, raw: bytes) -> None:
        """Deterministic hash embeddings (FakeEmbedder) for testing OpenAI embedders."""
        try:
            body = json.loads(raw)
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            dims = int(body.get("dimensions") or self.embedding_dimension)
        except (ValueError, KeyError, TypeError) as exc:
            await write_json(writer, 400, error_body(f"bad embeddings request: {exc}",
                                                  "invalid_request_error"))
            return
        self.embedding_requests.append(body)
        fake = FakeEmbedder(dimension=dims)
        data = [{"object": "embedding", "index": i,
                 "embedding": [float(x) for x in fake.vector(str(t))]}
                for i, t in enumerate(texts)]
        data.reverse()  # real servers may answer out of order; clients sort by index
        tokens = sum(len(str(t).split()) for t in texts)
        await write_json(writer, 200, {"object": "list", "data": data, "model": body.get("model"),
                                   "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    async def _read_request(self, reader: asyncio.StreamReader
                            ) -> tuple[str, str, dict[str, str], bytes] | None:
        try:
            line = await reader.readline()
            if not line:
                return None
            parts = line.decode("latin-1").split()
            if len(parts) != 3:
                raise _BadHTTP(400, "malformed request line")
            headers: dict[str, str] = {}
            for _ in range(_MAX_HEADERS):
                header = await reader.readline()
                if header in (b"\r\n", b"\n"):
                    break
                if not header:
                    raise asyncio.IncompleteReadError(b"", None)
                name, _, value = header.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            else:
                raise _BadHTTP(431, "too many headers")
        except ValueError as exc:  # a line longer than the stream limit
            raise _BadHTTP(431, "request line or header too long") from exc
        if "chunked" in headers.get("transfer-encoding", "").lower():
            raise _BadHTTP(501, "chunked request bodies are not supported")
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError as exc:
            raise _BadHTTP(400, "bad content-length") from exc
        if not 0 <= length <= self._max_body:
            raise _BadHTTP(413, f"body larger than {self._max_body} bytes")
        raw = await reader.readexactly(length)
        return parts[0].upper(), parts[1].split("?", 1)[0], headers, raw

    def _completion(self, request: dict[str, Any], text: str | None, usage: Usage,
                    finish_reason: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{next(self._ids)}", "object": "chat.completion",
            "created": int(time.time()), "model": str(request.get("model") or "scripted"),
            "choices": [{"index": 0, "finish_reason": finish_reason, "logprobs": None,
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
        }
        if usage is True:
            messages = request.get("messages")
            prompt = sum(count_tokens(m["content"]) for m in messages or []
                         if isinstance(m, dict) and isinstance(m.get("content"), str))
            usage = (prompt, count_tokens(text or ""))
        if isinstance(usage, tuple):
            body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                             "total_tokens": usage[0] + usage[1]}
        return body
