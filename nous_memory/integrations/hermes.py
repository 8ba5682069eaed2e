"""A Hermes Agent memory provider (``agent/memory_provider.py`` of ``hermes-agent``).

Hermes loads a provider from ``$HERMES_HOME/plugins/<name>/__init__.py`` through its
``register(ctx)``; :func:`install_plugin` writes that file, and ``memory.provider:
nous-memory`` in Hermes' config turns it on.  The provider talks to a running
``nous-memory serve`` (``$NOUS_MEMORY_URL``, ``$NOUS_MEMORY_API_KEY``; the agent is
``$NOUS_MEMORY_AGENT``, else the Hermes profile) on an event loop of its own, since Hermes
calls providers from its own threads.

Each hook is one store call: ``initialize`` starts an episode, ``prefetch`` is
``assemble_context`` for the incoming message (and reports "memory used" through
Hermes' status callback when it found any), ``sync_turn`` appends the turn,
``on_session_end`` closes the episode (the worker learns from it), done where Hermes'
queued writes are behind it (see the method), ``on_memory_write`` learns a fact,
``on_delegation`` appends the sub-agent's result as a note.  Two take two:
``on_pre_compress`` folds the conversation and returns its rolling summary (the fold,
then the read), and ``on_session_switch`` with ``reset`` starts the next episode (closing
the current one, if Hermes has not ended it first).  A cron, sub-agent or flush context
(``agent_context`` other than ``primary``) reads but never writes: those prompts are not
the user speaking.

People: Hermes names the person of a gateway session (``user_id``, and ``user_name``
for display) at ``initialize``.  The session's episode is that person's, its user turns
carry the id and the name, and every read (``prefetch``, the recall tool) is for that
person: their memories and the shared ones, never another person's.  A memory write is
theirs too (a "we/our" fact is shared, as the store decides).  Without a user id the
name stands for the person; without either (the CLI) the session is the owner's, who
reads everything.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from agent.memory_provider import MemoryProvider

from ..client import AsyncMemoryClient
from .backend import Backend

NAME = "nous-memory"
AGENT_ENV = "NOUS_MEMORY_AGENT"
CONTEXT_TOKENS = 600
T = TypeVar("T")
PLUGIN = '''"""Hermes memory provider: nous-memory (written by nous_memory.integrations.hermes)."""

from nous_memory.integrations.hermes import NousMemoryProvider, register  # noqa: F401
'''
TOOLS: list[dict[str, Any]] = [{
    "name": "nous_memory_recall",
    "description": "Search long-term memory (facts, decisions, past conversations).",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "What to look for"}},
        "required": ["query"]}}]


def install_plugin(hermes_home: str | Path) -> Path:
    """Write the plugin Hermes discovers (``$HERMES_HOME/plugins/nous-memory/``; Hermes
    takes a folder whose ``__init__.py`` names ``MemoryProvider`` for a memory plugin)."""
    folder = Path(hermes_home) / "plugins" / NAME
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text(PLUGIN)
    (folder / "plugin.yaml").write_text(
        f"name: {NAME}\nversion: 0.1.0\ndescription: \"Long-term memory on nous-memory\"\n")
    return folder


def register(ctx: Any) -> None:
    """Hermes' plugin entry point."""
    ctx.register_memory_provider(NousMemoryProvider())


class NousMemoryProvider(MemoryProvider):  # type: ignore[misc]  # hermes is untyped
    """``store``/``loop``: an in-process store and the loop it runs on (else a client of
    ``$NOUS_MEMORY_URL`` on a loop thread of the provider's own)."""

    def __init__(self, store: Backend | None = None, *,
                 loop: asyncio.AbstractEventLoop | None = None,
                 agent_id: str | None = None) -> None:
        self._store = store
        self._loop = loop
        self._agent = agent_id
        self._thread: threading.Thread | None = None
        self._episode: str | None = None
        self._writes = True
        self._user: str | None = None  # the person of the session (None: the owner)
        self._name: str | None = None
        self._status: Callable[[str], Any] | None = None

    @property
    def name(self) -> str:
        return NAME

    def is_available(self) -> bool:
        return self._store is not None or bool(os.environ.get("NOUS_MEMORY_URL"))

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return TOOLS

    # ------------------------------------------------------------------ the loop

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=loop.run_forever, daemon=True,
                                            name="nous-memory-provider")
            self._thread.start()
            self._loop = loop
        future: Future[T] = asyncio.run_coroutine_threadsafe(work, self._loop)
        return future.result()

    def _backend(self) -> Backend:
        if self._store is None:
            self._store = self._call(_client())
        return self._store

    # ------------------------------------------------------------------ hooks

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self._agent = (self._agent or os.environ.get(AGENT_ENV)
                       or kwargs.get("agent_identity") or "hermes")
        self._writes = kwargs.get("agent_context", "primary") == "primary"
        callback = kwargs.get("status_callback")
        self._status = callback if callable(callback) else None
        store = self._backend()
        self._close_current()  # a provider kept across sessions: the last one ended
        self._name = _label(kwargs.get("user_name"))
        self._user = _label(kwargs.get("user_id")) or self._name
        if self._writes:
            self._start(store, session_id)

    def _start(self, store: Backend, session_id: str) -> None:
        episode = self._call(store.start_episode(
            self._agent or "hermes", title=f"Hermes session {session_id}",
            user_id=self._user))
        self._episode = str(episode.id)

    def system_prompt_block(self) -> str:
        return ("Long-term memory (nous-memory) is on: relevant memories appear before "
                "each turn; nous_memory_recall searches it.")

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if not query.strip() or self._agent is None:
            return ""
        context = self._call(self._backend().assemble_context(
            self._agent, query, budget_tokens=CONTEXT_TOKENS, user=self._user))
        if context.items and self._status is not None:
            self._status(f"memory used: {len(context.items)} item(s) recalled")
        return context.text if context.items else ""

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: list[dict[str, Any]] | None = None) -> None:
        if not self._writes or self._episode is None or self._agent is None:
            return
        said: dict[str, Any] = {"role": "user", "content": user_content}
        if self._user is not None:  # who said it, and the name they go by
            said["user"] = self._user
        if self._name is not None:
            said["name"] = self._name
        turn = [said]
        if assistant_content:
            turn.append({"role": "assistant", "content": assistant_content})
        self._call(self._backend().append(self._agent, self._episode, turn))

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        if self._episode is None or self._agent is None:
            return ""
        store = self._backend()
        # Hermes is about to compress its context: fold every message, the tail too
        self._call(store.summarize_conversation(self._agent, self._episode, force=True,
                                                policy={"protect_tail": 0}))
        return self._call(store.conversation_summary(self._agent, self._episode)).text

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """No call here: Hermes calls this inline while the turn's ``sync_turn`` may still
        wait in its background queue (``AIAgent.shutdown_memory_provider``), and a closed
        episode refuses that turn.  The episode is closed where every queued write is
        behind: at ``shutdown`` (Hermes drains its queue first), at a ``reset`` session
        switch (queued behind the writes) or at the next ``initialize``."""

    def _close_current(self) -> None:
        if self._episode is not None and self._agent is not None:
            self._call(self._backend().close_episode(self._agent, self._episode))
            self._episode = None

    def on_session_switch(self, new_session_id: str, *, parent_session_id: str = "",
                          reset: bool = False, rewound: bool = False, **kwargs: Any) -> None:
        """A new conversation (``reset``) is a new episode, the old one closed; a resume,
        branch or compression goes on in the same episode."""
        if not reset or not self._writes or self._agent is None:
            return
        self._close_current()
        self._start(self._backend(), new_session_id)

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None) -> None:
        origin = (metadata or {}).get("execution_context", "primary")
        if (not self._writes or origin not in ("primary", None) or action == "remove"
                or not content.strip() or self._agent is None):
            return
        self._call(self._backend().learn_fact(
            self._agent, content, source="hermes", source_kind="user_stated",
            user=self._user))

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "",
                      **kwargs: Any) -> None:
        if not self._writes or self._episode is None or self._agent is None:
            return
        note = f"Delegated to a sub-agent: {task}\nIt answered: {result}"
        self._call(self._backend().append(self._agent, self._episode,
                                          [{"role": "system", "content": note}]))

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if tool_name != "nous_memory_recall" or self._agent is None:
            return json.dumps({"error": f"unknown tool {tool_name}"})
        found = self._call(self._backend().recall(self._agent, str(args.get("query", "")),
                                                  k=5, user=self._user))
        return json.dumps([{"ref": i.ref, "text": i.text} for i in found.items])

    def shutdown(self) -> None:
        """Close an ended session's episode (Hermes has drained its writes), then stop
        the provider's own loop and client."""
        if self._store is not None:
            self._close_current()
        store, thread, loop = self._store, self._thread, self._loop
        if thread is None or loop is None:
            return  # the store and its loop belong to the caller
        if isinstance(store, AsyncMemoryClient):
            self._call(store.aclose())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
        self._thread = self._loop = None
        self._store = None


async def _client() -> Backend:
    return AsyncMemoryClient.from_env()


def _label(value: Any) -> str | None:
    """A user id or name Hermes passed (a platform may pass a number), else None."""
    text = str(value).strip() if value is not None else ""
    return text or None
