"""Pydantic AI through its own agent loop (``Agent.run`` with a ``FunctionModel`` that
plays the model): the memory toolset, the context processor, and a run's turns saved
and learned; two people on one agent each see only their own."""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from nous_memory import MemoryStore
from nous_memory.integrations.pydantic_ai import (
    NousMemoryToolset,
    memory_context,
    save_messages,
)

A = "pai-agent"


def _scripted(seen: list[list[ModelMessage]]) -> FunctionModel:
    """A model that searches memory once, then answers with what the search returned."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts
                   if isinstance(p, ToolReturnPart)]
        if not returns:
            assert "memory_search" in {t.name for t in info.function_tools}
            return ModelResponse(parts=[ToolCallPart(
                tool_name="memory_search", args=json.dumps({"query": "where do I live"}))])
        return ModelResponse(parts=[TextPart(content=f"From memory: {returns[-1].content}")])

    return FunctionModel(reply)


async def _learned(store: MemoryStore, user: str, text: str) -> None:
    episode = await save_messages(store, A, [
        ModelRequest.user_text_prompt(text),
        ModelResponse(parts=[TextPart(content="Noted.")])], user=user, close=True)
    assert episode is not None
    await store.worker().drain()


async def test_the_agent_loop_reads_its_persons_memory(store: MemoryStore) -> None:
    await _learned(store, "ana", "I live in Lisbon and I'm vegetarian.")
    await _learned(store, "ben", "I live in Berlin and I eat everything.")
    for user, mine, theirs in (("ana", "Lisbon", "Berlin"), ("ben", "Berlin", "Lisbon")):
        seen: list[list[ModelMessage]] = []
        agent = Agent(_scripted(seen), toolsets=[NousMemoryToolset(store, A, user=user)],
                      capabilities=[ProcessHistory(memory_context(store, A, user=user))])
        result = await agent.run("Where do I live?")
        assert mine in result.output and theirs not in result.output
        first = seen[0][0]
        assert isinstance(first, ModelRequest) and isinstance(first.parts[0], SystemPromptPart)
        assert mine in first.parts[0].content and theirs not in first.parts[0].content
        # the second request carries one context part, not one a request
        systems = [p for m in seen[1] if isinstance(m, ModelRequest) for p in m.parts
                   if isinstance(p, SystemPromptPart)]
        assert len(systems) == 1
        # the run's history keeps the newest context only
        stored = [p for m in result.all_messages() if isinstance(m, ModelRequest)
                  for p in m.parts if isinstance(p, SystemPromptPart)]
        assert len(stored) == 1


async def test_a_bad_tool_call_is_a_retry_naming_the_field(store: MemoryStore) -> None:
    calls: list[Any] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(messages[-1])
        if len(calls) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="memory_search",
                                                     args=json.dumps({"k": 3}))])
        return ModelResponse(parts=[TextPart(content="done")])

    agent = Agent(FunctionModel(reply), toolsets=[NousMemoryToolset(store, A)])
    result = await agent.run("search something")
    assert result.output == "done"
    retry = calls[1].parts[0]  # a retry the model is told about, naming the field
    assert isinstance(retry, ToolReturnPart) and retry.outcome == "retried"
    assert retry.content == "Error: query: required"


async def test_saved_turns_are_learned_as_the_persons(store: MemoryStore) -> None:
    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("Got it.")])))
    result = await agent.run("My cat is called Miso.")
    await save_messages(store, A, result.new_messages(), user="ana", close=True)
    await store.worker().drain()
    assert "Miso" in (await store.assemble_context(A, "What is my cat called?",
                                                   user="ana")).text
    assert "Miso" not in (await store.assemble_context(A, "What is my cat called?",
                                                       user="ben")).text
