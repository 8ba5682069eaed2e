"""``MemoryClient``: the blocking face of ``AsyncMemoryClient`` for code without an event
loop.  Every method is the async one run to completion on a private loop; nothing is
written twice."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO, Concatenate, ParamSpec, TypeVar

from ..portability.reports import ExportSummary
from .remote import AsyncMemoryClient

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(method: Callable[Concatenate[AsyncMemoryClient, P], Awaitable[R]]
              ) -> Callable[Concatenate[MemoryClient, P], R]:
    def call(self: MemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._runner.run(method(self.aio, *args, **kwargs))  # type: ignore[arg-type]

    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class MemoryClient:
    """``with MemoryClient(url, api_key=...) as m: m.recall("agent", "query")``.
    Not for use inside a running event loop: use ``AsyncMemoryClient`` there."""

    def __init__(self, url: str, **options: Any) -> None:
        self._runner = asyncio.Runner()
        # the connection pool belongs to the loop it was made on
        self.aio: AsyncMemoryClient = self._runner.run(_make(url, options))

    @classmethod
    def from_env(cls, url: str | None = None, **options: Any) -> MemoryClient:
        client = cls.__new__(cls)
        client._runner = asyncio.Runner()
        client.aio = client._runner.run(_make_from_env(url, options))
        return client

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._runner.run(self.aio.aclose())
        finally:
            self._runner.close()

    def export_agent_to(self, agent_id: str, out: BinaryIO, /, *,
                        user: str | None = None) -> ExportSummary:
        return self._runner.run(self.aio.export_agent_to(agent_id, out, user=user))

    health = _blocking(AsyncMemoryClient.health)
    ready = _blocking(AsyncMemoryClient.ready)
    remember = _blocking(AsyncMemoryClient.remember)
    remember_many = _blocking(AsyncMemoryClient.remember_many)
    get = _blocking(AsyncMemoryClient.get)
    update = _blocking(AsyncMemoryClient.update)
    delete = _blocking(AsyncMemoryClient.delete)
    history = _blocking(AsyncMemoryClient.history)
    list = _blocking(AsyncMemoryClient.list)
    learn_fact = _blocking(AsyncMemoryClient.learn_fact)
    fact_history = _blocking(AsyncMemoryClient.fact_history)
    facts_from_episode = _blocking(AsyncMemoryClient.facts_from_episode)
    start_episode = _blocking(AsyncMemoryClient.start_episode)
    append = _blocking(AsyncMemoryClient.append)
    close_episode = _blocking(AsyncMemoryClient.close_episode)
    get_episode = _blocking(AsyncMemoryClient.get_episode)
    transcript = _blocking(AsyncMemoryClient.transcript)
    latest_messages = _blocking(AsyncMemoryClient.latest_messages)
    ingest = _blocking(AsyncMemoryClient.ingest)
    ingest_status = _blocking(AsyncMemoryClient.ingest_status)
    recall = _blocking(AsyncMemoryClient.recall)
    assemble_context = _blocking(AsyncMemoryClient.assemble_context)
    expand = _blocking(AsyncMemoryClient.expand)
    upcoming = _blocking(AsyncMemoryClient.upcoming)
    import_agent = _blocking(AsyncMemoryClient.import_agent)
    forget_agent = _blocking(AsyncMemoryClient.forget_agent)
    forget_person = _blocking(AsyncMemoryClient.forget_person)
    secrets_policy = _blocking(AsyncMemoryClient.secrets_policy)
    set_secrets_policy = _blocking(AsyncMemoryClient.set_secrets_policy)
    build_prompt = _blocking(AsyncMemoryClient.build_prompt)
    summarize_conversation = _blocking(AsyncMemoryClient.summarize_conversation)
    conversation_summary = _blocking(AsyncMemoryClient.conversation_summary)
    summary_history = _blocking(AsyncMemoryClient.summary_history)
    conversation_policy = _blocking(AsyncMemoryClient.conversation_policy)
    set_conversation_policy = _blocking(AsyncMemoryClient.set_conversation_policy)
    edit_message = _blocking(AsyncMemoryClient.edit_message)
    delete_message = _blocking(AsyncMemoryClient.delete_message)


async def _make(url: str, options: dict[str, Any]) -> AsyncMemoryClient:
    return AsyncMemoryClient(url, **options)


async def _make_from_env(url: str | None, options: dict[str, Any]) -> AsyncMemoryClient:
    return AsyncMemoryClient.from_env(url, **options)
