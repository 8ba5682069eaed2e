"""The jobs' two forms on a real database: one pass over the whole table on a single
PostgreSQL (a batch spans agents), agent by agent where the database is Citus or the
setting says so (a batch never does)."""

from __future__ import annotations

import pytest

from nous_memory import MemoryStore, SentenceTransformerEmbedder
from nous_memory.maintenance.batches import sweeps_per_agent

from .jobs_helpers import NOW, long_text, old_episode, sql

AGENTS = ("sweep-a", "sweep-b", "sweep-c")


def test_auto_is_per_agent_only_on_citus() -> None:
    assert sweeps_per_agent("auto", distributed=True)
    assert not sweeps_per_agent("auto", distributed=False)
    assert sweeps_per_agent("agent", distributed=False)
    assert not sweeps_per_agent("table", distributed=True)


@pytest.mark.parametrize(("form", "batches"), [
    (None, [2, 1]), ("table", [2, 1]), ("agent", [1, 1, 1])])
async def test_batches_span_agents_only_over_the_whole_table(
        form: str | None, batches: list[int], database_url: str,
        embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOUS_MEMORY_JOB_SWEEPS", raising=False)
    extra = {} if form is None else {"job_sweeps": form}
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                job_batch_size=2, **extra) as store:
        assert await sql(database_url, "SELECT 1 FROM pg_extension WHERE extname = "
                         "'citus'") == []  # auto takes the whole table here
        for i, agent in enumerate(AGENTS):
            await old_episode(store, agent, ended_days_ago=40, detail=long_text(3_000, i))
            fact = await store.remember(agent, "fact", content=f"{agent} likes tea no {i}")
            await sql(database_url, "UPDATE facts SET confirmation_count = 5 "
                      "WHERE memory_id = $1", fact.id)
        seen: dict[str, list[int]] = {}

        async def record(step: str, n: int) -> None:
            seen.setdefault(step, []).append(n)

        trimmed = await store.maintenance.trim(now=NOW, on_batch=record)
        promoted = await store.maintenance.lifecycle(now=NOW, on_batch=record)
        archived = await store.maintenance.archive(now=NOW.replace(year=2027),
                                                   on_batch=record)
    assert trimmed.counts["trimmed"] == promoted.counts["facts_promoted"] == 3
    assert archived.counts["archived"] == 3
    # the lanes (job_workers) finish batches in any order
    assert {step: sorted(sizes) for step, sizes in seen.items()} == {
        "trimmed": sorted(batches), "facts_promoted": sorted(batches),
        "archived": sorted(batches)}
    rows = await sql(database_url, "SELECT agent_id, count(*) AS n FROM memory_archive "
                     "WHERE part = 'detail' AND reason = 'archive' GROUP BY agent_id "
                     "ORDER BY agent_id")
    assert [(r["agent_id"], r["n"]) for r in rows] == [(a, 1) for a in AGENTS]
