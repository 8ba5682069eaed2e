"""What is true now: facts supersede by slot in the order things were said, the context
puts the current value first and marks old ones, plans ahead are upcoming, and turns
with nothing of their own stay out — through every surface."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.facts.learning import LearnAction
from nous_memory.memories.kinds import Status
from nous_memory.tools import ToolBox

from .db_helpers import sql
from .test_cli_facts import run_main

JAN, MAY, JUL = (datetime(2024, m, 10, 10, tzinfo=UTC) for m in (1, 5, 7))


def _session(day: str, *turns: str) -> dict[str, Any]:
    return {"started_at": f"{day}T10:00:00+00:00",
            "turns": [{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                      for i, t in enumerate(turns)]}


MOVE = [_session("2024-01-10", "I live in Lisbon and work at a bakery.",
                 "Happy to help with that."),
        _session("2024-02-10", "Can you suggest a good day hike?", "Sintra is a lovely day."),
        _session("2024-05-20", "We moved to Porto last month, still unpacking.",
                 "Thanks for the update!")]


async def test_a_value_said_later_supersedes_whatever_the_order_learned(
        store: MemoryStore) -> None:
    porto = await store.learn_fact("a", "The user lives in Porto.", valid_from=MAY)
    assert porto.fact is not None
    lisbon = await store.learn_fact("a", "The user lives in Lisbon.", valid_from=JAN)
    # said before the current value: history, never current
    assert lisbon.action is LearnAction.PAST and lisbon.related == [porto.fact.id]
    assert lisbon.fact is not None and lisbon.fact.status is Status.SUPERSEDED
    assert lisbon.fact.fact.valid_until == MAY
    current = await store.get("a", porto.fact.id)
    assert current.status is Status.ACTIVE
    braga = await store.learn_fact("a", "The user moved to Braga.", valid_from=JUL)
    assert braga.action is LearnAction.SUPERSEDED and braga.decided_by == "slot"
    assert braga.fact is not None
    history = await store.fact_history("a", braga.fact.id)
    assert [m.fact.slot_value for m in history.chain] == [
        "lisbon", "porto", "braga"]
    assert [m.status for m in history.chain] == [Status.SUPERSEDED, Status.SUPERSEDED,
                                                 Status.ACTIVE]


@pytest.mark.parametrize(("first", "second"), [
    ("Dev's sister Kalopa works as a ririra maker.", "Dev's sister Ririba works as a rarari "
                                                     "maker."),
    ("My colleague Tomas plays the bassoon in an orchestra.", "My colleague Ilse plays the "
                                                              "oboe in an orchestra."),
    ("Ana's brother Joao lives in Faro near the beach.", "Ana's brother Rui lives in Tavira "
                                                         "near the beach."),
])
async def test_another_subject_in_the_same_frame_is_another_fact(
        store: MemoryStore, first: str, second: str) -> None:
    a = await store.learn_fact("k", first)
    b = await store.learn_fact("k", second)
    assert a.action is LearnAction.CREATED
    assert b.action is LearnAction.CREATED, (b.decided_by, b.similarity)
    assert a.fact is not None and b.fact is not None and b.fact.id != a.fact.id


async def test_importing_the_newer_sessions_first_keeps_the_newest_current(
        store: MemoryStore) -> None:
    await store.ingest("rev", list(reversed(MOVE)))
    await store.worker().drain()
    homes = [m for m in (await store.list("rev", kind="fact",
                                          status=["active", "superseded"])).items
             if m.fact.slot_attribute == "home"]
    state = {m.fact.slot_value: m.status for m in homes}
    assert state == {"porto": Status.ACTIVE, "lisbon": Status.SUPERSEDED}


async def test_the_context_says_what_is_current_and_marks_what_is_not(
        store: MemoryStore) -> None:
    await store.ingest("u", MOVE)
    await store.worker().drain()
    query = "Which city do I live in these days?"
    context = await store.assemble_context("u", query, budget_tokens=400, as_of=JUL)
    lines = context.text.splitlines()
    now = lines.index("## About the user now")
    assert "Porto" in lines[now + 1] and "(current, since 20 May 2024)" in lines[now + 1]
    porto = min(i for i, line in enumerate(lines) if "Porto" in line)
    old = [i for i, line in enumerate(lines) if "Lisbon" in line]
    assert old and all("(older: superseded on 20 May 2024)" in lines[i] for i in old)
    assert porto < min(old)
    assert "Happy to help" not in context.text and "Thanks for the update" not in context.text
    clean = await store.assemble_context("u", query, budget_tokens=400, as_of=JUL,
                                         current_only=True)
    assert "Porto" in clean.text and "Lisbon" not in clean.text
    before = await store.recall("u", "Where did I live before?", k=5, as_of=JUL)
    earlier = [i for i in before.items if "Lisbon" in i.text]
    assert earlier and earlier[0].stale_since is not None  # history stays reachable, marked
    recalled = await store.recall("u", query, k=5, as_of=JUL)
    texts = [i.text for i in recalled.items]
    assert "Porto" in texts[0]
    assert not any("Happy to help" in t or "Thanks for the update" in t for t in texts)


async def test_upcoming_shows_plans_ahead_at_their_current_date(store: MemoryStore) -> None:
    await store.ingest("p", [
        _session("2024-02-01", "The grant report is due on 20 February.", "OK."),
        _session("2024-02-10", "The grant report is now due on 3 March.", "OK."),
        _session("2024-02-10", "I have a job interview on 5 February at 10am.", "Good luck!"),
        _session("2024-02-10", "My dentist appointment is tomorrow at 9am.", "OK.")])
    await store.worker().drain()
    soon = await store.upcoming("p", days=30, as_of="2024-02-11T08:00:00Z")
    assert [(e.event_at, "dentist" in e.text or "3 March" in e.text) for e in soon.events] == [
        (datetime(2024, 2, 11, 9, tzinfo=UTC), True), (datetime(2024, 3, 3, tzinfo=UTC), True)]
    context = await store.assemble_context("p", "What do I have coming up?",
                                           as_of="2024-02-11T08:00:00Z", budget_tokens=600)
    section = context.text.split("## Upcoming\n", 1)[1].split("\n## ", 1)[0]
    assert "(Sun 11 Feb 2024 09:00)" in section and "20 February" not in section
    later = await store.upcoming("p", days=7, as_of="2024-03-04T00:00:00Z")
    assert later.events == []  # what has happened is no longer upcoming


async def test_every_surface_has_current_only_and_upcoming(
        store: MemoryStore, client: httpx.AsyncClient, database_url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    await store.ingest("s", [*MOVE, _session("2024-07-01", "My dentist appointment is on "
                                                         "8 July at 3pm.", "Noted.")])
    await store.worker().drain()
    body = {"query": "Where do I live?", "as_of": "2024-07-02T00:00:00Z", "current_only": True}
    context = (await client.post("/agents/s/context", json=body)).json()
    assert "Porto" in context["text"] and "Lisbon" not in context["text"]
    recall = (await client.post("/agents/s/recall", json=body)).json()
    assert recall["items"] and not any(i["stale_since"] for i in recall["items"])
    assert all("Lisbon" not in i["text"] for i in recall["items"])
    bad = await client.post("/agents/s/recall", json={**body, "include_superseded": True})
    assert bad.status_code == 422
    plans = await client.get("/agents/s/upcoming", params={"days": 14,
                                                           "as_of": "2024-07-02T00:00:00Z"})
    assert plans.status_code == 200 and [e["event_at"] for e in plans.json()["events"]] == [
        "2024-07-08T15:00:00Z"]
    assert (await client.get("/agents/s/upcoming", params={"days": 0})).status_code == 422

    box = ToolBox(store, agent_id="s")
    tool = await box.call("memory_upcoming", {"days": 14, "as_of": "2024-07-02T00:00:00Z"})
    assert not tool.is_error and "(Mon 8 Jul 2024 15:00)" in tool.text
    searched = await box.call("memory_search", json.dumps({
        "query": "Where do I live?", "as_of": "2024-07-02T00:00:00Z", "current_only": True}))
    assert "Lisbon" not in searched.text

    base = ("--database-url", database_url)
    code, out, err = await run_main(capsys, *base, "upcoming", "--agent", "s", "--days", "14",
                                    "--as-of", "2024-07-02T00:00:00Z")
    assert code == 0, err
    assert out.startswith("Mon 8 Jul 2024 15:00  [fact:") and "dentist" in out
    code, out, err = await run_main(capsys, *base, "context", "Where do I live?", "--agent",
                                    "s", "--as-of", "2024-07-02T00:00:00Z", "--current-only")
    assert code == 0, err
    assert "Porto" in out and "Lisbon" not in out


async def test_facts_from_before_slots_get_theirs_from_the_backfill(store: MemoryStore) -> None:
    await store.ingest("old", MOVE[:1])
    await store.worker().drain()
    (fact,) = [m for m in (await store.list("old", kind="fact")).items]
    # as a fact stored before slots existed: no slot, no time said
    await sql(store, "UPDATE facts SET slot_subject = NULL, slot_attribute = NULL, "
                     "slot_value = NULL, valid_from = NULL WHERE memory_id = $1", fact.id)
    dry = await store.maintenance.backfill(now=datetime.now(UTC), dry_run=True)
    assert dry.counts["facts_read_for_slots"] == 1
    assert (await store.get("old", fact.id)).fact.valid_from is None
    run = await store.maintenance.backfill(now=datetime.now(UTC))
    assert (run.counts["facts_read_for_slots"], run.counts["facts_given_slots"]) == (1, 1)
    read = (await store.get("old", fact.id)).fact
    assert (read.slot_attribute, read.slot_value) == ("home", "lisbon")
    assert read.valid_from == datetime(2024, 1, 10, 10, tzinfo=UTC)
    again = await store.maintenance.backfill(now=datetime.now(UTC))
    assert "facts_read_for_slots" not in again.counts  # nothing left to read


async def test_what_the_assistant_said_and_what_was_asked_rank_below_the_statement(
        store: MemoryStore) -> None:
    await store.ingest("w", [
        _session("2024-01-10", "I live in Lisbon and work at a bakery.", "Happy to help."),
        _session("2024-03-10", "Can you suggest a good day hike?", "Sintra is a lovely day."),
        _session("2024-05-20", "I moved to Porto.", "Noted!"),
        _session("2024-06-20", "Where do I live?", "You live in Porto.")])
    await store.worker().drain()
    for query in ("Where do I live?", "Which city do I live in these days?"):
        texts = [i.text for i in (await store.recall("w", query, k=6, as_of=JUL)).items]
        assert texts[0] == "user: I moved to Porto.", texts
        assert texts.index("assistant: You live in Porto.") == 1, texts
        # the question itself, and the hike turns sharing only "day", come after
        assert all("hike" not in t and "Sintra" not in t for t in texts[:5]), texts
        assert "user: Where do I live?" not in texts[:4] and "Noted!" not in " ".join(texts)
        small = await store.assemble_context("w", query, budget_tokens=400, as_of=JUL)
        assert "I moved to Porto" in small.text
    box = ToolBox(store, agent_id="w")
    searched = await box.call("memory_search", json.dumps({
        "query": "Where do I live?", "as_of": "2024-07-10T00:00:00Z"}))
    lines = [line for line in searched.text.splitlines() if line.startswith("[")]
    assert lines[0].endswith("user: I moved to Porto."), searched.text


async def test_a_later_telling_of_a_count_ranks_first_where_no_rule_read_it(
        store: MemoryStore) -> None:
    """No slot is read from either telling ("put in 10-12 hours" is no rule's change),
    yet the question asks how things stand: the later telling goes first, in recall and
    in the context's sections."""
    await store.ingest("h", [
        _session("2024-06-11", "I've been working on an abstract ocean sculpture at home, "
                 "and I've spent around 5-6 hours on it so far. Any tips on texture?",
                 "Try a wire brush on leather-hard clay."),
        _session("2024-06-14", "Can you suggest a glaze for a small bowl?",
                 "A celadon would suit it."),
        _session("2024-06-17", "I'm thinking of a sunset piece next. By the way, I've "
                 "already put in 10-12 hours on my abstract ocean sculpture.",
                 "That is dedication!")])
    await store.worker().drain()
    query = "How many hours have I spent on my abstract ocean sculpture?"
    items = (await store.recall("h", query, k=4, as_of=JUL)).items
    texts = [i.text for i in items]
    later = next(n for n, t in enumerate(texts) if "10-12 hours" in t and t.startswith("user"))
    earlier = next(n for n, t in enumerate(texts) if "5-6 hours" in t and t.startswith("user"))
    assert later < earlier, texts
    assert items[earlier].told_again_on == datetime(2024, 6, 17, 10, tzinfo=UTC)
    assert items[later].told_again_on is None
    box = ToolBox(store, agent_id="h")
    searched = await box.call("memory_search", json.dumps({
        "query": query, "as_of": "2024-07-10T00:00:00Z"}))
    assert any(line.endswith("(older: told again on 17 Jun 2024)") and "5-6 hours" in line
               for line in searched.text.splitlines()), searched.text
    context = await store.assemble_context("h", query, budget_tokens=800, as_of=JUL)
    assert context.text.index("10-12 hours") < context.text.index("5-6 hours"), context.text
    older = [line for line in context.text.splitlines()
             if "5-6 hours" in line and "10-12" not in line]
    assert older and all(line.endswith("(older: told again on 17 Jun 2024)")
                         for line in older), context.text
