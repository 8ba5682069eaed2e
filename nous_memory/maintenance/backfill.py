"""The ``backfill`` job: when an LLM is configured, every closed episode whose facts no
LLM extracted (closed without one: its facts came from the rules, or none) gets an
``episode_upgrade`` work item, whatever its age.

Rate-limited twice: at most ``backfill_per_run`` episodes a run, and their items due
``backfill_spacing_s`` apart, so the worker spreads the LLM calls.  Resumable: a queued
episode stops matching, so each run continues where the last one stopped, and a killed
run loses nothing (the items are durable).  Upgrades that failed are retried after the
episodes never tried.  Each run is a ``job_runs`` row: how many it queued, how many wait,
and how many are out of reach in cold storage.  The upgrade itself is the close's LLM
call; its facts go through dedup, so the rules' facts it restates are confirmed, not
duplicated.  Without an LLM the job gives the rule extractor's pass to closed episodes
no extractor has read yet (closed before it existed), as many a run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..db import Connection, Database
from ..memories.kinds import parse_agent_id
from ..work.tasks import Task
from .batches import FIRST_KEY, BatchHook, JobResult, Sweeps
from .policy import MaintenancePolicy

CANDIDATE_PAGE = 500


async def _queue(conn: Connection, candidates: str, enqueue: str, budget: int,
                 agent: str | None, *extra: Any, position: int | None = None) -> int:
    """Up to ``budget`` work items for the episodes ``candidates`` lists (in key order, a
    page at a time, from the distributed tables), queued by ``enqueue`` on the
    coordinator's queue, which skips the episodes it already has: two statements, since
    Citus does not join the queue with distributed tables.  ``position``: how many items
    this run queued before (``enqueue`` spaces their due times), passed after ``extra``."""
    queued, after = 0, FIRST_KEY
    while queued < budget:
        rows = await conn.fetch(candidates, *after, CANDIDATE_PAGE, agent)
        if not rows:
            break
        where = () if position is None else (position + queued,)
        queued += int(await conn.fetchval(
            enqueue, [r["agent_id"] for r in rows], [r["memory_id"] for r in rows],
            budget - queued, *extra, *where))
        if len(rows) < CANDIDATE_PAGE:
            break
        after = (rows[-1]["agent_id"], rows[-1]["memory_id"])
    return queued


class Backfill:
    def __init__(self, db: Database, policy: MaintenancePolicy, *, llm_configured: bool
                 ) -> None:
        self._db = db
        self._policy = policy
        self._llm_configured = llm_configured

    async def run(self, *, now: datetime, dry_run: bool = False,
                  agent_id: str | None = None, on_batch: BatchHook | None = None
                  ) -> JobResult:
        """Queue the next upgrades (``now`` is the job's clock; items use the database's)."""
        del now  # due times are the database's clock, as the worker's claims are
        agent = parse_agent_id(agent_id) if agent_id is not None else None
        p = self._policy
        if not self._llm_configured:
            return await self._rules(agent, dry_run, on_batch)
        async with Sweeps.open(self._db, dry_run=dry_run, on_batch=on_batch) as sweeps:
            async with sweeps.transaction() as conn:
                # episodes never tried first, then those whose upgrades failed
                fresh = await _queue(conn, "backfill_upgrade_candidates",
                                     "backfill_upgrades_enqueue", p.backfill_per_run, agent,
                                     Task.EPISODE_UPGRADE, False, p.backfill_spacing_s,
                                     position=0)
                retried = await _queue(conn, "backfill_upgrade_candidates",
                                       "backfill_upgrades_enqueue", p.backfill_per_run - fresh,
                                       agent, Task.EPISODE_UPGRADE, True,
                                       p.backfill_spacing_s, position=fresh)
                left = await conn.fetchrow("backfill_upgrades_left", agent)
            assert left is not None
            sweeps.add("queued", fresh + retried)
            sweeps.add("retried", retried)
            sweeps.add("not_extracted", left["waiting"])  # queued ones included
            sweeps.add("archived_not_extracted", left["archived"])
            await sweeps.batch_done("queued", fresh + retried)
        note = None
        if left["archived"]:
            note = (f"{left['archived']} archived episodes have no LLM-extracted facts; "
                    "restore one to let the backfill reach it")
        return JobResult(counts=sweeps.counts, note=note, dry_run=dry_run)

    async def _rules(self, agent: str | None, dry_run: bool, on_batch: BatchHook | None
                     ) -> JobResult:
        """Without an LLM: episodes closed before the rule extractor existed get its pass."""
        async with Sweeps.open(self._db, dry_run=dry_run, on_batch=on_batch) as sweeps:
            async with sweeps.transaction() as conn:
                queued = await _queue(conn, "backfill_rules_candidates",
                                      "backfill_rules_enqueue", self._policy.backfill_per_run,
                                      agent, Task.EPISODE_LEARN)
            sweeps.add("queued_for_rules", queued)
            await sweeps.batch_done("queued_for_rules", queued)
        return JobResult(counts=sweeps.counts, skipped=not queued, dry_run=dry_run,
                         note="no LLM configured: episodes keep their rule-extracted facts "
                              "until one is")
