"""Runs one job once: the cluster lock, the once-per-slot rule and its ``job_runs`` row.

``now`` comes from an injectable clock, so tests give records crafted ages by moving the
clock rather than the data.  A failed job is recorded with the counts of the batches it
did commit (they stay done; a rerun continues from there).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime

from jobs.registry import job_named
from nous_memory import MemoryStore, telemetry
from nous_memory.errors import DatabaseUnavailableError
from nous_memory.maintenance import BatchHook
from nous_memory.maintenance.runs import JobRun

_log = logging.getLogger("jobs")

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class JobRunner:
    def __init__(self, store: MemoryStore, *, clock: Clock = utc_now,
                 runner_id: str | None = None, on_batch: BatchHook | None = None) -> None:
        self._store = store
        self.clock = clock
        self.runner_id = runner_id or f"{socket.gethostname()}:{os.getpid()}"
        self._on_batch = on_batch

    async def run(self, name: str, *, dry_run: bool = False, trigger: str = "manual",
                  slot: datetime | None = None) -> JobRun:
        """Run ``name`` now unless another runner holds it or (scheduled) its slot is done."""
        job = job_named(name)
        runs = self._store.job_runs
        now = self.clock()

        async def skip(note: str) -> JobRun:
            return await runs.get(await runs.skip(
                name, slot=slot, trigger=trigger, dry_run=dry_run, runner=self.runner_id,
                now=now, note=note))

        async with runs.lock(name) as got:
            if not got:
                return await skip("another runner holds this job's lock")
            if await runs.abandon_dead(name):
                _log.warning("job %s: an earlier run had died; this one continues it", name)
            if slot is not None and not dry_run and await runs.slot_done(name, slot):
                return await skip(f"already done for {slot.isoformat()}")
            run_id = await runs.start(name, slot=slot, trigger=trigger, dry_run=dry_run,
                                      runner=self.runner_id, now=now)
            done: dict[str, int] = {}

            async def hook(step: str, n: int) -> None:
                done[step] = done.get(step, 0) + n
                if self._on_batch is not None:
                    await self._on_batch(step, n)

            started = time.monotonic()
            try:
                result = await job.body(self._store, now, dry_run, hook)
            except BaseException as exc:
                telemetry.JOB_RUNS.labels(name, "failed").inc()
                telemetry.JOB_SECONDS.labels(name).observe(time.monotonic() - started)
                if isinstance(exc, DatabaseUnavailableError):  # said once by db.outage
                    _log.warning("job %s stopped: the database went away", name)
                else:
                    _log.exception("job %s failed", name)
                await runs.finish(run_id, status="failed", counts=done,
                                  note="counts are the batches committed before the failure",
                                  error=f"{type(exc).__name__}: {exc}"[:2000])
                if not isinstance(exc, Exception):
                    raise
                return await runs.get(run_id)
            status = "skipped" if result.skipped else "ok"
            telemetry.JOB_RUNS.labels(name, status).inc()
            telemetry.JOB_SECONDS.labels(name).observe(time.monotonic() - started)
            await runs.finish(run_id, status=status, counts=result.counts, note=result.note)
            _log.info("job %s %s%s: %s", name, status, " (dry run)" if dry_run else "",
                      result.counts)
            return await runs.get(run_id)
