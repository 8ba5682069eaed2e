"""``AsyncMemoryClient``: ``MemoryStore``'s methods over the REST service.

The same names, arguments and result types as the store for everything the service
serves, so code written against the store runs against a service by changing how the
object is made.  Nothing here imports the store, the database driver or a model: a
process that only talks to a service starts in a fraction of a second.
"""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import quote
from uuid import UUID

from ..context.model import DEFAULT_BUDGET_TOKENS, Context, Extraction
from ..context.results import Expanded, RecallResult, Upcoming
from ..episodes.results import DEFAULT_LATEST, TRANSCRIPT_PAGE, AppendResult, MessageIn
from ..errors import InvalidInputError
from ..facts.results import FactHistory, LearnResult
from ..memories.kinds import Kind, Status
from ..memories.messages import TranscriptMessage
from ..memories.records import Memory, MemoryEvent, Page
from ..people import person_key
from ..portability.reports import ErasureReceipt, ExportSummary, ImportSummary, PersonErasure
from ..secrets.policy import SecretPolicy
from .conversation import ConversationCalls
from .http import Transport, agent_path, parse

if TYPE_CHECKING:
    from ..history.results import IngestProgress, IngestResult, IngestStatus

URL_ENV = "NOUS_MEMORY_URL"
KEY_ENV = "NOUS_MEMORY_API_KEY"
EXPORT_HEADER_KEY, EXPORT_END_KEY = "nous_memory_export", "end"  # portability.lines


class AsyncMemoryClient(ConversationCalls):
    """A remote ``MemoryStore``: ``async with AsyncMemoryClient(url, api_key=...) as m:``.
    ``user``: the person the calls that take one are for when they name nobody (people/;
    None: the agent's owner), for a client made per person, as a gateway makes one."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout_s: float = 30.0,
                 max_attempts: int = 3, transport: Transport | None = None,
                 user: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.user = user
        self._t = transport or Transport(self.url, api_key=api_key, timeout_s=timeout_s,
                                         max_attempts=max_attempts)

    @classmethod
    def from_env(cls, url: str | None = None, **options: Any) -> AsyncMemoryClient:
        """``url`` or ``$NOUS_MEMORY_URL``; the key from ``$NOUS_MEMORY_API_KEY``."""
        target = url or os.environ.get(URL_ENV)
        if not target:
            raise InvalidInputError.single("url", f"missing; pass --url or set {URL_ENV}")
        options.setdefault("api_key", os.environ.get(KEY_ENV) or None)
        return cls(target, **options)

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._t.aclose()

    _agent = staticmethod(agent_path)

    def _for(self, user: str | None) -> str | None:
        """The person a call is for: its own ``user``, else the client's.  Sent as a body
        or query field where the route has one, so any name travels as UTF-8 text."""
        return self.user if user is None else user

    def _as(self, user: str | None) -> dict[str, str | bytes]:
        """The X-User header of a call naming a memory by id (the route has no field):
        the name's UTF-8 bytes, which the service decodes back."""
        person = self._for(user)
        return {} if person is None else {"X-User": person.encode("utf-8")}

    # ------------------------------------------------------------------ service

    async def health(self) -> dict[str, Any]:
        """The service's ``/health`` (liveness; more detail with a key)."""
        result: dict[str, Any] = await self._t.json("GET", "/health", idempotent=True)
        return result

    async def ready(self) -> dict[str, Any]:
        """The service's ``/ready``: database, model and worker (DatabaseUnavailableError
        when it is not ready)."""
        result: dict[str, Any] = await self._t.json("GET", "/ready", idempotent=True)
        return result

    # ------------------------------------------------------------------ memories

    async def remember(self, agent_id: str, kind: Kind | str, /, **fields: Any) -> Memory:
        body = {"kind": kind, **fields}
        if fields.get("user") is None and not fields.get("people") and self.user is not None:
            body["user"] = self.user
        return Memory.model_validate(await self._t.json(
            "POST", self._agent(agent_id, "memories"), idempotent=False, body=body))

    async def remember_many(self, agent_id: str,
                            items: Sequence[Mapping[str, Any]]) -> builtins.list[Memory]:
        data = await self._t.json("POST", self._agent(agent_id, "memories", "batch"),
                                  idempotent=False, body={"items": list(items)})
        return parse(builtins.list[Memory], data["items"])

    async def get(self, agent_id: str, memory_id: UUID | str, *,
                  include_deleted: bool = False, user: str | None = None) -> Memory:
        return Memory.model_validate(await self._t.json(
            "GET", self._agent(agent_id, "memories", memory_id), idempotent=True,
            params={"include_deleted": include_deleted}, headers=self._as(user)))

    async def update(self, agent_id: str, memory_id: UUID | str, /, *,
                     actor: str | None = None, user: str | None = None,
                     **changes: Any) -> Memory:
        """``actor`` is not sent: the service records the key's name as the actor."""
        return Memory.model_validate(await self._t.json(
            "PATCH", self._agent(agent_id, "memories", memory_id), idempotent=False,
            body=changes, headers=self._as(user)))

    async def delete(self, agent_id: str, memory_id: UUID | str, *, purge: bool = False,
                     actor: str | None = None, user: str | None = None) -> None:
        await self._t.json("DELETE", self._agent(agent_id, "memories", memory_id),
                           idempotent=False, params={"purge": purge}, headers=self._as(user))

    async def history(self, agent_id: str, memory_id: UUID | str, *,
                      user: str | None = None) -> builtins.list[MemoryEvent]:
        return parse(builtins.list[MemoryEvent], await self._t.json(
            "GET", self._agent(agent_id, "memories", memory_id, "history"), idempotent=True,
            headers=self._as(user)))

    async def list(self, agent_id: str, *, kind: Kind | str | None = None,
                   status: Status | str | Sequence[Status | str] | None = None,
                   created_after: datetime | None = None,
                   created_before: datetime | None = None,
                   limit: int = 50, cursor: str | None = None,
                   tag: str | None = None, user: str | None = None) -> Page:
        statuses = [status] if isinstance(status, str) else status
        return Page.model_validate(await self._t.json(
            "GET", self._agent(agent_id, "memories"), idempotent=True, params={
                "kind": kind, "status": None if statuses is None else builtins.list(statuses),
                "created_after": created_after, "created_before": created_before,
                "limit": limit, "cursor": cursor, "tag": tag, "user": self._for(user)}))

    # ------------------------------------------------------------------ facts

    async def learn_fact(self, agent_id: str, content: str, /, *, subject: str | None = None,
                         category: str | None = None, confidence: float | None = None,
                         source: str | None = None, source_episode_id: UUID | str | None = None,
                         source_kind: str = "user_stated",
                         instructions: str | None = None,
                         valid_from: datetime | str | None = None,
                         user: str | None = None) -> LearnResult:
        """``instructions`` is not served (the service refuses it as an unknown field):
        instruction echoes are checked where facts are extracted, in the service."""
        body = {"content": content, "subject": subject, "category": category,
                "confidence": confidence, "source": source,
                "source_episode_id": source_episode_id, "source_kind": source_kind,
                "instructions": instructions, "valid_from": valid_from,
                "user": self._for(user)}
        return LearnResult.model_validate(await self._t.json(
            "POST", self._agent(agent_id, "facts", "learn"), idempotent=False,
            body={k: v for k, v in body.items() if v is not None}))

    async def fact_history(self, agent_id: str, fact_id: UUID | str, *,
                           user: str | None = None) -> FactHistory:
        return FactHistory.model_validate(await self._t.json(
            "GET", self._agent(agent_id, "facts", fact_id, "history"), idempotent=True,
            headers=self._as(user)))

    async def facts_from_episode(self, agent_id: str,
                                 episode_id: UUID | str) -> builtins.list[Memory]:
        return parse(builtins.list[Memory], await self._t.json(
            "GET", self._agent(agent_id, "episodes", episode_id, "facts"), idempotent=True))

    # ------------------------------------------------------------------ episodes

    async def start_episode(self, agent_id: str, /, *, title: str | None = None,
                            participants: Sequence[str] | None = None,
                            user_id: str | None = None,
                            started_at: datetime | None = None) -> Memory:
        body = {"title": title, "participants": participants,
                "user_id": self._for(user_id), "started_at": started_at}
        return Memory.model_validate(await self._t.json(
            "POST", self._agent(agent_id, "episodes"), idempotent=False,
            body={k: v for k, v in body.items() if v is not None}))

    async def append(self, agent_id: str, episode_id: UUID | str, /,
                     messages: Sequence[Mapping[str, Any] | MessageIn], *,
                     user: str | None = None) -> AppendResult:
        sent = [m.model_dump(mode="json", exclude_unset=True) if isinstance(m, MessageIn)
                else m for m in messages]
        return AppendResult.model_validate(await self._t.json(
            "POST", self._agent(agent_id, "episodes", episode_id, "messages"),
            idempotent=False, body={"messages": sent}, headers=self._as(user)))

    async def close_episode(self, agent_id: str, episode_id: UUID | str, /, *,
                            user: str | None = None) -> Memory:
        """Idempotent on the service (closing twice changes nothing), so it is retried."""
        return Memory.model_validate(await self._t.json(
            "POST", self._agent(agent_id, "episodes", episode_id, "close"), idempotent=True,
            headers=self._as(user)))

    async def get_episode(self, agent_id: str, episode_id: UUID | str, /, *,
                          user: str | None = None) -> Memory:
        return Memory.model_validate(await self._t.json(
            "GET", self._agent(agent_id, "episodes", episode_id), idempotent=True,
            headers=self._as(user)))

    async def transcript(self, agent_id: str, episode_id: UUID | str, /, *, from_seq: int = 0,
                         limit: int = TRANSCRIPT_PAGE,
                         user: str | None = None) -> builtins.list[TranscriptMessage]:
        page = await self._t.json(
            "GET", self._agent(agent_id, "episodes", episode_id, "messages"), idempotent=True,
            params={"from_seq": from_seq, "limit": limit}, headers=self._as(user))
        return [_message(m) for m in page["messages"]]

    async def latest_messages(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = DEFAULT_LATEST,
                              user: str | None = None) -> builtins.list[TranscriptMessage]:
        page = await self._t.json(
            "GET", self._agent(agent_id, "episodes", episode_id, "messages"), idempotent=True,
            params={"last": limit}, headers=self._as(user))
        return [_message(m) for m in page["messages"]]

    # ------------------------------------------------------------------ history import

    async def ingest(self, agent_id: str, sessions: Sequence[Any], /, *,
                     progress: Callable[[IngestProgress], None] | None = None
                     ) -> IngestResult:
        """``sessions``: ``HistorySession`` records or their mappings, as for the store
        (the record is not imported here: its module loads the database layer).  One
        call to the service (up to 1,000 sessions, all or nothing); retried, since
        sessions already imported are skipped.  ``progress`` is called once, when the
        service has answered."""
        from ..history.results import IngestProgress, IngestResult

        result = parse(IngestResult, await self._t.json(
            "POST", self._agent(agent_id, "imports"), idempotent=True,
            body={"sessions": builtins.list(sessions)}))
        if progress is not None:
            progress(IngestProgress(
                sessions_done=result.sessions_imported + result.sessions_skipped,
                sessions_total=len(sessions), turns_done=result.turns_imported,
                skipped=result.sessions_skipped))
        return result

    async def ingest_status(self, agent_id: str, /) -> IngestStatus:
        from ..history.results import IngestStatus

        return parse(IngestStatus, await self._t.json(
            "GET", self._agent(agent_id, "imports"), idempotent=True))

    # ------------------------------------------------------------------ recall, context

    async def recall(self, agent_id: str, query: str, /, *,
                     kinds: Sequence[Kind | str] | None = None, k: int = 10,
                     include_superseded: bool = False,
                     query_embedding: Sequence[float] | None = None,
                     as_of: datetime | str | None = None,
                     current_only: bool = False, user: str | None = None) -> RecallResult:
        body = {"query": query, "kinds": kinds, "k": k, "user": self._for(user),
                "include_superseded": include_superseded,
                "query_embedding": None if query_embedding is None
                else [float(x) for x in query_embedding], "as_of": as_of,
                "current_only": current_only or None}
        return RecallResult.model_validate(await self._t.json(
            "POST", self._agent(agent_id, "recall"), idempotent=True,
            body={k_: v for k_, v in body.items() if v is not None}))

    async def assemble_context(self, agent_id: str, query: str, /, *,
                               budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                               sections: Mapping[str, int] | Sequence[str] | None = None,
                               extraction: Extraction | str = Extraction.CACHED,
                               query_embedding: Sequence[float] | None = None,
                               as_of: datetime | str | None = None,
                               current_only: bool = False, user: str | None = None) -> Context:
        body = {"query": query, "budget_tokens": budget_tokens, "user": self._for(user),
                "sections": None if sections is None else
                (dict(sections) if isinstance(sections, Mapping) else builtins.list(sections)),
                "extraction": extraction,
                "query_embedding": None if query_embedding is None
                else [float(x) for x in query_embedding], "as_of": as_of,
                "current_only": current_only or None}
        return Context.model_validate(await self._t.json(
            "POST", self._agent(agent_id, "context"), idempotent=True,
            body={k_: v for k_, v in body.items() if v is not None}))

    async def expand(self, agent_id: str, memory_id: UUID | str, /, *,
                     user: str | None = None) -> Expanded:
        return Expanded.model_validate(await self._t.json(
            "GET", self._agent(agent_id, "memories", memory_id, "expand"), idempotent=True,
            params={"user": self._for(user)}))

    async def upcoming(self, agent_id: str, /, *, days: int = 7,
                       as_of: datetime | str | None = None, limit: int = 50,
                       user: str | None = None) -> Upcoming:
        params: dict[str, Any] = {"days": days, "limit": limit, "user": self._for(user)}
        if as_of is not None:
            params["as_of"] = as_of
        return Upcoming.model_validate(await self._t.json(
            "GET", self._agent(agent_id, "upcoming"), idempotent=True, params=params))

    # ------------------------------------------------------------------ a whole agent

    async def export_agent(self, agent_id: str, /, *,
                           user: str | None = None) -> AsyncIterator[bytes]:
        """The export file's bytes as they arrive (an unknown agent: NotFoundError);
        ``user``: that person's own export."""
        person = self._for(user)
        async with self._t.stream(self._agent(agent_id, "export"),
                                  params=None if person is None else {"user": person}
                                  ) as response:
            async for chunk in response.aiter_bytes():
                yield chunk

    async def export_agent_to(self, agent_id: str, out: BinaryIO, /, *,
                              user: str | None = None) -> ExportSummary:
        """Write the export to a binary file; the summary is read from its trailer."""
        size, tail = 0, b""
        async for chunk in self.export_agent(agent_id, user=user):
            out.write(chunk)
            size += len(chunk)
            tail = (tail + chunk)[-65_536:]
        trailer = json.loads(tail.rstrip(b"\n").rsplit(b"\n", 1)[-1])[EXPORT_END_KEY]
        return ExportSummary(agent_id=agent_id, rows=trailer["rows"],
                             counts=trailer["counts"], sha256=trailer["sha256"], bytes=size)

    async def import_agent(self, source: AsyncIterable[bytes] | BinaryIO, /, *,
                           agent_id: str | None = None, allow_other_model: bool = False,
                           dry_run: bool = False) -> ImportSummary:
        """Stream an export into ``agent_id`` (default: the agent named in its header)."""
        chunks = _chunks(source)
        first = await anext(chunks, b"")
        while b"\n" not in first:  # the header line names the source agent
            more = await anext(chunks, None)
            if more is None:
                break
            first += more
        target = agent_id or _source_agent(first)

        async def body() -> AsyncIterator[bytes]:
            yield first
            async for chunk in chunks:
                yield chunk

        response = await self._t.request(
            "POST", self._agent(target, "import"), idempotent=False, content=body(),
            params={"allow_other_model": allow_other_model, "dry_run": dry_run},
            headers={"content-type": "application/x-ndjson"})
        return ImportSummary.model_validate(response.json())

    async def forget_agent(self, agent_id: str, /, *, actor: str = "python") -> ErasureReceipt:
        """``actor`` is not sent: the service records the key's name."""
        return ErasureReceipt.model_validate(await self._t.json(
            "DELETE", self._agent(agent_id), idempotent=False))

    async def secrets_policy(self, agent_id: str, /) -> SecretPolicy:
        data = await self._t.json("GET", self._agent(agent_id, "secrets-policy"),
                                  idempotent=True)
        return SecretPolicy(data["secrets"])

    async def set_secrets_policy(self, agent_id: str, policy: SecretPolicy | str, /
                                 ) -> SecretPolicy:
        data = await self._t.json("PUT", self._agent(agent_id, "secrets-policy"),
                                  idempotent=True, body={"secrets": str(policy)})
        return SecretPolicy(data["secrets"])

    async def forget_person(self, agent_id: str, user: str, /, *, actor: str = "python"
                            ) -> PersonErasure:
        """Forget one person of an agent; ``actor`` is not sent (the key's name is)."""
        return PersonErasure.model_validate(await self._t.json(
            "DELETE", f"{self._agent(agent_id)}/people/{quote(person_key(user), safe='')}",
            idempotent=False))


async def _chunks(source: AsyncIterable[bytes] | BinaryIO) -> AsyncIterator[bytes]:
    if isinstance(source, AsyncIterable):
        async for chunk in source:
            yield chunk
        return
    while chunk := source.read(65_536):
        yield chunk


def _source_agent(first: bytes) -> str:
    try:
        header = json.loads(first.split(b"\n", 1)[0])[EXPORT_HEADER_KEY]
        return str(header["agent_id"])
    except (ValueError, KeyError, TypeError):
        raise InvalidInputError.single(
            "line 1", "not an export header; pass agent_id to name the target") from None


def _message(m: dict[str, Any]) -> TranscriptMessage:
    """A transcript entry of the service as the store's record."""
    return TranscriptMessage(
        seq=m["seq"], role=m["role"], content=m["content"], name=m.get("name"),
        tool_call_id=m.get("tool_call_id"), tokens=m["tokens"],
        created_at=None if m.get("created_at") is None
        else datetime.fromisoformat(m["created_at"]),
        metadata=m.get("metadata") or {}, person=m.get("person"))
