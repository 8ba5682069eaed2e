"""MemoryStore: the facade.  Opens the database (embedded by default), migrates, and
hands every operation to the domain modules, always scoped to one agent."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import numpy as np

from .access import Keys
from .config import Settings
from .context.access import AccessLog
from .context.assembly import ContextAssembler
from .context.expand import Expanded, Expander
from .context.extraction import Extractor
from .context.model import DEFAULT_BUDGET_TOKENS, Context, Extraction
from .context.recall import Fusion, Recaller, RecallResult
from .context.upcoming import Upcoming, upcoming
from .conversation import (
    ConversationSummary,
    MessageChange,
    Policy,
    Prompt,
    SummarizeResult,
    SummaryRecord,
    WorkingMemory,
)
from .db import Database, EmbeddedServer, SchemaStatus
from .db.setup import ensure_database, prepare_schema, redact_dsn, waiting_for_database
from .embeddings import Embedder, embedder_from_settings
from .embeddings.cache import EmbeddingCache
from .episodes.close import CloseSettings, EpisodeCloser
from .episodes.learn import EpisodeLearner
from .episodes.lifecycle import DEFAULT_LATEST, AppendResult, EpisodeManager, MessageIn
from .episodes.tasks import EpisodeTasks
from .errors import DatabaseError
from .facts.conflicts import ConflictResolver
from .facts.consolidation import Thresholds
from .facts.learning import FactHistory, FactLearner, LearnResult
from .facts.undelete import Undeleter
from .history import (
    HistoryImporter,
    HistorySession,
    IngestProgress,
    IngestResult,
    IngestStatus,
)
from .llm import LLMClient, PostgresCallRecorder, UsageRow, usage_by_agent
from .maintenance import JobResult, Maintenance, MaintenancePolicy, RestoreResult
from .maintenance.runs import JobRuns
from .memories.kinds import Kind, Status, parse_agent_id
from .memories.manager import MemoryManager
from .memories.messages import TranscriptMessage
from .memories.records import Memory, MemoryEvent, Page
from .owner import OwnerView
from .pipeline import task_handlers
from .work.worker import Worker


class MemoryStore(OwnerView):
    """Long-term memory for agents.  Use ``async with MemoryStore.open() as store:``."""

    def __init__(self, *, settings: Settings, db: Database, embedder: Embedder,
                 schema: SchemaStatus, dsn: str, server: EmbeddedServer | None = None,
                 owns_embedder: bool = False) -> None:
        self.settings = settings
        self.embedder = embedder
        self._owns_embedder = owns_embedder  # made from the settings: closed with the store
        self.schema = schema
        self._db = db
        self._dsn = dsn
        self._server = server
        self.embeddings = EmbeddingCache(db, embedder)
        self.memories = MemoryManager(db, self.embeddings)
        self.llm = llm_from_settings(settings, db)
        thresholds = Thresholds(
            confirm=settings.fact_confirm_threshold, rule=settings.fact_rule_threshold,
            candidate=settings.fact_candidate_threshold)
        self.facts = FactLearner(db, self.memories, self.embeddings, thresholds, self.llm)
        self.undeleter = Undeleter(db, self.memories, self.embeddings, self.facts, thresholds)
        self.conflicts = ConflictResolver(db, self.memories)
        self.episodes = EpisodeManager(db, self.memories)
        self.learner = EpisodeLearner(db, self.memories, self.embeddings, self.facts)
        self.importer = HistoryImporter(db, self.memories)
        self.closer = EpisodeCloser(self.llm, CloseSettings(
            input_cap_tokens=settings.close_input_cap_tokens,
            chunk_tokens=settings.episode_chunk_tokens))
        # working memory; its context provider is assemble_context (see _init_context)
        self.conversation = WorkingMemory(db, self.llm,
                                          defaults_json=settings.conversation_policy_json)
        # maintenance jobs: the store-level bodies of the scheduled jobs
        self.maintenance = Maintenance(db, self.memories, self.embeddings, self.llm,
                                       MaintenancePolicy.from_settings(settings))
        self.job_runs = JobRuns(db)
        self.keys = Keys(db)
        self.recaller = Recaller(db, self.embeddings,
                                 exact_scan_max_rows=settings.recall_exact_scan_max_rows,
                                 ef_search=settings.recall_ef_search,
                                 fusion=Fusion(text_weight=settings.recall_text_weight))
        self._init_context()

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    @asynccontextmanager
    async def open(cls, *, settings: Settings | None = None, embedder: Embedder | None = None,
                   migrate: bool = True, **overrides: Any) -> AsyncIterator[MemoryStore]:
        """Open a store for the duration of an ``async with`` block.

        Keyword overrides are Settings fields (``database_url=``, ``data_dir=``, ...).
        """
        store = await cls.connect(settings=settings, embedder=embedder, migrate=migrate,
                                  **overrides)
        try:
            yield store
        finally:
            await store.close()

    @classmethod
    async def connect(cls, *, settings: Settings | None = None, embedder: Embedder | None = None,
                      migrate: bool = True, **overrides: Any) -> MemoryStore:
        """Open a store; call ``close()`` when done (``open`` does this for you).

        ``migrate=False`` only inspects the schema (for status checks); memory operations
        on a database that is not up to date then fail.
        """
        if settings is None:
            settings = Settings.from_env(**overrides)
        elif overrides:
            settings = settings.with_changes(**overrides)
        owns_embedder = embedder is None
        embedder = embedder or embedder_from_settings(settings)
        server: EmbeddedServer | None = None
        if settings.database_url:
            dsn = settings.database_url
        else:
            server = await asyncio.to_thread(EmbeddedServer.acquire, settings.data_dir)
            dsn = server.dsn(settings.database_name)
        try:
            if server is not None:
                await ensure_database(server, settings.database_name)

            async def attempt() -> tuple[SchemaStatus, Database]:
                schema = await prepare_schema(dsn, embedding_dim=embedder.dimension,
                                              embedding_model=embedder.model_name,
                                              apply=migrate)
                return schema, await Database.connect(
                    dsn, min_size=settings.pool_min_size, max_size=settings.pool_max_size,
                    scan_pool=settings.recall_scan_pool)

            # a database still starting (a container's, a rebooting server's) is waited for
            schema, db = await waiting_for_database(attempt, dsn, settings.db_wait_s)
        except BaseException:
            if server is not None:
                await asyncio.to_thread(server.release)
            raise
        return cls(settings=settings, db=db, embedder=embedder, schema=schema, dsn=dsn,
                   server=server, owns_embedder=owns_embedder)

    async def close(self) -> None:
        try:
            await self.contexts.drain()  # deferred writes of earlier context calls
            await self.access.aclose()
            if self.llm is not None:
                await self.llm.aclose()
            close_embedder = getattr(self.embedder, "aclose", None)
            if self._owns_embedder and callable(close_embedder):
                await close_embedder()
            await self._db.close()
        finally:
            if self._server is not None:
                server, self._server = self._server, None
                await asyncio.to_thread(server.release)

    @property
    def embedded(self) -> bool:
        return self._server is not None

    @property
    def dsn(self) -> str:
        return self._dsn

    async def health(self) -> dict[str, Any]:
        """What a health check reports: database, schema and embedding model."""
        info = await self._db.fetchrow("server_info")
        if info is None:
            raise DatabaseError("the database returned no server information")
        return {
            "database": {
                "ok": True, "embedded": self.embedded, "dsn": redact_dsn(self._dsn),
                "server_version": info["server_version"],
                "pgvector_version": info["pgvector_version"],
                "schema_version": self.schema.version,
                "expected_schema_version": self.schema.expected_version,
                "schema_up_to_date": self.schema.up_to_date,
            },
            "embedding": {"model": self.embedder.model_name,
                          "dimension": self.embedder.dimension},
        }

    async def warm_up(self) -> None:
        """Load a local model now (exporting it first on a new machine), so that the
        first request does not pay for it; a service calls this at startup."""
        warm = getattr(self.embedder, "warm_up", None)
        if callable(warm):
            await asyncio.to_thread(warm)

    async def schema_drift(self) -> list[str]:
        """How the live tables differ from the typed rows this version was written
        against (``db/models.py``), one sentence each; empty when they match."""
        # imported here: the SQLAlchemy table mirror costs about 0.4 s of imports, and
        # only status reports need it
        from .db.drift import schema_drift

        async with self._db.acquire() as conn:
            return await schema_drift(conn)

    # ------------------------------------------------------------------ memories

    async def remember(self, agent_id: str, kind: Kind | str, /, **fields: Any) -> Memory:
        """Create one memory; its tier-1 summary and embedding are computed now."""
        return await self.memories.remember(agent_id, kind, fields)

    async def remember_many(self, agent_id: str,
                            items: Sequence[Mapping[str, Any]]) -> list[Memory]:
        """Create many memories in one batch (each item a mapping with a ``kind``)."""
        return await self.memories.remember_many(agent_id, items)

    async def get(self, agent_id: str, memory_id: UUID | str, *,
                  include_deleted: bool = False) -> Memory:
        return await self.memories.get(agent_id, memory_id, include_deleted=include_deleted)

    async def update(self, agent_id: str, memory_id: UUID | str, /, *,
                     actor: str | None = None, **changes: Any) -> Memory:
        return await self.memories.update(agent_id, memory_id, changes, actor=actor)

    async def delete(self, agent_id: str, memory_id: UUID | str, *, purge: bool = False,
                     actor: str | None = None) -> None:
        await self.memories.delete(agent_id, memory_id, purge=purge, actor=actor)


    async def history(self, agent_id: str, memory_id: UUID | str) -> list[MemoryEvent]:
        return await self.memories.history(agent_id, memory_id)

    async def counts(self, agent_id: str) -> dict[str, dict[str, int]]:
        return await self.memories.counts(agent_id)

    # ------------------------------------------------------------------ episodes

    async def start_episode(self, agent_id: str, /, *, title: str | None = None,
                            participants: Sequence[str] | None = None,
                            user_id: str | None = None,
                            started_at: datetime | None = None) -> Memory:
        """Start a conversation episode (state ``open``)."""
        return await self.episodes.start(agent_id, title=title, participants=participants,
                                         user_id=user_id, started_at=started_at)

    async def append(self, agent_id: str, episode_id: UUID | str, /,
                     messages: Sequence[Mapping[str, Any] | MessageIn]) -> AppendResult:
        """Append messages (role, content, name, tool_call_id, created_at, metadata)."""
        return await self.episodes.append(agent_id, episode_id, messages)

    async def close_episode(self, agent_id: str, episode_id: UUID | str, /) -> Memory:
        """Mark the episode ``closing`` and queue its close processing (idempotent)."""
        return await self.episodes.close(agent_id, episode_id)

    async def ingest(self, agent_id: str,
                     sessions: Sequence[HistorySession | Mapping[str, Any]], /, *,
                     progress: Callable[[IngestProgress], None] | None = None) -> IngestResult:
        """Import past conversations, each session a closed episode (idempotent by session
        key); the worker then processes them like any close."""
        return await self.importer.ingest(agent_id, sessions, progress=progress)

    async def ingest_status(self, agent_id: str, /) -> IngestStatus:
        """How far the agent's imports are: sessions imported, episodes still closing."""
        return await self.importer.status(agent_id)

    async def get_episode(self, agent_id: str, episode_id: UUID | str, /) -> Memory:
        return await self.episodes.get(agent_id, episode_id)

    async def transcript(self, agent_id: str, episode_id: UUID | str, /, *, from_seq: int = 0,
                         limit: int = 10_000) -> builtins.list[TranscriptMessage]:
        return await self.episodes.transcript(agent_id, episode_id, from_seq=from_seq,
                                              limit=limit)

    async def latest_messages(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = DEFAULT_LATEST) -> builtins.list[TranscriptMessage]:
        """The newest ``limit`` messages of the transcript, oldest first (a session's
        "last N items")."""
        return await self.episodes.latest(agent_id, episode_id, limit=limit)

    def worker(self, *, worker_id: str | None = None, poll_s: float = 1.0) -> Worker:
        """A work-queue worker on this store (``await worker.run(stop_event)``)."""
        tasks = EpisodeTasks(self._db, self.episodes, self.closer,
                             idle_close_after_s=self.settings.episode_idle_close_s)
        handlers = task_handlers(episodes=tasks, learner=self.learner,
                                 conversation=self.conversation, extractor=self.extractor,
                                 maintenance=self.maintenance)
        return Worker(self._db, handlers, idle_sweep=tasks.close_idle, worker_id=worker_id,
                      lease_s=self.settings.worker_lease_s, poll_s=poll_s)

    # ------------------------------------------------------------------ working memory

    async def build_prompt(self, agent_id: str, episode_id: UUID | str, /, system: str,
                           budget_tokens: int, *, query: str | None = None,
                           context_tokens: int | None = None, summarize: bool = True,
                           policy: Mapping[str, Any] | None = None) -> Prompt:
        """Chat messages for an open episode's next model call, never over budget: the
        system prompt, the rolling summary, optional context and the newest messages."""
        return await self.conversation.build_prompt(
            agent_id, episode_id, system, budget_tokens, query=query,
            context_tokens=context_tokens, summarize=summarize, overrides=policy)

    async def summarize_conversation(self, agent_id: str, episode_id: UUID | str, /, *,
                                     force: bool = False,
                                     policy: Mapping[str, Any] | None = None
                                     ) -> SummarizeResult:
        """Fold the messages the policy says are due into the rolling summary."""
        return await self.conversation.summarize(agent_id, episode_id, force=force,
                                                 overrides=policy)

    async def conversation_summary(self, agent_id: str, episode_id: UUID | str, /
                                   ) -> ConversationSummary:
        return await self.conversation.summary(agent_id, episode_id)

    async def summary_history(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = 100, offset: int = 0
                              ) -> builtins.list[SummaryRecord]:
        return await self.conversation.history(agent_id, episode_id, limit=limit,
                                               offset=offset)

    async def conversation_policy(self, agent_id: str, /) -> Policy:
        return await self.conversation.policy(agent_id)

    async def set_conversation_policy(self, agent_id: str, /, **knobs: Any) -> Policy:
        return await self.conversation.set_policy(agent_id, knobs)

    async def edit_message(self, agent_id: str, episode_id: UUID | str, seq: int, /,
                           content: str) -> MessageChange:
        """Change a message of an open episode (earlier versions are kept)."""
        return await self.conversation.edit_message(agent_id, episode_id, seq, content)

    async def delete_message(self, agent_id: str, episode_id: UUID | str, seq: int, /
                             ) -> MessageChange:
        """Soft-delete a message of an open episode (its text is kept)."""
        return await self.conversation.delete_message(agent_id, episode_id, seq)

    # ------------------------------------------------------------------ cold storage

    async def restore(self, agent_id: str, memory_id: UUID | str, /, *,
                      actor: str | None = None) -> RestoreResult:
        """Bring a trimmed or archived episode's detail and transcript back from cold
        storage, verified byte for byte; the maintenance jobs then leave it hot."""
        return await self.maintenance.restore(agent_id, memory_id, actor=actor)

    async def archive_episodes(self, agent_id: str, /, *,
                               ended_before: datetime | None = None,
                               now: datetime | None = None) -> JobResult:
        """Archive one agent's closed episodes that ended before ``ended_before``
        (default: all of them, whatever their age), exactly as the archive job does."""
        moment = now or datetime.now(UTC)
        return await self.maintenance.archive(now=moment, agent_id=agent_id,
                                              ended_before=ended_before or moment)
    # ------------------------------------------------------------------ recall

    async def recall(self, agent_id: str, query: str, /, *,
                     kinds: Sequence[Kind | str] | None = None, k: int = 10,
                     include_superseded: bool = False,
                     query_embedding: Sequence[float] | None = None,
                     as_of: datetime | str | None = None,
                     current_only: bool = False) -> RecallResult:
        """Ranked memories and verbatim episode chunks for ``query`` (hybrid, one SQL
        statement); ``query_embedding`` skips embedding the query.  ``as_of``: the moment
        the query is asked (default now): relative dates in it ("last Saturday", "two
        weeks ago") resolve against it, and what happened then ranks higher.  An item
        stating a value that no longer holds comes after the current value and says so
        (``stale_since``); ``current_only`` leaves such items out."""
        return await self.recaller.recall(agent_id, query, kinds=kinds, k=k,
                                          include_superseded=include_superseded,
                                          query_embedding=query_embedding, as_of=as_of,
                                          current_only=current_only)

    # ------------------------------------------------------------------ context

    def _init_context(self) -> None:
        self.access = AccessLog(self._db)
        self.extractor = Extractor(self._db, self.llm, ttl_s=self.settings.extraction_ttl_s,
                                   sync_timeout_s=self.settings.extraction_sync_timeout_s)
        self.contexts = ContextAssembler(self._db, self.embeddings, self.recaller,
                                         self.extractor, self.access)
        self.expander = Expander(self._db, self.memories, self.facts, self.access)
        self.conversation.context_provider = self.contexts.for_prompt

    async def assemble_context(self, agent_id: str, query: str, /, *,
                               budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                               sections: Mapping[str, int] | Sequence[str] | None = None,
                               extraction: Extraction | str = Extraction.CACHED,
                               query_embedding: Sequence[float] | np.ndarray[Any, Any] | None
                               = None, as_of: datetime | str | None = None,
                               current_only: bool = False) -> Context:
        """The memories relevant to ``query`` as text of at most ``budget_tokens`` tokens,
        in sections, every item tagged with its ref (see README, "Context"): first what is
        true about the user now and what is coming up, old values marked as older
        (``current_only`` leaves them out)."""
        return await self.contexts.assemble(agent_id, query, budget_tokens=budget_tokens,
                                            sections=sections, extraction=extraction,
                                            query_embedding=query_embedding, as_of=as_of,
                                            current_only=current_only)

    async def upcoming(self, agent_id: str, /, *, days: int = 7,
                       as_of: datetime | str | None = None, limit: int = 50) -> Upcoming:
        """The agent's plans in the ``days`` after ``as_of`` (default now), soonest first:
        dated facts ("my dentist appointment is next Tuesday at 3pm"), a moved plan at its
        new date only."""
        return await upcoming(self._db, agent_id, days=days, as_of=as_of, limit=limit)

    async def expand(self, agent_id: str, memory_id: UUID | str, /) -> Expanded:
        """Everything about one memory (an id or a ref such as ``fact:1a2b3c4d``)."""
        return await self.expander.expand(agent_id, memory_id)

    async def resolve(self, agent_id: str, target: UUID | str, /, *,
                      deleted: bool = False) -> UUID:
        """The memory id behind an id or a ref (``fact:1a2b3c4d``); a chunk ref
        (``episode:1a2b3c4d#c3``) names its episode; ``deleted``: a soft-deleted one's."""
        return (await self.expander.resolve(agent_id, target, deleted=deleted))[0]

    # ------------------------------------------------------------------ facts

    async def learn_fact(self, agent_id: str, content: str, /, *, subject: str | None = None,
                         category: str | None = None, confidence: float | None = None,
                         source: str | None = None, source_episode_id: UUID | str | None = None,
                         source_kind: str = "user_stated",
                         instructions: str | None = None,
                         valid_from: datetime | str | None = None) -> LearnResult:
        """Learn a fact with dedup: created, confirmed, merged, superseded, reactivated,
        recorded as a past value, or rejected (with the reason).  ``instructions``: the
        prompt the fact was extracted with, so a fact that merely restates it is rejected.
        ``valid_from``: when it was said (default now); a value said before its slot's
        current one goes into the history, never current."""
        fields = {k: v for k, v in {
            "subject": subject, "category": category, "confidence": confidence,
            "source": source, "source_episode_id": source_episode_id,
            "valid_from": valid_from}.items() if v is not None}
        return await self.facts.learn(agent_id, content, instructions=instructions,
                                      source_kind=source_kind, **fields)

    async def fact_history(self, agent_id: str, fact_id: UUID | str) -> FactHistory:
        """Every version of a fact (supersession chain, oldest first) and its events."""
        return await self.facts.history(agent_id, fact_id)

    async def facts_from_episode(self, agent_id: str,
                                 episode_id: UUID | str) -> builtins.list[Memory]:
        return await self.facts.from_episode(agent_id, episode_id)

    async def llm_usage(self, agent_id: str, /, since: datetime | None = None
                        ) -> builtins.list[UsageRow]:
        """What the agent's LLM calls cost, per purpose and model (calls at/after ``since``)."""
        return await usage_by_agent(self._db, parse_agent_id(agent_id), since)

    # last in the class: a method named `list` shadows the builtin in later signatures
    async def list(self, agent_id: str, *, kind: Kind | str | None = None,
                   status: Status | str | Sequence[Status | str] | None = None,
                   created_after: datetime | None = None,
                   created_before: datetime | None = None,
                   limit: int = 50, cursor: str | None = None,
                   tag: str | None = None) -> Page:
        return await self.memories.list(agent_id, kind=kind, status=status,
                                        created_after=created_after,
                                        created_before=created_before, limit=limit,
                                        cursor=cursor, tag=tag)


def llm_from_settings(settings: Settings, db: Database) -> LLMClient | None:
    """The configured LLM (every call recorded in llm_calls), or None: rule-based fallbacks."""
    if not settings.llm_base_url or not settings.llm_model:
        return None
    return LLMClient(base_url=settings.llm_base_url, model=settings.llm_model,
                     api_key=settings.llm_api_key, max_attempts=settings.llm_max_attempts,
                     timeout_s=settings.llm_timeout_s, recorder=PostgresCallRecorder(db))
