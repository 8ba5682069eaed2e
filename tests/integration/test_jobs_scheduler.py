"""The scheduler and the runner: real APScheduler firing on a short interval, two
schedulers on one database, catch-up, the cluster lock, failures and a SIGKILLed run."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sys
import textwrap
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from apscheduler.triggers.interval import IntervalTrigger

from jobs import JOBS, JobRunner, JobScheduler, slot_for
from jobs.scheduler import cron_trigger, period_of
from nous_memory import Embedder, MemoryStore
from nous_memory.errors import ConfigurationError, NotFoundError

from .jobs_helpers import NOW, long_text, old_episode, sql

AGENT = "sched-agent"
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


def every_second() -> IntervalTrigger:
    # a fixed start date aligns the fire times (and so the slots) of every scheduler
    return IntervalTrigger(seconds=1, start_date=EPOCH, timezone=UTC)


async def test_two_schedulers_fire_each_job_once_per_slot(
        store: MemoryStore, database_url: str, embedder: Embedder) -> None:
    async with MemoryStore.open(database_url=database_url, embedder=embedder) as second:
        schedulers = [JobScheduler(s, runner_id=f"runner-{i}",
                                   triggers={"lifecycle": every_second(),
                                             "housekeeping": every_second()})
                      for i, s in enumerate((store, second))]
        for scheduler in schedulers:
            await scheduler.start()
        await asyncio.sleep(3.6)
        for scheduler in schedulers:
            await scheduler.stop()

    runs = await sql(database_url, "SELECT job, slot, status, trigger, runner, note "
                     "FROM job_runs ORDER BY id")
    ok = Counter((r["job"], r["slot"]) for r in runs if r["status"] == "ok")
    assert ok and max(ok.values()) == 1, ok  # never twice for one slot
    for job in ("lifecycle", "housekeeping"):
        slots = sorted(slot for (name, slot) in ok if name == job)
        assert len(slots) >= 2, runs  # the scheduler really fired, more than once
        # slots are the trigger's fire times (whole seconds); one may be missed under
        # load (max_instances=1, coalesce), never done twice
        assert all(s.microsecond == 0 and b > a
                   for a, b in itertools.pairwise(slots) for s in (a, b))
    assert {r["status"] for r in runs} == {"ok", "skipped"}  # the second one skipped
    assert {r["runner"] for r in runs if r["status"] == "ok"} <= {"runner-0", "runner-1"}
    assert all(r["note"] for r in runs if r["status"] == "skipped")


async def test_stop_lets_the_run_in_progress_finish(store: MemoryStore,
                                                   database_url: str) -> None:
    """Stopping (SIGTERM) waits for a job run in progress instead of cancelling it."""
    await sql(database_url, "INSERT INTO extraction_cache (agent_id, memory_id, query_sha256, "
              "max_tokens, content, source, expires_at) VALUES ($1, gen_random_uuid(), "
              "sha256('q'), 100, 'cached', 'rule', now() - interval '1 day')", AGENT)
    blocker = await asyncpg.connect(database_url)  # holds the expired row: the run waits
    held = blocker.transaction()
    await held.start()
    await blocker.execute("SELECT 1 FROM extraction_cache FOR UPDATE")
    scheduler = JobScheduler(store, triggers={"housekeeping": every_second()}, catch_up=False)
    await scheduler.start()
    try:
        for _ in range(600):
            if await sql(database_url, "SELECT 1 FROM job_runs WHERE status = 'running'"):
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the housekeeping run never started")
        stopping = asyncio.create_task(scheduler.stop())
        await asyncio.sleep(0.3)
    finally:
        await held.rollback()
        await blocker.close()
    await stopping
    runs = await sql(database_url, "SELECT status, error FROM job_runs")
    assert [(r["status"], r["error"]) for r in runs] == [("ok", None)]
    assert not await sql(database_url, "SELECT 1 FROM extraction_cache")


async def test_catch_up_runs_a_missed_slot_once(store: MemoryStore, database_url: str) -> None:
    clock = [NOW]
    scheduler = JobScheduler(store, clock=lambda: clock[0])
    assert set(scheduler.triggers) == set(JOBS) - {"retention"}  # retention is off
    ran = await scheduler.catch_up()
    # compress and backfill have no LLM here: they run, are skipped (and say so) and are
    # not in the list
    assert ran == ["archive", "trim", "lifecycle", "housekeeping", "indexes"]
    assert await scheduler.catch_up() == []
    clock[0] = NOW + timedelta(hours=1)  # housekeeping and indexes are hourly
    assert await scheduler.catch_up() == ["housekeeping", "indexes"]
    clock[0] = NOW + timedelta(days=1)
    assert await scheduler.catch_up() == ["archive", "trim", "lifecycle", "housekeeping",
                                          "indexes"]
    statuses = await sql(database_url, "SELECT status, count(*) AS n FROM job_runs "
                         "GROUP BY status ORDER BY status")
    assert {r["status"]: r["n"] for r in statuses} == {"ok": 12, "skipped": 8}


def test_slots_follow_the_cron_expression() -> None:
    trigger = cron_trigger("trim", "0 2 * * *", "UTC")
    assert slot_for(trigger, NOW) == NOW.replace(hour=2, minute=0)  # NOW is 12:00
    assert slot_for(trigger, NOW.replace(hour=1)) == NOW.replace(hour=2) - timedelta(days=1)
    with pytest.raises(ConfigurationError, match="NOUS_MEMORY_JOB_TRIM_CRON"):
        cron_trigger("trim", "every night", "UTC")
    with pytest.raises(ConfigurationError, match="NOUS_MEMORY_JOB_TRIM_CRON"):
        cron_trigger("trim", "*/5 * * * * * *", "UTC")  # 7 fields


def test_six_fields_put_seconds_first() -> None:
    trigger = cron_trigger("housekeeping", "*/20 * * * * *", "UTC")
    assert slot_for(trigger, NOW + timedelta(seconds=45)) == NOW + timedelta(seconds=40)
    assert period_of(trigger, NOW) == timedelta(seconds=20)
    # the day-of-week field reads as in the 5-field form (APScheduler's numbering, 0 = Monday)
    five, six = cron_trigger("trim", "0 2 * * 1", "UTC"), cron_trigger("trim", "0 0 2 * * 1", "UTC")
    assert five.get_next_fire_time(None, NOW) == six.get_next_fire_time(None, NOW)


async def test_the_lock_loser_records_a_skip(store: MemoryStore) -> None:
    runner = JobRunner(store, clock=lambda: NOW)
    async with store.job_runs.lock("lifecycle") as got:
        assert got
        lost = await runner.run("lifecycle")
    assert lost.status == "skipped" and "lock" in (lost.note or "")
    won = await runner.run("lifecycle")
    assert won.status == "ok" and won.counts["facts_promoted"] == 0
    with pytest.raises(NotFoundError):
        await runner.run("no-such-job")


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_failed_run_records_what_it_committed(workers: int, database_url: str,
                                                      embedder: Embedder
                                                      ) -> None:
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                job_batch_size=1, job_workers=workers) as small:
        for i in range(3):
            await old_episode(small, AGENT, ended_days_ago=50, detail=long_text(2_100, i))

        async def fail_on_second(step: str, n: int) -> None:
            if calls.append(step) or len(calls) == 2:
                raise RuntimeError("disk on fire")

        calls: list[str] = []
        run = await JobRunner(small, clock=lambda: NOW, on_batch=fail_on_second).run("trim")
        assert run.status == "failed" and "disk on fire" in (run.error or "")
        committed = await sql(database_url, "SELECT count(*) AS n FROM episodes "
                              "WHERE storage = 'trimmed'")
        # one lane stops after the failing batch; with two, the batch in flight beside
        # it commits too, and is counted
        assert run.counts == {"trimmed": committed[0]["n"]}
        assert committed[0]["n"] == 2 if workers == 1 else committed[0]["n"] in (2, 3)
        again = await JobRunner(small, clock=lambda: NOW).run("trim")
        assert again.status == "ok" and again.counts["trimmed"] == 3 - committed[0]["n"]
        history = await small.job_runs.history(job="trim")
        assert [r.status for r in history] == ["ok", "failed"]


async def test_a_failure_stops_the_other_lanes_after_their_batch(database_url: str,
                                                               embedder: Embedder) -> None:
    """Agent by agent (the Citus form), a lane works through a whole agent: when another
    lane fails, it stops after the batch it is in, not after its agent."""
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                job_batch_size=1, job_workers=2,
                                job_sweeps="agent") as small:
        for agent in ("lane-a", "lane-b"):
            for i in range(4):
                await old_episode(small, agent, ended_days_ago=50,
                                  detail=long_text(2_100, i))

        async def fail_on_first(step: str, n: int) -> None:
            calls.append(step)
            if len(calls) == 1:
                raise RuntimeError("disk on fire")

        calls: list[str] = []
        run = await JobRunner(small, clock=lambda: NOW, on_batch=fail_on_first).run("trim")
    assert run.status == "failed" and "disk on fire" in (run.error or "")
    committed = (await sql(database_url, "SELECT count(*) AS n FROM episodes "
                           "WHERE storage = 'trimmed'"))[0]["n"]
    assert run.counts == {"trimmed": committed}
    assert committed in (1, 2)  # the failed batch, and the other lane's batch in flight


KILLED_RUN = textwrap.dedent("""
    import asyncio, sys
    from datetime import datetime
    from jobs import JobRunner
    from nous_memory import MemoryStore
    from nous_memory.embeddings import BUNDLED_MODEL_NAME
    from nous_memory.testing import FakeEmbedder

    async def main() -> None:
        async def announce(step: str, n: int) -> None:
            print(f"batch {step} {n}", flush=True)
            await asyncio.sleep(60)  # killed here, between two batches
        embedder = FakeEmbedder(model_name=BUNDLED_MODEL_NAME)
        async with MemoryStore.open(database_url=sys.argv[1], embedder=embedder,
                                    job_batch_size=2, job_workers=1) as store:
            now = datetime.fromisoformat(sys.argv[2])
            await JobRunner(store, clock=lambda: now, on_batch=announce).run("archive")

    asyncio.run(main())
""")


async def test_a_sigkilled_run_resumes_and_frees_the_lock(store: MemoryStore,
                                                          database_url: str,
                                                          tmp_path: Path) -> None:
    details = {}
    for i in range(5):
        episode = await old_episode(store, AGENT, ended_days_ago=100 + i,
                                    detail=long_text(2_500 + i, 60 + i))
        details[episode.id] = episode.episode.detail
    script = tmp_path / "killed_run.py"
    script.write_text(KILLED_RUN)
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "HF_HUB_OFFLINE": "1"}
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), database_url, NOW.isoformat(), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), timeout=60)
        assert line.decode().strip() == "batch archived 2", line
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()

    runs = await sql(database_url, "SELECT status, finished_at FROM job_runs")
    assert [(r["status"], r["finished_at"]) for r in runs] == [("running", None)]
    storage = await sql(database_url, "SELECT storage, count(*) AS n FROM episodes "
                        "GROUP BY storage ORDER BY storage")
    assert {r["storage"]: r["n"] for r in storage} == {"archived": 2, "hot": 3}

    resumed = await JobRunner(store, clock=lambda: NOW).run("archive")  # the lock is free
    assert resumed.status == "ok" and resumed.counts["archived"] == 3
    runs = await sql(database_url, "SELECT status, error FROM job_runs ORDER BY id")
    assert [r["status"] for r in runs] == ["failed", "ok"]
    assert "stopped before the run finished" in runs[0]["error"]
    for ident, text in details.items():
        whole = await sql(database_url, "SELECT a.content FROM memory_archive a WHERE "
                          "a.memory_id = $1 AND a.part = 'detail' AND a.start_offset = 0",
                          ident)
        assert whole[0]["content"] == text
