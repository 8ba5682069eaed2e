"""The APScheduler (3.x) wiring: one ``AsyncIOScheduler`` with a cron trigger per job.

Every job is added with ``coalesce`` (a backlog of missed fire times runs once),
``max_instances=1`` and a misfire grace time.  A run belongs to a *slot*, the latest
fire time of its trigger at or before its start: all schedulers compute the same slot,
so with several of them on one database each slot is done once (the cluster lock
serialises them, the slot check makes the later ones skip).  At start, a job whose
current slot has no successful run (the scheduler was down at its fire time) runs once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from jobs.registry import JOBS
from jobs.runner import Clock, JobRunner, utc_now
from nous_memory import MemoryStore
from nous_memory.db.outage import Backoff
from nous_memory.errors import ConfigurationError, DatabaseUnavailableError

_log = logging.getLogger("jobs")

STOP_GRACE_S = 30.0
CATCH_UP_BACKOFF_CAP_S = 30.0
_MAX_STEPS = 100_000


def period_of(trigger: Any, now: datetime) -> timedelta:
    """The gap between two consecutive fire times after ``now``."""
    first = trigger.get_next_fire_time(None, now)
    second = trigger.get_next_fire_time(first, first) if first else None
    if first is None or second is None:
        raise ConfigurationError("a job trigger must fire repeatedly")
    gap: timedelta = second - first
    return gap


def slot_for(trigger: Any, now: datetime) -> datetime | None:
    """The latest fire time of ``trigger`` at or before ``now`` (None if there is none)."""
    period = period_of(trigger, now)
    fire = trigger.get_next_fire_time(None, now - 2 * period)
    slot: datetime | None = None
    for _ in range(_MAX_STEPS):
        if fire is None or fire > now:
            return slot
        slot = fire
        fire = trigger.get_next_fire_time(fire, fire)
    return slot


def cron_trigger(name: str, expression: str, timezone: str) -> CronTrigger:
    """A 5-field crontab expression, or 6 fields with seconds first (``*/30 * * * * *``:
    every 30 seconds; the day-of-week field reads as in the 5-field form)."""
    fields = expression.split()
    try:
        if len(fields) == 6:
            return CronTrigger(second=fields[0], minute=fields[1], hour=fields[2],
                               day=fields[3], month=fields[4], day_of_week=fields[5],
                               timezone=timezone)
        return CronTrigger.from_crontab(expression, timezone=timezone)
    except (ValueError, LookupError) as exc:
        raise ConfigurationError(
            f"NOUS_MEMORY_JOB_{name.upper()}_CRON={expression!r} is not a valid cron "
            f"expression (5 fields, or 6 with seconds first) in {timezone!r}: {exc}") from None


class JobScheduler:
    """``await scheduler.start()`` ... ``await scheduler.stop()``; or ``run(stop_event)``.

    ``triggers`` replaces the configured cron triggers (any APScheduler trigger, e.g. a
    short interval in a test); jobs missing from it are not scheduled then.
    """

    def __init__(self, store: MemoryStore, *, clock: Clock = utc_now,
                 triggers: Mapping[str, Any] | None = None, runner_id: str | None = None,
                 catch_up: bool = True) -> None:
        settings = store.settings
        self._store = store
        self.runner = JobRunner(store, clock=clock, runner_id=runner_id)
        self._clock = clock
        self._catch_up = catch_up
        if triggers is None:
            triggers = {}
            for name, job in JOBS.items():
                expression = job.cron(settings)
                if expression is not None:
                    triggers[name] = cron_trigger(name, expression, settings.jobs_timezone)
        self.triggers = dict(triggers)
        self._grace_s = settings.job_misfire_grace_s
        self._scheduler = AsyncIOScheduler(timezone=settings.jobs_timezone)
        self._running: set[asyncio.Task[Any]] = set()
        self._catching_up = asyncio.Lock()

    async def start(self) -> None:
        for name, trigger in self.triggers.items():
            self._scheduler.add_job(self._fire, trigger=trigger, args=[name], id=name,
                                    name=name, coalesce=True, max_instances=1,
                                    misfire_grace_time=self._grace_s, replace_existing=True)
        self._scheduler.start()
        if self._catch_up:
            self._track(asyncio.create_task(self._catch_up_when_back(),
                                            name="jobs catch-up"))
        _log.info("scheduler %s started: %s", self.runner.runner_id,
                  ", ".join(f"{n} ({t})" for n, t in self.triggers.items()) or "no jobs")

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop firing; wait for runs in progress (cancel after ``grace_s``: safe, a
        cancelled run's committed batches stay and the next run continues).

        APScheduler's shutdown cancels the runs it started, so it comes last: pause
        first (no new fire times), let runs just handed over begin, wait for them."""
        if self._scheduler.running:
            self._scheduler.pause()
            await asyncio.sleep(0)
        if self._running:
            _, pending = await asyncio.wait(set(self._running), timeout=grace_s)
            for task in pending:
                task.cancel()
            for task in pending:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    async def run(self, stop: asyncio.Event) -> None:
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.stop()

    def next_runs(self) -> dict[str, datetime | None]:
        return {job.id: job.next_run_time for job in self._scheduler.get_jobs()}

    async def catch_up(self) -> list[str]:
        """Run once each job whose current slot has no successful run; returns them."""
        ran: list[str] = []
        for name, trigger in self.triggers.items():
            slot = slot_for(trigger, self._clock())
            if slot is None or await self._store.job_runs.slot_done(name, slot):
                continue
            run = await self.runner.run(name, trigger="catch_up", slot=slot)
            if run.status != "skipped":
                ran.append(name)
        return ran

    async def _catch_up_when_back(self) -> None:
        """The catch-up, tried again with a bounded, jittered backoff while the database
        is away (one catch-up at a time: a second one waits for the first)."""
        if self._catching_up.locked():  # one is already waiting for the database
            return
        backoff = Backoff(base_s=0.5, cap_s=CATCH_UP_BACKOFF_CAP_S)
        async with self._catching_up:
            while True:
                try:
                    await self.catch_up()
                    return
                except DatabaseUnavailableError:
                    await backoff.wait()
                except Exception:
                    _log.exception("jobs catch-up failed")
                    return

    async def _fire(self, name: str) -> None:
        """What APScheduler calls at a fire time."""
        task = asyncio.current_task()
        if task is not None:
            self._track(task)
        try:
            slot = slot_for(self.triggers[name], self._clock())
            await self.runner.run(name, trigger="schedule", slot=slot)
        except DatabaseUnavailableError:  # the outage is said once, by db.outage
            _log.info("scheduled run of %s missed: the database is away (the catch-up "
                      "runs it when it is back)", name)
            self._track(asyncio.create_task(self._catch_up_when_back(),
                                            name="jobs catch-up"))
        except Exception:  # one failing job never stops the scheduler
            _log.exception("scheduled run of %s failed", name)

    def _track(self, task: asyncio.Task[Any]) -> None:
        self._running.add(task)
        task.add_done_callback(self._running.discard)
