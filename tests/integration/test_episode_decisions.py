"""Decisions extracted at close are matched against the agent's decisions: the same
subject and a close description update the existing one's outcome; anything else is a
new decision (real DB, model, openai client against the scripted server)."""

from __future__ import annotations

from typing import Any

from nous_memory import MemoryStore
from nous_memory.testing import ScriptedLLMServer

AGENT = "planner"
CHOSEN = {"description": "Use PostgreSQL with pgvector as the memory store",
          "subject": "memory store database", "outcome": "pending", "confidence": 0.6,
          "reasons": ["one system to run"]}


async def _close(store: MemoryStore, llm: ScriptedLLMServer, *decisions: dict[str, Any]
                 ) -> Any:
    episode = await store.start_episode(AGENT)
    await store.append(AGENT, episode.id, [
        {"role": "user", "content": "Let's settle the storage question for the memory store."},
        {"role": "assistant", "content": "Noted; I will keep track of the decision."}])
    await store.close_episode(AGENT, episode.id)
    llm.reply_json({"title": "Storage talk", "summary": "They talked about storage.",
                    "facts": [], "decisions": list(decisions)})
    await store.worker().drain()
    return episode


async def _decisions(store: MemoryStore) -> list[Any]:
    return sorted((await store.list(AGENT, kind="decision")).items,
                  key=lambda m: m.created_at)


async def test_a_later_outcome_updates_the_same_decision(llm_store: MemoryStore,
                                                         llm_server: ScriptedLLMServer) -> None:
    first = await _close(llm_store, llm_server, CHOSEN)
    await _close(llm_store, llm_server, {
        "description": "Using PostgreSQL and pgvector for the memory store",
        "subject": "  Memory store   DATABASE", "outcome": "success", "confidence": 0.9,
        "reasons": ["one system to run", "recall got faster"]})
    [decision] = await _decisions(llm_store)
    detail = decision.decision
    assert detail.description == CHOSEN["description"]
    assert detail.outcome == "success" and detail.confidence == 0.9
    assert detail.reasons == ["one system to run", "recall got faster"]
    assert detail.source_episode_id == first.id
    assert "[success]" in decision.summary  # the summary (and its embedding) follow
    events = await llm_store.history(AGENT, decision.id)
    assert [(e.event, e.actor) for e in events] == [("created", None),
                                                    ("updated", "episode_learn")]
    assert events[1].new_values["outcome"] == "success"
    # a restatement that adds nothing (still pending) changes nothing
    await _close(llm_store, llm_server, {**CHOSEN, "confidence": None, "reasons": []})
    [same] = await _decisions(llm_store)
    assert same.version == decision.version and same.decision.outcome == "success"


async def test_other_subject_far_meaning_or_no_subject_is_a_new_decision(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer) -> None:
    await _close(llm_store, llm_server, CHOSEN)
    await _close(
        llm_store, llm_server,
        # close in meaning, another subject
        {"description": "Use PostgreSQL with pgvector as the analytics store",
         "subject": "analytics database", "outcome": "success"},
        # the same subject, another choice altogether
        {"description": "Hire a contractor to design the company logo",
         "subject": "memory store database", "outcome": "failure"},
        # no subject: never matched
        {"description": "Use PostgreSQL with pgvector as the memory store",
         "outcome": "abandoned"})
    decisions = await _decisions(llm_store)
    assert len(decisions) == 4
    assert decisions[0].decision.outcome == "pending"
    assert sorted(d.decision.outcome for d in decisions[1:]) == [
        "abandoned", "failure", "success"]
