"""What one line of MCP traffic is: a message for the server, or a refusal answered at once.

The SDK's stdio reader hands a line it cannot parse to the server as an exception, and
the server answers nothing: a client that sent bad JSON, bad UTF-8, a lone surrogate in
a key, a batch or half a line waited for its own timeout.  Every such line is checked
here instead and, when it cannot go on, refused with a JSON-RPC error that carries the
request's id whenever the line still shows it (so the client's waiting call ends).
Nothing of the line but its id is echoed back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from json import decoder
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..errors import longer_than
from ..memories.kinds import is_utf8
from ..memories.params import lone_surrogate_at

MAX_LINE_BYTES = 8 * 1024 * 1024  # one message, as a REST body; tool arguments are far below
HEAD_BYTES = 64 * 1024  # what is kept of a longer line, to read its id from
MAX_METHOD_CHARS = 128  # the SDK echoes an unknown method back: a long one is refused here

RequestId = int | str


@dataclass(frozen=True, slots=True)
class Refusal:
    """A line the server never sees, and the error that answers it."""

    id: RequestId | None
    code: int
    message: str

    def encoded(self) -> bytes:
        body = {"jsonrpc": "2.0", "id": self.id,
                "error": {"code": self.code, "message": self.message}}
        return json.dumps(body).encode("ascii") + b"\n"  # ASCII: any id survives


def check_line(raw: bytes, size: int | None = None) -> SessionMessage | Refusal | None:
    """``raw`` is one line without its newline (its head when ``size`` says it was
    longer); None for a blank line, which asks nothing."""
    size = len(raw) if size is None else size
    if size > MAX_LINE_BYTES:
        return Refusal(peek_id(raw.decode("utf-8", "replace")), types.INVALID_REQUEST,
                       "Invalid request: the line is " + longer_than(
                           MAX_LINE_BYTES, size, "bytes"))
    raw = raw.strip(b" \t\r\n")
    if not raw:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Refusal(peek_id(raw.decode("utf-8", "replace")), types.PARSE_ERROR,
                       f"Parse error: not valid UTF-8 (byte {exc.start})")
    try:
        value = json.loads(text)
    except ValueError as exc:
        reason = getattr(exc, "msg", "invalid")  # "Expecting ',' delimiter"; no text quoted
        return Refusal(peek_id(text), types.PARSE_ERROR,
                       f"Parse error: not valid JSON ({reason}, character {_pos(exc)})")
    except RecursionError:
        return Refusal(peek_id(text), types.PARSE_ERROR, "Parse error: nested too deeply")
    return check_message(value)


def check_message(value: Any) -> SessionMessage | Refusal:
    """A decoded JSON value as one JSON-RPC message, or why it is not one."""
    if isinstance(value, list):
        return Refusal(None, types.INVALID_REQUEST, "Invalid request: batches are not "
                                                    "supported; send one message per line")
    if not isinstance(value, dict):
        return Refusal(None, types.INVALID_REQUEST,
                       "Invalid request: a message is a JSON-RPC 2.0 object")
    ident = value.get("id")
    ident = ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None
    if isinstance(ident, str) and not is_utf8(ident):
        ident = None  # it could not be written back; the client gets a null id instead
    method = value.get("method")
    if isinstance(method, str) and (len(method) > MAX_METHOD_CHARS or not is_utf8(method)):
        return Refusal(ident, types.METHOD_NOT_FOUND, "Method not found")
    where = lone_surrogate_at(value)
    if where is not None:  # JSON allows "\ud800"; no text a store or a reply holds can
        return Refusal(ident, types.INVALID_PARAMS,
                       f"Invalid params: {where} holds a lone UTF-16 surrogate (such as "
                       "\\ud800), which is not valid Unicode text")
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "message"
        return Refusal(ident, types.INVALID_REQUEST,
                       f"Invalid request: not a JSON-RPC 2.0 message ({where}: {first['msg']})")
    return SessionMessage(message)


def encode_message(message: SessionMessage) -> bytes:
    """One server message as a line; text that has no UTF-8 form (a lone surrogate a
    client sent and an error quotes) is written as a JSON escape instead of failing."""
    try:
        body = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
    except ValueError:  # PydanticSerializationError: surrogates not allowed
        data = message.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
        body = json.dumps(data).encode("ascii")
    return body + b"\n"


def peek_id(text: str) -> RequestId | None:
    """The top-level ``"id"`` of a JSON object, from a line that may be cut or broken:
    only a key of the outer object counts, never an ``id`` inside the arguments."""
    text = text[:HEAD_BYTES]  # an id comes first in practice; a scan stays quick
    depth, index, previous = 0, 0, ""
    while index < len(text):
        char = text[index]
        if char == '"':
            try:
                string, end = decoder.scanstring(text, index + 1)  # type: ignore[attr-defined]
            except ValueError:
                return None
            if depth == 1 and previous in ("{", ",") and string == "id":
                colon = _skip_space(text, end)
                if colon < len(text) and text[colon] == ":":
                    return _id_at(text, _skip_space(text, colon + 1))
            index, previous = end, '"'
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        if char not in " \t\r\n":
            previous = char
        index += 1
    return None


def _id_at(text: str, index: int) -> RequestId | None:
    """The id value at ``index``, only when something follows it: a number cut short
    ("id": 12 cut to "id": 1) would name another request."""
    try:
        value, end = json.JSONDecoder().raw_decode(text, index)
    except ValueError:
        return None
    if _skip_space(text, end) >= len(text) or text[_skip_space(text, end)] not in ",}":
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value if not isinstance(value, str) or is_utf8(value) else None


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _pos(exc: ValueError) -> int:
    return int(getattr(exc, "pos", 0))
