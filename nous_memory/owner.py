"""The owner's operations on the facade: export, import and erasure of an agent, the
undo of a delete, and what the inspector page reads and resolves.  A base of
``MemoryStore`` (same public methods, one module per concern), over the services
``wiring.Services`` builds."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterable
from typing import TYPE_CHECKING, BinaryIO
from uuid import UUID

from .access import ApiKeyInfo
from .db import SchemaStatus
from .db.meta import shared_secret
from .episodes.provenance import learned_from
from .facts.conflicts import ConflictPair, Resolution
from .facts.undelete import Undeleted
from .llm.usage import DailyUsage, usage_by_day
from .maintenance.runs import JobRun
from .memories.agents import AgentOverview, agent_overview, known_agents
from .memories.kinds import parse_agent_id
from .memories.records import Memory
from .wiring import Services
from .work.listing import AgentQueue, QueueDepth, agent_queue, queue_depths

if TYPE_CHECKING:
    from .portability import (
        ErasureReceipt,
        Exporter,
        ExportStream,
        ExportSummary,
        ImportSummary,
        PersonErasure,
        StoreFacts,
    )


class OwnerView(Services):
    """Export, import, erasure and the inspector's reads, over the store's services."""

    schema: SchemaStatus  # set by MemoryStore when it opens

    # ------------------------------------------------------------------ export, import, erasure
    # (portability is imported when used: its typed-row machinery costs 0.4 s of imports)

    def export_agent(self, agent_id: str, /, *, user: str | None = None) -> ExportStream:
        """Everything of one agent as one JSON Lines file (docs/export-format.md): an
        async iterator of byte chunks read from one snapshot; ``.summary`` at the end.
        ``user``: one person's export: the memories that are theirs or that they were in
        (people/)."""
        return self._exporter().stream(agent_id, user)

    async def export_agent_to(self, agent_id: str, out: BinaryIO, /, *,
                              user: str | None = None) -> ExportSummary:
        """Write the export of one agent (``user``: of one person) to a binary file."""
        return await self._exporter().write(agent_id, out, user)

    async def import_agent(self, source: AsyncIterable[bytes] | BinaryIO, /, *,
                           agent_id: str | None = None, allow_other_model: bool = False,
                           dry_run: bool = False) -> ImportSummary:
        """Read an export into ``agent_id`` (default: the agent it came from), all or
        nothing; rows the agent already has are skipped, conflicting ones refuse it."""
        from .portability import Importer

        return await Importer(self._db, self._store_facts()).run(
            source, agent_id=agent_id, allow_other_model=allow_other_model, dry_run=dry_run)

    async def forget_agent(self, agent_id: str, /, *, actor: str = "python"
                           ) -> ErasureReceipt:
        """Erase every row of one agent in one transaction; a content-free receipt stays.
        The agent's own indexes (a large agent's, ``maintenance/indexes.py``) are dropped
        after it: their predicates name the agent."""
        from .portability import Eraser

        receipt = await Eraser(self._db, self.embeddings).forget(agent_id, actor=actor)
        await self.maintenance.agent_indexes.drop_for(receipt.agent_id)
        return receipt

    async def forget_person(self, agent_id: str, user: str, /, *, actor: str = "python"
                            ) -> PersonErasure:
        """Forget one person of an agent (people/): every memory that is theirs alone is
        purged in one transaction; they leave the conversations they had with others."""
        from .portability import PersonEraser

        return await PersonEraser(self._db, self.embeddings).forget(agent_id, user,
                                                                    actor=actor)

    def _exporter(self) -> Exporter:
        from .portability import Exporter

        return Exporter(self._db, self._store_facts())

    def _store_facts(self) -> StoreFacts:
        from .portability import StoreFacts

        return StoreFacts(schema_version=self.schema.expected_version,
                          embedding_model=self.embedder.model_name,
                          embedding_dim=self.embedder.dimension)

    # ------------------------------------------------------------------ owner's view
    # What the inspector page shows and does beyond the calls above: thin delegations.

    async def agents(self, *, limit: int = 1000, after: str = "") -> builtins.list[str]:
        """The agents that hold memories, in id order after ``after`` (for a caller
        allowed to see all of them)."""
        return await known_agents(self._db, limit=limit, after=after)

    async def people(self, agent_id: str, /, *, limit: int = 1000) -> builtins.list[str]:
        """The person keys the agent's memories belong to (people/), sorted."""
        return [r["person"] for r in await self._db.fetch(
            "agent_people", parse_agent_id(agent_id), limit)]

    async def agent_overview(self, agent_id: str, /) -> AgentOverview:
        """Counts per kind and status, and storage use, of one agent."""
        return await agent_overview(self._db, agent_id)

    async def fact_conflicts(self, agent_id: str, /, *, limit: int = 50
                             ) -> builtins.list[ConflictPair]:
        """Pairs of active facts flagged as a possible conflict, waiting for a decision."""
        return await self.conflicts.queue(agent_id, limit=limit)

    async def resolve_conflict(self, agent_id: str, fact_id: UUID | str,
                               other_id: UUID | str, /, resolution: Resolution | str, *,
                               content: str | None = None, actor: str | None = None
                               ) -> builtins.list[Memory]:
        """Keep both, keep ``fact_id`` (the other is superseded by it), or merge into
        ``fact_id`` with ``content``."""
        return await self.conflicts.resolve(agent_id, fact_id, other_id, resolution,
                                            content=content, actor=actor)

    async def restore_deleted(self, agent_id: str, memory_id: UUID | str, /, *,
                              actor: str | None = None) -> Undeleted:
        """Undo a soft delete: the memory comes back with the status it had, audited as
        ``restored``; a current fact goes through the value rule (``facts.undelete``).
        ``ConflictError`` when the memory is not deleted; purged ones are gone."""
        return await self.undeleter.restore(agent_id, memory_id, actor=actor)

    async def learned_from_episode(self, agent_id: str, episode_id: UUID | str, /
                                   ) -> builtins.list[Memory]:
        """The facts and decisions learned from an episode."""
        return await learned_from(self._db, agent_id, episode_id)

    async def work_queue(self, agent_id: str, /, *, limit: int = 50) -> AgentQueue:
        """The agent's work items: counts per task and state, open ones first."""
        return await agent_queue(self._db, parse_agent_id(agent_id), limit)

    async def llm_usage_by_day(self, agent_id: str, /, *, days: int = 30
                               ) -> builtins.list[DailyUsage]:
        """LLM calls, failures and tokens per UTC day and purpose."""
        return await usage_by_day(self._db, parse_agent_id(agent_id), days)

    async def service_gauges(self) -> tuple[builtins.list[QueueDepth], dict[str, int]]:
        """What /metrics reads at scrape time: the work queue's open items per task (every
        agent), and the pool's connections."""
        return await queue_depths(self._db), self._db.pool_connections()

    async def job_history(self, *, job: str | None = None, limit: int = 20
                          ) -> builtins.list[JobRun]:
        """Recent maintenance job runs (shared by every agent)."""
        return await self.job_runs.history(job=job, limit=limit)

    # ------------------------------------------------------------------ API keys

    async def create_key(self, name: str, /, *, role: str,
                         agents: builtins.list[str] | None = None,
                         actor: str = "python") -> tuple[ApiKeyInfo, str]:
        """A new API key and its secret, which is shown this once (only a hash is kept)."""
        return await self.keys.create(name, role, agents, actor=actor)

    async def list_keys(self, *, include_revoked: bool = False) -> builtins.list[ApiKeyInfo]:
        return await self.keys.list(include_revoked=include_revoked)

    async def revoke_key(self, name: str, /, *, actor: str = "python") -> ApiKeyInfo:
        """Every replica refuses the key within a second (``access.keys.CACHE_S``)."""
        return await self.keys.revoke(name, actor=actor)

    async def rotate_key(self, name: str, /, *, actor: str = "python"
                         ) -> tuple[ApiKeyInfo, str]:
        """A new secret for the key's name, role and agents; the old one stops working."""
        return await self.keys.rotate(name, actor=actor)

    async def session_secret(self) -> str:
        """What signs the inspector's cookies: the configured secret, else one kept in
        the database (so every process serving it, and a restart, agree)."""
        if self.settings.ui_session_secret is not None:
            return self.settings.ui_session_secret
        return await shared_secret(self._db, "ui_session_secret")
