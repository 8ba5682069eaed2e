"""Pydantic AI: the store's tools as a toolset, its context as a history processor, and a
run's turns saved to an episode.

    agent = Agent(model, toolsets=[NousMemoryToolset(store, "agent-1", user="ana")],
                  history_processors=[memory_context(store, "agent-1", user="ana")])
    result = await agent.run("Where do I live?")
    episode = await save_messages(store, "agent-1", result.new_messages(), user="ana")

- ``NousMemoryToolset`` (a ``MemoryStore`` in process; over the service, the MCP server's
  tools are the same) offers the agent tools of ``nous_memory.tools`` (search, context,
  upcoming, expand, remember, learn, forget, history) as Pydantic AI tools, with their
  JSON schemas and their checks; a call's failure goes back to the model as a retry
  naming the field and the reason.  ``user`` makes every call that person's.
- ``memory_context`` puts the store's context for the newest user prompt first in the
  request, as a system prompt part (where every provider takes one), replacing the one
  it put there for an earlier request; the stored messages are left as they are.
- ``save_messages`` appends a run's user prompts and model text to an episode (started
  when none is given) and, with ``close=True``, closes it so the worker learns from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from uuid import UUID

from pydantic_ai import ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from .. import blocks
from ..store import MemoryStore
from ..tools import ToolBox
from .backend import Backend

DEFAULT_BUDGET_TOKENS = 1_500
# any object of arguments: the ToolBox checks them itself, against the same schema
_ANY_ARGUMENTS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(),
                                                         core_schema.any_schema()))


class NousMemoryToolset(AbstractToolset[Any]):
    """The memory tools for one agent (and one person, ``user``)."""

    def __init__(self, store: MemoryStore, agent_id: str, *, user: str | None = None,
                 allow_purge: bool = False, allow_restore: bool = False,
                 max_retries: int = 1, id: str = "nous_memory") -> None:
        self._box = ToolBox(store, agent_id=agent_id, user=user, allow_purge=allow_purge,
                            allow_restore=allow_restore, actor="pydantic-ai")
        self._retries = max_retries
        self._id = id

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {tool.name: ToolsetTool(
            toolset=self, max_retries=self._retries, args_validator=_ANY_ARGUMENTS,
            tool_def=ToolDefinition(name=tool.name, description=tool.description,
                                    parameters_json_schema=self._box.input_schema(tool)))
            for tool in self._box.tools}

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        result = await self._box.call(name, tool_args)
        if result.is_error:
            raise ModelRetry(result.text)
        return result.text


def memory_context(store: Backend, agent_id: str, *, user: str | None = None,
                   budget_tokens: int = DEFAULT_BUDGET_TOKENS
                   ) -> Callable[[list[ModelMessage]], Awaitable[list[ModelMessage]]]:
    """A history processor: the context for the newest user prompt, first."""

    async def process(messages: list[ModelMessage]) -> list[ModelMessage]:
        prompt = _latest_prompt(messages)
        kept = [_without_context(m) for m in messages]
        if not prompt or not kept:
            return kept
        context = await store.assemble_context(agent_id, prompt,
                                               budget_tokens=budget_tokens, user=user)
        if not context.items:
            return kept
        first = kept[0]
        if isinstance(first, ModelRequest):
            kept[0] = dataclasses.replace(
                first, parts=[SystemPromptPart(content=context.text), *first.parts])
        else:
            kept.insert(0, ModelRequest(parts=[SystemPromptPart(content=context.text)]))
        return kept

    return process


async def save_messages(store: Backend, agent_id: str, messages: Sequence[ModelMessage],
                        *, episode_id: UUID | str | None = None, user: str | None = None,
                        close: bool = False) -> UUID:
    """Append the user prompts and the model's text of ``messages`` (a run's
    ``new_messages()``) to an episode; the episode's id."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                turns.append({"role": "user", "content": part.content, "user": user})
            elif isinstance(part, TextPart) and isinstance(message, ModelResponse):
                turns.append({"role": "assistant", "content": part.content})
    turns = [{k: v for k, v in t.items() if v is not None} for t in turns
             if blocks.strip(t["content"]).strip()]
    if episode_id is None:
        episode_id = (await store.start_episode(agent_id, user_id=user)).id
    if turns:
        await store.append(agent_id, episode_id, turns)
    if close:
        await store.close_episode(agent_id, episode_id)
    return UUID(str(episode_id))


def _latest_prompt(messages: Sequence[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _without_context(message: ModelMessage) -> ModelMessage:
    """The message without a context part put there for an earlier request."""
    if not isinstance(message, ModelRequest):
        return message
    parts = [p for p in message.parts if not (
        isinstance(p, SystemPromptPart) and blocks.strip(p.content) != p.content
        and not blocks.strip(p.content).strip())]
    if len(parts) == len(message.parts):
        return message
    return dataclasses.replace(message, parts=parts)


__all__ = ["NousMemoryToolset", "memory_context", "save_messages"]
