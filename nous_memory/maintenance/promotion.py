"""Lifecycle rules over every agent's records, as set-based batches (all audited):
facts confirmed often enough become core, procedures that keep failing are flagged for
review, and censors that are mostly false alarms are retired."""

from __future__ import annotations

from datetime import datetime

from ..db import Database
from .batches import BatchHook, JobResult, Sweeps
from .policy import MaintenancePolicy

CORE_TAG = "core"
REVIEW_TAG = "needs_review"


async def run_lifecycle(db: Database, policy: MaintenancePolicy, *, now: datetime,
                        dry_run: bool = False, on_batch: BatchHook | None = None
                        ) -> JobResult:
    p = policy
    size = p.batch_size
    async with Sweeps.open(db, dry_run=dry_run, on_batch=on_batch) as sweeps:
        await sweeps.drain("facts_promoted", "lifecycle_promote_facts",
                           p.promote_confirmations, size, now, batch=size)
        await sweeps.drain("procedures_flagged", "lifecycle_flag_procedures",
                           p.flag_min_uses, p.flag_effectiveness_below, size, now, batch=size)
        await sweeps.drain("censors_retired", "lifecycle_retire_censors",
                           p.retire_min_activations, p.retire_false_positive_share, size, now,
                           batch=size)
    return JobResult(counts=sweeps.counts, dry_run=dry_run)
