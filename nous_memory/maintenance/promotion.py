"""Lifecycle rules over every agent's records, as set-based batches (audited):
facts confirmed often enough become core, procedures that keep failing are flagged for
review, and censors that are mostly false alarms are retired."""

from __future__ import annotations

from datetime import datetime

from ..db import Database
from .batches import Batch, BatchHook, JobResult, Sweeps
from .policy import MaintenancePolicy

CORE_TAG = "core"
REVIEW_TAG = "needs_review"

PROMOTE = Batch(per_agent="lifecycle_promote_facts",
                whole_table="lifecycle_promote_facts_all_agents")
FLAG = Batch(per_agent="lifecycle_flag_procedures",
             whole_table="lifecycle_flag_procedures_all_agents")
RETIRE = Batch(per_agent="lifecycle_retire_censors",
               whole_table="lifecycle_retire_censors_all_agents")


async def run_lifecycle(db: Database, policy: MaintenancePolicy, *, now: datetime,
                        dry_run: bool = False, on_batch: BatchHook | None = None
                        ) -> JobResult:
    p = policy
    size = p.batch_size
    async with Sweeps.open(db, dry_run=dry_run, on_batch=on_batch, policy=p) as sweeps:
        await sweeps.drain_agents(
            "facts_promoted", ("lifecycle_promote_agents", p.promote_confirmations),
            PROMOTE, p.promote_confirmations, size, now, batch=size)
        flag = (p.flag_min_uses, p.flag_effectiveness_below)
        await sweeps.drain_agents(
            "procedures_flagged", ("lifecycle_flag_agents", *flag),
            FLAG, *flag, size, now, batch=size)
        retire = (p.retire_min_activations, p.retire_false_positive_share)
        await sweeps.drain_agents(
            "censors_retired", ("lifecycle_retire_agents", *retire),
            RETIRE, *retire, size, now, batch=size)
    return JobResult(counts=sweeps.counts, dry_run=dry_run)
