"""Hot and cold storage of episodes: trim, archive, restore and the retention policy.

Cold storage is ``memory_archive`` (see schema.sql): the full detail is always
``left(hot detail, start_offset) || content``, and an archived transcript is one jsonb
array of its message rows.  Summaries, metadata, links, chunks and embeddings never
leave the hot tables, so recall over trimmed and archived episodes keeps working.
Each piece that leaves carries a 64-bit checksum of the original (hashtextextended: fast
enough for millions of rows, where sha256 was the slowest step); restore checks it before it
commits, so a restore is byte for byte or it is nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from ..db import Connection, Database
from ..db.audit import record_events
from ..errors import ConflictError, DatabaseError, NotFoundError
from ..memories.kinds import parse_agent_id
from ..memories.params import parse_memory_id
from ..work.tasks import Task
from .batches import Batch, BatchHook, JobResult, Sweeps
from .policy import MaintenancePolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class RestoreResult:
    """What a restore brought back (None: the episode had no such cold part)."""

    id: UUID
    previous_storage: str
    detail_chars: int | None = None
    messages: int | None = None


async def _queue_trim_work(conn: Connection, agent: str, row: Mapping[str, Any]
                           ) -> Mapping[str, int]:
    """The work a trim batch found, queued on the coordinator's queue (its own statement:
    Citus does not join the queue with distributed tables)."""
    queued = await conn.fetchrow("trim_queue_work", agent, row["short_ids"],
                                 row["unextracted_ids"], Task.SUMMARY_REGENERATE,
                                 Task.EPISODE_UPGRADE)
    assert queued is not None
    return dict(queued)


TRIM = Batch(per_agent="trim_episodes_batch", whole_table="trim_episodes_all_agents",
             table_args=(Task.SUMMARY_REGENERATE, Task.EPISODE_UPGRADE))
TRIM_TRANSCRIPTS = Batch(per_agent="trim_transcripts_batch",
                         whole_table="trim_transcripts_all_agents")
ARCHIVE = Batch(per_agent="archive_episodes_batch", whole_table="archive_episodes_all_agents")
RETENTION = Batch(per_agent="retention_batch", whole_table="retention_all_agents")


class Tiering:
    """The storage-tier jobs; every method takes the job's ``now`` (an injectable clock)."""

    def __init__(self, db: Database, policy: MaintenancePolicy, *, llm_configured: bool
                 ) -> None:
        self._db = db
        self._policy = policy
        self._llm_configured = llm_configured

    async def trim(self, *, now: datetime, dry_run: bool = False,
                   agent_id: str | None = None, on_batch: BatchHook | None = None
                   ) -> JobResult:
        """Closed episodes that ended more than ``trim_after_days`` ago: detail beyond
        ``trim_keep_chars`` goes cold, and so do a transcript's messages beyond a hot head
        of that many characters (its chunks stay hot, so recall finds it as before);
        short summaries and never-extracted facts get a work item each."""
        p = self._policy
        agent = parse_agent_id(agent_id) if agent_id is not None else None
        cutoff = now - timedelta(days=p.trim_after_days)
        notes: list[str] = []
        async with Sweeps.open(self._db, dry_run=dry_run, on_batch=on_batch,
                               policy=p) as sweeps:
            for name in ("trimmed", "trimmed_chars", "summaries_queued",
                         "extractions_queued", "trimmed_transcripts", "trimmed_messages"):
                sweeps.add(name, 0)
            await sweeps.ranged("trimmed", TRIM, cutoff, p.trim_keep_chars,
                                now, p.short_summary_chars, self._llm_configured,
                                batch=p.batch_size, agent=agent, after=_queue_trim_work)
            await sweeps.ranged("trimmed_transcripts", TRIM_TRANSCRIPTS, cutoff,
                                p.trim_keep_chars, now, batch=p.batch_size, agent=agent)
            if not self._llm_configured:
                notes.append("no LLM configured: episodes without extracted facts were "
                             "not queued for extraction")
        return JobResult(counts=sweeps.counts, note="; ".join(notes) or None,
                         dry_run=dry_run)

    async def archive(self, *, now: datetime, dry_run: bool = False,
                      agent_id: str | None = None, ended_before: datetime | None = None,
                      on_batch: BatchHook | None = None) -> JobResult:
        """Closed episodes that ended before ``ended_before`` (default: more than
        ``archive_after_days`` ago): detail and transcript go cold."""
        agent = parse_agent_id(agent_id) if agent_id is not None else None
        cutoff = ended_before or now - timedelta(days=self._policy.archive_after_days)
        size = self._policy.batch_size
        async with Sweeps.open(self._db, dry_run=dry_run, on_batch=on_batch,
                               policy=self._policy) as sweeps:
            for name in ("archived", "archived_transcripts", "archived_messages"):
                sweeps.add(name, 0)
            await sweeps.ranged("archived", ARCHIVE, cutoff, now,
                                batch=size, agent=agent)
        return JobResult(counts=sweeps.counts, dry_run=dry_run)

    async def retention(self, *, now: datetime, dry_run: bool = False,
                        on_batch: BatchHook | None = None) -> JobResult:
        """Deletes cold parts older than ``retention_days`` for good (off when unset)."""
        days = self._policy.retention_days
        if days is None:
            return JobResult(skipped=True, dry_run=dry_run,
                             note="retention is off (set NOUS_MEMORY_RETENTION_DAYS)")
        size = self._policy.batch_size
        async with Sweeps.open(self._db, dry_run=dry_run, on_batch=on_batch,
                               policy=self._policy) as sweeps:
            cutoff = now - timedelta(days=days)
            await sweeps.drain_agents("cold_parts_deleted", ("retention_agents", cutoff),
                                      RETENTION, cutoff, size, now, batch=size)
        return JobResult(counts=sweeps.counts, dry_run=dry_run)

    async def restore(self, agent_id: str, memory_id: UUID | str, *,
                      actor: str | None = None) -> RestoreResult:
        """Bring an episode's cold detail and transcript back, verified byte for byte.

        The episode becomes ``restored``: the jobs leave it hot from then on.
        """
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(memory_id)
        async with self._db.transaction() as conn:
            row = await conn.fetchrow("episode_storage_for_update", agent, ident)
            if row is None:
                raise NotFoundError("episode", ident)
            parts = {r["part"]: r for r in await conn.fetch("archive_parts", agent, ident)}
            if not parts:
                raise ConflictError(
                    f"episode {ident} has nothing in cold storage (storage: {row['storage']})")
            detail_chars: int | None = None
            messages: int | None = None
            if "detail" in parts:
                done = await conn.fetchrow("restore_detail", agent, ident)
                if done is None or not done["verified"]:
                    raise DatabaseError(f"archived detail of {ident} does not match its "
                                        "checksum; nothing was restored")
                detail_chars = done["chars"]
            if "transcript" in parts:
                await conn.execute("restore_transcript", agent, ident)
                check = await conn.fetchrow("transcript_digest", agent, ident)
                assert check is not None
                if check["archived_checksum"] is not None and (
                        check["checksum"] != check["archived_checksum"]):
                    raise DatabaseError(f"archived transcript of {ident} does not match its "
                                        "checksum; nothing was restored")
                messages = check["n"]
            await conn.fetchrow("restore_finish", agent, ident)
            result = RestoreResult(id=ident, previous_storage=row["storage"],
                                   detail_chars=detail_chars, messages=messages)
            await record_events(conn, agent, [{
                "memory_id": str(ident), "event": "restored", "actor": actor,
                "old_values": {"storage": row["storage"],
                               "parts": {k: {"reason": v["reason"],
                                             "archived_at": v["archived_at"].isoformat()}
                                         for k, v in parts.items()}},
                "new_values": {"storage": "restored", "detail_chars": detail_chars,
                               "messages": messages}}])
        return result
