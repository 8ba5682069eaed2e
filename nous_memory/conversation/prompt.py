"""build_prompt: the chat messages for the next model call, never over budget.

Order: the caller's system prompt, the summary block (story + chapter + facets), an
optional context block from a context provider, then the newest unfolded messages.
Injected blocks are wrapped in ``<nous-memory kind="...">`` markers so episode close
strips them if a client stores them back into the transcript.

Tokens are counted exactly with the cl100k encoding using OpenAI's chat formula: 3 per
message + role + content (+ 1 + name) (+ tool_call_id) (+ tool_calls as JSON), + 3 to
prime the reply.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from .. import blocks
from ..errors import InvalidInputError
from ..tokens import count_recurring, count_tokens
from .facets import Facets, render
from .pairs import ConvMessage, pair_index
from .results import PromptPart


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptHolds:
    """What a prompt already holds of its own conversation: the episode's messages after
    ``after_seq`` (the tail); a context for it leaves them out rather than repeat them."""

    episode_id: UUID
    after_seq: int


ContextProvider = Callable[[str, str, int, PromptHolds | None], Awaitable[str]]
"""``async (agent_id, query, budget_tokens, holds) -> text``; e.g. the store's context
assembly, told what the prompt holds already."""

MESSAGE_OVERHEAD = 3
REPLY_PRIMING = 3
DEFAULT_CONTEXT_SHARE = 0.25
ChatMessage = dict[str, Any]


def message_tokens(message: ChatMessage, content_tokens: int | None = None) -> int:
    """``content_tokens``: the content's count when already known (stored messages)."""
    if content_tokens is None:
        content_tokens = count_tokens(message["content"])
    n = MESSAGE_OVERHEAD + count_recurring(message["role"]) + content_tokens
    if message.get("name"):
        n += 1 + count_recurring(message["name"])
    if message.get("tool_call_id"):
        n += count_recurring(message["tool_call_id"])
    if message.get("tool_calls"):
        n += count_tokens(json.dumps(message["tool_calls"]))
    return n


def prompt_tokens(messages: Sequence[ChatMessage]) -> int:
    return REPLY_PRIMING + sum(message_tokens(m) for m in messages)


def fit(text: str, max_tokens: int, keep: Literal["head", "tail"]) -> str:
    """``text`` cut (at a character) to ``max_tokens``, marked "..." where it was cut."""
    if count_tokens(text) <= max_tokens:
        return text
    if max_tokens <= 2:
        return ""

    def piece(cut: int) -> str:
        return "... " + text[cut:] if keep == "tail" else text[:cut] + " ..."

    lo, hi = 0, len(text)
    if keep == "tail":  # smallest start that fits
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if count_tokens(piece(mid)) <= max_tokens else (mid + 1, hi)
        best = piece(lo)
    else:  # largest end that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if count_tokens(piece(mid)) <= max_tokens else (lo, mid - 1)
        best = piece(lo)
    kept = len(text) - lo if keep == "tail" else lo
    return best if kept > 0 and count_tokens(best) <= max_tokens else ""


def _wrapped(kind: str, text: str, max_tokens: int, keep: Literal["head", "tail"], *,
             before: str = "", after: str = "") -> ChatMessage | None:
    """A system message holding ``before + text + after`` in a marked block within
    ``max_tokens``; only ``text`` is cut (at its ``keep`` end) to make it fit."""

    def compose(inner: str) -> ChatMessage:
        body = "\n\n".join(p for p in (before, inner, after) if p)
        return {"role": "system", "content": blocks.wrap(body, kind)}

    room = max_tokens - message_tokens(compose(""))
    while room > 0:  # tokens can merge across the joins: shrink until it fits
        inner = fit(text, room, keep)
        if not inner:
            return None
        message = compose(inner)
        over = message_tokens(message) - max_tokens
        if over <= 0:
            return message
        room -= over
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryParts:
    """The summary block's pieces: prose gives way first (oldest part), then facets."""

    header: str
    prose: str
    facets: str


def summary_block(parts: SummaryParts, max_tokens: int) -> ChatMessage | None:
    facets = fit(parts.facets, max_tokens // 3, "head") if parts.facets else ""
    block = _wrapped("summary", parts.prose, max_tokens, "tail", before=parts.header,
                     after=facets) if parts.prose else None
    if block is None and facets:  # no room for prose: the facets alone
        block = _wrapped("summary", facets, max_tokens, "head", before=parts.header)
    if block is None:  # a very small budget: the newest part of whatever there is
        whole = "\n\n".join(p for p in (parts.prose, parts.facets) if p)
        block = _wrapped("summary", whole, max_tokens, "tail")
    return block


def chat_message(message: ConvMessage) -> ChatMessage:
    out: ChatMessage = {"role": message.role, "content": message.content}
    if message.name:
        out["name"] = message.name
    if message.role == "tool" and message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    calls = message.metadata.get("tool_calls")
    if message.role == "assistant" and isinstance(calls, list) and calls:
        out["tool_calls"] = calls
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Assembly:
    messages: list[ChatMessage]
    parts: list[PromptPart]
    tokens: int
    summary_tokens: int
    context_tokens: int
    tail_messages: int
    dropped_messages: int
    truncated: bool


def summary_parts(story: str, chapter: str, facets: Facets, watermark_seq: int
                  ) -> SummaryParts:
    return SummaryParts(
        header=f"Summary of the conversation so far (messages up to #{watermark_seq}):",
        prose="\n\n".join(p for p in (story, chapter) if p), facets=render(facets))


async def assemble(*, agent_id: str, system: str, budget_tokens: int,
                   summary: SummaryParts | None,
                   summary_share: float, tail: Sequence[ConvMessage], query: str | None,
                   context_tokens: int | None, provider: ContextProvider | None,
                   holds: PromptHolds | None = None) -> Assembly:
    """Fill the budget in priority order: system, summary, context, newest tail."""
    head: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
    parts = [PromptPart(part="system")] if system else []
    used = prompt_tokens(head)
    if used > budget_tokens:
        raise InvalidInputError.single(
            "budget_tokens", f"{budget_tokens} is less than the system prompt alone needs "
                             f"({used} tokens)")
    summary_tokens = context_used = 0
    if summary:
        cap = min(budget_tokens - used, math.floor(summary_share * budget_tokens))
        block = summary_block(summary, cap)
        if block is not None:
            head.append(block)
            parts.append(PromptPart(part="summary"))
            summary_tokens = message_tokens(block)
            used += summary_tokens
    if provider is not None and query:
        room = budget_tokens - used
        cap = min(room, context_tokens if context_tokens is not None
                  else math.floor(room * DEFAULT_CONTEXT_SHARE))
        if cap > 0:
            text = await provider(agent_id, query, cap, holds)
            block = _wrapped("context", text, cap, "head") if text.strip() else None
            if block is not None:
                head.append(block)
                parts.append(PromptPart(part="context"))
                context_used = message_tokens(block)
                used += context_used
    chosen, truncated, spent = _tail(tail, budget_tokens - used)
    messages = head + [message for _, message in chosen]
    parts += [PromptPart(part="message", seq=tail[i].seq, metadata=tail[i].metadata)
              for i, _ in chosen]
    total = used + spent
    assert total <= budget_tokens, (total, budget_tokens)
    return Assembly(messages=messages, parts=parts, tokens=total,
                    summary_tokens=summary_tokens,
                    context_tokens=context_used, tail_messages=len(chosen),
                    dropped_messages=len(tail) - len(chosen), truncated=truncated)


def _tail(tail: Sequence[ConvMessage], room: int
          ) -> tuple[list[tuple[int, ChatMessage]], bool, int]:
    """The newest messages that fit (with their index in ``tail``), and their tokens; a
    tool result never appears without its call.  Stored messages carry their content's
    exact count."""
    pairs = pair_index(tail)
    picked: dict[int, tuple[ChatMessage, int]] = {}
    truncated = False
    for i in range(len(tail) - 1, -1, -1):
        message = chat_message(tail[i])
        cost = message_tokens(message, tail[i].tokens)
        if cost > room:
            if not picked:  # the newest message alone is too long: keep its end
                spare = room - (cost - tail[i].tokens)
                content = fit(message["content"], spare, "tail") if spare > 0 else ""
                if content:
                    message = {**message, "content": content}
                    picked[i] = (message, message_tokens(message))
                    truncated = True
            break
        picked[i] = (message, cost)
        room -= cost
    order: list[int] = []
    for i in sorted(picked):  # an orphaned result (its call did not fit, or was folded) goes
        if tail[i].role != "tool" or pairs.get(i) in order:
            order.append(i)
    return [(i, picked[i][0]) for i in order], truncated, sum(picked[i][1] for i in order)
