"""Working memory over HTTP: the prompt for an episode's next model call, its rolling
summary and the summary chain, message edits and deletes, and the agent's policy.

Thin like the other routers: bodies are decoded by ``body.json_object``, unknown names are
refused as unknown fields, and the store validates every value (422 with field and reason).
The body and response models below only document what the store takes and returns; the
policy's two models are built from the ``Policy`` dataclass's own fields, so they cannot
drift from the knobs the store accepts.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import models_json_schema

from ..conversation.policy import Policy
from ..conversation.policy import as_dict as policy_json
from ..conversation.results import (
    ConversationSummary,
    MessageChange,
    Prompt,
    SummarizeResult,
    SummaryRecord,
)
from ..errors import FieldProblem, InvalidInputError
from .body import json_object, optional_json_object, unknown_fields
from .episodes import EpisodeId
from .errors import problem_responses
from .routes import AgentId, Store
from .schemas import REF, request_body

router = APIRouter(prefix="/agents/{agent_id}", tags=["working memory"])
Seq = Annotated[int, Path(ge=0, description="The message's position in the episode (seq)")]
ERRORS = problem_responses(401, 403, 404, 413, 422, 503)
_FROZEN = ConfigDict(frozen=True, extra="forbid")
_KNOB_TYPES = typing.get_type_hints(Policy)


def _policy_model(name: str, doc: str, *, optional: bool) -> type[BaseModel]:
    """Every knob of ``Policy`` with its type: required (the effective policy) or each
    optional and nullable (changes, where ``null`` removes a stored knob)."""
    fields: dict[str, Any] = {}
    for knob in dataclasses.fields(Policy):
        kind = _KNOB_TYPES[knob.name]
        fields[knob.name] = (kind | None, None) if optional else (kind, ...)
    return create_model(name, __config__=_FROZEN, __doc__=doc, **fields)


ConversationPolicy = _policy_model(
    "ConversationPolicy", "Every knob of the agent's summary policy, as it is in effect.",
    optional=False)
PolicyChanges = _policy_model(
    "PolicyChanges", "Knobs to set (``null`` removes a stored knob, so the default or the "
                     "deployment's value applies again); knobs left out stay as they are.",
    optional=True)


class PromptRequest(BaseModel):
    """What the next model call needs: the system prompt and the budget."""

    model_config = _FROZEN

    system: str = Field(description="The system prompt, sent first")
    budget_tokens: int = Field(description="Hard cap on the prompt's exact cl100k tokens")
    query: str | None = Field(None, description="The query of a context block (when a "
                                                "context provider is configured)")
    context_tokens: int | None = Field(None, description="Tokens for that context block")
    summarize: bool = Field(True, description="Fold what the policy says is due first")
    policy: PolicyChanges | None = Field(  # type: ignore[valid-type]
        None, description="Knob overrides for this call only")


class SummarizeRequest(BaseModel):
    """Fold now; an empty body (or none) folds what the policy says is due."""

    model_config = _FROZEN

    force: bool = Field(False, description="Fold all but the protected tail")
    policy: PolicyChanges | None = Field(  # type: ignore[valid-type]
        None, description="Knob overrides for this call only")


class MessageEdit(BaseModel):
    """The message's new text (its earlier text is kept)."""

    model_config = _FROZEN

    content: str


class Summarized(BaseModel):
    """A summarising pass and the rolling summary after it."""

    model_config = ConfigDict(frozen=True)

    result: SummarizeResult
    summary: ConversationSummary


class SummaryHistory(BaseModel):
    """A page of the summary chain, oldest first."""

    model_config = ConfigDict(frozen=True)

    episode_id: str
    records: list[SummaryRecord]


PROMPT_FIELDS = tuple(PromptRequest.model_fields)
SUMMARIZE_FIELDS = tuple(SummarizeRequest.model_fields)
PROMPT_EXAMPLES: dict[str, Any] = {
    "chat": {"system": "You are a helpful assistant.", "budget_tokens": 4000},
    "with context": {"system": "You are a helpful assistant.", "budget_tokens": 4000,
                     "query": "the offsite budget", "context_tokens": 600,
                     "policy": {"window_tokens": 4000}},
}


def conversation_request_schemas() -> dict[str, dict[str, Any]]:
    """Component schemas of the working-memory request bodies."""
    _, top = models_json_schema([(model, "validation") for model in (
        PromptRequest, SummarizeRequest, MessageEdit, PolicyChanges)], ref_template=REF)
    return dict(top["$defs"])


def _optional(extra: dict[str, Any]) -> dict[str, Any]:
    extra["requestBody"]["required"] = False
    return extra


def _fields(body: dict[str, Any], allowed: tuple[str, ...]) -> None:
    problems = unknown_fields(body, allowed)
    for name in ("summarize", "force"):
        if name in body and not isinstance(body[name], bool):
            problems.append(FieldProblem(name, "must be true or false"))
    if "policy" in body and not isinstance(body["policy"], dict):
        problems.append(FieldProblem("policy", "must be an object of knobs"))
    if problems:
        raise InvalidInputError(problems)


@router.post("/episodes/{episode_id}/prompt", summary="Build the prompt for the next call",
             openapi_extra=request_body("PromptRequest", PROMPT_EXAMPLES), responses=ERRORS)
async def build_prompt(agent_id: AgentId, episode_id: EpisodeId, request: Request,
                       store: Store) -> Prompt:
    """Body: ``system`` and ``budget_tokens`` (required), ``query`` and ``context_tokens``
    (a context block when a context provider is configured), ``summarize`` (default true:
    fold what the policy says is due first) and ``policy`` (per-call knob overrides).
    Returns chat ``messages`` whose exact cl100k count ``tokens`` never exceeds the budget.
    """
    body = await json_object(request)
    _fields(body, PROMPT_FIELDS)
    missing = [FieldProblem(n, "missing") for n in ("system", "budget_tokens") if n not in body]
    if missing:
        raise InvalidInputError(missing)
    return await store.build_prompt(
        agent_id, episode_id, body["system"], body["budget_tokens"], query=body.get("query"),
        context_tokens=body.get("context_tokens"), summarize=body.get("summarize", True),
        policy=body.get("policy"))


@router.get("/episodes/{episode_id}/summary", summary="The current rolling summary",
            responses=ERRORS)
async def get_summary(agent_id: AgentId, episode_id: EpisodeId,
                      store: Store) -> ConversationSummary:
    """Story and chapter text, facets, the watermark and the breaker's state."""
    return await store.conversation_summary(agent_id, episode_id)


@router.post("/episodes/{episode_id}/summary", summary="Summarise now", responses=ERRORS,
             openapi_extra=_optional(request_body("SummarizeRequest", {
                 "due folds": {}, "forced": {"force": True}})))
async def summarize(agent_id: AgentId, episode_id: EpisodeId, request: Request,
                    store: Store) -> Summarized:
    """Fold what the policy says is due (``force``: all but the protected tail).  Returns
    the pass (folded, reasons, gaps, invalidation) and the summary after it."""
    body = await optional_json_object(request)
    _fields(body, SUMMARIZE_FIELDS)
    result = await store.summarize_conversation(agent_id, episode_id,
                                                force=body.get("force", False),
                                                policy=body.get("policy"))
    return Summarized(result=result,
                      summary=await store.conversation_summary(agent_id, episode_id))


@router.get("/episodes/{episode_id}/summary/history", summary="The summary chain",
            responses=ERRORS)
async def history(agent_id: AgentId, episode_id: EpisodeId, store: Store,
                  limit: Annotated[int, Query(description="1 to 500")] = 100,
                  offset: Annotated[int, Query(ge=0, lt=2**31)] = 0) -> SummaryHistory:
    """Every summary record, oldest first: id, parent, depth, covered messages, tokens,
    source (llm | rule), facets and status (current, superseded, invalidated)."""
    records = await store.summary_history(agent_id, episode_id, limit=limit, offset=offset)
    return SummaryHistory(episode_id=episode_id, records=records)


@router.patch("/episodes/{episode_id}/messages/{seq}", summary="Edit a message",
              openapi_extra=request_body("MessageEdit", {"fix": {"content": "Lisbon, not Porto"}}),
              responses=problem_responses(401, 403, 404, 409, 413, 422, 503))
async def edit_message(agent_id: AgentId, episode_id: EpisodeId, seq: Seq, request: Request,
                       store: Store) -> MessageChange:
    """Body ``{"content": ...}``.  Open episodes only (409 otherwise); the earlier text is
    kept, and an edit behind the summary's watermark makes it rebuild."""
    body = await json_object(request)
    _fields(body, tuple(MessageEdit.model_fields))
    if "content" not in body:
        raise InvalidInputError.single("content", "missing")
    return await store.edit_message(agent_id, episode_id, seq, body["content"])


@router.delete("/episodes/{episode_id}/messages/{seq}", summary="Delete a message (soft)",
               responses=problem_responses(401, 403, 404, 409, 422, 503))
async def delete_message(agent_id: AgentId, episode_id: EpisodeId, seq: Seq,
                         store: Store) -> MessageChange:
    """The message leaves prompts and summaries; its row and text stay."""
    return await store.delete_message(agent_id, episode_id, seq)


@router.get("/conversation-policy", summary="The agent's summary policy", responses=ERRORS,
            response_model=ConversationPolicy)
async def get_policy(agent_id: AgentId, store: Store) -> dict[str, Any]:
    return policy_json(await store.conversation_policy(agent_id))


@router.put("/conversation-policy", summary="Change the agent's summary policy",
            openapi_extra=request_body("PolicyChanges", {
                "a small model": {"window_tokens": 4000, "protect_tail": 4},
                "back to the default": {"window_tokens": None}}),
            responses=ERRORS, response_model=ConversationPolicy)
async def set_policy(agent_id: AgentId, request: Request, store: Store) -> dict[str, Any]:
    """Body: knobs to store (``null`` removes one); the effective policy is returned."""
    knobs = await json_object(request)
    return policy_json(await store.set_conversation_policy(agent_id, **knobs))
