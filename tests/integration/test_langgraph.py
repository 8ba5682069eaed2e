"""The LangGraph store over the store, called directly and from a real StateGraph, and the
context hook as a prebuilt agent's pre_model_hook."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.store.base import BaseStore
from pydantic import Field

from nous_memory import MemoryStore
from nous_memory.integrations.langchain import context_hook
from nous_memory.integrations.langgraph import NousMemoryStore

USER = ("lg-user", "memories")


async def test_exact_put_get_delete_and_namespaces(store: MemoryStore) -> None:
    lg = NousMemoryStore(store, loop=asyncio.get_running_loop())
    await lg.aput(USER, "sister", {"content": "Beatrice lives in Lisbon."})
    await lg.aput(USER, "seat", {"likes": "window", "rank": 2, "tags": ["air"]})
    await lg.aput(("lg-user", "work", "projects"), "atlas", {"content": "Atlas ships in May."})
    item = await lg.aget(USER, "sister")
    assert item is not None and item.value == {"content": "Beatrice lives in Lisbon."}
    assert item.namespace == USER and item.key == "sister"
    seat = await lg.aget(USER, "seat")
    assert seat is not None and seat.value == {"likes": "window", "rank": 2, "tags": ["air"]}
    await lg.aput(USER, "sister", {"content": "Beatrice moved to Porto."})  # an update
    moved = await lg.aget(USER, "sister")
    assert moved is not None and moved.value == {"content": "Beatrice moved to Porto."}
    assert moved.updated_at >= moved.created_at
    assert await lg.aget(("lg-user", "elsewhere"), "sister") is None
    assert await lg.aget(("another-agent", "memories"), "sister") is None
    await lg.adelete(USER, "seat")
    assert await lg.aget(USER, "seat") is None
    assert await lg.alist_namespaces(prefix=("lg-user",)) == [
        ("lg-user", "memories"), ("lg-user", "work", "projects")]
    assert await lg.alist_namespaces(prefix=("lg-user",), max_depth=2) == [
        ("lg-user", "memories"), ("lg-user", "work")]
    # the sync faces, from a thread while the store's loop runs
    await asyncio.to_thread(lg.put, USER, "city", {"content": "Ana lives in Braga."})
    got = await asyncio.to_thread(lg.get, USER, "city")
    assert got is not None and got.value == {"content": "Ana lives in Braga."}


async def test_search_is_recall_within_the_namespace(store: MemoryStore) -> None:
    lg = NousMemoryStore(store, agent_id="lg-fixed")
    await lg.aput(("family",), "sister", {"content": "Beatrice lives in Lisbon."})
    await lg.aput(("family",), "brother", {"content": "Tomasz lives in Krakow."})
    await lg.aput(("work",), "office", {"content": "The office is in Lisbon, Avenida 5."})
    found = await lg.asearch(("family",), query="Who lives in Lisbon?", limit=2)
    assert found[0].key == "sister" and all(i.namespace == ("family",)
                                                        for i in found)
    assert found[0].score is not None
    everywhere = await lg.asearch((), query="Lisbon", limit=5)
    assert {i.key for i in everywhere} >= {"sister", "office"}
    listed = await lg.asearch(("family",), limit=10)
    assert sorted(i.key for i in listed) == ["brother", "sister"]
    assert [i.key for i in await lg.asearch(("family",), filter={
        "content": "Tomasz lives in Krakow."})] == ["brother"]
    with pytest.raises(ValueError, match="first element names the agent"):
        await NousMemoryStore(store).asearch((), query="Lisbon")


class Chat(TypedDict):
    messages: list[BaseMessage]
    recalled: list[str]


async def test_a_graph_writes_and_reads_through_the_store(store: MemoryStore) -> None:
    async def remember(state: Chat, *, store: BaseStore) -> dict[str, Any]:
        said = str(state["messages"][-1].content)
        if not said.endswith("?"):  # statements are kept, questions only asked
            await store.aput(USER, f"note-{len(said)}", {"content": said})
        return {}

    async def recall(state: Chat, *, store: BaseStore) -> dict[str, Any]:
        hits = await store.asearch(USER, query=str(state["messages"][-1].content), limit=1)
        return {"recalled": [str(h.value["content"]) for h in hits]}

    graph = StateGraph(Chat)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=NousMemoryStore(store))
    await app.ainvoke({"messages": [HumanMessage("Ana's sister Beatrice lives in Lisbon.")],
                       "recalled": []})
    out = await app.ainvoke({"messages": [HumanMessage("Where does Beatrice live?")],
                             "recalled": []})
    assert out["recalled"] == ["Ana's sister Beatrice lives in Lisbon."]


class Recording(GenericFakeChatModel):
    """A scripted chat model that keeps what it was sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class Agent(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]
    llm_input_messages: list[BaseMessage]


async def test_the_pre_model_hook_puts_context_before_the_model(store: MemoryStore) -> None:
    """The hook as a pre-model node, the shape LangGraph's agents run it in (its output's
    ``llm_input_messages`` go to the model; the stored messages stay as they were)."""
    await store.learn_fact("lg-hook", "Ana's sister Beatrice lives in Lisbon.")
    model = Recording(messages=iter([AIMessage("She lives in Lisbon.")]))

    async def call_model(state: Agent) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["llm_input_messages"])]}

    graph = StateGraph(Agent)
    graph.add_node("pre_model_hook", context_hook(store, "lg-hook"))
    graph.add_node("agent", call_model)
    graph.add_edge(START, "pre_model_hook")
    graph.add_edge("pre_model_hook", "agent")
    graph.add_edge("agent", END)
    out = await graph.compile().ainvoke(
        {"messages": [HumanMessage("Where does Beatrice live?")]})
    assert out["messages"][-1].content == "She lives in Lisbon."
    (sent,) = model.seen
    assert sent[0].type == "system" and "Beatrice lives in Lisbon" in str(sent[0].content)
    assert [m.type for m in sent[1:]] == ["human"]
    assert [m.type for m in out["messages"]] == ["human", "ai"]  # the state is unchanged


async def test_a_newer_put_of_one_slot_is_the_current_value(store: MemoryStore) -> None:
    """A put stores what it is given; the read decides which of two values is current."""
    lg = NousMemoryStore(store, agent_id="lg-move")
    await lg.aput(("memories",), "home-1", {"content": "I live in Lisbon"})
    await lg.aput(("memories",), "home-2", {"content": "We moved to Porto"})
    context = await store.assemble_context("lg-move", "Where do I live?", budget_tokens=400)
    lines = context.text.splitlines()
    porto = next(i for i, line in enumerate(lines) if "Porto" in line)
    lisbon = [i for i, line in enumerate(lines) if "Lisbon" in line]
    assert "(current" in lines[porto] and lisbon and porto < min(lisbon), context.text
    assert all("(current" not in lines[i] for i in lisbon), context.text
    assert {i.key for i in await lg.asearch(("memories",), limit=10)} == {"home-1", "home-2"}


async def test_a_persons_search_takes_candidates_within_the_person(store: MemoryStore) -> None:
    """The user id is the namespace's last element: Ana's ``limit=1`` finds her item
    though Ben has twenty closer ones, and Ben's searches never see hers."""
    lg = NousMemoryStore(store, agent_id="lg-people")
    for i in range(20):
        await lg.aput(("memories", "ben"), f"cafe-{i}",
                      {"content": f"Which cafe in Lisbon? Ben's pick number {i}."})
    await lg.aput(("memories", "ana"), "cafe", {"content": "Ana loves the A Brasileira cafe."})
    mine = await lg.asearch(("memories", "ana"), query="Which cafe in Lisbon?", limit=1)
    assert [(i.namespace, i.key) for i in mine] == [(("memories", "ana"), "cafe")]
    his = await lg.asearch(("memories", "ben"), query="A Brasileira cafe", limit=30)
    assert len(his) == 20 and all(i.namespace == ("memories", "ben") for i in his)
    assert await lg.aget(("memories", "ana"), "cafe") is not None
    stored = (await store.list("lg-people", kind="fact", user="ana")).items
    assert [m.people for m in stored] == [["ana"]]
    owner = NousMemoryStore(store, agent_id="lg-people", user_at=None)
    assert len(await owner.asearch(("memories",), limit=50)) == 21  # the owner: everyone's
    assert len(await lg.asearch(("memories",), limit=50)) == 0  # "memories" is nobody here


class Household(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]
    llm_input_messages: list[BaseMessage]


async def test_two_users_through_one_graph(store: MemoryStore) -> None:
    """One graph for everyone, the user in the run's config (LangGraph's usual
    ``configurable.user_id``): a statement is kept in ``("memories", user_id)``, and the
    pre-model hook reads for that user: the house's own fact for both, each one's own
    for them alone."""
    agent = "lg-household"
    await store.learn_fact(agent, "The house wifi network is called Otter.")  # the owner's
    model = Recording(messages=iter([AIMessage(f"Reply {i}.") for i in range(10)]))

    async def remember(state: Household, config: RunnableConfig, *,
                       store: BaseStore) -> dict[str, Any]:
        said = str(state["messages"][-1].content)
        if not said.endswith("?"):
            user = config["configurable"]["user_id"]
            await store.aput(("memories", user), f"note-{len(said)}", {"content": said})
        return {}

    async def call_model(state: Household) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["llm_input_messages"])]}

    graph = StateGraph(Household)
    graph.add_node("remember", remember)
    graph.add_node("pre_model_hook", context_hook(store, agent))
    graph.add_node("agent", call_model)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "pre_model_hook")
    graph.add_edge("pre_model_hook", "agent")
    graph.add_edge("agent", END)
    app = graph.compile(store=NousMemoryStore(store, agent_id=agent))

    async def say(user: str, text: str) -> str:
        await app.ainvoke({"messages": [HumanMessage(text)]},
                          {"configurable": {"user_id": user}})
        sent = model.seen[-1]
        return str(sent[0].content) if sent[0].type == "system" else ""

    await say("ana", "My therapist is Dr. Alves.")
    await say("ben", "My dog Rex needs a walker.")
    question = "Who is my therapist, who needs a walker and what is the wifi called?"
    ben = await say("ben", question)
    assert "Rex" in ben and "Otter" in ben and "Alves" not in ben, ben
    ana = await say("ana", question)
    assert "Alves" in ana and "Otter" in ana and "Rex" not in ana, ana
