"""The job registry: each job's name, what it does, its schedule setting and its body
(one call into the store's maintenance; the job itself holds no logic)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from nous_memory import MemoryStore
from nous_memory.config import Settings
from nous_memory.errors import NotFoundError
from nous_memory.maintenance import BatchHook, JobResult

OFF = "off"


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """A job is its name: its body is the store's ``maintenance.<name>`` method."""

    name: str
    description: str

    async def body(self, store: MemoryStore, now: datetime, dry_run: bool,
                   on_batch: BatchHook | None) -> JobResult:
        method: Callable[..., Awaitable[JobResult]] = getattr(store.maintenance, self.name)
        return await method(now=now, dry_run=dry_run, on_batch=on_batch)

    def cron(self, settings: Settings) -> str | None:
        """The schedule (``NOUS_MEMORY_JOB_<NAME>_CRON``), or None when switched off."""
        expression = str(getattr(settings, f"job_{self.name}_cron")).strip()
        if expression.lower() == OFF:
            return None
        if self.name == "retention" and settings.retention_days is None:
            return None  # never runs unless a retention age is configured
        return expression


JOBS: dict[str, Job] = {job.name: job for job in (
    Job(name="archive",
        description="episodes ended > archive_after_days: detail and transcript to cold "
                    "storage (summary, links and search index stay)"),
    Job(name="trim",
        description="episodes ended > trim_after_days: detail beyond trim_keep_chars to "
                    "cold storage; short summaries and unextracted facts queued"),
    Job(name="compress",
        description="procedures with > compress_over_notes notes consolidated by the LLM "
                    "to <= compress_to_notes (skipped without an LLM)"),
    Job(name="lifecycle",
        description="promote facts confirmed often, flag failing procedures, retire noisy "
                    "censors"),
    Job(name="retention",
        description="delete cold storage older than retention_days (off unless set)"),
    Job(name="housekeeping",
        description="expire extraction cache, requeue stuck work items, re-embed rows of "
                    "another embedding model"),
    Job(name="backfill",
        description="with an LLM, episodes closed without one (facts from the rules or "
                    "none) queued for the LLM extraction, backfill_per_run a run"),
)}


def job_named(name: str) -> Job:
    try:
        return JOBS[name]
    except KeyError:
        raise NotFoundError("job", f"{name!r} (jobs: {', '.join(JOBS)})") from None
