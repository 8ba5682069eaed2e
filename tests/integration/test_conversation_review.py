"""Review of working memory on a real database: each test pins a defect found
in review (see the commit that added it)."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import asyncpg
import httpx

from nous_memory import MemoryStore, blocks
from nous_memory.cli.main import main
from nous_memory.conversation.engine import Summarizer
from nous_memory.conversation.pairs import content_hash
from nous_memory.conversation.prompt import prompt_tokens
from nous_memory.errors import InvalidInputError

AGENT = "wm-review"
RULE = {"mode": "rule", "protect_tail": 2}


def turns(n: int, start: int = 0, words: int = 6) -> list[dict[str, Any]]:
    filler = " ".join(["detail"] * words)
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"Point {i}: Ana mentions Marker{i} {filler}."}
            for i in range(start, start + n)]


async def episode_with(store: MemoryStore, messages: list[dict[str, Any]]) -> str:
    episode = await store.start_episode(AGENT, title="review")
    await store.append(AGENT, episode.id, messages)
    return str(episode.id)


async def test_injected_blocks_and_odd_metadata_do_not_stall_the_watermark(
        store: MemoryStore) -> None:
    messages = turns(8)
    # a client stored the prompt it sent back into the transcript, and odd metadata
    messages[3] = {"role": "system", "content": blocks.wrap("Summary: Ana, Marker0.", "summary")}
    messages[4] = {**messages[4], "metadata": {"tool_calls": 5}}
    episode = await episode_with(store, messages)
    result = await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)
    assert result.watermark_seq == 5 and not result.gaps, result
    text = (await store.conversation_summary(AGENT, episode)).text
    assert "Marker4" in text and "nous-memory" not in text
    prompt = await store.build_prompt(AGENT, episode, "Be brief.", 500, policy=RULE)
    assert prompt.tokens == prompt_tokens(prompt.messages) <= 500


async def test_the_system_prompt_counts_toward_the_window(store: MemoryStore) -> None:
    """Message tokens alone stay under every trigger, but with the system prompt and the
    per-message overhead the prompt no longer fits: the emergency must fold, not drop."""
    episode = await episode_with(store, turns(12, words=45))
    system = "Follow the house rules. " * 100  # about 500 tokens
    policy = {"mode": "rule", "window_tokens": 1000, "trigger_messages": 0,
              "trigger_words": 0, "protect_tail": 2}
    prompt = await store.build_prompt(AGENT, episode, system, 1000, policy=policy)
    assert prompt.summarized is not None and prompt.summarized.folded > 0, prompt.summarized
    assert prompt.dropped_messages == 0 and prompt.tokens <= 1000


async def test_an_edit_racing_a_landing_fold_invalidates(store: MemoryStore) -> None:
    episode = await episode_with(store, turns(10))
    ident = UUID(episode)
    await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)  # up to 7
    rows = await store.transcript(AGENT, episode)
    conn = await asyncpg.connect(store.dsn)
    try:
        tx = conn.transaction()
        await tx.start()  # a fold's compare-and-swap, about to land past message 8
        await conn.execute("SELECT 1 FROM conversation_state WHERE agent_id = $1 AND "
                           "episode_id = $2 FOR UPDATE", AGENT, ident)
        edit = asyncio.create_task(store.edit_message(AGENT, episode, 8, "Ana: Changed8."))
        for _ in range(500):  # until the edit waits for the fold's row lock
            waiting = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()")
            if waiting:
                break
            await asyncio.sleep(0.02)
        await conn.execute(
            "UPDATE conversation_state SET watermark_seq = 9, watermark_hash = $3, "
            "version = version + 1 WHERE agent_id = $1 AND episode_id = $2",
            AGENT, ident, content_hash(rows[9].role, rows[9].content))
        await tx.commit()
        change = await edit
    finally:
        await conn.close()
    assert change.invalidated  # message 8 is now behind the watermark with its old text
    assert (await store.conversation_summary(AGENT, episode)).invalidated_reason


async def test_a_failed_invalidation_is_not_forgotten(store: MemoryStore,
                                                      monkeypatch: Any) -> None:
    episode = await episode_with(store, turns(10))
    await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)  # up to 7
    conn = await asyncpg.connect(store.dsn)
    try:  # the watermark's message disappears behind the store's back
        await conn.execute("DELETE FROM episode_messages WHERE agent_id = $1 AND "
                           "episode_id = $2 AND seq = 7", AGENT, UUID(episode))
    finally:
        await conn.close()
    original = Summarizer._watermark_problem
    raced = []

    async def racing(self: Summarizer, *args: Any) -> str | None:
        problem = await original(self, *args)
        if not raced:  # an edit past the watermark lands between the check and the reset
            raced.append(await store.edit_message(AGENT, episode, 9, "Ana: Late9."))
        return problem

    monkeypatch.setattr(Summarizer, "_watermark_problem", racing)
    result = await store.summarize_conversation(AGENT, episode, force=True,
                                                policy={"mode": "rule", "protect_tail": 0})
    assert raced and result.invalidated == "stale watermark: message 7 no longer exists"
    text = (await store.conversation_summary(AGENT, episode)).text
    assert "Marker7 " not in text and "Late9" in text and text.count("Marker3 ") == 1
    history = await store.summary_history(AGENT, episode)
    assert [r.op for r in history if r.status == "current"] == ["rebuild"]


async def test_rest_refuses_non_finite_knobs_and_a_non_text_query(
        client: httpx.AsyncClient, store: MemoryStore) -> None:
    episode = await episode_with(store, turns(2))
    put = await client.put(f"/agents/{AGENT}/conversation-policy",
                           content=b'{"target": Infinity}',
                           headers={"content-type": "application/json"})
    assert put.status_code == 422 and put.json()["detail"][0]["field"] == "policy.target"
    bad = await client.post(f"/agents/{AGENT}/episodes/{episode}/prompt",
                            json={"system": "x", "budget_tokens": 100, "query": 5})
    assert bad.status_code == 422 and bad.json()["detail"][0]["field"] == "query"


async def test_a_budget_below_the_window_is_what_the_triggers_guard(
        store: MemoryStore) -> None:
    """The policy's window is the model's (8192 by default); a prompt built for a smaller
    budget must fold before it would have to drop messages nobody summarised."""
    episode = await episode_with(store, turns(24, words=45))  # ~1300 tokens of messages
    policy = {"mode": "rule", "trigger_messages": 0, "trigger_words": 0, "protect_tail": 2}
    prompt = await store.build_prompt(AGENT, episode, "Be brief.", 1000, policy=policy)
    assert prompt.summarized is not None and prompt.summarized.folded > 0, prompt.summarized
    assert prompt.dropped_messages == 0 and prompt.tokens <= 1000


async def test_a_budget_too_small_for_the_system_prompt_writes_nothing(
        store: MemoryStore) -> None:
    episode = await episode_with(store, turns(12))
    try:
        await store.build_prompt(AGENT, episode, "word " * 50, 20,
                                 policy={"mode": "rule", "trigger_messages": 4,
                                         "min_messages": 1})
    except InvalidInputError as exc:
        assert exc.problems[0].field == "budget_tokens"
    else:
        raise AssertionError("a 20-token budget cannot hold a 50-word system prompt")
    assert await store.summary_history(AGENT, episode) == []  # refused before any fold


async def test_cli_refuses_force_without_run(store: MemoryStore, database_url: str,
                                             capsys: Any) -> None:
    episode = await episode_with(store, turns(12))
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["--database-url", database_url, "episodes",
                                          "summary", episode, "--agent", AGENT, "--force"])
    out, err = capsys.readouterr()
    assert code != 0 and "force" in err and "--run" in err, (out, err)
    assert await store.summary_history(AGENT, episode) == []
