"""Working memory over HTTP: the prompt for an episode's next model call, its rolling
summary and the summary chain, message edits and deletes, and the agent's policy.

Thin like the other routers: bodies are decoded by ``body.json_object``, unknown names are
refused as unknown fields, and the store validates every value (422 with field and reason).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from ..conversation.policy import as_dict as policy_json
from ..errors import FieldProblem, InvalidInputError
from .body import json_object, optional_json_object, unknown_fields
from .episodes import EpisodeId
from .errors import problem_responses
from .routes import AgentId, Store

router = APIRouter(prefix="/agents/{agent_id}", tags=["working memory"])
PROMPT_FIELDS = ("system", "budget_tokens", "query", "context_tokens", "summarize", "policy")
SUMMARIZE_FIELDS = ("force", "policy")
Seq = Annotated[int, Path(ge=0, description="The message's position in the episode (seq)")]
ERRORS = problem_responses(401, 403, 404, 413, 422, 503)


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
             responses=ERRORS)
async def build_prompt(agent_id: AgentId, episode_id: EpisodeId, request: Request,
                       store: Store) -> dict[str, Any]:
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
    prompt = await store.build_prompt(
        agent_id, episode_id, body["system"], body["budget_tokens"], query=body.get("query"),
        context_tokens=body.get("context_tokens"), summarize=body.get("summarize", True),
        policy=body.get("policy"))
    return prompt.model_dump(mode="json")


@router.get("/episodes/{episode_id}/summary", summary="The current rolling summary",
            responses=ERRORS)
async def get_summary(agent_id: AgentId, episode_id: EpisodeId, store: Store) -> dict[str, Any]:
    """Story and chapter text, facets, the watermark and the breaker's state."""
    return (await store.conversation_summary(agent_id, episode_id)).model_dump(mode="json")


@router.post("/episodes/{episode_id}/summary", summary="Summarise now", responses=ERRORS)
async def summarize(agent_id: AgentId, episode_id: EpisodeId, request: Request,
                    store: Store) -> dict[str, Any]:
    """Fold what the policy says is due (``force``: all but the protected tail).  Returns
    the pass (folded, reasons, gaps, invalidation) and the summary after it."""
    body = await optional_json_object(request)
    _fields(body, SUMMARIZE_FIELDS)
    result = await store.summarize_conversation(agent_id, episode_id,
                                                force=body.get("force", False),
                                                policy=body.get("policy"))
    summary = await store.conversation_summary(agent_id, episode_id)
    return {"result": result.model_dump(mode="json"), "summary": summary.model_dump(mode="json")}


@router.get("/episodes/{episode_id}/summary/history", summary="The summary chain",
            responses=ERRORS)
async def history(agent_id: AgentId, episode_id: EpisodeId, store: Store,
                  limit: Annotated[int, Query(description="1 to 500")] = 100,
                  offset: Annotated[int, Query(ge=0, lt=2**31)] = 0) -> dict[str, Any]:
    """Every summary record, oldest first: id, parent, depth, covered messages, tokens,
    source (llm | rule), facets and status (current, superseded, invalidated)."""
    records = await store.summary_history(agent_id, episode_id, limit=limit, offset=offset)
    return {"episode_id": episode_id, "records": [r.model_dump(mode="json") for r in records]}


@router.patch("/episodes/{episode_id}/messages/{seq}", summary="Edit a message",
              responses=problem_responses(401, 403, 404, 409, 413, 422, 503))
async def edit_message(agent_id: AgentId, episode_id: EpisodeId, seq: Seq, request: Request,
                       store: Store) -> dict[str, Any]:
    """Body ``{"content": ...}``.  Open episodes only (409 otherwise); the earlier text is
    kept, and an edit behind the summary's watermark makes it rebuild."""
    body = await json_object(request)
    _fields(body, ("content",))
    if "content" not in body:
        raise InvalidInputError.single("content", "missing")
    change = await store.edit_message(agent_id, episode_id, seq, body["content"])
    return change.model_dump(mode="json")


@router.delete("/episodes/{episode_id}/messages/{seq}", summary="Delete a message (soft)",
               responses=problem_responses(401, 403, 404, 409, 422, 503))
async def delete_message(agent_id: AgentId, episode_id: EpisodeId, seq: Seq,
                         store: Store) -> dict[str, Any]:
    """The message leaves prompts and summaries; its row and text stay."""
    return (await store.delete_message(agent_id, episode_id, seq)).model_dump(mode="json")


@router.get("/conversation-policy", summary="The agent's summary policy", responses=ERRORS)
async def get_policy(agent_id: AgentId, store: Store) -> dict[str, Any]:
    return policy_json(await store.conversation_policy(agent_id))


@router.put("/conversation-policy", summary="Change the agent's summary policy",
            responses=ERRORS)
async def set_policy(agent_id: AgentId, request: Request, store: Store) -> dict[str, Any]:
    """Body: knobs to store (``null`` removes one); the effective policy is returned."""
    knobs = await json_object(request)
    return policy_json(await store.set_conversation_policy(agent_id, **knobs))
