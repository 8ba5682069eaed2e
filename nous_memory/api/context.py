"""Context assembly and expand over HTTP.

Thin like the other routers: the body is decoded by ``body.json_object``, unknown names
are refused as unknown fields, and every value is validated by the store (an empty
query, a budget below the minimum, an unknown section or extraction mode is a 422 naming
the field).  ``expand`` takes a memory id or a ref shown in a context; another agent's
memory is a 404, exactly like an unknown one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from ..context.expand import Expanded
from ..context.model import (
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_SECTION_BUDGETS,
    MAX_BUDGET_TOKENS,
    MIN_BUDGET_TOKENS,
    Context,
    Extraction,
)
from ..context.upcoming import MAX_DAYS, MAX_EVENTS, Upcoming
from ..errors import FieldProblem, InvalidInputError
from .body import json_object, unknown_fields
from .errors import problem_responses
from .people import USER_FIELD_DESCRIPTION, UserHeader, UserQuery, asking, with_user
from .routes import AgentId, Store
from .schemas import REF, request_body

REQUEST = "ContextRequest"
FIELDS = ("query", "budget_tokens", "sections", "extraction", "query_embedding", "as_of",
          "current_only", "user")

Target = Annotated[str, Path(
    description="A memory id (UUID) or a ref from a context, e.g. fact:1a2b3c4d or "
                "episode:1a2b3c4d#c3; another agent's memory is reported as not found.")]

router = APIRouter(prefix="/agents/{agent_id}", tags=["context"])


class ContextBody(BaseModel):
    """What to assemble.  ``null`` is the same as leaving a field out."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="The user's turn or task; must not be empty")
    budget_tokens: int = Field(
        DEFAULT_BUDGET_TOKENS, ge=MIN_BUDGET_TOKENS, le=MAX_BUDGET_TOKENS,
        description="Hard cap on the cl100k tokens of the returned text")
    sections: list[str] | dict[str, int] | None = Field(
        None, description="Section names, or name -> token budget; default: "
        + ", ".join(f"{s.value} {b}" for s, b in DEFAULT_SECTION_BUDGETS.items()))
    extraction: Extraction = Field(Extraction.CACHED, description="Tier-2 mode on a cache miss")
    query_embedding: list[float] | None = Field(
        None, description="The query's embedding, when the caller already has it")
    as_of: datetime | None = Field(
        None, description="When the query is asked (ISO 8601; default now)")
    current_only: bool = Field(
        False, description="Leave out what no longer holds (superseded values and the "
                           "turns and episodes that state them); by default they are "
                           "shown after the current value, marked '(older: ...)'")
    user: str | None = Field(None, description=USER_FIELD_DESCRIPTION)


def context_request_schemas() -> dict[str, dict[str, Any]]:
    _, top = models_json_schema([(ContextBody, "validation")], ref_template=REF)
    return {REQUEST if name == "ContextBody" else name: body
            for name, body in top["$defs"].items()}


EXAMPLES: dict[str, Any] = {
    "default sections": {"query": "When is the billing migration?", "budget_tokens": 1500},
    "facts and decisions only": {"query": "database choice", "budget_tokens": 800,
                                 "sections": {"facts": 400, "decisions": 400},
                                 "extraction": "off"},
}


@router.post("/context", summary="Assemble the memories relevant to a query, within a budget",
             openapi_extra=request_body(REQUEST, EXAMPLES),
             responses=problem_responses(401, 403, 413, 422, 503))
async def assemble_context(agent_id: AgentId, request: Request, store: Store,
                           x_user: UserHeader = None) -> Context:
    """``text`` (wrapped in a ``<nous-memory kind="context">`` block) is never over
    ``budget_tokens``; every line carries its ref for ``expand``."""
    body = await json_object(request)
    problems = unknown_fields(body, FIELDS)
    if "query" not in body:
        problems.insert(0, FieldProblem("query", "missing"))
    if problems:
        raise InvalidInputError(problems)
    options = {name: value for name, value in with_user(x_user, body).items()
               if value is not None}
    query = options.pop("query")
    return await store.assemble_context(agent_id, query, **options)


@router.get("/upcoming", summary="The agent's plans in the next days, soonest first",
            responses=problem_responses(401, 403, 422, 503))
async def upcoming(agent_id: AgentId, store: Store,
                   days: Annotated[int, Query(ge=1, le=MAX_DAYS,
                                              description="How many days ahead")] = 7,
                   as_of: Annotated[datetime | None, Query(
                       description="From when (ISO 8601; default now)")] = None,
                   limit: Annotated[int, Query(ge=1, le=MAX_EVENTS,
                                               description="At most this many")] = 50,
                   user: UserQuery = None, x_user: UserHeader = None) -> Upcoming:
    """Dated facts ahead of ``as_of`` ("my dentist appointment is next Tuesday at 3pm"):
    a moved plan at its new date only, a past one no longer."""
    return await store.upcoming(agent_id, days=days, as_of=as_of, limit=limit,
                                user=asking(x_user, user))


@router.get("/memories/{memory_id}/expand", summary="Everything about one memory",
            responses=problem_responses(401, 403, 404, 422, 503))
async def expand(agent_id: AgentId, memory_id: Target, store: Store,
                 user: UserQuery = None, x_user: UserHeader = None) -> Expanded:
    """Every field (archived detail restored), history, supersession chain, source
    episode with a transcript excerpt, and what is in cold storage.  Another person's
    memory is a 404 for a ``user``, as an unknown one is."""
    return await store.expand(agent_id, memory_id, user=asking(x_user, user))
