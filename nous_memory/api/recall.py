"""Recall over HTTP: ``POST /agents/{agent_id}/recall``.

Thin like the other routers: the body is decoded by ``body.json_object``, unknown names
are refused as unknown fields, and every value is validated by ``MemoryStore.recall``
(empty query, ``k`` out of range, unknown kind), so bad input is the usual 422 naming
the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from ..context.recall import MAX_K, MAX_QUERY_CHARS, MIN_K, RecallResult
from ..errors import FieldProblem, InvalidInputError
from ..memories.kinds import Kind
from .body import json_object, unknown_fields
from .errors import problem_responses
from .people import USER_FIELD_DESCRIPTION, UserHeader, with_user
from .routes import AgentId, Store
from .schemas import REF, request_body

RECALL = "RecallRequest"

router = APIRouter(prefix="/agents/{agent_id}", tags=["recall"])


class RecallRequest(BaseModel):
    """What to recall.  ``null`` is the same as leaving a field out."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS,
                       description="Any text; nothing in it is treated as query syntax")
    kinds: list[Kind] | None = Field(default=None, description="Only these kinds (chunks "
                                     "count as episode); every kind when left out")
    k: int = Field(default=10, ge=MIN_K, le=MAX_K, description="How many items")
    include_superseded: bool = Field(default=False,
                                     description="Also superseded versions of facts")
    query_embedding: list[float] | None = Field(
        default=None, description="The query's embedding, when the caller already has it")
    as_of: datetime | None = Field(
        default=None, description="When the query is asked (ISO 8601; default now): "
                                  "relative dates in it resolve against this moment")
    current_only: bool = Field(
        default=False, description="Leave out what no longer holds (items with "
                                   "stale_since); by default they come after the current "
                                   "value")
    user: str | None = Field(default=None, description=USER_FIELD_DESCRIPTION)


RECALL_FIELDS = tuple(RecallRequest.model_fields)  # the body's names, from the model


def recall_request_schemas() -> dict[str, dict[str, Any]]:
    """Component schema of the recall body (merged into the app's OpenAPI)."""
    _, top = models_json_schema([(RecallRequest, "validation")], ref_template=REF)
    return dict(top["$defs"])


EXAMPLES: dict[str, Any] = {
    "everything": {"query": "Where does Tim live?"},
    "facts only": {"query": "deadline of the billing migration", "kinds": ["fact"], "k": 5},
    "as of a date": {"query": "what did I buy last Saturday?",
                     "as_of": "2024-05-20T09:00:00Z"},
}


@router.post("/recall", summary="Ranked memories and verbatim episode excerpts for a query",
             openapi_extra=request_body(RECALL, EXAMPLES),
             responses=problem_responses(401, 403, 413, 422, 503))
async def recall(agent_id: AgentId, request: Request, store: Store,
                 x_user: UserHeader = None) -> RecallResult:
    """Hybrid recall: vector and full-text search over the agent's memories and episode
    chunks, fused by reciprocal rank fusion with bounded priors.  Each item has typed
    scores; only ``scores.cosine`` is meant for thresholds."""
    body = await json_object(request)
    problems = unknown_fields(body, RECALL_FIELDS)
    if "query" not in body:
        problems.insert(0, FieldProblem("query", "missing"))
    if problems:
        raise InvalidInputError(problems)
    options = {name: value for name, value in with_user(x_user, body).items()
               if value is not None and name != "query"}
    return await store.recall(agent_id, body["query"], **options)
