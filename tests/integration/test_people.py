"""Several people, one assistant: whose a memory is, who is asking, and nothing of one
person's in another's reads (people/)."""

from __future__ import annotations

import json

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.errors import InvalidInputError, NotFoundError
from nous_memory.facts.learning import LearnAction
from nous_memory.memories.kinds import Status

AS_OF = "2026-03-20T10:00:00Z"


async def _private(store: MemoryStore, agent: str, user: str, *turns: str,
                   day: str = "2026-03-01") -> None:
    """A closed one-to-one conversation of ``user`` with the assistant."""
    episode = await store.start_episode(agent, user_id=user)
    await store.append(agent, episode.id, [
        {"role": "user" if i % 2 == 0 else "assistant", "content": text,
         "created_at": f"{day}T10:{i:02d}:00Z"} for i, text in enumerate(turns)])
    await store.close_episode(agent, episode.id)


async def _household(store: MemoryStore) -> None:
    await _private(store, "h", "ana", "I'm vegetarian and I live in Lisbon with my cat Miso.",
                   "Noted, Ana.")
    await _private(store, "h", "ben", "I eat everything, and I live in Berlin.",
                   "Got it.", "My dog Rex needs a walker this week.", "I can help.",
                   day="2026-03-05")
    await store.worker().drain()


async def test_one_person_never_reads_anothers_private_memory(store: MemoryStore) -> None:
    await _household(store)
    for question in ("Where do I live?", "What should I cook tonight?", "What is my pet?"):
        ben = await store.assemble_context("h", question, user="ben", as_of=AS_OF,
                                           budget_tokens=800)
        assert not any(w in ben.text for w in ("Lisbon", "Miso", "vegetarian")), ben.text
        recalled = await store.recall("h", question, user="ben", k=20, as_of=AS_OF)
        assert not any("Lisbon" in i.text or "Miso" in i.text for i in recalled.items)
        ana = await store.assemble_context("h", question, user="Ana", as_of=AS_OF,
                                           budget_tokens=800)
        assert not any(w in ana.text for w in ("Berlin", "Rex")), ana.text
    owner = await store.recall("h", "Where does everyone live?", k=20, as_of=AS_OF)
    assert {"Lisbon", "Berlin"} <= {w for i in owner.items for w in ("Lisbon", "Berlin")
                                    if w in i.text}


async def test_the_askers_own_value_is_their_current_one(store: MemoryStore) -> None:
    await _household(store)
    ana = await store.assemble_context("h", "Where do I live?", user="ana", as_of=AS_OF,
                                       budget_tokens=600)
    now = ana.text.split("## ")[1]
    assert now.startswith("About the user now") and "Lisbon" in now, ana.text
    assert "(older" not in now, ana.text  # Ben's city supersedes nothing of hers
    facts = [m for m in (await store.list("h", kind="fact", limit=100)).items]
    homes = {m.people[0]: m for m in facts if "live" in m.summary}
    assert homes["ana"].status is Status.ACTIVE and homes["ben"].status is Status.ACTIVE


async def test_supersession_is_per_person(store: MemoryStore) -> None:
    first = await store.learn_fact("p", "I live in Lisbon.", user="ana")
    other = await store.learn_fact("p", "I live in Berlin.", user="ben")
    assert other.action is LearnAction.CREATED, other
    moved = await store.learn_fact("p", "I moved to Porto.", user="ana")
    assert moved.action is LearnAction.SUPERSEDED and moved.related == [first.fact.id]
    assert (await store.get("p", other.fact.id)).status is Status.ACTIVE
    same = await store.learn_fact("p", "I live in Berlin.", user="ana")
    assert same.action is not LearnAction.CONFIRMED or same.fact.id != other.fact.id
    assert same.fact is not None and same.fact.people == ["ana"]


async def test_what_is_said_for_a_group_is_the_groups(store: MemoryStore) -> None:
    """Said in the group, "our" is the group's; said to the assistant alone, "we" is the
    speaker's own circle and stays theirs; the backend's own facts are everyone's."""
    said = await store.learn_fact("g", "Our wifi network is called Otter.")
    assert said.fact is not None and said.fact.people == []
    episode = await store.start_episode("g")
    await store.append("g", episode.id, [
        {"role": "user", "user": "ana", "content": "Our landlord is Mr Patel."},
        {"role": "user", "user": "ben", "content": "Thanks, I'll call him."}])
    await store.close_episode("g", episode.id)
    await _private(store, "g", "ana", "Our derby team is the Clyde Crushers.", "Nice.")
    await store.worker().drain()
    ben = await store.assemble_context("g", "What is the wifi called?", user="ben",
                                       as_of=AS_OF, budget_tokens=600)
    assert "Otter" in ben.text
    landlord = await store.recall("g", "landlord", user="ben", kinds=["fact"], as_of=AS_OF)
    assert any("Patel" in i.text for i in landlord.items), landlord.items
    team = await store.recall("g", "derby team", user="ben", k=20, as_of=AS_OF)
    assert not any("Crushers" in i.text for i in team.items), team.items
    own = await store.recall("g", "derby team", user="ana", kinds=["fact"], as_of=AS_OF)
    assert any("Crushers" in i.text for i in own.items), own.items


async def test_a_group_conversation_is_its_peoples_and_its_facts_each_speakers(
        store: MemoryStore) -> None:
    episode = await store.start_episode("c")
    await store.append("c", episode.id, [
        {"role": "user", "name": "Ana", "content": "I just adopted a cat named Miso."},
        {"role": "user", "name": "Ben", "content": "I started working at Siemens."},
        {"role": "assistant", "content": "Congratulations to you both!"}])
    await store.close_episode("c", episode.id)
    await _private(store, "c", "cleo", "I am allergic to peanuts.", "Noted.")
    await store.worker().drain()
    assert (await store.get_episode("c", episode.id)).people == ["ana", "ben"]
    facts = {m.people[0]: m.summary for m in (await store.list("c", kind="fact")).items}
    assert "Miso" in facts["ana"] and "Siemens" in facts["ben"], facts
    ben = await store.recall("c", "What did Ana adopt?", user="ben", as_of=AS_OF)
    assert any("Miso" in i.text for i in ben.items)  # he was there: the conversation
    cleo = await store.recall("c", "What did Ana adopt?", user="cleo", as_of=AS_OF, k=20)
    assert not any("Miso" in i.text or "Siemens" in i.text for i in cleo.items)
    assert not any(m.people and m.people != ["cleo"]
                   for m in (await store.list("c", user="cleo", limit=100)).items)


async def test_expand_and_upcoming_keep_to_the_asker(store: MemoryStore) -> None:
    secret = await store.learn_fact("e", "My therapist is Dr. Alves.", user="ana")
    assert secret.fact is not None
    with pytest.raises(NotFoundError):
        await store.expand("e", secret.fact.id, user="ben")
    assert (await store.expand("e", secret.fact.id, user="ana")).memory.id == secret.fact.id
    assert (await store.expand("e", secret.fact.id)).memory.id == secret.fact.id  # owner
    await store.learn_fact("e", "My dentist appointment is on 2026-03-24 at 3pm.",
                           user="ana", valid_from="2026-03-19T10:00:00Z")
    assert (await store.upcoming("e", as_of=AS_OF, user="ana")).events
    assert not (await store.upcoming("e", as_of=AS_OF, user="ben")).events


async def test_a_bad_person_is_a_clear_error(store: MemoryStore) -> None:
    for bad in ("", "   ", "a\x00b", "x" * 200):
        with pytest.raises(InvalidInputError) as caught:
            await store.recall("h", "anything", user=bad)
        assert caught.value.problems[0].field == "user"
    with pytest.raises(InvalidInputError):
        await store.learn_fact("h", "I like tea.", user="")


async def test_a_person_is_exported_and_forgotten_alone(store: MemoryStore) -> None:
    await _household(store)
    group = await store.start_episode("h")
    await store.append("h", group.id, [
        {"role": "user", "user": "ana", "content": "Our landlord is Mr Patel."},
        {"role": "user", "user": "ben", "content": "I'll pay the rent on Friday."}])
    await store.close_episode("h", group.id)
    await store.worker().drain()
    chunks = [chunk async for chunk in store.export_agent("h", user="ana")]
    lines = b"".join(chunks).decode()
    assert "Lisbon" in lines and "Patel" in lines and "Berlin" not in lines
    (header,) = json.loads(lines.splitlines()[0]).values()
    assert header["person"] == "ana"
    erased = await store.forget_person("h", "Ana", actor="test")
    assert erased.purged.get("fact", 0) >= 1 and erased.purged.get("episode") == 1
    assert erased.left == 2  # the group conversation and its "our" fact stay Ben's
    owner = await store.recall("h", "Lisbon vegetarian Miso", k=30, include_superseded=True)
    assert not any("Lisbon" in i.text or "Miso" in i.text for i in owner.items)
    assert (await store.get_episode("h", group.id)).people == ["ben"]
    ben = await store.recall("h", "landlord", user="ben", k=10)
    assert any("Patel" in i.text for i in ben.items)
    conn = await asyncpg.connect(store.dsn)
    try:
        left = await conn.fetchval(
            "SELECT count(*) FROM episode_messages WHERE agent_id = 'h' AND "
            "(person = 'ana' OR content LIKE '%Lisbon%')")
    finally:
        await conn.close()
    assert left == 0


async def test_a_persons_word_never_reaches_anothers_through_a_shared_fact(
        store: MemoryStore) -> None:
    """Confirming, merging or bringing back a fact is within one person's facts; a shared
    fact about a person, told by the backend, is updated by their own word alone."""
    told = await store.learn_fact("s", "Ana lives in Lisbon.")
    assert told.fact is not None and told.fact.people == []
    own = await store.learn_fact("s", "Ana lives in Lisbon with her partner Rui.", user="ana")
    assert own.fact is not None and own.fact.people == ["ana"], own  # hers, beside it
    same = await store.learn_fact("s", "Ana lives in Lisbon.", user="ana")
    assert same.fact is not None and same.fact.people == ["ana"], same  # confirms hers
    history = await store.fact_history("s", told.fact.id)
    assert "Rui" not in str([e.model_dump() for e in history.events])
    assert "Rui" not in (await store.get("s", told.fact.id)).summary
    wifi = await store.learn_fact("s", "The wifi password is on the fridge.")
    said = await store.learn_fact("s", "The wifi password is on the router now.", user="ben")
    assert said.fact is not None and said.fact.people == ["ben"]
    assert wifi.fact is not None and (await store.get("s", wifi.fact.id)).status is Status.ACTIVE
    moved = await store.learn_fact("s", "I moved to Porto.", user="ana")
    assert moved.fact is not None and moved.fact.people == ["ana"]
    for who in ("ben", None):
        shown = await store.get("s", told.fact.id, user=who)
        assert shown.people == []
    with pytest.raises(NotFoundError):
        await store.get("s", own.fact.id, user="ben")
    with pytest.raises(NotFoundError):
        await store.delete("s", own.fact.id, user="ben")
    versions = await store.fact_history("s", told.fact.id, user="ben")
    assert all(v.people == [] for v in versions.chain)


async def test_a_person_appends_only_to_their_conversations(store: MemoryStore) -> None:
    hers = await store.start_episode("t", user_id="ana")
    with pytest.raises(NotFoundError):
        await store.append("t", hers.id, [{"role": "user", "content": "hi"}], user="ben")
    with pytest.raises(NotFoundError):
        await store.transcript("t", hers.id, user="ben")
    shared = await store.start_episode("t")
    await store.append("t", shared.id, [{"role": "user", "content": "I like jazz."},
                                        {"role": "assistant", "content": "Nice."}],
                       user="ben")
    said = await store.transcript("t", shared.id, user="ben")
    assert [m.person for m in said] == ["ben", None]
    assert (await store.get_episode("t", shared.id)).people == ["ben"]


async def test_an_unnamed_turn_in_a_group_bears_on_no_ones_value(store: MemoryStore) -> None:
    """In a conversation of several people whose turns carry no names, "user: I moved to
    Lisbon" cannot say whose home changed: the asker's own value stays current."""
    await _private(store, "u", "ben", "I live in Berlin, near the Spree.", "Nice.",
                   day="2026-03-01")
    group = await store.start_episode("u")
    await store.append("u", group.id, [
        {"role": "user", "user": "ana", "content": "I just moved to Lisbon, finally!",
         "created_at": "2026-03-10T10:00:00Z"},
        {"role": "user", "user": "ben", "content": "Congrats!",
         "created_at": "2026-03-10T10:01:00Z"}])
    await store.close_episode("u", group.id)
    await store.worker().drain()
    ben = await store.assemble_context("u", "Where do I live now?", user="ben", as_of=AS_OF,
                                       budget_tokens=600)
    now = ben.text.split("## ")[1]
    assert "Berlin" in now and "(older" not in now, ben.text
