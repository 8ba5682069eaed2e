"""Forgetting one message of an episode (episodes/forget.py): after a delete or a
redaction, its text is in no table, recall, context or export, what was learned from it
is gone, and everything else the conversation said is still remembered."""

from __future__ import annotations

import io
from typing import Any

import pytest

from nous_memory import MemoryStore
from nous_memory.errors import ConflictError, InvalidInputError, NotFoundError
from nous_memory.testing import ScriptedLLMServer

from .db_helpers import sql, tables_holding

A = "forgetful"
TALK = [
    {"role": "user", "content": "I live in Porto and I love hiking in the hills."},
    {"role": "assistant", "content": "What a place for hiking!"},
    {"role": "user", "content": "My new neighbour is Zanzibar Quill, she plays the theremin."},
    {"role": "assistant", "content": "How unusual!"},
    {"role": "user", "content": "I work at Fennimore Labs as a glassblower."},
    {"role": "assistant", "content": "Noted."},
]


async def _closed(store: MemoryStore, talk: list[dict[str, Any]] = TALK) -> Any:
    episode = await store.start_episode(A, user_id="ana")
    await store.append(A, episode.id, talk)
    await store.close_episode(A, episode.id)
    await store.worker().drain()
    return episode


async def _everywhere(store: MemoryStore, query: str) -> str:
    """What every read face shows: recall, context, export."""
    recall = await store.recall(A, query, k=20)
    context = await store.assemble_context(A, query, budget_tokens=2000)
    out = io.BytesIO()
    await store.export_agent_to(A, out)
    return "\n".join([*(i.text for i in recall.items), context.text,
                      out.getvalue().decode()])


async def test_a_deleted_message_of_a_closed_episode_leaves_no_trace(
        store: MemoryStore) -> None:
    episode = await _closed(store)
    facts = [f.summary for f in (await store.list(A, kind="fact")).items]
    assert any("Zanzibar" in f for f in facts)  # learned from the message at close
    assert await tables_holding(store, "Zanzibar", "theremin")  # before: everywhere

    erased = await store.forget_message(A, episode.id, 2, actor="owner")

    assert erased.action == "deleted" and erased.facts >= 1 and erased.summary == "rebuilt"
    assert await tables_holding(store, "Zanzibar", "theremin", "neighbour") == {}
    seen = await _everywhere(store, "who is my neighbour and what does she play?")
    assert "Zanzibar" not in seen and "theremin" not in seen
    # everything else is still remembered
    assert "Porto" in await _everywhere(store, "where do I live?")
    assert "Fennimore" in await _everywhere(store, "where do I work?")
    said = await store.transcript(A, episode.id)
    assert [m.seq for m in said] == [0, 1, 3, 4, 5]
    # the audit says what was done and by whom, never the text
    events = await store.history(A, episode.id)
    done = [e for e in events if e.new_values and "forgot_message" in e.new_values]
    assert done and done[-1].actor == "owner"
    assert done[-1].new_values["forgot_message"]["seq"] == 2  # type: ignore[index]


async def test_a_redaction_takes_out_only_its_strings(store: MemoryStore) -> None:
    episode = await _closed(store)
    home = next(f for f in (await store.list(A, kind="fact")).items if "Porto" in f.summary)
    # the owner reworded it: the old wording stays only in the audit trail
    await store.update(A, home.id, content="The user lives in the north of Portugal.")
    erased = await store.forget_message(A, episode.id, 0, redact=["porto"])
    assert erased.events >= 1
    assert (await store.get(A, home.id)).summary == "The user lives in the north of Portugal."
    assert erased.action == "redacted"
    assert await tables_holding(store, "Porto") == {}
    said = await store.transcript(A, episode.id)
    assert said[0].content == "I live in [redacted] and I love hiking in the hills."
    assert said[1].content == "What a place for hiking!"
    facts = " ".join(f.summary for f in (await store.list(A, kind="fact")).items)
    assert "Zanzibar" in facts and "Fennimore" in facts
    with pytest.raises(InvalidInputError) as bad:
        await store.forget_message(A, episode.id, 0, redact=["Lisbon"])
    assert bad.value.problems[0].field == "redact[0]"
    assert "not in the message" in bad.value.problems[0].reason


async def test_the_old_value_holds_again_when_what_replaced_it_is_forgotten(
        store: MemoryStore) -> None:
    await _closed(store, [{"role": "user", "content": "I live in Lisbon."}])
    moved = await _closed(store, [{"role": "user", "content": "We moved to Porto last week."},
                                  {"role": "assistant", "content": "Exciting!"}])
    active = [f.summary for f in (await store.list(A, kind="fact", status="active")).items]
    assert any("Porto" in f for f in active) and not any("Lisbon" in f for f in active)
    await store.forget_message(A, moved.id, 0)
    assert await tables_holding(store, "Porto") == {}  # the old value's history included
    active = [f.summary for f in (await store.list(A, kind="fact", status="active")).items]
    assert any("Lisbon" in f for f in active) and not any("Porto" in f for f in active)
    context = await store.assemble_context(A, "Where do I live?")
    assert "Lisbon" in context.text and "Porto" not in context.text


async def test_an_open_episode_and_its_rolling_summary(store: MemoryStore) -> None:
    episode = await store.start_episode(A)
    await store.append(A, episode.id, TALK)
    await store.edit_message(A, episode.id, 2, "My neighbour is Zanzibar Quill.")
    erased = await store.forget_message(A, episode.id, 2)
    assert erased.action == "deleted"
    assert await tables_holding(store, "Zanzibar", "theremin") == {}  # earlier versions too
    with pytest.raises(NotFoundError):
        await store.forget_message(A, episode.id, 2)  # nothing left to forget
    await store.close_episode(A, episode.id)
    await store.worker().drain()
    assert await tables_holding(store, "Zanzibar") == {}
    assert "Fennimore" in await _everywhere(store, "where do I work?")


async def test_a_trimmed_episode_is_restored_then_forgotten(store: MemoryStore) -> None:
    episode = await _closed(store)
    await store.archive_episodes(A)
    assert (await sql(store, "SELECT storage FROM episodes WHERE memory_id = $1",
                      episode.id))[0][0] == "archived"
    erased = await store.forget_message(A, episode.id, 2)
    assert erased.restored
    assert await tables_holding(store, "Zanzibar", "theremin") == {}
    assert "Fennimore" in await _everywhere(store, "where do I work?")


async def test_bad_input_and_a_closing_episode(store: MemoryStore) -> None:
    episode = await _closed(store)
    for seq in (-1, True, "2"):
        with pytest.raises(InvalidInputError):
            await store.forget_message(A, episode.id, seq)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        await store.forget_message(A, episode.id, 99)
    with pytest.raises(NotFoundError):
        await store.forget_message("someone-else", episode.id, 2)  # scoped to the agent
    with pytest.raises(InvalidInputError):
        await store.forget_message(A, episode.id, 2, redact="Zanzibar")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        await store.forget_message(A, episode.id, 2, actor=" ")
    closing = await store.start_episode(A)
    await store.append(A, closing.id, TALK[:2])
    await store.close_episode(A, closing.id)  # the worker has not run: still closing
    with pytest.raises(ConflictError, match="being closed"):
        await store.forget_message(A, closing.id, 0)
    assert "Zanzibar" in " ".join(m.content for m in await store.transcript(A, episode.id))


async def test_with_an_llm_the_summary_is_made_again_without_it(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer) -> None:
    store = llm_store
    episode = await store.start_episode(A)
    await store.append(A, episode.id, TALK)
    await store.close_episode(A, episode.id)
    llm_server.reply_json({
        "title": "Neighbours and work", "summary": "Ana lives in Porto; her neighbour "
        "Zanzibar Quill plays the theremin; she works at Fennimore Labs.",
        "key_points": ["Neighbour Zanzibar Quill plays the theremin", "Works at Fennimore"],
        "topics": ["neighbours", "work"],
        "facts": [{"content": "The user's neighbour is Zanzibar Quill.", "seq": 2},
                  {"content": "The user works at Fennimore Labs.", "seq": 4}],
        "decisions": []})
    await store.worker().drain()
    llm_server.reply_json({
        "title": "Home and work", "summary": "Ana lives in Porto and works at Fennimore Labs.",
        "key_points": ["Works at Fennimore"], "topics": ["work"],
        "facts": [{"content": "The user works at Fennimore Labs.", "seq": 3}],
        "decisions": []})
    erased = await store.forget_message(A, episode.id, 2)
    assert erased.summary == "rebuilt" and erased.facts == 1
    assert await tables_holding(store, "Zanzibar", "theremin") == {}
    memory = await store.get(A, episode.id)
    assert memory.summary == "Ana lives in Porto and works at Fennimore Labs."
    assert memory.episode.key_points == ["Works at Fennimore"]
    assert "Fennimore" in await _everywhere(store, "where do I work?")


async def test_a_redaction_is_of_whole_words_and_spares_placeholders(
        store: MemoryStore) -> None:
    episode = await _closed(store, [
        {"role": "user", "content": "Ann is planning an annual trip; my card number is "
                                    "4111 1111 1111 1111."}])
    await store.forget_message(A, episode.id, 0, redact=["ann"])
    said = (await store.transcript(A, episode.id))[0].content
    assert said == ("[redacted] is planning an annual trip; my card number is "
                    "[redacted: card number].")
    with pytest.raises(InvalidInputError, match="not in the message"):
        await store.forget_message(A, episode.id, 0, redact=["plan"])  # inside a word


async def test_a_chain_stays_whole_as_its_middle_and_end_are_forgotten(
        store: MemoryStore) -> None:
    await _closed(store, [{"role": "user", "content": "I live in Lisbon."}])
    moves = await _closed(store, [{"role": "user", "content": "We moved to Porto."},
                                  {"role": "user", "content": "Then we moved to Braga."}])

    async def current() -> list[str]:
        return [f.summary for f in (await store.list(A, kind="fact", status="active")).items]

    assert any("Braga" in f for f in await current())
    await store.forget_message(A, moves.id, 0)  # the middle: Lisbon now leads to Braga
    assert any("Braga" in f for f in await current())
    history = await store.fact_history(A, next(
        f.id for f in (await store.list(A, kind="fact")).items if "Braga" in f.summary))
    assert ["Lisbon" in v.summary or "Braga" in v.summary for v in history.chain] == [
        True, True]
    await store.forget_message(A, moves.id, 1)  # the end: Lisbon holds again
    assert any("Lisbon" in f for f in await current())
    assert await tables_holding(store, "Porto", "Braga") == {}


async def test_a_message_emptied_then_deleted_still_holds_its_old_text(
        store: MemoryStore) -> None:
    episode = await store.start_episode(A)
    await store.append(A, episode.id, TALK)
    await store.edit_message(A, episode.id, 2, "")
    await store.delete_message(A, episode.id, 2)
    assert await tables_holding(store, "Zanzibar")  # the earlier version is kept
    await store.forget_message(A, episode.id, 2)
    assert await tables_holding(store, "Zanzibar") == {}
