"""The LangChain retriever under LangChain's own conformance suite, unchanged, on a real
store; and the context hook in front of a model in a real LangGraph graph."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests

from nous_memory import MemoryStore
from nous_memory.integrations.langchain import NousMemoryRetriever

AGENT = "langchain"
FACTS = ["Ana's sister Beatrice lives in Lisbon.", "Ana flies to Lisbon on 9 May.",
         "Ana's favourite Lisbon cafe is A Brasileira.", "Ana prefers window seats.",
         "Ana's Lisbon hotel is in Alfama."]


class TestRetrieverConformance(RetrieversIntegrationTests):
    """LangChain's retriever suite as shipped: the subclass only says how to build one."""

    @pytest.fixture(autouse=True)
    async def _seeded(self, store: MemoryStore) -> AsyncIterator[None]:
        for fact in FACTS:
            await store.learn_fact(AGENT, fact)
        self.store = store
        self.loop = asyncio.get_running_loop()
        yield

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return NousMemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": self.store, "agent_id": AGENT, "loop": self.loop}

    @property
    def retriever_query_example(self) -> str:
        return "What does Ana do in Lisbon?"


async def test_documents_carry_refs_and_sync_invoke_refuses_a_running_loop(
        store: MemoryStore) -> None:
    for fact in FACTS:
        await store.learn_fact(AGENT, fact)
    retriever = NousMemoryRetriever(store=store, agent_id=AGENT, k=2, kinds=["fact"],
                                    loop=asyncio.get_running_loop())
    docs = await retriever.ainvoke("Where does Beatrice live?")
    assert len(docs) == 2 and docs[0].page_content == FACTS[0]
    assert docs[0].metadata["kind"] == "fact" and docs[0].metadata["ref"].startswith("fact:")
    assert str(await store.resolve(AGENT, docs[0].metadata["ref"])) == docs[0].id
    with pytest.raises(RuntimeError, match="use the async method"):
        retriever.invoke("Where does Beatrice live?")


async def test_a_retriever_for_a_person_reads_theirs_and_the_shared(
        store: MemoryStore) -> None:
    household = "langchain-household"
    await store.learn_fact(household, "The house wifi network is called Otter.")
    await store.learn_fact(household, "My therapist is Dr. Alves.", user="ana")
    await store.learn_fact(household, "My dog Rex needs a walker.", user="ben")
    ben = NousMemoryRetriever(store=store, agent_id=household, user="Ben", k=10)
    chain = RunnableLambda(lambda q: f"{q} (and the wifi?)") | ben  # in a chain, as used
    texts = [d.page_content for d in await chain.ainvoke("Who is my therapist?")]
    assert "The house wifi network is called Otter." in texts
    assert "My dog Rex needs a walker." in texts
    assert not any("Alves" in t for t in texts), texts
    ana = [d.page_content for d in await ben.ainvoke("Who is my therapist?", user="ana")]
    assert "My therapist is Dr. Alves." in ana and not any("Rex" in t for t in ana)
    owner = NousMemoryRetriever(store=store, agent_id=household, k=10)
    assert len(await owner.ainvoke("therapist, dog or wifi")) == 3


async def test_documents_say_which_value_is_current_and_which_is_old(
        store: MemoryStore) -> None:
    agent = "langchain-moves"
    await store.learn_fact(agent, "I live in Lisbon.", valid_from="2024-01-05T10:00:00Z")
    await store.learn_fact(agent, "We moved to Porto.", valid_from="2024-06-01T10:00:00Z")
    retriever = NousMemoryRetriever(store=store, agent_id=agent, k=5,
                                    include_superseded=True)
    docs = {d.page_content: d.metadata for d in await retriever.ainvoke("Where do I live?")}
    porto = next(m for text, m in docs.items() if "Porto" in text)
    lisbon = next(m for text, m in docs.items() if "Lisbon" in text)
    assert porto["current_since"].startswith("2024-06-01") and porto["stale_since"] is None
    assert lisbon["stale_since"].startswith("2024-06-01") and lisbon["current_since"] is None
    assert lisbon["status"] == "superseded" and porto["said_at"].startswith("2024-06-01")
