"""MemoryStore: the facade.  Opens the database (embedded by default), migrates, and
hands every operation to the services ``wiring.Services`` builds, always scoped to one
agent."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np

from .config import Settings
from .context.expand import Expanded
from .context.model import DEFAULT_BUDGET_TOKENS, Context, Extraction
from .context.recall import RecallResult
from .context.upcoming import Upcoming, upcoming
from .conversing import ConversationView
from .db import Database, EmbeddedServer, SchemaStatus
from .db.setup import ensure_database, prepare_schema, redact_dsn, waiting_for_database
from .embeddings import Embedder, embedder_from_settings
from .episodes.statements import compound_statements
from .errors import DatabaseError, NotFoundError
from .facts.learning import FactHistory, LearnResult
from .llm import UsageRow, usage_by_agent
from .memories.kinds import Kind, Status, parse_agent_id
from .memories.records import Memory, MemoryEvent, Page
from .memories.whose import check_theirs
from .owner import OwnerView
from .people import person_key, visible_to
from .secrets.policy import SecretPolicy
from .tracing import traced


@traced
class MemoryStore(OwnerView, ConversationView):
    """Long-term memory for agents.  Use ``async with MemoryStore.open() as store:``."""

    def __init__(self, *, settings: Settings, db: Database, embedder: Embedder,
                 schema: SchemaStatus, dsn: str, server: EmbeddedServer | None = None,
                 owns_embedder: bool = False) -> None:
        super().__init__(settings, db, embedder)  # every service (wiring.py)
        self._owns_embedder = owns_embedder  # made from the settings: closed with the store
        self.schema = schema
        self._dsn = dsn
        self._server = server

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
            server = await asyncio.to_thread(
                EmbeddedServer.acquire, settings.data_dir,
                shared_buffers=settings.embedded_shared_buffers)
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
                    scan_pool=settings.recall_scan_pool,
                    worker_reads=settings.citus_worker_reads)

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
                "reads": self._db.read_route,
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
        """Create one memory; its tier-1 summary and embedding are computed now.
        ``user="ana"`` (or ``people=[...]``) makes it that person's (people/); without
        one it is the agent's, shared with everyone."""
        return await self.memories.remember(agent_id, kind, fields)

    async def remember_many(self, agent_id: str,
                            items: Sequence[Mapping[str, Any]]) -> list[Memory]:
        """Create many memories in one batch (each item a mapping with a ``kind``)."""
        return await self.memories.remember_many(agent_id, items)

    # ``user`` on the calls that name a memory: the person asking (people/); another
    # person's memory is not found for them

    async def get(self, agent_id: str, memory_id: UUID | str, *,
                  include_deleted: bool = False, user: str | None = None) -> Memory:
        asker = None if user is None else person_key(user, "user")
        memory = await self.memories.get(agent_id, memory_id,
                                         include_deleted=include_deleted)
        if not visible_to(memory.people, asker):  # the record says whose it is
            raise NotFoundError("memory", memory.id)
        return memory

    async def update(self, agent_id: str, memory_id: UUID | str, /, *,
                     actor: str | None = None, user: str | None = None,
                     **changes: Any) -> Memory:
        await check_theirs(self._db, agent_id, memory_id, user)
        return await self.memories.update(agent_id, memory_id, changes, actor=actor)

    async def delete(self, agent_id: str, memory_id: UUID | str, *, purge: bool = False,
                     actor: str | None = None, user: str | None = None) -> None:
        await check_theirs(self._db, agent_id, memory_id, user)
        await self.memories.delete(agent_id, memory_id, purge=purge, actor=actor)

    async def history(self, agent_id: str, memory_id: UUID | str, *,
                      user: str | None = None) -> list[MemoryEvent]:
        await check_theirs(self._db, agent_id, memory_id, user)
        return await self.memories.history(agent_id, memory_id)

    async def secrets_policy(self, agent_id: str, /) -> SecretPolicy:
        """What the agent keeps out of memory: ``redact`` (the default), ``refuse``,
        ``keep`` (memories/guard.py)."""
        return await self.memories.guard.policy(agent_id)

    async def set_secrets_policy(self, agent_id: str, policy: SecretPolicy | str, /
                                 ) -> SecretPolicy:
        """Set what the agent keeps out of memory from now on (what is stored stays)."""
        return await self.memories.guard.set_policy(agent_id, policy)

    async def counts(self, agent_id: str) -> dict[str, dict[str, int]]:
        return await self.memories.counts(agent_id)

    # ------------------------------------------------------------------ recall

    async def recall(self, agent_id: str, query: str, /, *,
                     kinds: Sequence[Kind | str] | None = None, k: int = 10,
                     include_superseded: bool = False,
                     query_embedding: Sequence[float] | None = None,
                     as_of: datetime | str | None = None,
                     current_only: bool = False, user: str | None = None) -> RecallResult:
        """Ranked memories and verbatim episode chunks for ``query`` (hybrid, one SQL
        statement); ``query_embedding`` skips embedding the query.  ``as_of``: the moment
        the query is asked (default now): relative dates in it ("last Saturday", "two
        weeks ago") resolve against it, and what happened then ranks higher.  An item
        stating a value that no longer holds comes after the current value and says so
        (``stale_since``); ``current_only`` leaves such items out.  ``user``: the person
        asking (a user id or name): only what is theirs or shared (people/)."""
        return await self.recaller.recall(agent_id, query, kinds=kinds, k=k,
                                          include_superseded=include_superseded,
                                          query_embedding=query_embedding, as_of=as_of,
                                          current_only=current_only, user=user)

    # ------------------------------------------------------------------ context

    async def assemble_context(self, agent_id: str, query: str, /, *,
                               budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                               sections: Mapping[str, int] | Sequence[str] | None = None,
                               extraction: Extraction | str = Extraction.CACHED,
                               query_embedding: Sequence[float] | np.ndarray[Any, Any] | None
                               = None, as_of: datetime | str | None = None,
                               current_only: bool = False, user: str | None = None) -> Context:
        """The memories relevant to ``query`` as text of at most ``budget_tokens`` tokens,
        in sections, every item tagged with its ref (see README, "Context"): first what is
        true about the user now and what is coming up, old values marked as older
        (``current_only`` leaves them out).  ``user``: the person asking: "About the user
        now" is theirs, and nothing of another person's is read (people/)."""
        return await self.contexts.assemble(agent_id, query, budget_tokens=budget_tokens,
                                            sections=sections, extraction=extraction,
                                            query_embedding=query_embedding, as_of=as_of,
                                            current_only=current_only, user=user)

    async def upcoming(self, agent_id: str, /, *, days: int = 7,
                       as_of: datetime | str | None = None, limit: int = 50,
                       user: str | None = None) -> Upcoming:
        """The agent's plans in the ``days`` after ``as_of`` (default now), soonest first:
        dated facts ("my dentist appointment is next Tuesday at 3pm"), a moved plan at its
        new date only."""
        return await upcoming(self._db, agent_id, days=days, as_of=as_of, limit=limit,
                              user=user)

    async def expand(self, agent_id: str, memory_id: UUID | str, /, *,
                     user: str | None = None) -> Expanded:
        """Everything about one memory (an id or a ref such as ``fact:1a2b3c4d``);
        ``user``: another person's memory is not found (people/)."""
        return await self.expander.expand(agent_id, memory_id, user=user)

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
                         valid_from: datetime | str | None = None,
                         user: str | None = None) -> LearnResult:
        """Learn a fact with dedup: created, confirmed, merged, superseded, reactivated,
        recorded as a past value, or rejected (with the reason).  ``instructions``: the
        prompt the fact was extracted with, so a fact that merely restates it is rejected.
        ``valid_from``: when it was said (default now); a value said before its slot's
        current one goes into the history, never current.  The user's own text of several
        statements about different things ("I live in Lisbon and I have a dog called
        Pepper"; no ``subject`` given) is learned as the facts the close would learn from
        it, each on its own: the first learned is the result, the others ``also``.
        ``user``: the person who said it: it is theirs, and decided against their facts
        and the agent's only (people/); without one it is the agent's, shared."""
        fields: dict[str, Any] = {k: v for k, v in {
            "subject": subject, "category": category, "confidence": confidence,
            "source": source, "source_episode_id": source_episode_id,
            "valid_from": valid_from}.items() if v is not None}
        if user is not None:
            fields["people"] = [person_key(user, "user")]
        # the user's own compound statement is split as the close splits it, one fact
        # each (each decided and written on its own); one told of someone else is not
        parts = (compound_statements(content) if isinstance(content, str) and subject is None
                 and source_kind == "user_stated" else [])
        results = [await self.facts.learn(agent_id, part, instructions=instructions,
                                          source_kind=source_kind, **fields)
                   for part in parts or [content]]
        first = next((r for r in results if r.fact is not None), results[0])
        return first.model_copy(update={"also": [r for r in results if r is not first]})

    async def fact_history(self, agent_id: str, fact_id: UUID | str, *,
                           user: str | None = None) -> FactHistory:
        """Every version of a fact (supersession chain, oldest first) and its events;
        ``user``: the versions and events of that person's reads (people/)."""
        await check_theirs(self._db, agent_id, fact_id, user, "fact_id")
        found = await self.facts.history(agent_id, fact_id)
        if user is None:
            return found
        asker = person_key(user, "user")
        chain = [m for m in found.chain if visible_to(m.people, asker)]
        kept = {m.id for m in chain}
        return found.model_copy(update={"chain": chain, "events": [
            e for e in found.events if e.memory_id in kept]})

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
                   tag: str | None = None, user: str | None = None) -> Page:
        return await self.memories.list(agent_id, kind=kind, status=status,
                                        created_after=created_after,
                                        created_before=created_before, limit=limit,
                                        cursor=cursor, tag=tag, user=user)

