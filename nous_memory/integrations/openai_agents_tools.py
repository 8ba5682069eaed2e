"""The OpenAI Agents SDK beyond a session: the memory tools in the SDK's own type, and
the context for each new input.

    agent = Agent(name="assistant", tools=memory_tools(store, "agent-1", user="ana"))
    config = RunConfig(call_model_input_filter=memory_input(store, "agent-1", user="ana"))
    await Runner.run(agent, "Where do I live?", session=session, run_config=config)

- ``memory_tools`` are ``FunctionTool``s of the agent tools (``nous_memory.tools``): their
  JSON schemas, their checks, one store call each; a failure is the tool's output naming
  the field and the reason, so the model can correct the call.  ``user`` makes every call
  that person's.
- ``memory_input`` is a ``call_model_input_filter``: before each model call it adds the
  store's context for the newest user input to the instructions, so a new session's model
  knows what earlier conversations told (a ``NousMemorySession`` hands it only its own
  items).  The context is not an item: nothing of it is saved in the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents import FunctionTool
from agents.run_config import CallModelData, ModelInputData
from agents.tool_context import ToolContext

from ..store import MemoryStore
from ..tools import ToolBox
from .backend import Backend
from .openai_agents import content_text

DEFAULT_BUDGET_TOKENS = 1_500


def memory_tools(store: MemoryStore, agent_id: str, *, user: str | None = None,
                 allow_purge: bool = False, allow_restore: bool = False
                 ) -> list[FunctionTool]:
    """The agent tools for one agent (and one person) as the SDK's function tools."""
    box = ToolBox(store, agent_id=agent_id, user=user, allow_purge=allow_purge,
                  allow_restore=allow_restore, actor="openai-agents")
    return [FunctionTool(name=tool.name, description=tool.description,
                         params_json_schema=box.input_schema(tool),
                         on_invoke_tool=_invoker(box, tool.name), strict_json_schema=False)
            for tool in box.tools]


def _invoker(box: ToolBox, name: str) -> Callable[[ToolContext[Any], str], Awaitable[str]]:
    async def invoke(_context: ToolContext[Any], arguments: str) -> str:
        return (await box.call(name, arguments)).text

    return invoke


def memory_input(store: Backend, agent_id: str, *, user: str | None = None,
                 budget_tokens: int = DEFAULT_BUDGET_TOKENS
                 ) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """A ``call_model_input_filter`` that adds the context for the newest user input to
    the instructions of each model call."""

    async def add_context(data: CallModelData[Any]) -> ModelInputData:
        given = data.model_data
        prompt = _latest_user_text(given.input)
        if not prompt:
            return given
        context = await store.assemble_context(agent_id, prompt,
                                               budget_tokens=budget_tokens, user=user)
        if not context.items:
            return given
        instructions = "\n\n".join(t for t in (given.instructions, context.text) if t)
        return ModelInputData(input=given.input, instructions=instructions)

    return add_context


def _latest_user_text(items: list[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            return content_text(item.get("content"))
    return ""


__all__ = ["memory_input", "memory_tools"]
