"""The steps a ``ScriptedLLMServer`` plays: each answers one request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Usage = bool | tuple[int, int]
"""True: counted from the request like a real server; (prompt, completion); False: none."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JSONReply:
    """A completion whose message content is ``json.dumps(content)``."""

    content: dict[str, Any]
    usage: Usage = True
    finish_reason: str = "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextReply:
    """A completion with raw text as content (malformed JSON, prose, code fences...)."""

    text: str
    usage: Usage = True
    finish_reason: str = "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallReply:
    """A completion that calls tools: ``calls`` are (name, arguments) pairs, arguments a
    mapping (sent as JSON) or raw text (to send malformed JSON); ``text`` is optional
    content beside the calls."""

    calls: tuple[tuple[str, dict[str, Any] | str], ...]
    text: str | None = None
    usage: Usage = True
    finish_reason: str = "tool_calls"


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusReply:
    """An HTTP error with an OpenAI-style error body and an optional Retry-After."""

    status: int
    message: str = "scripted error"
    retry_after: float | str | None = None
    error_type: str | None = None
    param: str | None = None
    code: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DropConnection:
    """Abort the TCP connection (RST) after reading the request, sending nothing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Delayed:
    """Wait ``seconds``, then perform ``then`` (a slow model, or a timeout to provoke)."""

    seconds: float
    then: ScriptStep


ScriptStep = JSONReply | TextReply | ToolCallReply | StatusReply | DropConnection | Delayed
Responder = Callable[[dict[str, Any]], ScriptStep]
