"""Short summaries: trim queues them, the worker regenerates them from the full detail
(cold part included), by rule without an LLM and by one structured call with one; and
the scheduler inside the API process (``serve --scheduler``)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from nous_memory import MemoryStore
from nous_memory.api.background import background_scheduler
from nous_memory.testing import ScriptedLLMServer

from .jobs_helpers import NOW, sql

AGENT = "resummary-agent"
DETAIL = ("The team compared three hosting offers for the new analytics service. "
          "Vendor A was cheapest but had no EU region. " * 40
          + "In the end they chose Vendor B for its Frankfurt region and support terms.")


async def _short_episode(store: MemoryStore) -> object:
    ended = NOW - timedelta(days=45)
    episode = await store.remember(AGENT, "episode", title="Hosting", detail=DETAIL,
                                   summary="Chat.", started_at=(ended - timedelta(hours=1))
                                   .isoformat(), ended_at=ended.isoformat())
    return episode.id


async def test_trim_queues_a_short_summary_and_the_worker_rewrites_it(
        store: MemoryStore, database_url: str) -> None:
    ident = await _short_episode(store)
    result = await store.maintenance.trim(now=NOW)
    assert result.counts["trimmed"] == 1 and result.counts["summaries_queued"] == 1
    assert (await store.maintenance.trim(now=NOW)).counts["summaries_queued"] == 0  # once

    assert await store.worker().drain() == 1
    memory = await store.get(AGENT, ident)
    assert memory.summary_source == "rule" and len(memory.summary) > 50
    assert memory.summary.startswith("Hosting. The team compared three hosting offers")
    assert [e.event for e in await store.history(AGENT, ident)][-1] == "updated"
    items = await sql(database_url, "SELECT task, state FROM work_items")
    assert [(i["task"], i["state"]) for i in items] == [("summary_regenerate", "done")]
    # done once: a later trim does not queue it again
    assert (await store.maintenance.trim(now=NOW + timedelta(days=1))).counts[
        "summaries_queued"] == 0


async def test_with_an_llm_the_summary_comes_from_one_structured_call(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer, database_url: str) -> None:
    ident = await _short_episode(llm_store)
    await llm_store.maintenance.archive(now=NOW, ended_before=NOW)  # all detail is cold now
    await llm_store.maintenance.trim(now=NOW)
    summary = ("The team compared three hosting offers for a new analytics service and "
               "chose Vendor B for its Frankfurt region and support terms.")
    llm_server.reply_json({"summary": summary})
    assert await llm_store.worker().drain() == 1
    memory = await llm_store.get(AGENT, ident)
    assert memory.summary == summary and memory.summary_source == "llm"
    request = llm_server.requests[-1]
    assert "Frankfurt region" in str(request)  # the cold detail reached the model
    calls = await sql(database_url, "SELECT purpose, outcome FROM llm_calls")
    assert [(c["purpose"], c["outcome"]) for c in calls] == [("summary_regenerate", "ok")]


async def test_the_scheduler_runs_inside_the_api_process(store: MemoryStore,
                                                         database_url: str) -> None:
    async with background_scheduler(store, enabled=True):
        for _ in range(100):  # a fresh database: every scheduled job catches up once
            done = await sql(database_url, "SELECT job FROM job_runs WHERE status <> "
                             "'running'")
            if len(done) == 7:
                break
            await asyncio.sleep(0.1)
    assert sorted(r["job"] for r in done) == ["archive", "backfill", "compress",
                                              "housekeeping", "indexes", "lifecycle", "trim"]
    async with background_scheduler(store, enabled=False):
        pass
