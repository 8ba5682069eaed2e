"""History import over HTTP: ``POST /agents/{agent_id}/imports`` and its status.

A backend bringing in a person's past conversations sends them in calls of up to 1,000
sessions (and the usual body limit); a call is all or nothing, and repeating one is safe
(sessions are skipped by key), so a client that lost an answer just sends it again.
The close work (chunks, embeddings, facts) runs in the worker afterwards, hence the 202;
``GET`` on the same path says how much of it is left.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from ..episodes.results import MessageText, Role
from ..errors import FieldProblem, InvalidInputError
from ..history import IngestResult, IngestStatus
from ..history.sessions import MAX_KEY_CHARS, MAX_SESSION_TURNS, MAX_SESSIONS_PER_CALL
from ..memories.kinds import Label
from ..people import Person
from .body import json_object, unknown_fields
from .errors import problem_responses
from .routes import AgentId, Store
from .schemas import REF, request_body

IMPORT = "HistoryImport"

router = APIRouter(prefix="/agents/{agent_id}/imports", tags=["history import"])


class HistoryTurnIn(BaseModel):
    """One message of a past conversation."""

    # the fields of ``history.HistoryTurn``, typed as ``MessageIn`` types them (a turn is
    # appended as one); tests/unit/test_message_shapes.py holds them together
    model_config = ConfigDict(extra="forbid")

    role: Role = Field(description="user, assistant, system or tool")
    content: MessageText
    name: Label | None = Field(default=None, description="The speaker's name")
    at: datetime | None = Field(default=None, description="When it was said (default: "
                                "the session's start)")
    metadata: dict[str, Any] = Field(default_factory=dict)
    user: Person | None = Field(default=None, description="The person who said it (a user "
                                "id or a name), when not the session's user")


class HistorySessionIn(BaseModel):
    """One past conversation; it becomes one closed episode."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = Field(default=None, max_length=MAX_KEY_CHARS,
                            description="Identifies the session across imports (default: a "
                                        "digest of its date and turns)")
    started_at: datetime
    title: str | None = None
    user: Person | None = Field(default=None, description="Whose conversation it was (a user "
                                "id or a name): the user's turns and what is learned from "
                                "them are that person's")
    turns: list[HistoryTurnIn] = Field(max_length=MAX_SESSION_TURNS)


class HistoryImport(BaseModel):
    """Sessions to import, in any order (they are processed by date)."""

    model_config = ConfigDict(extra="forbid")

    sessions: list[HistorySessionIn] = Field(max_length=MAX_SESSIONS_PER_CALL)


def history_request_schemas() -> dict[str, dict[str, Any]]:
    """Component schemas of the import body (merged into the app's OpenAPI)."""
    _, top = models_json_schema([(HistoryImport, "validation")], ref_template=REF)
    return dict(top["$defs"])


EXAMPLES: dict[str, Any] = {
    "one session": {"sessions": [{
        "key": "2024-03-02-morning", "started_at": "2024-03-02T09:00:00Z",
        "turns": [{"role": "user", "content": "We moved to Lisbon last month."},
                  {"role": "assistant", "content": "Congratulations on the move!"}]}]},
}


@router.post("", status_code=202, summary="Import past conversations as closed episodes",
             openapi_extra=request_body(IMPORT, EXAMPLES),
             responses=problem_responses(401, 403, 409, 413, 422, 503))
async def ingest(agent_id: AgentId, request: Request, store: Store) -> IngestResult:
    """Each session becomes an episode, dated as given, closed by the worker exactly as
    a live conversation would be.  Sessions already imported (same key) are skipped."""
    body = await json_object(request)
    problems = unknown_fields(body, ("sessions",))
    if "sessions" not in body:
        problems.insert(0, FieldProblem("sessions", "missing"))
    if problems:
        raise InvalidInputError(problems)
    return await store.ingest(agent_id, body["sessions"])


@router.get("", summary="How far the agent's imports are",
            responses=problem_responses(401, 403, 422, 503))
async def ingest_status(agent_id: AgentId, store: Store) -> IngestStatus:
    """Sessions imported so far, episodes whose close work is still queued or running,
    and close work that failed for good."""
    return await store.ingest_status(agent_id)
