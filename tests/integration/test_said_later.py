"""Never call an old value current: a later statement no rule reads as a change still keeps
the old value from being called current, and puts itself above it (by meaning and by
the values it names, not by its phrase)."""

from __future__ import annotations

from typing import Any

import pytest

from nous_memory import MemoryStore
from nous_memory.facts.learning import LearnAction
from nous_memory.memories.kinds import Status

from .test_current_truth import JAN, MAY


def _session(day: str, *turns: str) -> dict[str, Any]:
    return {"started_at": f"{day}T10:00:00+00:00",
            "turns": [{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                      for i, t in enumerate(turns)]}


def _lines(text: str, word: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if word.lower() in line.lower()]


# each: what was said first, what was said later (no change phrase a rule reads as the
# slot), the question, the old value and the new one
LATER = [
    ("My rent is 1300 a month for the flat.", "Ugh, the landlord put my rent up to 1450.",
     "How much rent do I pay?", "1300", "1450"),
    ("Our standup is at 9:00 every morning.", "The standup moved to 9:30, finally some sleep.",
     "What time is standup?", "9:00", "9:30"),
]


@pytest.mark.parametrize(("first", "later", "question", "old", "new"), LATER)
async def test_a_later_statement_keeps_the_old_value_from_being_current(
        store: MemoryStore, first: str, later: str, question: str, old: str,
        new: str) -> None:
    await store.ingest("a", [_session("2024-01-10", first, "Noted."),
                             _session("2024-05-10", later, "Got it.")])
    await store.worker().drain()
    ctx = await store.assemble_context("a", question, budget_tokens=600,
                                       as_of="2024-06-10T10:00:00Z")
    text = ctx.text
    stating_old = [line for line in text.splitlines() if old in line and new not in line]
    assert stating_old and all("(older:" in line for line in stating_old), text
    assert not any("(current" in line for line in stating_old), text
    assert min(_lines(text, new)) < min(_lines(text, old)), text
    now = text.split("## ")[1]  # "About the user now": the later statement, then the value
    assert now.startswith("About the user now") and new in now, text
    assert "(older: the user said more on 10 May 2024)" in now, text
    clean = await store.assemble_context("a", question, budget_tokens=600,
                                         as_of="2024-06-10T10:00:00Z", current_only=True)
    assert not any(old in line and new not in line for line in clean.text.splitlines())


async def test_a_mention_of_another_value_without_its_person_changes_nothing(
        store: MemoryStore) -> None:
    await store.ingest("a", [_session("2024-01-10", "I live in Lisbon with my cat.", "Nice."),
                             _session("2024-05-10", "My sister Ana moved to Seville.", "Oh!")])
    await store.worker().drain()
    ctx = await store.assemble_context("a", "Which city do I live in?", budget_tokens=600,
                                       as_of="2024-06-10T10:00:00Z")
    lisbon = [line for line in ctx.text.splitlines() if "Lisbon" in line]
    assert any("(current, since 10 Jan 2024)" in line for line in lisbon), ctx.text


async def test_a_plan_is_not_yet_the_value(store: MemoryStore) -> None:
    await store.ingest("a", [
        _session("2024-01-10", "I live in Lisbon.", "Nice."),
        _session("2024-05-10", "I'm moving to Berlin for work next month!", "Exciting!")])
    await store.worker().drain()
    ctx = await store.assemble_context("a", "Where do I live?", budget_tokens=600,
                                       as_of="2024-05-12T10:00:00Z")
    assert not any("Berlin" in line and "(current" in line
                   for line in ctx.text.splitlines()), ctx.text
    assert any("Lisbon" in line and "(current" in line
               for line in ctx.text.splitlines()), ctx.text


async def test_a_renamed_pet_supersedes_its_old_name(store: MemoryStore) -> None:
    miso = await store.learn_fact("a", "The user's cat is named Miso.", valid_from=JAN)
    tofu = await store.learn_fact("a", "The user's cat is named Tofu.", valid_from=MAY)
    assert tofu.action is LearnAction.SUPERSEDED and tofu.decided_by == "slot"
    assert miso.fact is not None
    assert (await store.get("a", miso.fact.id)).status is Status.SUPERSEDED


async def test_a_title_stays_with_its_name(store: MemoryStore) -> None:
    await store.ingest("a", [
        _session("2024-01-10", "My GP is Dr. Smith at the Elm Street practice.", "Good."),
        _session("2024-05-10", "My new GP is Dr. Okafor, she's lovely.", "Glad to hear.")])
    await store.worker().drain()
    facts = [m for m in (await store.list("a", kind="fact")).items
             if m.status is Status.ACTIVE]
    values = {m.fact.slot_value for m in facts if m.fact.slot_attribute == "gp"}
    assert values == {"dr okafor"}, [m.summary for m in facts]


async def test_two_values_stored_without_deciding_are_not_both_current(
        store: MemoryStore) -> None:
    # remember() stores what it is given (a key-value put does the same): the read decides
    await store.remember("a", "fact", content="I live in Lisbon.", valid_from=JAN)
    await store.remember("a", "fact", content="We moved to Porto.", valid_from=MAY)
    ctx = await store.assemble_context("a", "Where do I live?", budget_tokens=400,
                                       as_of="2024-06-10T10:00:00Z")
    lines = ctx.text.splitlines()
    porto = [i for i, line in enumerate(lines) if "Porto" in line]
    lisbon = [i for i, line in enumerate(lines) if "Lisbon" in line]
    assert porto and lisbon and min(porto) < min(lisbon), ctx.text
    assert "(current, since 10 May 2024)" in lines[porto[0]], ctx.text
    assert all("(older:" in lines[i] for i in lisbon), ctx.text
    clean = await store.assemble_context("a", "Where do I live?", budget_tokens=400,
                                         as_of="2024-06-10T10:00:00Z", current_only=True)
    assert "Lisbon" not in clean.text and "Porto" in clean.text


async def test_an_acknowledgement_is_not_evidence(store: MemoryStore) -> None:
    await store.ingest("a", [
        _session("2024-01-10", "My manager is Priya Shah, she runs the data team.",
                 "Got it, thanks for telling me."),
        _session("2024-05-10", "Priya moved on, my manager is Tom Berg now.",
                 "Got it, thanks for telling me.")])
    await store.worker().drain()
    ctx = await store.assemble_context("a", "Who is my manager?", budget_tokens=600,
                                       as_of="2024-06-10T10:00:00Z")
    excerpts = ctx.text.split("## Excerpts (verbatim)\n", 1)[1].splitlines()[:-1]
    assert "Got it" not in excerpts[0], ctx.text
    told = [i for i, line in enumerate(excerpts) if "Got it" not in line]
    acks = [i for i, line in enumerate(excerpts) if "Got it" in line]
    assert not acks or max(told) < min(acks), ctx.text


async def test_a_compound_statement_is_learned_as_its_facts(store: MemoryStore) -> None:
    both = await store.learn_fact("a", "I live in Lisbon and I have a dog called Pepper",
                                  valid_from=JAN)
    facts = [both, *both.also]
    assert len(facts) == 2 and all(r.action is LearnAction.CREATED for r in facts)
    slots = {(r.fact.fact.slot_attribute, r.fact.fact.slot_value)
             for r in facts if r.fact is not None}
    assert slots == {("home", "lisbon"), ("pet:dog", "pepper")}
    juno = await store.learn_fact("a", "Pepper passed away; we adopted a puppy named Juno",
                                  valid_from=MAY)
    assert juno.fact is not None and juno.fact.fact.slot_value == "juno"
    assert juno.action is LearnAction.SUPERSEDED  # the dog Juno after the dog Pepper
    moved = await store.learn_fact("a", "We moved to Porto", valid_from=MAY)
    assert moved.action is LearnAction.SUPERSEDED and moved.also == []


async def test_the_learn_tool_says_every_fact_of_a_compound_statement(
        store: MemoryStore) -> None:
    from nous_memory.tools import ToolBox

    box = ToolBox(store, agent_id="a")
    result = await box.call("memory_learn_fact",
                            {"content": "I live in Lisbon and I have a dog called Pepper"})
    assert "lives in Lisbon" in result.text and "dog called Pepper" in result.text
    assert len(result.data["also"]) == 1


async def test_recall_and_the_search_tool_do_not_call_a_value_current_said_otherwise_later(
        store: MemoryStore) -> None:
    from nous_memory.tools import ToolBox

    # a fact told to the store directly, then a conversation that no rule reads as its slot
    await store.learn_fact("a", "The user's rent is 1300 a month.", valid_from=JAN)
    await store.ingest("a", [_session("2024-05-10", "The landlord put my rent up to 1450.",
                                      "Ouch.")])
    await store.worker().drain()
    found = await store.recall("a", "How much rent do I pay?", k=5,
                               as_of="2024-06-10T10:00:00Z")
    old = [i for i in found.items if "1300" in i.text and i.kind.value == "fact"]
    assert old and all(i.current_since is None for i in old)
    assert all(i.told_again_on is not None and i.told_again_on.month == 5 for i in old)
    box = ToolBox(store, agent_id="a")
    searched = await box.call("memory_search", {"query": "How much rent do I pay?",
                                                "as_of": "2024-06-10T10:00:00Z"})
    assert not any("1300" in line and "(current" in line
                   for line in searched.text.splitlines()), searched.text


@pytest.mark.parametrize("content", [
    "I'm vegan. Please never recommend steakhouses.",  # a clause that is no fact
    "Ana said: I live in Porto and I work at Acme.",  # someone else's words
    "I moved to Berlin in 2020. Before that I lived in Lisbon.",  # one slot, two values
])
async def test_a_compound_is_learned_whole_unless_every_clause_is_the_users_own_fact(
        store: MemoryStore, content: str) -> None:
    result = await store.learn_fact("a", content)
    assert result.also == [] and result.fact is not None
    assert result.fact.fact.content == content


# each: an earlier mention of a value in passing, a later statement naming it beside its
# successor (no phrase a rule reads as a change), the question, the old value, the new one
BESIDE = [
    (("Five-a-side again tonight. Marco's our captain and he keeps me in goal. Tips?",
      "Stay big and talk to your defenders."),
     ("Marco did his ankle so Tunde took over the armband, and he's moved me to midfield. "
      "Passing drills?", "Rondos and one-touch squares."),
     "Who captains my five-a-side team?", "Marco", "Tunde"),
    (("Appointment with Dr. Okonkwo on Thursday about my back. What should I ask?",
      "Ask about triggers and exercises."),
     ("Saw Dr. Lindqvist this morning, a far better listener than Dr. Okonkwo ever was. "
      "Is physio worth it?", "Often, yes."),
     "Who's my doctor?", "Okonkwo", "Lindqvist"),
]


@pytest.mark.parametrize(("first", "later", "question", "old", "new"), BESIDE)
async def test_what_was_said_before_a_value_named_beside_its_successor_is_older(
        store: MemoryStore, first: tuple[str, str], later: tuple[str, str], question: str,
        old: str, new: str) -> None:
    await store.ingest("b", [_session("2024-01-10", *first), _session("2024-05-10", *later)])
    await store.worker().drain()
    ctx = await store.assemble_context("b", question, budget_tokens=600,
                                       as_of="2024-06-10T10:00:00Z")
    text = ctx.text
    stating_old = [line for line in text.splitlines() if old in line and new not in line]
    assert stating_old, text
    assert all("(older:" in line and "2024)" in line for line in stating_old), text
    lines = text.splitlines()
    assert min(_lines(text, new)) < lines.index(stating_old[0]), text
    clean = await store.assemble_context("b", question, budget_tokens=600,
                                         as_of="2024-06-10T10:00:00Z", current_only=True)
    assert new in clean.text  # which value holds was not read: what was said before
    # stays with current_only, marked, after the statement that said more
    kept = [line for line in clean.text.splitlines() if old in line and new not in line]
    assert all("(older:" in line for line in kept), clean.text
    assert not kept or min(_lines(clean.text, new)) < clean.text.splitlines().index(kept[0])
