"""The job registry: each job's name, what it does, its schedule setting and its body
(one call into the store's maintenance; the job itself holds no logic)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from nous_memory import MemoryStore
from nous_memory.config import Settings
from nous_memory.errors import NotFoundError
from nous_memory.maintenance import BatchHook, JobResult, Maintenance

OFF = "off"


class JobBody(Protocol):
    """A ``Maintenance`` method, unbound: the job's whole body."""

    def __call__(self, maintenance: Maintenance, /, *, now: datetime, dry_run: bool = ...,
                 on_batch: BatchHook | None = ...) -> Awaitable[JobResult]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    name: str
    description: str
    run: JobBody
    schedule: Callable[[Settings], str]  # its NOUS_MEMORY_JOB_<NAME>_CRON setting
    enabled: Callable[[Settings], bool] = lambda settings: True

    async def body(self, store: MemoryStore, now: datetime, dry_run: bool,
                   on_batch: BatchHook | None) -> JobResult:
        return await self.run(store.maintenance, now=now, dry_run=dry_run, on_batch=on_batch)

    def cron(self, settings: Settings) -> str | None:
        """The schedule, or None when switched off (``off``, or not enabled)."""
        expression = self.schedule(settings).strip()
        if expression.lower() == OFF or not self.enabled(settings):
            return None
        return expression


JOBS: dict[str, Job] = {job.name: job for job in (
    Job(name="archive", run=Maintenance.archive, schedule=lambda s: s.job_archive_cron,
        description="episodes ended > archive_after_days: detail and transcript to cold "
                    "storage (summary, links and search index stay)"),
    Job(name="trim", run=Maintenance.trim, schedule=lambda s: s.job_trim_cron,
        description="episodes ended > trim_after_days: detail beyond trim_keep_chars to "
                    "cold storage; short summaries and unextracted facts queued"),
    Job(name="compress", run=Maintenance.compress, schedule=lambda s: s.job_compress_cron,
        description="procedures with > compress_over_notes notes consolidated by the LLM "
                    "to <= compress_to_notes (skipped without an LLM)"),
    Job(name="lifecycle", run=Maintenance.lifecycle, schedule=lambda s: s.job_lifecycle_cron,
        description="promote facts confirmed often, flag failing procedures, retire noisy "
                    "censors"),
    Job(name="retention", run=Maintenance.retention, schedule=lambda s: s.job_retention_cron,
        # never runs unless a retention age is configured
        enabled=lambda s: s.retention_days is not None,
        description="delete cold storage older than retention_days (off unless set)"),
    Job(name="housekeeping", run=Maintenance.housekeeping,
        schedule=lambda s: s.job_housekeeping_cron,
        description="expire extraction cache, requeue stuck work items, re-embed rows of "
                    "another embedding model"),
    Job(name="backfill", run=Maintenance.backfill, schedule=lambda s: s.job_backfill_cron,
        description="with an LLM, episodes closed without one (facts from the rules or "
                    "none) queued for the LLM extraction, backfill_per_run a run"),
    Job(name="indexes", run=Maintenance.indexes, schedule=lambda s: s.job_indexes_cron,
        description="agents past agent_indexes_min_rows memories get HNSW and GIN indexes "
                    "of their own (built concurrently); agents that shrank or were erased "
                    "lose them"),
)}


def job_named(name: str) -> Job:
    try:
        return JOBS[name]
    except KeyError:
        raise NotFoundError("job", f"{name!r} (jobs: {', '.join(JOBS)})") from None
