"""Live episodes over HTTP: start one, append messages, close it, read it and its transcript.

Thin like the other routers: bodies are decoded by ``body.json_object``, unknown names are
refused as unknown fields and every value is validated by the store, so a bad message is
the same 422 as any other bad input.  Two statuses are specific to episodes: appending to
an episode that is closing or closed is a 409, and a message (or an append) over the
documented size limits is a 413 (``OversizeMessageError``, mapped in ``errors``).

Closing only marks the episode ``closing`` and queues its processing, hence the 202: the
worker (in the API process by default, or ``nous-memory worker``) writes the summary,
facts and decisions later, and ``GET`` on the episode shows ``closed`` once it has.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import models_json_schema

from ..episodes.lifecycle import MAX_MESSAGES_PER_APPEND, TRANSCRIPT_PAGE, AppendResult, MessageIn
from ..errors import FieldProblem, InvalidInputError
from ..memories.kinds import EpisodeDetail
from ..memories.messages import TranscriptMessage
from ..memories.records import Memory
from .body import json_object, optional_json_object, unknown_fields
from .errors import problem_responses
from .people import UserHeader, asking
from .routes import AgentId, Store
from .schemas import REF, request_body

START = "EpisodeStart"
APPEND = "MessageAppend"

# The body fields of a start, all keyword arguments of MemoryStore.start_episode.
START_FIELDS = ("title", "participants", "user_id", "started_at")
DEFAULT_TRANSCRIPT_PAGE = 1_000

EpisodeId = Annotated[str, Path(
    description="The episode's id (a UUID); another agent's episode is reported as not "
                "found.", json_schema_extra={"format": "uuid"})]

router = APIRouter(prefix="/agents/{agent_id}/episodes", tags=["episodes"])


class TranscriptEntry(BaseModel):
    """One stored message, verbatim."""

    model_config = ConfigDict(frozen=True)

    seq: int = Field(description="Position in the episode, from 0")
    role: str
    content: str
    name: str | None = None
    tool_call_id: str | None = None
    tokens: int
    created_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    person: str | None = Field(default=None, description="Who said it (a person key, "
                               "people/); null: nobody's, such as the assistant's turns")

    @classmethod
    def of(cls, message: TranscriptMessage) -> TranscriptEntry:
        return cls(seq=message.seq, role=message.role, content=message.content,
                   name=message.name, tool_call_id=message.tool_call_id,
                   tokens=message.tokens, created_at=message.created_at,
                   metadata=message.metadata, person=message.person)


class TranscriptPage(BaseModel):
    """A page of the transcript, in order; ask again with ``from_seq=next_from_seq``."""

    model_config = ConfigDict(frozen=True)

    episode_id: str
    message_count: int = Field(description="Messages in the episode when the page was read")
    messages: list[TranscriptEntry]
    next_from_seq: int | None = Field(
        description="Where the next page starts; null when this page reached the end")


def _start_model() -> type[BaseModel]:
    """The documented start body, from ``EpisodeDetail``'s own fields so it cannot drift."""
    fields: dict[str, Any] = {
        name: (EpisodeDetail.model_fields[name].annotation, EpisodeDetail.model_fields[name])
        for name in START_FIELDS}
    return create_model(
        START, __config__=ConfigDict(extra="forbid"),
        __doc__="A new episode, state ``open``.  Every field is optional (an empty body "
                "starts an untitled episode); ``started_at`` defaults to now.",
        **fields)


def _append_model() -> type[BaseModel]:
    return create_model(
        APPEND, __config__=ConfigDict(extra="forbid"),
        __doc__=f"Messages to append in order (1 to {MAX_MESSAGES_PER_APPEND}); one "
                "invalid message rejects them all.",
        messages=(list[MessageIn], Field(min_length=1, max_length=MAX_MESSAGES_PER_APPEND)))


def episode_request_schemas() -> dict[str, dict[str, Any]]:
    """Component schemas of the episode request bodies (merged into the app's OpenAPI)."""
    _, top = models_json_schema([(_start_model(), "validation"),
                                 (_append_model(), "validation")], ref_template=REF)
    return dict(top["$defs"])


START_EXAMPLES: dict[str, Any] = {
    "support chat": {"title": "Support chat", "participants": ["Ana", "assistant"],
                     "user_id": "user-42"},
    "untitled": {},
}
APPEND_EXAMPLES: dict[str, Any] = {
    "two turns": {"messages": [
        {"role": "user", "name": "Ana", "content": "Let's plan the offsite in Lisbon."},
        {"role": "assistant", "content": "Great. What budget do you have?",
         "metadata": {"turn": 2}}]},
}


def _optional_body(extra: dict[str, Any]) -> dict[str, Any]:
    extra["requestBody"]["required"] = False
    return extra


@router.post(
    "", status_code=201, summary="Start an episode (a live conversation)",
    openapi_extra=_optional_body(request_body(START, START_EXAMPLES)),
    responses=problem_responses(401, 403, 413, 422, 503))
async def start_episode(agent_id: AgentId, request: Request, store: Store,
                        x_user: UserHeader = None) -> Memory:
    """Creates an episode in state ``open``, ready for messages; with ``X-User`` (or
    ``user_id``) it is that person's."""
    body = await optional_json_object(request)
    problems = unknown_fields(body, START_FIELDS)
    if problems:
        raise InvalidInputError(problems)
    fields = {name: value for name, value in body.items() if value is not None}
    person = asking(x_user, fields.get("user_id"), "user_id")
    if person is not None:
        fields["user_id"] = fields.get("user_id", person)
    return await store.start_episode(agent_id, **fields)


@router.post(
    "/{episode_id}/messages", status_code=201, summary="Append messages to an open episode",
    openapi_extra=request_body(APPEND, APPEND_EXAMPLES),
    responses=problem_responses(401, 403, 404, 409, 413, 422, 503))
async def append_messages(agent_id: AgentId, episode_id: EpisodeId, request: Request,
                          store: Store, x_user: UserHeader = None) -> AppendResult:
    """Stores the messages verbatim, numbered from the episode's ``message_count``.

    All or nothing: one invalid message (its field named ``messages[i].field``) rejects
    the append.  An episode that is closing or closed refuses messages with 409; a message
    over the size limits is 413.  With ``X-User``: the conversation must be that person's
    (or shared; else 404), and their turns without a ``user`` are theirs.
    """
    body = await json_object(request)
    problems = unknown_fields(body, ("messages",))
    messages = body.get("messages")
    if not isinstance(messages, list):
        problems.insert(0, FieldProblem("messages", "missing; expected an array of messages"))
    if problems:
        raise InvalidInputError(problems)
    assert isinstance(messages, list)
    return await store.append(agent_id, episode_id, messages, user=asking(x_user))


@router.post(
    "/{episode_id}/close", status_code=202, summary="Close an episode",
    responses=problem_responses(401, 403, 404, 422, 503))
async def close_episode(agent_id: AgentId, episode_id: EpisodeId, store: Store,
                        x_user: UserHeader = None) -> Memory:
    """Marks the episode ``closing`` and queues its processing (summary, facts, decisions);
    the worker makes it ``closed``.  Closing again changes nothing and returns the episode
    as it is (``closing``, or ``closed`` once processed)."""
    return await store.close_episode(agent_id, episode_id, user=asking(x_user))


@router.get("/{episode_id}", summary="Read an episode",
            responses=problem_responses(401, 403, 404, 422, 503))
async def get_episode(agent_id: AgentId, episode_id: EpisodeId, store: Store,
                      x_user: UserHeader = None) -> Memory:
    """The episode memory: ``detail.state``, ``summary``, ``summary_source``,
    ``detail.facts_state``, ``detail.facts_extractor``, ``detail.message_count``...  A
    memory of another kind is 404."""
    return await store.get_episode(agent_id, episode_id, user=asking(x_user))


@router.get("/{episode_id}/messages", summary="A page of an episode's transcript",
            responses=problem_responses(401, 403, 404, 422, 503))
async def transcript(
    agent_id: AgentId, episode_id: EpisodeId, store: Store,
    from_seq: Annotated[int, Query(ge=0, description="First message (seq) of the page")] = 0,
    limit: Annotated[int, Query(
        description=f"Page size, 1 to {TRANSCRIPT_PAGE}")] = DEFAULT_TRANSCRIPT_PAGE,
    last: Annotated[int | None, Query(
        description=f"Instead of a page from ``from_seq``: the newest ``last`` messages "
                    f"(1 to {TRANSCRIPT_PAGE}), oldest first")] = None,
    x_user: UserHeader = None,
) -> TranscriptPage:
    """The verbatim messages from ``from_seq`` on, in order, or the newest ``last`` ones.
    A message deleted while the episode was open is left out (its seq is a gap)."""
    if last is not None:
        if from_seq:
            raise InvalidInputError.single("last", "cannot be combined with from_seq")
        messages = await store.latest_messages(agent_id, episode_id, limit=last,
                                               user=asking(x_user))
    else:
        messages = await store.transcript(agent_id, episode_id, from_seq=from_seq,
                                          limit=limit, user=asking(x_user))
    # read after the page, so the count is never behind the messages just returned
    episode = await store.get_episode(agent_id, episode_id)
    assert isinstance(episode.detail, EpisodeDetail)
    count = episode.detail.message_count
    following = messages[-1].seq + 1 if messages else None
    more = last is None and len(messages) == limit and following is not None
    return TranscriptPage(
        episode_id=str(episode.id), message_count=count,
        messages=[TranscriptEntry.of(m) for m in messages],
        next_from_seq=following if more and following is not None and following < count
        else None)
