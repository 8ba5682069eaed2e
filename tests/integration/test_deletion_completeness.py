"""Deletion completeness: for every way something can be removed, the removed string is
afterwards in no table (every column of every table, JSON included) and in no read
(recall, context, export), while what was not removed is still remembered.

Each case plants a marker in one place, lets the store do everything it does with it
(close, learn, embed, fold a rolling summary, trim or archive), removes it the way the
case says, and scans."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nous_memory import MemoryStore

from .db_helpers import tables_holding

A = "complete"
MARK = "Xanthippe"
KEPT = "Porto"
FILLER = [{"role": "user" if i % 2 == 0 else "assistant",
           "content": f"Filler turn {i} about the weather, the garden and the long walk "
                      f"we took along the river on a grey afternoon, nothing more."}
          for i in range(40)]
MARKED = {"role": "user", "content": f"My sister {MARK} Bloom moved to Reykjavik."}
PLAIN = {"role": "user", "content": f"I live in {KEPT} and I love hiking."}


async def _session(store: MemoryStore, turns: list[dict[str, Any]], *, days_ago: int = 0,
                   user: str | None = None) -> Any:
    """A conversation closed and learned from (days_ago: when it was had)."""
    if days_ago:
        start = datetime.now(UTC) - timedelta(days=days_ago)
        result = await store.ingest(A, [{"started_at": start.isoformat(), "turns": turns,
                                         **({"user": user} if user else {})}])
        await store.worker().drain()
        return result.episode_ids[0]
    episode = await store.start_episode(A, user_id=user)
    await store.append(A, episode.id, turns)
    await store.close_episode(A, episode.id)
    await store.worker().drain()
    return episode.id


async def purge_a_fact(store: MemoryStore) -> None:
    fact = await store.remember(A, "fact", content=f"{MARK} Bloom is the user's sister.")
    await store.delete(A, fact.id, purge=True)


async def purge_an_episode(store: MemoryStore) -> None:
    episode = await _session(store, [{"role": "user", "content": "Any music tips?"},
                                     {"role": "assistant", "content": f"Try {MARK} Quartet."}])
    await store.delete(A, episode, purge=True)


async def purge_an_archived_episode(store: MemoryStore) -> None:
    episode = await _session(store, [{"role": "user", "content": "Any music tips?"},
                                     {"role": "assistant", "content": f"Try {MARK} Quartet."}])
    await store.archive_episodes(A)
    await store.delete(A, episode, purge=True)


async def delete_a_message(store: MemoryStore) -> None:
    episode = await _session(store, [MARKED, {"role": "assistant", "content": "Lovely."}])
    await store.forget_message(A, episode, 0)


async def redact_a_message(store: MemoryStore) -> None:
    episode = await _session(store, [MARKED, {"role": "assistant", "content": "Lovely."}])
    await store.forget_message(A, episode, 0, redact=[MARK])


async def delete_a_message_of_an_open_episode(store: MemoryStore) -> None:
    episode = await store.start_episode(A)
    await store.append(A, episode.id, [MARKED, *FILLER])
    folded = await store.summarize_conversation(A, episode.id, force=True)
    assert folded.folded > 0  # the marked message is in a rolling summary
    await store.forget_message(A, episode.id, 0)


async def delete_a_message_of_a_trimmed_episode(store: MemoryStore) -> None:
    episode = await _session(store, [*FILLER, MARKED], days_ago=60)
    trimmed = await store.maintenance.trim(now=datetime.now(UTC))
    assert trimmed.counts.get("trimmed_transcripts"), trimmed.counts
    assert MARK not in " ".join(m.content for m in await store.transcript(A, episode))
    await store.forget_message(A, episode, len(FILLER))  # in the cold tail


async def delete_a_message_of_an_archived_episode(store: MemoryStore) -> None:
    episode = await _session(store, [MARKED, *FILLER], days_ago=200)
    await store.archive_episodes(A)
    await store.forget_message(A, episode, 0)


async def forget_a_person(store: MemoryStore) -> None:
    await _session(store, [MARKED], user="ben")
    await store.forget_person(A, "ben")


async def forget_an_agent(store: MemoryStore) -> None:
    await store.remember("another", "fact", content=f"{MARK} Bloom is the user's sister.")
    await store.forget_agent("another")


REMOVALS: dict[str, Callable[[MemoryStore], Awaitable[None]]] = {
    f.__name__: f for f in (
        purge_a_fact, purge_an_episode, purge_an_archived_episode, delete_a_message,
        redact_a_message, delete_a_message_of_an_open_episode,
        delete_a_message_of_a_trimmed_episode, delete_a_message_of_an_archived_episode,
        forget_a_person, forget_an_agent)}


@pytest.mark.parametrize("removal", list(REMOVALS))
async def test_what_is_removed_is_nowhere(store: MemoryStore, removal: str) -> None:
    await _session(store, [PLAIN, {"role": "assistant", "content": "Nice!"}], user="ana")
    await REMOVALS[removal](store)
    await store.worker().drain()
    assert await tables_holding(store, MARK) == {}
    query = f"Who is {MARK} Bloom, my sister in Reykjavik?"
    recall = await store.recall(A, query, k=30)
    context = await store.assemble_context(A, query, budget_tokens=4000)
    exported = io.BytesIO()
    await store.export_agent_to(A, exported)
    for text in (*(i.text for i in recall.items), context.text,
                 exported.getvalue().decode()):
        assert MARK not in text
    # nothing else was lost
    assert KEPT in (await store.assemble_context(A, "Where do I live?", user="ana")).text
