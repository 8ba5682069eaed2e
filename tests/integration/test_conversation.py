"""Working memory on a real database: watermark, gaps, invalidation, chain, guards,
breaker and concurrency (LLM through the real openai client and the scripted server)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.conversation import storage
from nous_memory.conversation.pairs import content_hash
from nous_memory.conversation.prompt import PromptHolds
from nous_memory.testing import ScriptedLLMServer
from tests.integration.db_helpers import sql

AGENT = "wm-agent"
RULE = {"mode": "rule", "protect_tail": 2}


def turns(n: int, start: int = 0, words: int = 6) -> list[dict[str, Any]]:
    filler = " ".join(["detail"] * words)
    return [{"role": "user" if i % 2 == 0 else "assistant", "name": "Ana" if i % 2 == 0 else None,
             "content": f"Point {i}: Ana mentions Marker{i} {filler}."}
            for i in range(start, start + n)]


async def episode_with(store: MemoryStore, messages: list[dict[str, Any]]) -> str:
    episode = await store.start_episode(AGENT, title="working memory")
    await store.append(AGENT, episode.id, messages)
    return str(episode.id)


def fold_reply(text: str, **facets: list[str]) -> dict[str, Any]:
    return {"summary": text, "participants": facets.get("participants", ["Ana"]),
            "decisions": [], "action_items": [], "unresolved": [],
            "entities": facets.get("entities", [])}


async def test_gap_stops_the_watermark(store: MemoryStore) -> None:
    messages = turns(10)
    messages[5] = {"role": "user", "content": "   "}  # nothing to analyse: a gap
    episode = await episode_with(store, messages)
    result = await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)
    assert result.watermark_seq == 4 and result.folded == 5
    assert [(g.seq, g.reason) for g in result.gaps] == [
        (5, "empty analysis: the message has no text and no tool call")]
    again = await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)
    assert again.watermark_seq == 4 and again.folded == 0 and again.gaps[0].seq == 5
    await store.edit_message(AGENT, episode, 5, "Ana adds the missing Marker5 point.")
    fixed = await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)
    assert fixed.watermark_seq == 7 and not fixed.gaps
    summary = await store.conversation_summary(AGENT, episode)
    assert "Marker5" in summary.text and summary.text.count("Marker4 ") == 1


async def test_stale_watermark_is_detected_and_rebuilt(store: MemoryStore) -> None:
    episode = await episode_with(store, turns(10))
    first = await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)
    assert first.watermark_seq == 7
    # the watermark's message disappears behind the store's back (a hard delete)
    await sql(store, "DELETE FROM episode_messages WHERE agent_id = $1 AND episode_id = $2 "
                     "AND seq = 7", AGENT, first.episode_id)
    result = await store.summarize_conversation(AGENT, episode, policy=RULE)
    assert result.invalidated == "stale watermark: message 7 no longer exists"
    summary = await store.conversation_summary(AGENT, episode)
    for i in range(7):  # rebuilt from the raw messages: each once, never re-appended
        assert summary.text.count(f"Marker{i} ") == 1
    assert "Marker7 " not in summary.text and summary.watermark_seq == 6
    history = await store.summary_history(AGENT, episode)
    assert [(r.op, r.status) for r in history] == [("fold", "invalidated"),
                                                    ("rebuild", "current")]


async def test_analysis_tie_break_latest_wins(store: MemoryStore) -> None:
    episode = await episode_with(store, turns(6))
    ident = (await store.get_episode(AGENT, episode)).id
    rows = await store.transcript(AGENT, episode)
    digest = content_hash(rows[0].role, rows[0].content)
    conn = await asyncpg.connect(store.dsn)
    try:
        async with conn.transaction():  # one transaction: identical created_at
            for text in ("Ana: tie loser", "Ana: TIE WINNER"):
                await conn.execute(
                    "INSERT INTO conversation_analyses (agent_id, episode_id, seq, content_hash,"
                    " kind, content) VALUES ($1, $2, 0, $3, 'message', $4)",
                    AGENT, ident, digest, text)
        # an analysis with a larger id but an older created_at loses to both
        await conn.execute(
            "INSERT INTO conversation_analyses (agent_id, episode_id, seq, content_hash, kind,"
            " content, created_at) VALUES ($1, $2, 0, $3, 'message', 'Ana: too old', "
            "now() - interval '1 hour')", AGENT, ident, digest)
    finally:
        await conn.close()
    latest = await storage.latest_analyses(store.conversation._db, AGENT, ident, [0])
    assert latest[0].content == "Ana: TIE WINNER"
    await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)
    text = (await store.conversation_summary(AGENT, episode)).text
    assert text.startswith("Ana: TIE WINNER") and "loser" not in text and "too old" not in text


async def test_edit_and_delete_behind_the_watermark_rebuild(store: MemoryStore) -> None:
    episode = await episode_with(store, turns(10))
    await store.summarize_conversation(AGENT, episode, force=True, policy=RULE)
    edit = await store.edit_message(AGENT, episode, 2, "Ana now says Rewritten2 instead.")
    assert edit.invalidated and edit.versions == 2
    after_edit = await store.conversation_summary(AGENT, episode)
    assert after_edit.text == "" and after_edit.invalidated_reason == (
        "message 2 edited behind the watermark")
    rebuilt = await store.summarize_conversation(AGENT, episode, policy=RULE)
    assert rebuilt.invalidated == "message 2 edited behind the watermark"
    assert rebuilt.watermark_seq == 7
    text = (await store.conversation_summary(AGENT, episode)).text
    assert "Rewritten2" in text and "Marker2 " not in text and "Marker4 " in text
    gone = await store.delete_message(AGENT, episode, 4)
    assert gone.invalidated
    again = await store.summarize_conversation(AGENT, episode, policy=RULE)
    assert again.invalidated == "message 4 deleted behind the watermark"
    text = (await store.conversation_summary(AGENT, episode)).text
    assert "Rewritten2" in text and "Marker2 " not in text and "Marker4 " not in text
    assert text.count("Marker3 ") == 1
    # the raw text is never lost: the earlier version and the deleted row remain
    rows = await sql(store, "SELECT seq, content, deleted_at, edits FROM episode_messages "
                            "WHERE agent_id = $1 AND seq IN (2, 4) ORDER BY seq", AGENT)
    assert rows[0]["edits"] and "Marker2" in rows[0]["edits"]
    assert rows[1]["deleted_at"] is not None and "Marker4" in rows[1]["content"]
    # a change past the watermark does not invalidate anything
    tail_edit = await store.edit_message(AGENT, episode, 9, "Ana: late Marker9b.")
    assert not tail_edit.invalidated


async def test_depth_cap_degrades_to_compaction(llm_store: MemoryStore,
                                                llm_server: ScriptedLLMServer) -> None:
    policy = {"mode": "llm", "protect_tail": 1, "max_chain_depth": 1}
    episode = await episode_with(llm_store, turns(3, words=40))
    llm_server.reply_json(fold_reply("Ana raised Marker0 and Marker1."))
    one = await llm_store.summarize_conversation(AGENT, episode, force=True, policy=policy)
    await llm_store.append(AGENT, episode, turns(2, start=3, words=40))
    llm_server.reply_json(fold_reply("Ana raised Marker0 to Marker3."))
    two = await llm_store.summarize_conversation(AGENT, episode, force=True, policy=policy)
    await llm_store.append(AGENT, episode, turns(2, start=5, words=40))
    three = await llm_store.summarize_conversation(AGENT, episode, force=True, policy=policy)
    assert (one.source, two.source, three.source) == ("llm", "llm", "rule")
    assert three.op == "compaction" and three.watermark_seq == 5  # it never stops
    assert len(llm_server.requests) == 2  # no recursive LLM call past the cap
    history = await llm_store.summary_history(AGENT, episode)
    assert [(r.op, r.depth, r.parent_id) for r in history] == [
        ("fold", 0, None), ("fold", 1, history[0].id), ("compaction", 0, history[1].id)]
    assert "reached: compaction" in " ".join(three.reasons)


async def test_llm_output_over_target(llm_store: MemoryStore,
                                      llm_server: ScriptedLLMServer) -> None:
    policy = {"mode": "llm", "protect_tail": 1, "summary_max_chars": 400, "target_chars": 200}
    episode = await episode_with(llm_store, turns(4, words=120))
    llm_server.reply_json(fold_reply("Ana covered Marker0 to Marker2. " * 9))  # 297 chars
    over_target = await llm_store.summarize_conversation(AGENT, episode, force=True,
                                                         policy=policy)
    assert over_target.source == "llm" and any("over target" in r for r in over_target.reasons)
    await llm_store.append(AGENT, episode, turns(4, start=4, words=120))
    llm_server.reply_json(fold_reply("Ana listed every marker again in full. " * 14))
    llm_server.reply_json(fold_reply("Ana: Marker0-Marker6, short."))  # the compaction
    over_max = await llm_store.summarize_conversation(AGENT, episode, force=True, policy=policy)
    summary = await llm_store.conversation_summary(AGENT, episode)
    assert summary.chapter == "Ana: Marker0-Marker6, short." and summary.source == "llm"
    assert any("compacted by the LLM" in r for r in over_max.reasons)
    assert [r["messages"][0]["content"][:7] for r in llm_server.requests][-1] == "Shorten"


async def test_over_budget_compaction_with_llm_failure_falls_back_to_rules(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer) -> None:
    policy = {"mode": "llm", "protect_tail": 1, "summary_max_chars": 300, "target_chars": 150}
    episode = await episode_with(llm_store, turns(4, words=150))
    long = "Ana went through Marker0, Marker1 and Marker2 in detail. " * 8
    llm_server.reply_json(fold_reply(long))
    llm_server.fail(500)
    llm_server.fail(503)  # the compaction: one try and one retry, both fail
    result = await llm_store.summarize_conversation(AGENT, episode, force=True, policy=policy)
    text = (await llm_store.conversation_summary(AGENT, episode)).chapter
    # the rule compaction keeps whole sentences of the summary, the ones naming most
    assert 0 < len(text) <= 150 and text in long
    assert all(name in text for name in ("Ana", "Marker0", "Marker1", "Marker2"))
    assert any("llm compaction failed" in r for r in result.reasons)
    assert any("compacted by rules" in r for r in result.reasons)
    assert llm_server.pending == 0


async def test_not_smaller_summary_is_rejected(llm_store: MemoryStore,
                                               llm_server: ScriptedLLMServer) -> None:
    episode = await episode_with(llm_store, turns(4, words=2))
    llm_server.reply_json(fold_reply("A very long rewrite that says far more than before. " * 20))
    result = await llm_store.summarize_conversation(
        AGENT, episode, force=True, policy={"mode": "llm", "protect_tail": 1})
    assert result.source == "rule" and result.folded == 3
    assert any("not smaller" in r for r in result.reasons)
    summary = await llm_store.conversation_summary(AGENT, episode)
    assert "far more" not in summary.text and "Marker2" in summary.text
    assert summary.breaker_failures == 1


async def test_breaker_opens_and_recovers(llm_store: MemoryStore,
                                          llm_server: ScriptedLLMServer) -> None:
    policy = {"mode": "llm", "protect_tail": 0, "breaker_cooldown_s": 0.5, "max_chain_depth": 9}
    episode = await episode_with(llm_store, turns(1))
    for i in range(1, 6):
        if i <= 3:
            llm_server.reply_text("not json at all")  # invalid output: never retried
        elif i == 5:
            await asyncio.sleep(0.6)  # the cooldown passes: one LLM try is allowed
            llm_server.reply_json(fold_reply(f"Ana: Marker0 to Marker{i - 1}."))
        result = await llm_store.summarize_conversation(AGENT, episode, force=True,
                                                        policy=policy)
        state = await llm_store.conversation_summary(AGENT, episode)
        if i < 3:
            assert state.breaker_failures == i and state.breaker_open_until is None
        elif i in (3, 4):
            assert state.breaker_failures == 3 and state.breaker_open_until is not None
        if i == 4:
            assert result.source == "rule" and any("breaker open" in r for r in result.reasons)
        await llm_store.append(AGENT, episode, turns(1, start=i))
    assert result.source == "llm", result.reasons
    assert state.breaker_failures == 0 and state.breaker_open_until is None
    assert len(llm_server.requests) == 4  # three failures, none while open, one recovery


async def test_two_concurrent_workers_fold_once(llm_store: MemoryStore,
                                                llm_server: ScriptedLLMServer) -> None:
    episode = await episode_with(llm_store, turns(8, words=20))
    for _ in range(2):
        llm_server.reply_json(fold_reply("Ana: Marker0 to Marker5."), delay_s=0.3)
    policy = {"mode": "llm", "protect_tail": 2}
    results = await asyncio.gather(*(
        llm_store.summarize_conversation(AGENT, episode, force=True, policy=policy)
        for _ in range(2)))
    assert sorted(r.lost_race for r in results) == [False, True]
    history = await llm_store.summary_history(AGENT, episode)
    assert len(history) == 1 and history[0].last_seq == 5
    assert (await llm_store.conversation_summary(AGENT, episode)).watermark_seq == 5
    # the loser's LLM answer was dropped whole: the summary is the winner's, once
    assert (await llm_store.conversation_summary(AGENT, episode)).chapter == (
        "Ana: Marker0 to Marker5.")
    assert len(llm_server.requests) == 2


@pytest.mark.parametrize("budget", [40, 120, 400, 2000])
async def test_build_prompt_never_over_budget(store: MemoryStore, budget: int) -> None:
    messages = turns(30, words=30)
    messages[20:22] = [
        {"role": "assistant", "content": "", "metadata": {"tool_calls": [
            {"id": "t1", "type": "function",
             "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]}},
        {"role": "tool", "content": "a.txt\nb.txt\n" * 50, "tool_call_id": "t1",
         "name": "bash"}]
    episode = await episode_with(store, messages)

    async def context(agent_id: str, query: str, budget_tokens: int,
                      holds: PromptHolds | None) -> str:
        assert agent_id == AGENT and query == "Marker"
        assert holds is not None and str(holds.episode_id) == str(episode)  # its tail: not repeated
        return "Known: Ana likes Lisbon. " * 200  # far over its share: it is cut

    store.conversation.context_provider = context
    prompt = await store.build_prompt(
        AGENT, episode, "You are a helpful assistant.", budget, query="Marker",
        policy={"mode": "rule", "trigger_messages": 10, "min_messages": 1})
    from nous_memory.conversation.prompt import prompt_tokens
    assert prompt.tokens == prompt_tokens(prompt.messages) <= budget
    roles = [m["role"] for m in prompt.messages]
    assert roles[0] == "system"
    first_tail = prompt.messages[len(prompt.messages) - prompt.tail_messages:]
    assert not first_tail or first_tail[0]["role"] != "tool"  # never an orphaned result
    if budget >= 400:
        assert prompt.summary_tokens > 0 and prompt.context_tokens > 0, prompt.messages[:3]
        injected = [m["content"] for m in prompt.messages[1:3]]
        assert injected[0].startswith('<nous-memory kind="summary">')
        assert injected[1].startswith('<nous-memory kind="context">')
        from nous_memory import blocks
        assert all(blocks.strip(text) == "" for text in injected)


async def test_chapters_fold_into_a_flat_story(store: MemoryStore) -> None:
    policy = {"mode": "rule", "protect_tail": 1, "chapter_messages": 4,
              "summary_max_chars": 600, "target_chars": 450}
    episode = await episode_with(store, turns(5, words=25))
    sizes = []
    for round_no in range(1, 7):
        result = await store.summarize_conversation(AGENT, episode, force=True, policy=policy)
        assert "chapter closed into the story (rule)" in result.reasons
        summary = await store.conversation_summary(AGENT, episode)
        assert summary.chapter == "" and summary.summary_id is None  # a new chapter begins
        sizes.append(len(summary.story))
        await store.append(AGENT, episode, turns(4, start=1 + 4 * round_no, words=25))
    assert all(0 < size <= 150 for size in sizes)  # a third of the 450-char target
    assert max(sizes[2:]) - min(sizes[2:]) < 40  # about flat as chapters accumulate
    stories = [r for r in await store.summary_history(AGENT, episode) if r.level == "story"]
    assert len(stories) == 6 and stories[-1].covered == 24
    assert [s.parent_id for s in stories[1:]] == [s.id for s in stories[:-1]]


async def test_an_edit_during_a_fold_makes_it_lose(llm_store: MemoryStore,
                                                   llm_server: ScriptedLLMServer) -> None:
    episode = await episode_with(llm_store, turns(6, words=20))
    llm_server.reply_json(fold_reply("Ana: Marker0 to Marker3."), delay_s=0.5)
    folding = asyncio.create_task(llm_store.summarize_conversation(
        AGENT, episode, force=True, policy={"mode": "llm", "protect_tail": 2}))
    for _ in range(1000):  # until the fold is waiting for the model
        if llm_server.requests:
            break
        await asyncio.sleep(0.02)
    await llm_store.edit_message(AGENT, episode, 1, "Ana corrects it: Fixed1.")
    result = await folding
    assert result.lost_race and await llm_store.summary_history(AGENT, episode) == []
    redo = await llm_store.summarize_conversation(AGENT, episode, force=True,
                                                  policy={"mode": "rule", "protect_tail": 2})
    assert redo.folded == 4
    assert "Fixed1" in (await llm_store.conversation_summary(AGENT, episode)).text


async def test_prompt_leaves_llm_folds_to_the_worker(llm_store: MemoryStore,
                                                     llm_server: ScriptedLLMServer) -> None:
    episode = await episode_with(llm_store, turns(8))
    policy = {"trigger_messages": 8, "min_messages": 1, "protect_tail": 2}
    prompt = await llm_store.build_prompt(AGENT, episode, "Be kind.", 2000, policy=policy)
    assert prompt.summarized is not None and prompt.summarized.deferred
    assert prompt.tail_messages == 8 and not llm_server.requests  # no LLM on this path
    llm_server.reply_json(fold_reply("Ana went over Marker0 to Marker5."))
    assert await llm_store.worker().drain() == 1
    summary = await llm_store.conversation_summary(AGENT, episode)
    assert summary.source == "llm" and summary.watermark_seq == 5
    usage = await llm_store.llm_usage(AGENT)
    assert [(u.purpose, u.ok_calls) for u in usage] == [("conversation_fold", 1)]
    # an emergency cannot wait for the worker: rules fold it now
    await llm_store.append(AGENT, episode, turns(12, start=8, words=400))
    urgent = await llm_store.build_prompt(AGENT, episode, "Be kind.", 2000,
                                          policy={**policy, "window_tokens": 2000})
    assert urgent.summarized is not None and urgent.summarized.source == "rule"
    assert urgent.summarized.folded > 0 and len(llm_server.requests) == 1
