"""A LangChain retriever over the store's recall, and a pre-model hook for LangGraph
agents that puts ``assemble_context`` in front of the model.

The store is async; the retriever's sync ``invoke`` runs the same coroutine on the loop
the store lives on (``loop=``): from another thread while that loop runs, or on it
directly while it is idle.  Calling ``invoke`` from inside a running loop is refused:
``ainvoke`` is the call there.

People: both read for a person when given one (``user``; people/), so only that
person's memories and the shared ones come back; without one, the owner's reads, which
see everything.  The hook also takes the person from the graph's run config
(``config["configurable"]["user_id"]``, LangGraph's usual place for it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, Field

from ..context.results import RecallItem
from .backend import Backend

T = TypeVar("T")


def run_on(loop: asyncio.AbstractEventLoop | None, work: Coroutine[Any, Any, T]) -> T:
    """``work`` run to completion on ``loop`` (the store's), from sync code."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        work.close()
        raise RuntimeError("a sync call inside a running event loop would block it: use the "
                           "async method (ainvoke, aget, asearch...)")
    if loop is None:
        work.close()
        raise RuntimeError("sync calls need loop=, the event loop the store runs on")
    if loop.is_running():
        return asyncio.run_coroutine_threadsafe(work, loop).result()
    return loop.run_until_complete(work)


def document(item: RecallItem) -> Document:
    """A recalled memory or transcript chunk as a LangChain document, with what recall
    knows of its time: when it was said, and whether its value is current (since when)
    or no longer holds (since when), so a chain can tell an old value from a new one."""
    return Document(id=str(item.memory_id) if item.source == "memory" else item.ref,
                    page_content=item.text, metadata={
                        "ref": item.ref, "memory_id": str(item.memory_id),
                        "kind": item.kind.value, "source": item.source,
                        "score": item.scores.final, "cosine": item.scores.cosine,
                        "status": item.status.value,
                        **{name: (value.isoformat() if value is not None else None)
                           for name, value in (
                               ("created_at", item.created_at), ("said_at", item.said_at),
                               ("current_since", item.current_since),
                               ("stale_since", item.stale_since),
                               ("told_again_on", item.told_again_on))}})


class NousMemoryRetriever(BaseRetriever):
    """Documents for a query from one agent's memories (hybrid recall).

    ``k``: documents per query (``invoke(query, k=3)`` overrides it); ``kinds``: only
    these kinds (``["fact", "decision"]``); ``loop``: the store's event loop, for sync
    ``invoke``; ``user``: the person asking (``invoke(query, user="ana")`` overrides
    it), None for the owner; ``include_superseded``: past values too (each document's
    metadata says ``stale_since``); ``current_only``: no value known to be past.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any = Field(description="A MemoryStore or AsyncMemoryClient")
    agent_id: str
    k: int = 4
    kinds: list[str] | None = None
    user: str | None = None
    include_superseded: bool = False
    current_only: bool = False
    loop: asyncio.AbstractEventLoop | None = None

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        return run_on(self.loop, self._recall(query, kwargs))

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        return await self._recall(query, kwargs)

    async def _recall(self, query: str, options: dict[str, Any]) -> list[Document]:
        backend: Backend = self.store
        k = options.get("k", self.k)
        found = await backend.recall(
            self.agent_id, query, kinds=options.get("kinds", self.kinds), k=k,
            user=options.get("user", self.user),
            include_superseded=options.get("include_superseded", self.include_superseded),
            current_only=options.get("current_only", self.current_only))
        return [document(item) for item in found.items[:k]]


ContextHook = Callable[[dict[str, Any], RunnableConfig], Awaitable[dict[str, Any]]]


def context_hook(store: Backend, agent_id: str, *, budget_tokens: int = 800,
                 sections: Sequence[str] | None = None, user: str | None = None,
                 user_key: str = "user_id") -> ContextHook:
    """A LangGraph ``pre_model_hook``: the memories relevant to the newest human message,
    as a system message in front of the conversation (``llm_input_messages``, so the
    graph's stored messages are not changed).  Read for ``user``, else for the run's
    ``config["configurable"][user_key]``, else as the owner."""

    async def hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[AnyMessage] = list(state.get("messages", []))
        query = next((_text(m) for m in reversed(messages) if m.type == "human"), "")
        if not query.strip():
            return {"llm_input_messages": messages}
        person = user or (config.get("configurable") or {}).get(user_key) or None
        context = await store.assemble_context(agent_id, query, budget_tokens=budget_tokens,
                                               sections=sections, user=person)
        if not context.text.strip():
            return {"llm_input_messages": messages}
        return {"llm_input_messages": [SystemMessage(content=context.text), *messages]}

    return hook


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content)
