"""Messages as working memory sees them, and which messages belong together.

A tool call and its result must never be split by the cut between folded messages and
the protected tail (nor by a prompt's tail selection).  Detection, in order:

* a ``tool`` message names its call in ``tool_call_id``;
* an ``assistant`` message declares calls in ``metadata.tool_calls`` (OpenAI shape:
  ``[{"id", "function": {"name", "arguments"}}]``), ``metadata.function_call`` (legacy,
  ``{"name", "arguments"}``) or its own ``tool_call_id``;
* a tool message pairs with the nearest earlier assistant message declaring its id; one
  without an id, or whose id nobody declared, pairs with the nearest earlier non-tool
  message when that message is an assistant tool call (legacy function calling), else
  with the message right before it (a result is never separated from what precedes it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..memories.messages import TranscriptMessage

ConvMessage = TranscriptMessage  # working memory's name for the one message record


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    id: str | None
    name: str
    arguments: Mapping[str, Any]


def content_hash(role: str, content: str) -> bytes:
    """What the watermark remembers of its message: edits change it."""
    return hashlib.sha256(f"{role}\x00{content}".encode()).digest()


def _arguments(raw: object) -> Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"input": raw}
        return parsed if isinstance(parsed, Mapping) else {"input": parsed}
    return {}


def tool_calls(message: ConvMessage) -> list[ToolCall]:
    """The calls an assistant message makes (empty for any other message)."""
    if message.role != "assistant":
        return []
    calls: list[ToolCall] = []
    declared = message.metadata.get("tool_calls")
    # metadata is stored as the client gave it: anything but a list declares no calls
    for raw in declared if isinstance(declared, list | tuple) else ():
        if isinstance(raw, Mapping):
            inner = raw.get("function")
            fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else raw
            calls.append(ToolCall(id=str(raw["id"]) if raw.get("id") else None,
                                  name=str(fn.get("name") or "tool"),
                                  arguments=_arguments(fn.get("arguments"))))
    legacy = message.metadata.get("function_call")
    if isinstance(legacy, Mapping):
        calls.append(ToolCall(id=message.tool_call_id, name=str(legacy.get("name") or "tool"),
                              arguments=_arguments(legacy.get("arguments"))))
    elif message.tool_call_id and not calls:
        calls.append(ToolCall(id=message.tool_call_id, name=message.name or "tool",
                              arguments={}))
    return calls


def pair_index(messages: Sequence[ConvMessage]) -> dict[int, int]:
    """For each tool message's index, the index of the message it belongs to."""
    declared: dict[str, int] = {}
    pairs: dict[int, int] = {}
    for i, m in enumerate(messages):
        for call in tool_calls(m):
            if call.id:
                declared[call.id] = i
        if m.role != "tool":
            continue
        if m.tool_call_id and m.tool_call_id in declared:
            pairs[i] = declared[m.tool_call_id]
            continue
        j = i - 1
        while j >= 0 and messages[j].role == "tool":
            j -= 1
        if j >= 0 and tool_calls(messages[j]):
            pairs[i] = j
        elif i > 0:
            pairs[i] = i - 1
    return pairs


def call_for(messages: Sequence[ConvMessage], index: int,
             pairs: Mapping[int, int] | None = None) -> ToolCall | None:
    """The call a tool result at ``index`` answers, when it can be found."""
    pairs = pair_index(messages) if pairs is None else pairs
    owner = pairs.get(index)
    if owner is None:
        return None
    calls = tool_calls(messages[owner])
    wanted = messages[index].tool_call_id
    for call in calls:
        if wanted and call.id == wanted:
            return call
    return calls[0] if len(calls) == 1 or (calls and not wanted) else None


def safe_cut(messages: Sequence[ConvMessage], cut: int,
             pairs: Mapping[int, int] | None = None) -> int:
    """The largest cut <= ``cut`` (fold ``messages[:cut]``) splitting no call from a result.

    A cut never ends on a message that makes tool calls either: a result that has not
    arrived yet would otherwise start the unfolded part without its call."""
    pairs = pair_index(messages) if pairs is None else pairs
    cut = max(0, min(cut, len(messages)))
    while cut > 0:
        if not tool_calls(messages[cut - 1]) and not any(
                owner < cut <= result for result, owner in pairs.items()):
            return cut
        cut -= 1
    return 0
