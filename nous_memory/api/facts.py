"""Fact consolidation over HTTP: learn a fact, read its history, list an episode's facts.

Like the memory routes these are thin: the body is decoded by ``body.json_object``, names
the store would not take are refused as unknown fields, and every value is validated by
``MemoryStore.learn_fact`` so that a bad one is the same 422 as everywhere else.  A fact
the store declines (too short, an echo of instructions, blocked by a censor) is a normal
answer, ``action: "rejected"`` with the ``reason``, not an error.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import models_json_schema

from ..errors import FieldProblem, InvalidInputError
from ..facts.learning import FactHistory, LearnResult
from ..facts.results import LEARN_FIELDS
from ..memories.kinds import FactDetail
from ..memories.records import Memory
from ..people import visible_to
from .body import json_object, unknown_fields
from .errors import problem_responses
from .people import USER_FIELD_DESCRIPTION, UserHeader, asking, with_user
from .routes import AgentId, Store
from .schemas import REF, request_body

LEARN = "FactLearn"
BODY_FIELDS = (*LEARN_FIELDS, "user")


FactId = Annotated[str, Path(
    description="Any version of the fact (a UUID); another agent's id is reported as not "
                "found.", json_schema_extra={"format": "uuid"})]
EpisodeId = Annotated[str, Path(
    description="The episode memory the facts were learned from (a UUID).",
    json_schema_extra={"format": "uuid"})]

router = APIRouter(prefix="/agents/{agent_id}", tags=["facts"])


def _learn_model() -> type[BaseModel]:
    """The documented body, built from ``FactDetail``'s own fields so it cannot drift."""
    fields: dict[str, Any] = {
        name: (FactDetail.model_fields[name].annotation, FactDetail.model_fields[name])
        for name in LEARN_FIELDS}
    fields["user"] = (str | None, Field(
        default=None, description=USER_FIELD_DESCRIPTION + "  The fact is theirs and is "
        "weighed against their facts only (and the agent's facts about them by their "
        "name); without a person it is the agent's, shared."))
    return create_model(
        LEARN, __config__=ConfigDict(extra="forbid"),
        __doc__="A statement to learn.  ``null`` is the same as leaving a field out.",
        **fields)


def fact_request_schemas() -> dict[str, dict[str, Any]]:
    """Component schemas of the fact request bodies (merged into the app's OpenAPI)."""
    _, top = models_json_schema([(_learn_model(), "validation")], ref_template=REF)
    return dict(top["$defs"])


LEARN_EXAMPLES: dict[str, Any] = {
    "stated by the user": {"content": "The project deadline is March 10",
                           "subject": "project", "confidence": 0.9},
    "extracted from an episode": {
        "content": "Tim lives in Porto", "subject": "Tim", "category": "personal",
        "source_kind": "extracted", "source": "onboarding call",
        "source_episode_id": "0b0c7a52-63a4-4c1e-9d0e-2f7c1c1f5a10"},
}

_EXAMPLE_FACT = {
    "id": "6f1d2c3b-8e4a-4f5b-9c7d-1a2b3c4d5e6f", "agent_id": "agent-a", "kind": "fact",
    "status": "active", "summary": "The project deadline is March 10",
    "summary_source": "template", "summary_tokens": 7, "importance": 0.5, "tags": [],
    "embedding_model": "sentence-transformers/all-MiniLM-L6-v2", "version": 1,
    "created_at": "2025-03-01T09:30:00Z", "updated_at": "2025-03-01T09:30:00Z",
    "last_accessed_at": None, "access_count": 0, "deleted_at": None,
    "detail": {"kind": "fact", "content": "The project deadline is March 10",
               "subject": "project", "category": None, "confidence": 0.9, "source": None,
               "source_kind": "user_stated", "source_episode_id": None,
               "confirmation_count": 0, "last_confirmed_at": None,
               "supersedes_id": "3a9e8d7c-6b5a-4f3e-8d2c-1b0a9f8e7d6c",
               "superseded_by_id": None, "conflicts_with": []},
}

LEARN_RESULT_EXAMPLES: dict[str, Any] = {
    "superseded": {"action": "superseded", "fact": _EXAMPLE_FACT, "reason": None,
                   "similarity": 0.9412, "decided_by": "similarity",
                   "related": ["3a9e8d7c-6b5a-4f3e-8d2c-1b0a9f8e7d6c"]},
    "rejected": {"action": "rejected", "fact": None,
                 "reason": "too short (a fact needs 2+ words and 6+ chars)",
                 "similarity": None, "decided_by": None, "related": []},
}


def _examples(examples: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    media = {"examples": {name: {"value": value} for name, value in examples.items()}}
    return {200: {"description": "What was learned, or why nothing was",
                  "content": {"application/json": media}}}


@router.post(
    "/facts/learn", summary="Learn a fact, consolidated with what the agent knows",
    openapi_extra=request_body(LEARN, LEARN_EXAMPLES),
    responses={**_examples(LEARN_RESULT_EXAMPLES),
               **problem_responses(401, 403, 413, 422, 503)})
async def learn_fact(agent_id: AgentId, request: Request, store: Store,
                     x_user: UserHeader = None) -> LearnResult:
    """Creates the fact, or confirms, merges into, supersedes or reactivates a stored one.

    ``action`` says which; ``related`` holds the fact confirmed, replaced or flagged as a
    possible conflict.  ``rejected`` (with a ``reason``) stores nothing and is still a 200.
    """
    body = await json_object(request)
    problems = unknown_fields(body, BODY_FIELDS)
    if "content" not in body:
        problems.insert(0, FieldProblem("content", "missing"))
    if problems:
        raise InvalidInputError(problems)
    content = body.pop("content")
    fields = {name: value for name, value in with_user(x_user, body).items()
              if value is not None}
    return await store.learn_fact(agent_id, content, **fields)


@router.get("/facts/{fact_id}/history", summary="Every version of a fact and its audit trail",
            responses=problem_responses(401, 403, 404, 422, 503))
async def fact_history(agent_id: AgentId, fact_id: FactId, store: Store,
                       x_user: UserHeader = None) -> FactHistory:
    """``chain``: the versions linked by supersession, oldest first (any version's id gives
    the whole chain); ``events``: their audit entries, oldest first.  With ``X-User``: the
    versions that person may read."""
    return await store.fact_history(agent_id, fact_id, user=asking(x_user))


@router.get("/episodes/{episode_id}/facts", summary="The facts learned from an episode",
            responses=problem_responses(401, 403, 422, 503))
async def episode_facts(agent_id: AgentId, episode_id: EpisodeId,
                        store: Store, x_user: UserHeader = None) -> list[Memory]:
    """Facts whose ``source_episode_id`` is this episode, current and superseded, oldest
    first; an unknown (or another agent's) episode has none, and so (with ``X-User``) has
    another person's."""
    user = asking(x_user)
    facts = await store.facts_from_episode(agent_id, episode_id)
    return [f for f in facts if user is None or visible_to(f.people, user)]
