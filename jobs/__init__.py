"""Scheduled maintenance for nous-memory: APScheduler wiring around thin jobs.

Each job calls one store-level method (``nous_memory.maintenance``) that works in
set-based SQL batches.  This package decides when (cron triggers, catch-up after
downtime), makes sure only one runner in the cluster does a job at a time (a
PostgreSQL advisory lock) and records every run in ``job_runs``.
"""

from jobs.registry import JOBS, Job, job_named
from jobs.runner import Clock, JobRunner, utc_now
from jobs.scheduler import JobScheduler, slot_for

__all__ = ["JOBS", "Clock", "Job", "JobRunner", "JobScheduler", "job_named", "slot_for",
           "utc_now"]
