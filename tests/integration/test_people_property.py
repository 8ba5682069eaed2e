"""A property of people: whatever random people say, through whichever write face, nothing
one of them says in private reaches another's read, on any read face.

Each seed writes random statements for random people of one agent: ``learn_fact``,
``remember``, a private conversation (``start_episode(user_id=)``), an imported private
session, a group conversation (each turn its speaker's) and the backend's own shared
facts.  Each statement carries a word made for it.  Then every person reads (context,
recall, ``expand`` of every recalled memory, ``list``, ``upcoming``) with queries made of
everyone's words, and no word said only in another person's private writes may appear.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from nous_memory import MemoryStore

PEOPLE = ("ana", "ben", "cleo", "dev")
TEMPLATES = ("I live in {w}.", "My cat is called {w}.", "I work at {w} now.",
             "My dentist is Dr. {w}.", "I love {w} more than anything.",
             "My gym is {w} on Fridays.", "I moved to {w} last month.",
             "My appointment at {w} is on 2026-04-02 at 3pm.")
FACES = ("learn", "remember", "episode", "import", "group", "shared")


def _word(rng: random.Random) -> str:
    return "Zq" + "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou")
                          for _ in range(3))


@pytest.mark.parametrize("seed", range(6))
async def test_nothing_private_reaches_another_person(store: MemoryStore, seed: int) -> None:
    rng = random.Random(seed)
    agent = f"property-{seed}"
    private: dict[str, set[str]] = defaultdict(set)  # person -> words only they said alone
    heard: dict[str, set[str]] = defaultdict(set)  # person -> words they may read
    words: list[str] = []
    for step in range(14):
        person, face, word = rng.choice(PEOPLE), rng.choice(FACES), _word(rng)
        text = rng.choice(TEMPLATES).format(w=word)
        words.append(word)
        day = f"2026-03-{1 + step:02d}T10:00:00Z"
        if face == "learn":
            await store.learn_fact(agent, text, user=person, valid_from=day)
        elif face == "remember":
            await store.remember(agent, "fact", content=text, user=person)
        elif face == "episode":
            episode = await store.start_episode(agent, user_id=person)
            await store.append(agent, episode.id, [
                {"role": "user", "content": text, "created_at": day},
                {"role": "assistant", "content": "Noted.", "created_at": day}])
            await store.close_episode(agent, episode.id)
        elif face == "import":
            await store.ingest(agent, [{"started_at": day, "user": person, "turns": [
                {"role": "user", "content": text},
                {"role": "assistant", "content": "Noted."}]}])
        elif face == "group":
            other = rng.choice([p for p in PEOPLE if p != person])
            episode = await store.start_episode(agent)
            await store.append(agent, episode.id, [
                {"role": "user", "user": person, "content": text, "created_at": day},
                {"role": "user", "user": other, "content": "Nice!", "created_at": day}])
            await store.close_episode(agent, episode.id)
            heard[other].add(word)
        else:
            await store.learn_fact(agent, text, valid_from=day)
            for someone in PEOPLE:
                heard[someone].add(word)
            continue
        heard[person].add(word)
        if face != "group":
            private[person].add(word)
    await store.worker().drain()
    for asker in PEOPLE:
        forbidden = {w for p, ws in private.items() if p != asker for w in ws} - heard[asker]
        seen: list[str] = []
        for query in (" ".join(rng.sample(words, min(5, len(words)))), "Where do I live?",
                      "what is my cat called", "who is my dentist"):
            context = await store.assemble_context(agent, query, user=asker,
                                                   as_of="2026-03-30T10:00:00Z")
            recalled = await store.recall(agent, query, user=asker, k=50,
                                          include_superseded=True)
            seen += [context.text, *(i.text for i in recalled.items)]
            for item in recalled.items:
                expanded = await store.expand(agent, item.memory_id, user=asker)
                seen.append(expanded.memory.summary)
                seen += [m.content for m in expanded.transcript.messages] if (
                    expanded.transcript is not None) else []
                seen += [m.summary for m in expanded.chain]
        seen += [m.summary for m in (await store.list(agent, user=asker, limit=200)).items]
        seen += [e.text for e in (await store.upcoming(
            agent, user=asker, as_of="2026-03-30T10:00:00Z", days=30)).events]
        found = {w for w in forbidden if any(w in text for text in seen)}
        assert not found, (asker, found)
        # and what is theirs is there: the owner's reads are not emptied by people
        mine = " ".join(seen)
        assert any(w in mine for w in heard[asker]) or not heard[asker]
