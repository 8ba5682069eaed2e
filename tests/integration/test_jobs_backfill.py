"""The backfill job: once an LLM is configured, episodes closed without one are upgraded,
a few per run, spaced out, resuming where the last run stopped, each run in job_runs;
the LLM's facts consolidate with the rules' through dedup."""

from __future__ import annotations

import re
from typing import Any

from jobs.runner import JobRunner
from nous_memory import MemoryStore
from nous_memory.memories.kinds import FactsExtractor, FactsState, SummarySource
from nous_memory.testing import JSONReply, ScriptedLLMServer
from tests.conftest import LLMStoreFactory
from tests.integration.jobs_helpers import sql

AGENT = "ana"
SAID = ["I moved to Lisbon in March.", "I really love hiking in the mountains.",
        "I'm planning to run a marathon in May."]
RESTATED = ["Ana moved to Lisbon in March", "Ana really loves hiking in the mountains",
            "Ana is planning to run a marathon in May"]
UNSEEN = ["Ana's new flat has a balcony", "Ana owns a pair of red boots",
          "Ana's running coach is called Marta"]


def _extraction(request: dict[str, Any]) -> JSONReply:
    """A stand-in model: restates what Ana said (as the rules did, in its own words) and
    adds one fact the rules cannot see."""
    transcript = request["messages"][-1]["content"]
    said = re.findall(r'name="Ana"[^>]*>([^<]*)</message>', transcript)
    facts = [fact for s in said if s in SAID for fact in (
        {"content": RESTATED[SAID.index(s)], "subject": "Ana", "confidence": 0.9},
        {"content": UNSEEN[SAID.index(s)], "subject": "Ana", "confidence": 0.9})]
    return JSONReply(content={"title": "Catching up with Ana", "summary": "Ana talked. " * 20,
                              "facts": facts})


async def _rule_only_episodes(store: MemoryStore) -> list[Any]:
    episodes = []
    for text in SAID:
        episode = await store.start_episode(AGENT)
        await store.append(AGENT, episode.id, [
            {"role": "user", "name": "Ana", "content": text},
            {"role": "assistant", "content": "Good to know."}])
        await store.close_episode(AGENT, episode.id)
        episodes.append(episode)
    await store.worker().drain()
    return episodes


async def test_rule_only_episodes_are_upgraded_resumably_with_job_runs(
        store: MemoryStore, open_llm_store: LLMStoreFactory, llm_server: ScriptedLLMServer,
        database_url: str) -> None:
    episodes = await _rule_only_episodes(store)
    for episode in episodes:
        detail = (await store.get_episode(AGENT, episode.id)).episode
        assert detail.facts_extractor is FactsExtractor.RULES
        assert len(await store.facts_from_episode(AGENT, episode.id)) == 1
    skipped = await JobRunner(store).run("backfill")
    assert skipped.status == "skipped" and "no LLM" in (skipped.note or "")

    llm_server.default = _extraction
    async with open_llm_store(backfill_per_run=2, backfill_spacing_s=30) as llm_store:
        runner = JobRunner(llm_store)
        first = await runner.run("backfill")
        assert first.status == "ok"
        assert dict(first.counts) == {"queued": 2, "retried": 0, "not_extracted": 3,
                                      "archived_not_extracted": 0}
        due = await sql(database_url, "SELECT run_after FROM work_items WHERE task = "
                        "'episode_upgrade' ORDER BY run_after")
        assert (due[1]["run_after"] - due[0]["run_after"]).total_seconds() == 30  # spaced
        again = await runner.run("backfill")  # queued ones are not queued twice
        assert again.counts["queued"] == 1  # it continues with the one left
        assert (await runner.run("backfill")).counts["queued"] == 0
        await sql(database_url, "UPDATE work_items SET run_after = now() "
                  "WHERE task = 'episode_upgrade'")
        assert await llm_store.worker().drain() == 6  # three upgrades and their learning
        assert len(llm_server.requests) == 3
        done = await runner.run("backfill")
        assert dict(done.counts) == {"queued": 0, "retried": 0, "not_extracted": 0,
                                     "archived_not_extracted": 0}
        history = await llm_store.job_runs.history(job="backfill")
        assert [r.status for r in history] == ["ok", "ok", "ok", "ok", "skipped"]

        for episode, restated in zip(episodes, RESTATED, strict=True):
            upgraded = await llm_store.get_episode(AGENT, episode.id)
            detail = upgraded.episode
            assert upgraded.summary_source is SummarySource.LLM
            assert detail.facts_state is FactsState.EXTRACTED
            assert detail.facts_extractor is FactsExtractor.LLM
            facts = await llm_store.facts_from_episode(AGENT, episode.id)
            # the rule fact the LLM restated is confirmed (one fact), plus the LLM's own
            assert len(facts) == 2
            restating = [f for f in facts if f.fact.confirmation_count]
            assert [f.fact.content for f in restating] == [
                restated + "."]
        active = (await llm_store.list(AGENT, kind="fact", status="active")).items
        assert len(active) == 6


async def test_a_failed_upgrade_is_retried_after_the_untried(
        store: MemoryStore, open_llm_store: LLMStoreFactory, llm_server: ScriptedLLMServer,
        database_url: str) -> None:
    await _rule_only_episodes(store)
    async with open_llm_store(backfill_per_run=1, backfill_spacing_s=0) as llm_store:
        runner = JobRunner(llm_store)
        assert (await runner.run("backfill")).counts["queued"] == 1
        await sql(database_url, "UPDATE work_items SET state = 'failed' "
                  "WHERE task = 'episode_upgrade'")
        second = await runner.run("backfill")
        assert (second.counts["queued"], second.counts["retried"]) == (1, 0)  # an untried one
        await sql(database_url, "UPDATE work_items SET state = 'failed' "
                  "WHERE task = 'episode_upgrade' AND state = 'pending'")
        third = await runner.run("backfill")
        assert (third.counts["queued"], third.counts["retried"]) == (1, 0)
        fourth = await runner.run("backfill", dry_run=True)
        assert (fourth.counts["queued"], fourth.counts["retried"]) == (1, 1)
        assert await sql(database_url, "SELECT count(*) AS n FROM work_items WHERE task = "
                         "'episode_upgrade' AND state = 'pending'") == [(1,)]
        assert not llm_server.requests


async def test_without_an_llm_episodes_no_extractor_read_get_the_rules_pass(
        store: MemoryStore, database_url: str) -> None:
    """An episode closed before the rule extractor existed (its follow-up learned nothing)
    is given the rules' pass by the backfill job, once."""
    episode = await store.start_episode(AGENT)
    await store.append(AGENT, episode.id, [{"role": "user", "name": "Ana", "content": SAID[0]}])
    await store.close_episode(AGENT, episode.id)
    worker = store.worker()
    assert await worker.run_once()  # the close; its follow-up then ran as it used to:
    await sql(database_url, "UPDATE work_items SET state = 'done' WHERE task = 'episode_learn'")
    assert await store.facts_from_episode(AGENT, episode.id) == []
    runner = JobRunner(store)
    run = await runner.run("backfill")
    assert run.status == "ok" and dict(run.counts) == {"queued_for_rules": 1}
    assert "no LLM" in (run.note or "")
    assert await worker.drain() == 1
    detail = (await store.get_episode(AGENT, episode.id)).episode
    assert detail.facts_extractor is FactsExtractor.RULES
    assert [f.fact.content for f in await store.facts_from_episode(
        AGENT, episode.id)] == ["Ana moved to Lisbon in March."]
    again = await runner.run("backfill")
    assert again.status == "skipped" and dict(again.counts) == {"queued_for_rules": 0}
