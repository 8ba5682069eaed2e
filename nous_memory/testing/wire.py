"""What the scripted LLM server writes on the wire: OpenAI's error bodies, a JSON reply,
and a completion as server-sent chunks for a client that streams."""

from __future__ import annotations

import asyncio
import http
import json
from typing import Any


def error_type_for(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    return "server_error" if status >= 500 else "invalid_request_error"


def error_body(message: str, error_type: str, param: str | None = None,
                code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


async def write_stream(writer: asyncio.StreamWriter, completion: dict[str, Any]) -> None:
    """A completion as a client asking ``stream: true`` reads it: server-sent chunks (the
    text a word at a time), the finish reason, the usage, then ``[DONE]``."""
    choice = completion["choices"][0]
    head = {key: completion[key] for key in ("id", "created", "model")}
    words = (choice["message"]["content"] or "").split(" ")
    deltas = [{"role": "assistant", "content": ""}] + [
        {"content": word if i == 0 else " " + word} for i, word in enumerate(words)]
    chunks = [{**head, "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
    chunks.append({**head, "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if "usage" in completion:
        chunks.append({**head, "object": "chat.completion.chunk", "choices": [],
                       "usage": completion["usage"]})
    data = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    encoded = data.encode("utf-8")
    lines = ["HTTP/1.1 200 OK", "content-type: text/event-stream",
             f"content-length: {len(encoded)}"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + encoded)
    await writer.drain()


async def write_json(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any],
                 headers: dict[str, str] | None = None) -> None:
    data = json.dumps(payload).encode("utf-8")
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    lines = [f"HTTP/1.1 {status} {reason}", "content-type: application/json",
             f"content-length: {len(data)}",
             *(f"{name}: {value}" for name, value in (headers or {}).items())]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
    await writer.drain()
