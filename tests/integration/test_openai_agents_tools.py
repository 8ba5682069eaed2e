"""The memory tools as the Agents SDK's own ``FunctionTool``s and the context for each new
input (``call_model_input_filter``), through ``Runner.run``: a new session's model knows
what earlier conversations told its person, and no one else's."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, FunctionTool, RunConfig, Runner
from agents.items import TResponseInputItem

from nous_memory import MemoryStore
from nous_memory.integrations.openai_agents import NousMemorySession
from nous_memory.integrations.openai_agents_tools import memory_input, memory_tools
from tests.integration.test_openai_agents_session import ScriptedModel

A = "sdk-tools"


class InstructedModel(ScriptedModel):
    """The scripted model, noting the instructions of each call."""

    instructions: list[str | None]

    async def get_response(self, system_instructions: str | None, *args: Any,
                           **kwargs: Any) -> Any:
        self.instructions = [*getattr(self, "instructions", []), system_instructions]
        return await super().get_response(system_instructions, *args, **kwargs)


def search_first(user: str, items: list[TResponseInputItem]) -> str | tuple[str, str]:
    return ("memory_search", json.dumps({"query": user}))


async def _told(store: MemoryStore, user: str, text: str) -> None:
    session = NousMemorySession(store, A, user_id=user)
    await session.add_items([{"role": "user", "content": text}])
    await session.close()
    await store.worker().drain()


async def test_a_new_session_knows_its_persons_past_and_no_one_elses(
        store: MemoryStore) -> None:
    await _told(store, "ana", "I live in Lisbon with my cat Miso.")
    await _told(store, "ben", "I live in Berlin and I have a dog called Rex.")
    for user, mine, theirs in (("ana", "Lisbon", "Berlin"), ("ben", "Berlin", "Lisbon")):
        model = InstructedModel(search_first)
        tools = memory_tools(store, A, user=user)
        assert all(isinstance(t, FunctionTool) for t in tools)
        agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=tools)
        session = NousMemorySession(store, A, user_id=user)  # a new conversation
        config = RunConfig(tracing_disabled=True,
                           call_model_input_filter=memory_input(store, A, user=user))
        result = await Runner.run(agent, "Where do I live?", session=session,
                                  run_config=config)
        assert mine in result.final_output and theirs not in result.final_output
        first = model.instructions[0] or ""
        assert first.startswith("Be brief.") and mine in first and theirs not in first
        saved = " ".join(str(i) for i in await session.get_items())
        assert 'kind="context"' not in saved  # the context is no item of the session


async def test_a_bad_call_is_an_output_naming_the_field(store: MemoryStore) -> None:
    model = InstructedModel(lambda user, items: ("memory_search", json.dumps({"k": 3})))
    agent = Agent(name="assistant", model=model, tools=memory_tools(store, A))
    result = await Runner.run(agent, "anything", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "The tool said: Error: query: required"
