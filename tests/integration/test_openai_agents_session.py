"""The OpenAI Agents SDK session over an episode: a real ``Agent`` run by ``Runner.run``
with a model that answers from a script (the SDK's ``Model`` interface, no network)."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.memory import SessionSettings
from agents.models.interface import Model, ModelTracing
from agents.tool import Tool
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from nous_memory import MemoryStore
from nous_memory.errors import NotFoundError
from nous_memory.integrations.openai_agents import NousMemorySession
from nous_memory.tokens import count_tokens

AGENT = "agents-sdk"
NO_TRACING = RunConfig(tracing_disabled=True)
Reply = Callable[[str, list[TResponseInputItem]], "str | tuple[str, str]"]


def _text(item: Any) -> str:
    content = item.get("content") if isinstance(item, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(item.get("output", "")) if isinstance(item, dict) else ""


class ScriptedModel(Model):
    """Answers each turn from ``reply(user_text, input)``: a string is the answer, a
    ``(tool, arguments)`` pair calls that tool first and then answers with its output."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.inputs: list[list[TResponseInputItem]] = []
        self._n = 0

    async def get_response(self, system_instructions: str | None,
                           input: str | list[TResponseInputItem],
                           model_settings: ModelSettings, tools: list[Tool],
                           output_schema: AgentOutputSchemaBase | None,
                           handoffs: list[Handoff[Any, Any]], tracing: ModelTracing, *,
                           previous_response_id: str | None, conversation_id: str | None,
                           prompt: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.inputs.append(list(items))
        self._n += 1
        last = items[-1]
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            answer: str | tuple[str, str] = f"The tool said: {last['output']}"
        else:
            answer = self.reply(_text(last), list(items))
        if isinstance(answer, tuple):
            name, arguments = answer
            call = ResponseFunctionToolCall(type="function_call", call_id=f"call_{self._n}",
                                            name=name, arguments=arguments, id=f"fc_{self._n}")
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        message = ResponseOutputMessage(
            id=f"msg_{self._n}", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=answer, annotations=[])])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the tests run without streaming")


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"21 C and sunny in {city}"


def chat(user: str, items: list[TResponseInputItem]) -> str | tuple[str, str]:
    if user.startswith("Weather in "):
        return ("weather", json.dumps({"city": user.removeprefix("Weather in ").rstrip("?")}))
    if user == "What did I say first?":
        firsts = [_text(i) for i in items if isinstance(i, dict) and i.get("role") == "user"]
        return f"You said: {firsts[0]}"
    return f"Noted: {user}"


class RecordingSession(NousMemorySession):
    """The session under test, noting exactly what the runner handed to ``add_items``."""

    added: list[TResponseInputItem]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        self.added = [*getattr(self, "added", []), *copy.deepcopy(items)]
        await super().add_items(items)


async def test_turns_tool_calls_and_a_restart(store: MemoryStore) -> None:
    model = ScriptedModel(chat)
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[weather])
    session = RecordingSession(store, AGENT, title="sdk chat")
    first = await Runner.run(agent, "I like tea.", session=session, run_config=NO_TRACING)
    assert first.final_output == "Noted: I like tea."
    tool = await Runner.run(agent, "Weather in Porto?", session=session, run_config=NO_TRACING)
    assert tool.final_output == "The tool said: 21 C and sunny in Porto"
    items = await session.get_items()
    assert [dict(i).get("type", "message") for i in items] == [
        "message", "message", "message", "function_call", "function_call_output", "message"]
    assert items == session.added  # the SDK's items, exactly as it shaped them
    # the second run's model call saw the first turn, from the store
    assert "I like tea." in [_text(i) for i in model.inputs[1]]
    # a new process: the same episode id is the same session
    again = NousMemorySession(store, AGENT, session.session_id)
    assert await again.get_items() == session.added
    assert await again.get_items(limit=2) == session.added[-2:]
    recalled = await Runner.run(agent, "What did I say first?", session=again,
                                run_config=NO_TRACING)
    assert recalled.final_output == "You said: I like tea."


async def test_pop_and_clear_survive_a_restart(store: MemoryStore) -> None:
    session = NousMemorySession(store, AGENT)
    assert await session.get_items() == [] and await session.pop_item() is None
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "one"}, {"role": "user", "content": "two"},
        {"role": "user", "content": [{"type": "input_text", "text": "three"}]}]
    await session.add_items(items)
    assert await session.pop_item() == items[2]
    again = NousMemorySession(store, AGENT, session.session_id)
    assert await again.get_items() == items[:2]
    assert await again.get_items(limit=1) == items[1:2]
    await again.clear_session()
    assert await NousMemorySession(store, AGENT, session.session_id).get_items() == []
    await again.add_items([{"role": "user", "content": "four"}])
    assert await again.get_items() == [{"role": "user", "content": "four"}]


async def test_close_learns_like_an_episode(store: MemoryStore) -> None:
    model = ScriptedModel(chat)
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    session = NousMemorySession(store, AGENT)
    await Runner.run(agent, "My sister Beatrice lives in Lisbon.", session=session,
                     run_config=NO_TRACING)
    await session.close()
    episode = await store.get_episode(AGENT, session.session_id)
    assert episode.episode.state == "closing"
    await store.worker().drain()
    closed = await store.get_episode(AGENT, session.session_id)
    assert closed.episode.state == "closed"
    learned = await store.facts_from_episode(AGENT, session.session_id)
    assert [f.summary for f in learned] == ["The user's sister Beatrice lives in Lisbon."]


LONG_TURNS = 200
BUDGET = 1500  # the tokens get_items() may hand the model, whatever the length


def long_chat(turn: list[int]) -> Reply:
    def reply(user: str, items: list[TResponseInputItem]) -> str | tuple[str, str]:
        turn[0] += 1
        if user == "Where does my sister live?":
            seen = " ".join(_text(i) for i in items)
            return "Lisbon" if "Lisbon" in seen else "I do not know."
        return f"Noted for day {turn[0]}: the museum number {turn[0] % 7 + 20} at 10."
    return reply


def filler(i: int) -> str:
    city = ("Porto", "Braga", "Faro", "Coimbra")[i % 4]
    return f"Day {i}: plan a walk in {city}, then museum number {i % 7 + 20} before lunch."


async def test_two_hundred_turns_fit_the_budget_and_keep_turn_three(
        store: MemoryStore) -> None:
    turn = [0]
    model = ScriptedModel(long_chat(turn))
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    session = NousMemorySession(store, AGENT, budget_tokens=BUDGET, policy={"mode": "rule"})
    for i in range(1, LONG_TURNS):
        said = "My sister Beatrice lives in Lisbon, near the Gulbenkian." if i == 3 else (
            filler(i))
        await Runner.run(agent, said, session=session, run_config=NO_TRACING)
    final = await Runner.run(agent, "Where does my sister live?", session=session,
                             run_config=NO_TRACING)
    assert final.final_output == "Lisbon"
    # what the model was handed at turn 200: the summary first, the only item naming Lisbon
    asked = model.inputs[-1]
    assert asked[0]["role"] == "system" and "Beatrice" in _text(asked[0])  # type: ignore[index]
    assert "Lisbon" in _text(asked[0])
    assert "Lisbon" not in " ".join(_text(i) for i in asked[1:])
    assert sum(count_tokens(_text(i)) for i in asked) <= BUDGET
    items = await session.get_items()
    assert sum(count_tokens(_text(i)) for i in items) <= BUDGET
    assert len(await store.transcript(AGENT, session.session_id)) == 2 * LONG_TURNS


async def test_the_sdk_session_limit_is_the_newest_items(store: MemoryStore) -> None:
    """``SessionSettings(limit=n)`` (on the run or the session) hands the model the plain
    newest ``n`` items, as the SDK's own sessions do; 0 or less hands it none."""
    model = ScriptedModel(chat)
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    session = NousMemorySession(store, AGENT)
    for text in ("Message 1", "Message 2", "Message 3"):
        await Runner.run(agent, text, session=session, run_config=NO_TRACING)
    await Runner.run(agent, "Message 4", session=session, run_config=RunConfig(
        tracing_disabled=True, session_settings=SessionSettings(limit=2)))
    assert [_text(i) for i in model.inputs[-1]] == [
        "Message 3", "Noted: Message 3", "Message 4"]
    await Runner.run(agent, "Message 5", session=session, run_config=RunConfig(
        tracing_disabled=True, session_settings=SessionSettings(limit=0)))
    assert [_text(i) for i in model.inputs[-1]] == ["Message 5"]
    limited = NousMemorySession(store, AGENT, session.session_id,
                                session_settings=SessionSettings(limit=1))
    assert [_text(i) for i in await limited.get_items()] == ["Noted: Message 5"]
    assert await session.get_items(limit=-1) == [] and len(await session.get_items()) == 10


async def test_two_users_each_their_own_and_the_group_theirs(store: MemoryStore) -> None:
    """Ana's and Ben's sessions are theirs: what is learned from each is read by its
    person only, Ben cannot continue Ana's session, and a group conversation (items named
    by their speakers) is learned for both."""
    household = "agents-sdk-household"
    agent = Agent(name="assistant", instructions="Be brief.", model=ScriptedModel(chat))
    ana = NousMemorySession(store, household, user_id="Ana")
    ben = NousMemorySession(store, household, user_id="ben")
    group = NousMemorySession(store, household, title="household chat")
    await Runner.run(agent, "My therapist is Dr. Alves.", session=ana, run_config=NO_TRACING)
    await Runner.run(agent, "My dog Rex needs a walker.", session=ben, run_config=NO_TRACING)
    await Runner.run(agent, [
        {"role": "user", "name": "Ana", "content": "Our landlord is Mr Patel."},
        {"role": "user", "name": "Ben", "content": "Thanks, I'll call him."}],
        session=group, run_config=NO_TRACING)
    said = [(m.role, m.person, m.name) for m in await store.transcript(household,
                                                                        group.session_id)]
    assert said[:2] == [("user", "ana", "Ana"), ("user", "ben", "Ben")]
    assert [(m.role, m.person) for m in await store.transcript(household, ana.session_id)] \
        == [("user", "ana"), ("assistant", None)]
    assert (await group.get_items())[0] == {
        "role": "user", "name": "Ana", "content": "Our landlord is Mr Patel."}
    with pytest.raises(NotFoundError):  # Ben's session on Ana's episode: not found
        await NousMemorySession(store, household, ana.session_id, user_id="Ben").get_items()
    assert len(await NousMemorySession(store, household, group.session_id,
                                       user_id="ben").get_items()) == 3
    for session in (ana, ben, group):
        await session.close()
    await store.worker().drain()
    for question in ("Who is my therapist?", "Who is the landlord?"):
        for_ben = await store.recall(household, question, user="ben", k=20)
        assert not any("Alves" in i.text for i in for_ben.items), for_ben.items
    landlord = await store.recall(household, "landlord", user="ben", kinds=["fact"])
    assert any("Patel" in i.text for i in landlord.items), landlord.items
    mine = await store.recall(household, "therapist", user="ana", kinds=["fact"])
    assert any("Alves" in i.text for i in mine.items), mine.items
    ben_facts = (await store.list(household, kind="fact", user="ben")).items
    assert ben_facts and all(f.people in ([], ["ben"], ["ana", "ben"]) for f in ben_facts)
