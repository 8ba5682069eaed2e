"""Ranking as a user sees it: meaning over word counts, the time a question names, the
newest statement first, a fact and its turn shown once, pins and a relevance floor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from nous_memory import MemoryStore
from nous_memory.context.assembly import PIN_BUDGET_TOKENS
from nous_memory.context.model import Section

ASKED = datetime(2023, 5, 30, 18, 0, tzinfo=UTC)


async def session(store: MemoryStore, agent: str, at: datetime,
                  turns: list[tuple[str, str]]) -> Any:
    """One past conversation, imported and processed (closed without an LLM)."""
    result = await store.ingest(agent, [{
        "started_at": at.isoformat(),
        "turns": [{"role": role, "content": text,
                   "at": (at + timedelta(seconds=i)).isoformat()}
                  for i, (role, text) in enumerate(turns)]}])
    await store.worker().drain()
    return result.episode_ids[0]


async def test_a_closer_meaning_wins_over_a_shorter_text(store: MemoryStore) -> None:
    for content in ["Ana is vegetarian", "Ana moved to Lisbon", "Bo plays the cello",
                    "The car needs new tyres", "Ana's birthday is in June"]:
        await store.remember("ana", "fact", content=content)
    result = await store.recall("ana", "where does Ana live?", k=3)
    assert result.items[0].text == "Ana moved to Lisbon"
    by_text = {i.text: i for i in result.items}
    assert by_text["Ana moved to Lisbon"].scores.cosine > (  # type: ignore[operator]
        by_text["Ana is vegetarian"].scores.cosine)


async def test_the_time_a_question_names_favours_that_session(store: MemoryStore) -> None:
    episodes = {}
    for weeks in (1, 2, 5, 8):
        at = ASKED - timedelta(weeks=weeks)
        episodes[weeks] = await session(store, "gardener", at, [
            ("user", f"Today I repotted some plants and watered the herb garden ({weeks})."),
            ("assistant", "Great, herbs like basil need regular watering.")])
    result = await store.recall("gardener", "What did I do in the garden two weeks ago?",
                                k=3, as_of=ASKED)
    assert result.window is not None
    assert result.window.start <= ASKED - timedelta(weeks=2) < result.window.end
    assert all(i.memory_id == episodes[2] and i.scores.time > 0 for i in result.items)
    # asked today with no as_of, the same question names another time
    today = await store.recall("gardener", "What did I do in the garden two weeks ago?", k=3)
    assert today.window is not None and today.window.start > ASKED


async def test_the_newest_statement_comes_first(store: MemoryStore) -> None:
    await session(store, "fit", ASKED - timedelta(days=120), [
        ("user", "I've been using my Fitbit Charge 3 for 6 months now and love it."),
        ("assistant", "That's great to hear!")])
    await session(store, "fit", ASKED - timedelta(days=20), [
        ("user", "I've been using my Fitbit Charge 3 for 9 months now and still love it."),
        ("assistant", "Nice, it is a solid tracker.")])
    result = await store.recall("fit", "How long have I been using my Fitbit Charge 3?",
                                k=5, kinds=["episode"], as_of=ASKED)
    texts = [i.text for i in result.items if i.source == "chunk"]
    assert "9 months" in texts[0] and any("6 months" in t for t in texts[1:])
    context = await store.assemble_context("fit", "How long have I been using my Fitbit "
                                                  "Charge 3?", as_of=ASKED)
    newer = (ASKED - timedelta(days=20)).strftime("%-d %b %Y")
    assert context.text.index("9 months") < context.text.index("6 months")
    assert f"({(ASKED - timedelta(days=20)):%a} {newer})" in context.text  # dated


async def test_a_rule_fact_and_its_turn_are_one_item(store: MemoryStore) -> None:
    episode = await session(store, "mover", ASKED - timedelta(days=3), [
        ("user", "Big news: I moved to Lisbon last month with my partner."),
        ("assistant", "Congratulations on the move!")])
    facts = (await store.list("mover", kind="fact")).items
    assert facts and all(f.fact.source_seq == 0 for f in facts)
    result = await store.recall("mover", "Where did I move to?", k=5, as_of=ASKED)
    said = [i for i in result.items if i.source == "chunk" and "Lisbon" in i.text]
    assert said and said[0].memory_id == episode
    assert not [i for i in result.items if i.kind.value == "fact"]  # merged into the turn
    only_facts = await store.recall("mover", "Where did I move to?", k=5, kinds=["fact"])
    assert only_facts.items and only_facts.items[0].kind.value == "fact"
    assert only_facts.items[0].message_metadata  # its turn's metadata: credited to it
    context = await store.assemble_context("mover", "Where did I move to?", as_of=ASKED)
    # the turn as said, among the excerpts; the fact only as the current value "about the
    # user now", never a third time among the recalled facts
    assert f"[{said[0].ref}]" in context.text
    assert context.text.count("The user moved to Lisbon") == 1
    assert [i.section for i in context.items if i.kind == "fact"] == [Section.NOW]
    facts_only = await store.assemble_context("mover", "Where did I move to?", as_of=ASKED,
                                              sections=["facts", "excerpts"])
    assert "The user moved to Lisbon" not in facts_only.text  # merged into its turn


async def test_an_unrelated_memory_stays_out_of_the_context(store: MemoryStore) -> None:
    for content in ["Ana is vegetarian", "Bo plays the cello", "The cat is called Miso",
                    "The user's favourite colour is green"]:
        await store.learn_fact("team", content, category="preference")
    await store.remember("team", "fact", content="The billing migration is on 14 April")
    context = await store.assemble_context("team", "when is the migration?")
    assert "billing migration" in context.text
    for unrelated in ("vegetarian", "cello", "Miso", "green"):
        assert unrelated not in context.text


async def test_pins_scale_with_hundreds_of_user_stated_facts(store: MemoryStore) -> None:
    topics = ["plays tennis on Sundays", "drives a blue Volvo", "collects vinyl records",
              "works as a nurse", "grows tomatoes", "sings in a choir"]
    people = [f"Friend{n}" for n in range(84)]
    items = [{"kind": "fact", "content": f"{p} {t}", "category": "person"}
             for p in people for t in topics][:500]
    relevant = ["The user is allergic to shellfish", "The user cannot eat peanuts",
                "The user is lactose intolerant"]
    items += [{"kind": "fact", "content": c, "category": "preference"} for c in relevant]
    for first in range(0, len(items), 100):
        await store.remember_many("pins", items[first:first + 100])
    context = await store.assemble_context("pins", "Which food allergies do I have?",
                                           budget_tokens=1000)
    assert context.tokens_used <= 1000
    for content in relevant:
        assert content in context.text
    pinned = [line for line in context.text.splitlines() if line.startswith("[fact:")]
    assert sum(len(line) for line in pinned) < 4 * 1000
    assert not any("Friend" in line for line in pinned[:3])  # the relevant ones first
    assert PIN_BUDGET_TOKENS < 1000
