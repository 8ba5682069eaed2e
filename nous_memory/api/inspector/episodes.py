"""Episodes of one agent: the list, and one episode with its transcript (paged), its
summary and where it came from, what was learned from it and the rolling summaries."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ...errors import InvalidInputError
from ...memories.kinds import Kind
from ..routes import Store
from .pages import PageRoute, render, viewer_of

router = APIRouter(prefix="/ui/agents/{agent_id}/episodes", route_class=PageRoute,
                   include_in_schema=False)

PAGE_SIZE = 50
TRANSCRIPT_PAGE = 100
SUMMARY_HISTORY = 50


@router.get("")
async def episodes(request: Request, store: Store, agent_id: str,
                   cursor: str = "") -> Response:
    viewer = await viewer_of(request, agent_id)
    page = await store.list(agent_id, kind=Kind.EPISODE, limit=PAGE_SIZE,
                            cursor=cursor or None)
    return await render(request, viewer, "episodes.html", agent=agent_id, page=page,
                        paged=bool(cursor))


@router.get("/{episode_id}")
async def episode(request: Request, store: Store, agent_id: str, episode_id: str,
                  from_seq: str = "0", forgot: int | None = None) -> Response:
    viewer = await viewer_of(request, agent_id)
    start = _seq(from_seq)
    record = await store.get_episode(agent_id, episode_id)
    messages = await store.transcript(agent_id, record.id, from_seq=start,
                                      limit=TRANSCRIPT_PAGE)
    learned = await store.learned_from_episode(agent_id, record.id)
    summaries = await store.summary_history(agent_id, record.id, limit=SUMMARY_HISTORY)
    total = getattr(record.detail, "message_count", 0)
    following = messages[-1].seq + 1 if len(messages) == TRANSCRIPT_PAGE else None
    return await render(request, viewer, "episode.html", agent=agent_id, episode=record,
                        messages=messages, learned=learned, summaries=summaries,
                        total=total, start=start, following=following, forgot=forgot,
                        previous=max(0, start - TRANSCRIPT_PAGE) if start > 0 else None)


def _seq(value: str) -> int:
    try:
        seq = int(value)
    except ValueError:
        raise InvalidInputError.single("from_seq", "must be an integer >= 0") from None
    if not 0 <= seq < 2**31:
        raise InvalidInputError.single("from_seq", "must be an integer >= 0")
    return seq
