"""The Hermes Agent memory provider, loaded the way Hermes loads one (a plugin folder in
``$HERMES_HOME/plugins``) and driven through Hermes' own ``MemoryManager``, against a
served store through the remote client."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from nous_memory import MemoryStore
from tests.integration.client_helpers import served

try:
    import agent.memory_provider  # noqa: F401
except ImportError as missing:  # pragma: no cover
    if os.environ.get("CI") == "true":
        raise RuntimeError("hermes-agent is missing: .ci/run installs it (--no-deps)"
                           ) from missing
    pytest.skip("hermes-agent is not installed: pip install --no-deps 'hermes-agent==0.19.0'",
                allow_module_level=True)

from agent.memory_manager import MemoryManager
from plugins.memory import load_memory_provider

from nous_memory.integrations.hermes import NousMemoryProvider, install_plugin

AGENT = "hermes-user"


@pytest.fixture
async def hermes_env(store: MemoryStore, tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    async with served(store) as url:
        monkeypatch.setenv("HERMES_HOME", str(tmp_path))
        monkeypatch.setenv("NOUS_MEMORY_URL", url)
        monkeypatch.setenv("NOUS_MEMORY_AGENT", AGENT)
        install_plugin(tmp_path)
        yield tmp_path


def _manager(home: Path, context: str, statuses: list[str]) -> MemoryManager:
    """What Hermes' agent_init does with ``memory.provider: nous-memory``."""
    provider = load_memory_provider("nous-memory")
    assert isinstance(provider, NousMemoryProvider) and provider.is_available()
    manager = MemoryManager()
    manager.add_provider(provider)
    manager.initialize_all(session_id="s-1", platform="cli", hermes_home=str(home),
                           agent_context=context, status_callback=statuses.append)
    return manager


async def test_every_hook_reaches_the_store(store: MemoryStore, hermes_env: Path) -> None:
    statuses: list[str] = []

    def session() -> dict[str, Any]:
        manager = _manager(hermes_env, "primary", statuses)
        manager.sync_all("My sister Beatrice lives in Lisbon.", "Noted, Lisbon.")
        manager.sync_all("I fly there on 9 May.", "Have a good flight.")
        assert manager.flush_pending(timeout=30)
        manager.on_memory_write("add", "user", "Ana prefers window seats.",
                                {"execution_context": "primary"})
        recalled = manager.prefetch_all("Which seats does Ana prefer?")
        compressed = manager.on_pre_compress([{"role": "user", "content": "..."}])
        tools = manager.handle_tool_call("nous_memory_recall", {"query": "window seats"})
        # /new: Hermes ends the session and switches to the next as one queued task
        manager.commit_session_boundary_async([], new_session_id="s-2",
                                              parent_session_id="s-1")
        manager.sync_all("Start over: plan a trip to Faro.", "Faro it is.")
        # exit, as AIAgent.shutdown_memory_provider does it: the turn's sync still queued
        manager.on_session_end([])
        manager.shutdown_all()
        return {"recalled": recalled, "compressed": compressed, "tools": tools}

    out = await asyncio.to_thread(session)
    assert "window seats" in out["recalled"] and statuses
    assert statuses[0].startswith("memory used")
    assert "Beatrice" in out["compressed"]  # the rolling summary of the turns so far
    assert "window seats" in out["tools"]
    episodes = sorted((await store.list(AGENT, kind="episode")).items,
                      key=lambda e: e.created_at)
    assert [[m.content for m in await store.transcript(AGENT, e.id)] for e in episodes] == [
        ["My sister Beatrice lives in Lisbon.", "Noted, Lisbon.", "I fly there on 9 May.",
         "Have a good flight."], ["Start over: plan a trip to Faro.", "Faro it is."]]
    assert all(e.episode.state in ("closing", "closed")
               for e in episodes)


async def test_cron_and_sub_agents_read_but_never_write(store: MemoryStore,
                                                        hermes_env: Path) -> None:
    await store.learn_fact(AGENT, "Ana prefers window seats.")

    def cron() -> str:
        manager = _manager(hermes_env, "cron", [])
        manager.sync_all("SYSTEM: run the nightly digest job.", "Digest sent.")
        assert manager.flush_pending(timeout=30)
        manager.on_memory_write("add", "user", "The user is a cron job.",
                                {"execution_context": "cron"})
        recalled = manager.prefetch_all("Which seats does Ana prefer?")
        manager.on_session_end([])
        manager.shutdown_all()
        return recalled

    assert "window seats" in await asyncio.to_thread(cron)
    assert (await store.list(AGENT, kind="episode")).items == []
    facts = (await store.list(AGENT, kind="fact")).items
    assert [f.summary for f in facts] == ["Ana prefers window seats."]


def _user_session(store: MemoryStore, loop: asyncio.AbstractEventLoop, session_id: str,
                  **user: str) -> MemoryManager:
    """A session as Hermes' agent_init starts it: a gateway user's id and name go to
    ``initialize``, the CLI passes none (the owner); the in-process store, on the test's
    loop."""
    manager = MemoryManager()
    manager.add_provider(NousMemoryProvider(store, loop=loop, agent_id=PEOPLE))
    manager.initialize_all(session_id=session_id, platform="telegram" if user else "cli",
                           hermes_home="/tmp", agent_context="primary", **user)
    return manager


PEOPLE = "hermes-household"


async def test_two_users_on_one_agent_keep_to_their_own(store: MemoryStore) -> None:
    loop = asyncio.get_running_loop()

    def sessions() -> dict[str, str]:
        owner = _user_session(store, loop, "cli")
        ana = _user_session(store, loop, "tg-ana", user_id="1001", user_name="Ana")
        ben = _user_session(store, loop, "tg-ben", user_id="2002", user_name="Ben")
        ana.sync_all("My therapist is Dr. Alves.", "Noted.")
        ben.sync_all("I need a dog walker for Rex.", "Sure.")
        assert ana.flush_pending(timeout=30) and ben.flush_pending(timeout=30)
        for manager, said in ((owner, "The house wifi network is called Otter."),
                              (ana, "I live in Lisbon."),
                              (ana, "My therapist is Dr. Alves."),
                              (ana, "Our derby team is the Clyde Crushers."),  # her circle
                              (ben, "I live in Berlin.")):
            manager.on_memory_write("add", "user", said, {"execution_context": "primary"})
        question = ("Where do I live, who is my therapist, what is the wifi called and "
                    "what is our derby team?")
        out = {"ana": ana.prefetch_all(question), "ben": ben.prefetch_all(question),
               "ben_tool": ben.handle_tool_call("nous_memory_recall", {"query": "therapist"}),
               "ana_tool": ana.handle_tool_call("nous_memory_recall", {"query": "therapist"})}
        for manager in (owner, ana, ben):
            manager.on_session_end([])
            manager.shutdown_all()
        return out

    out = await asyncio.to_thread(sessions)
    assert "Berlin" in out["ben"] and "Otter" in out["ben"], out["ben"]  # his, and shared
    assert not any(w in out["ben"] for w in ("Lisbon", "Alves", "Crushers")), out["ben"]
    assert "Alves" not in out["ben_tool"] and "Alves" in out["ana_tool"]
    now = out["ana"].split("## ")[1]
    assert now.startswith("About the user now") and "Lisbon" in now, out["ana"]
    assert "Berlin" not in out["ana"] and "(older" not in now, out["ana"]
    assert "Otter" in out["ana"] and "Crushers" in out["ana"]
    # each conversation is its user's, and its turns say who said them
    episodes = (await store.list(PEOPLE, kind="episode")).items
    assert sorted(e.people for e in episodes) == [[], ["1001"], ["2002"]]
    for episode in (e for e in episodes if e.people):
        said = [m for m in await store.transcript(PEOPLE, episode.id) if m.role == "user"]
        assert [(m.person, m.name) for m in said] == (
            [("1001", "Ana")] if episode.people == ["1001"] else [("2002", "Ben")])
    facts = {f.summary: f.people for f in (await store.list(PEOPLE, kind="fact")).items}
    assert facts["The house wifi network is called Otter."] == []
    assert facts["My therapist is Dr. Alves."] == ["1001"]
