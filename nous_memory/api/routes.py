"""The HTTP routes: thin translations of requests into ``MemoryStore`` calls.

Routes do no validation of their own beyond HTTP types; the store checks every value
and the handlers in ``errors`` turn its exceptions into responses.  Memory routes are
nested under the agent so authorisation and tenant scoping both key on the path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from ..errors import (
    DatabaseError,
    DatabaseUnavailableError,
    FieldProblem,
    InvalidInputError,
)
from ..memories.kinds import MAX_AGENT_ID_CHARS, MAX_PAGE_SIZE, Kind, Status
from ..memories.records import Memory, MemoryEvent, Page
from ..store import MemoryStore
from .auth import presents_valid_key
from .body import json_object
from .errors import problem_responses
from .people import UserHeader, UserQuery, asking, with_user
from .schemas import (
    BATCH,
    CHANGE_EXAMPLES,
    CHANGES,
    CREATE,
    CREATE_EXAMPLES,
    Health,
    MemoryList,
    Readiness,
    ReadinessChecks,
    Unhealthy,
    request_body,
)

log = logging.getLogger("nous_memory.api")


def get_store(request: Request) -> MemoryStore:
    """The app's store; absent only before startup or after shutdown."""
    store: MemoryStore | None = getattr(request.app.state, "store", None)
    if store is None:
        raise DatabaseUnavailableError("the memory store is not open")
    return store


Store = Annotated[MemoryStore, Depends(get_store)]
AgentId = Annotated[str, Path(
    description=f"The agent that owns the memories (1-{MAX_AGENT_ID_CHARS} printable "
                "characters); every call sees only that agent's memories.")]
MemoryId = Annotated[str, Path(
    description="The memory's id (a UUID); another agent's id is reported as not found.",
    json_schema_extra={"format": "uuid"})]

# Keyword arguments of the store methods; a body field with one of these names would be
# taken as that argument (or crash the call), so it is rejected as unknown instead.
_CREATE_RESERVED = ("agent_id",)
_UPDATE_RESERVED = ("agent_id", "memory_id", "actor")


def _refuse(fields: Mapping[str, Any], names: Iterable[str]) -> None:
    problems = [FieldProblem(name, "unknown field") for name in names if name in fields]
    if problems:
        raise InvalidInputError(problems)


health_router = APIRouter(tags=["health"])
router = APIRouter(prefix="/agents/{agent_id}/memories", tags=["memories"])


@health_router.get(
    "/health", response_model=None, summary="Check the database and embedding model",
    responses={200: {"model": Health, "description": "Healthy"},
               503: {"model": Unhealthy, "description": "The database query failed"}})
async def health(request: Request) -> JSONResponse:
    """Runs one query against the database; never needs an API key.  When keys are
    configured, a caller without one learns only whether the service is up: versions,
    the database address and the model are for callers with a key."""
    try:
        report = await get_store(request).health()
    except DatabaseError as exc:
        log.warning("health check failed: %s", exc)
        reason = ("cannot reach the database" if isinstance(exc, DatabaseUnavailableError)
                  else "the database query failed")
        return JSONResponse({"status": "unavailable", "detail": reason}, status_code=503)
    ring = request.app.state.key_ring
    if ring is not None and not await presents_valid_key(request, ring):
        return JSONResponse({"status": "ok"})
    return JSONResponse(jsonable_encoder({"status": "ok", **report}))


@health_router.get(
    "/ready", response_model=None, summary="Whether the service can take traffic",
    responses={200: {"model": Readiness, "description": "Database, model and worker are up"},
               503: {"model": Readiness,
                     "description": "Something is not up yet (or any more)"}})
async def ready(request: Request) -> JSONResponse:
    """For load balancers and orchestrators (compose, Kubernetes readiness probes): the
    database answers with the schema this version expects, the embedding model is loaded
    and the work-queue worker (when this process runs one) is alive.  Needs no key and
    tells nothing but those three states."""
    checks = {"database": "ok", "model": "ok", "worker": "off"}
    try:
        store = get_store(request)
        await store.health()
        if not store.schema.up_to_date:
            checks["database"] = "schema not current"
    except DatabaseError:
        checks["database"] = "unavailable"
    if not getattr(request.app.state, "model_ready", False):
        checks["model"] = "loading"
    task = getattr(request.app.state, "worker_task", None)
    if task is not None:
        checks["worker"] = "running" if not task.done() else "stopped"
    up = checks["database"] == checks["model"] == "ok" and checks["worker"] != "stopped"
    body = Readiness(status="ready" if up else "not ready", checks=ReadinessChecks(**checks))
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if up else 503)


@router.post(
    "", status_code=201, summary="Remember one memory",
    openapi_extra=request_body(CREATE, CREATE_EXAMPLES),
    responses=problem_responses(401, 403, 413, 422, 503))
async def create_memory(agent_id: AgentId, request: Request, store: Store,
                        x_user: UserHeader = None) -> Memory:
    """Creates one memory of the given ``kind``; its summary and embedding are computed now.
    ``user`` (or the header) makes it that person's; ``people`` names several."""
    fields = with_user(x_user, await json_object(request))
    if "kind" not in fields:
        raise InvalidInputError.single("kind", "missing")
    kind = fields.pop("kind")
    _refuse(fields, _CREATE_RESERVED)
    return await store.remember(agent_id, kind, **fields)


@router.post(
    "/batch", status_code=201, summary="Remember many memories at once",
    openapi_extra=request_body(BATCH, {"two": {"items": list(CREATE_EXAMPLES.values())[:2]}}),
    responses=problem_responses(401, 403, 413, 422, 503))
async def create_memories(agent_id: AgentId, request: Request, store: Store,
                          x_user: UserHeader = None) -> MemoryList:
    """All or nothing: one invalid item rejects the batch, naming ``items[i].field``.
    The header makes every item that person's."""
    body = await json_object(request)
    _refuse(body, (name for name in body if name != "items"))
    items = body.get("items")
    if not isinstance(items, list):
        raise InvalidInputError.single("items", "missing; expected an array of memories")
    if x_user is not None:
        items = [with_user(x_user, item, f"items[{i}].user") if isinstance(item, dict)
                 else item for i, item in enumerate(items)]
    return MemoryList(items=await store.remember_many(agent_id, items))


@router.get("", summary="List memories, newest first",
            responses=problem_responses(401, 403, 422, 503))
async def list_memories(
    agent_id: AgentId, store: Store,
    kind: Annotated[Kind | None, Query(description="Only this kind")] = None,
    status: Annotated[list[Status] | None, Query(
        description="Only these statuses (repeatable); default: all but deleted")] = None,
    created_after: Annotated[datetime | None, Query(
        description="Only memories created after this time (ISO 8601)")] = None,
    created_before: Annotated[datetime | None, Query(
        description="Only memories created before this time (ISO 8601)")] = None,
    limit: Annotated[int, Query(description=f"Page size, 1 to {MAX_PAGE_SIZE}")] = 50,
    cursor: Annotated[str | None, Query(
        description="The previous page's ``next_cursor``")] = None,
    tag: Annotated[str | None, Query(description="Only memories with this tag")] = None,
    user: UserQuery = None, x_user: UserHeader = None,
) -> Page:
    """One page; pass ``next_cursor`` back as ``cursor`` until it is null."""
    return await store.list(agent_id, kind=kind, status=status, created_after=created_after,
                            created_before=created_before, limit=limit, cursor=cursor, tag=tag,
                            user=asking(x_user, user))


@router.get("/{memory_id}", summary="Read one memory",
            responses=problem_responses(401, 403, 404, 422, 503))
async def get_memory(
    agent_id: AgentId, memory_id: MemoryId, store: Store,
    include_deleted: Annotated[bool, Query(
        description="Also return a soft-deleted memory")] = False,
    x_user: UserHeader = None,
) -> Memory:
    """Unknown ids, other agents' ids and (with ``X-User``) other people's are all 404."""
    return await store.get(agent_id, memory_id, include_deleted=include_deleted,
                           user=asking(x_user))


@router.patch(
    "/{memory_id}", summary="Change fields of a memory",
    openapi_extra=request_body(CHANGES, CHANGE_EXAMPLES),
    responses=problem_responses(401, 403, 404, 409, 413, 422, 503))
async def update_memory(agent_id: AgentId, memory_id: MemoryId, request: Request,
                        store: Store, x_user: UserHeader = None) -> Memory:
    """The summary and embedding follow the change; old and new values go to the history."""
    changes = await json_object(request)
    _refuse(changes, _UPDATE_RESERVED)
    return await store.update(agent_id, memory_id, user=asking(x_user), **changes)


@router.delete(
    "/{memory_id}", status_code=204, response_class=Response, summary="Delete a memory",
    responses=problem_responses(401, 403, 404, 422, 503))
async def delete_memory(
    agent_id: AgentId, memory_id: MemoryId, store: Store,
    purge: Annotated[bool, Query(
        description="Erase the rows and content instead of marking the memory deleted")] = False,
    x_user: UserHeader = None,
) -> Response:
    """Soft by default (status ``deleted``); ``purge=true`` keeps only a content-free history."""
    await store.delete(agent_id, memory_id, purge=purge, user=asking(x_user))
    return Response(status_code=204)


@router.get("/{memory_id}/history", summary="The audit trail of a memory",
            responses=problem_responses(401, 403, 404, 422, 503))
async def memory_history(agent_id: AgentId, memory_id: MemoryId,
                         store: Store, x_user: UserHeader = None) -> list[MemoryEvent]:
    """Every create, update and delete, oldest first; it outlives a purge."""
    return await store.history(agent_id, memory_id, user=asking(x_user))
