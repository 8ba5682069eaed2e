"""A whole agent over HTTP: ``GET /agents/{agent_id}/export`` (streamed JSON Lines),
``POST /agents/{agent_id}/import`` (the file as the body, read as it arrives) and
``DELETE /agents/{agent_id}`` (forget the agent), ``DELETE
/agents/{agent_id}/people/{user}`` (forget one person of it), ``POST
.../episodes/{episode_id}/messages/{seq}/forget`` (one message); ``GET``/``PUT
/agents/{agent_id}/secrets-policy`` (what the agent keeps out of memory).

Each is one store call, scoped like every other route by the agent in the path (an API
key limited to some agents may export, import into and forget only those).  An import
body is never buffered whole: it is validated line by line as it streams in, up to
``api_import_max_bytes`` (4 GiB by default); a bad file is a 422 naming the line and the
reason, a conflict with the agent's rows a 409, and neither imports anything.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..episodes.results import MessageErasure
from ..episodes.traces import MAX_SPANS
from ..portability import ErasureReceipt, ImportSummary, PersonErasure
from ..secrets.policy import SecretPolicy
from .body import bounded_stream
from .conversation import Seq
from .episodes import EpisodeId
from .errors import problem_responses
from .people import UserHeader, UserQuery, asking
from .routes import AgentId, Store

IMPORT_PATH = re.compile(r"^/agents/[^/]+/import$")
NDJSON = "application/x-ndjson"

router = APIRouter(prefix="/agents/{agent_id}", tags=["export and erasure"])


@router.get(
    "/export", summary="Export everything of an agent as JSON Lines",
    response_class=StreamingResponse,
    responses={200: {"content": {NDJSON: {"schema": {
                         "type": "string", "description": "JSON Lines (docs/export-format.md)"}}},
                     "description": "The export file (docs/export-format.md), streamed"},
               **problem_responses(401, 403, 404, 422, 503)})
async def export_agent(agent_id: AgentId, store: Store, user: UserQuery = None,
                       x_user: UserHeader = None) -> StreamingResponse:
    """Every record of the agent, read from one snapshot: a header line, a line per row
    and a trailer with row counts and a SHA-256 (a cut-off download is detected).  For a
    ``user``: that person's own export (what is theirs and the conversations they were
    in)."""
    stream = store.export_agent(agent_id, user=asking(x_user, user))
    chunks = aiter(stream)
    first = await anext(chunks)  # an unknown agent is a 404 before the body starts

    async def body() -> AsyncIterator[bytes]:
        try:
            yield first
            async for chunk in chunks:
                yield chunk
        finally:
            await stream.aclose()

    name = re.sub(r"[^A-Za-z0-9._-]", "_", stream.agent_id)[:100]
    return StreamingResponse(body(), media_type=NDJSON, headers={
        "Content-Disposition": f'attachment; filename="nous-memory-{name}.jsonl"'})


@router.post(
    "/import", summary="Import an export file into this agent",
    openapi_extra={"requestBody": {"required": True, "content": {NDJSON: {"schema": {
        "type": "string", "format": "binary"}}}}},
    responses=problem_responses(401, 403, 409, 413, 422, 503))
async def import_agent(
    agent_id: AgentId, request: Request, store: Store,
    allow_other_model: Annotated[bool, Query(
        description="Accept vectors of another embedding model (the housekeeping job "
                    "re-embeds them); refused by default")] = False,
    dry_run: Annotated[bool, Query(
        description="Check the file and report what an import would do, changing "
                    "nothing")] = False,
) -> ImportSummary:
    """All or nothing, in one transaction.  Rows the agent already has with the same
    values are skipped, so importing twice changes nothing."""
    limit: int = request.app.state.settings.api_import_max_bytes
    return await store.import_agent(bounded_stream(request, limit),
                                    agent_id=agent_id, allow_other_model=allow_other_model,
                                    dry_run=dry_run)


@router.delete("", summary="Forget an agent: erase every record of it",
               responses=problem_responses(401, 403, 404, 409, 422, 503))
async def forget_agent(agent_id: AgentId, request: Request, store: Store) -> ErasureReceipt:
    """Every row of the agent in every table, in one transaction.  The receipt (also kept
    in the database) holds a hash of the agent id, the time, the rows per table and who
    asked: the API key's name (``api`` without keys).  409: writes kept coming in, or
    the database chose the erasure as a deadlock's victim again and again; nothing was
    erased, and it can be retried."""
    key = getattr(request.state, "key", None)
    return await store.forget_agent(agent_id, actor=key.name if key is not None else "api")


@router.delete("/people/{user}", summary="Forget one person of an agent",
               responses=problem_responses(401, 403, 409, 422, 503))
async def forget_person(agent_id: AgentId, user: str, request: Request,
                        store: Store) -> PersonErasure:
    """Every memory that is this person's alone (their facts, their own conversations
    and what was learned from them) purged in one transaction; the conversations they
    had with others stay the others', without them.  The receipt holds counts and who
    asked, no content."""
    key = getattr(request.state, "key", None)
    return await store.forget_person(agent_id, user,
                                     actor=key.name if key is not None else "api")


class MessageForget(BaseModel):
    """Without ``redact``, the whole message is forgotten; with it, only these strings
    (each must be in the message, in any case), each replaced by ``[redacted]``."""

    model_config = ConfigDict(extra="forbid")

    redact: list[str] | None = Field(default=None, min_length=1, max_length=MAX_SPANS,
                                     examples=[["4471"]])

    @model_validator(mode="after")
    def _named_or_absent(self) -> MessageForget:
        if "redact" in self.model_fields_set and self.redact is None:
            raise ValueError("redact: leave it out to forget the whole message, or name "
                             "the strings to take out")
        return self


@router.post("/episodes/{episode_id}/messages/{seq}/forget",
             summary="Forget one message and every trace of it",
             responses=problem_responses(401, 403, 404, 409, 422, 503))
async def forget_message(agent_id: AgentId, episode_id: EpisodeId, seq: Seq,
                         request: Request, store: Store,
                         body: MessageForget | None = None) -> MessageErasure:
    """The message of an open or closed episode loses its text (a tombstone keeps its
    place) or the strings named in ``redact``; chunks and the summary are made again
    without it, and what was learned from it (facts, decisions, rolling summaries,
    cached extractions, audit values) is purged.  A trimmed or archived episode is
    restored first.  The receipt holds counts and who asked (the key's name), never the
    text.  409: the episode is still being closed."""
    key = getattr(request.state, "key", None)
    return await store.forget_message(agent_id, episode_id, seq,
                                      redact=body.redact if body is not None else None,
                                      actor=key.name if key is not None else "api")


class SecretsPolicy(BaseModel):
    """What the agent keeps out of memory: ``redact`` (the default: each secret replaced
    by a typed placeholder), ``refuse`` (a write holding one fails with 422 naming the
    field and the kind) or ``keep`` (stored as given)."""

    model_config = ConfigDict(extra="forbid")

    secrets: SecretPolicy


@router.get("/secrets-policy", summary="What the agent keeps out of memory",
            responses=problem_responses(401, 403, 422, 503))
async def get_secrets_policy(agent_id: AgentId, store: Store) -> SecretsPolicy:
    return SecretsPolicy(secrets=await store.secrets_policy(agent_id))


@router.put("/secrets-policy", summary="Set what the agent keeps out of memory",
            responses=problem_responses(401, 403, 422, 503))
async def set_secrets_policy(agent_id: AgentId, body: SecretsPolicy,
                             store: Store) -> SecretsPolicy:
    """From now on; what is stored stays as it is (an owner's key)."""
    return SecretsPolicy(secrets=await store.set_secrets_policy(agent_id, body.secrets))
