"""Memories of one agent: the filtered, paged list; search by recall; one memory."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ...context.expand import Expanded
from ...memories.kinds import Kind, Status
from ...memories.params import VISIBLE_STATUSES
from ..routes import Store
from .pages import PageRoute, render, viewer_of

router = APIRouter(prefix="/ui/agents/{agent_id}", route_class=PageRoute,
                   include_in_schema=False)

PAGE_SIZE = 50
SEARCH_K = 50
KINDS = [k.value for k in Kind]
STATUSES = [s.value for s in Status]


@router.get("/memories")
async def memories(request: Request, store: Store, agent_id: str, kind: str = "",
                   status: str = "", tag: str = "", q: str = "", person: str = "",
                   cursor: str = "") -> Response:
    """``person``: what that person's reads see (theirs and the shared), as they see it."""
    viewer = await viewer_of(request, agent_id)
    statuses = [status] if status else [s.value for s in VISIBLE_STATUSES]
    filters = {"kind": kind, "status": status, "tag": tag, "q": q, "person": person}
    user = person or None
    people = await store.people(agent_id)
    if q.strip():
        result = await store.recall(agent_id, q, kinds=[kind] if kind else None, k=SEARCH_K,
                                    include_superseded=Status.SUPERSEDED.value in statuses,
                                    user=user)
        hits = [item for item in result.items if item.status.value in statuses]
        return await render(request, viewer, "memories.html", agent=agent_id,
                            filters=filters, kinds=KINDS, statuses=STATUSES, hits=hits,
                            page=None, timings=result.timings, people=people)
    page = await store.list(agent_id, kind=kind or None, status=statuses,
                            tag=tag or None, limit=PAGE_SIZE, cursor=cursor or None, user=user)
    return await render(request, viewer, "memories.html", agent=agent_id, filters=filters,
                        kinds=KINDS, statuses=STATUSES, hits=None, page=page,
                        paged=bool(cursor), timings=None, people=people)


@router.get("/memories/{memory_id}")
async def memory(request: Request, store: Store, agent_id: str, memory_id: str,
                 full: bool = False, notice: str = "") -> Response:
    viewer = await viewer_of(request, agent_id)
    record = await store.get(agent_id, memory_id, include_deleted=True)
    events = await store.history(agent_id, record.id)
    chain = (await store.fact_history(agent_id, record.id)).chain \
        if record.kind is Kind.FACT else []
    expanded: Expanded | None = None
    if full and record.status is not Status.DELETED:
        expanded = await store.expand(agent_id, record.id)
    return await render(request, viewer, "memory.html", agent=agent_id, memory=record,
                        events=events, chain=chain, expanded=expanded,
                        notice=NOTICES.get(notice))


NOTICES = {
    "updated": "Saved: a new version is in the history below.",
    "forgotten": "Forgotten: hidden from recall, lists and context; the record and its "
                 "history stay.",
    "restored": "Restored from cold storage.",
    "undeleted-restored": "Restored: back in recall, lists and context.",
    "undeleted-confirmed": "Restored as an older version: a current fact says the same, and "
                           "it was confirmed.",
    "undeleted-superseded": "Restored as an older version: a newer version of this fact is "
                            "current.",
    "undeleted-replaced": "Restored as the current version: it is newer than the fact that "
                          "held its place, which it now supersedes.",
    "undeleted-flagged": "Restored, and flagged as a possible conflict with a similar fact "
                         "(see Conflicts).",
    "unchanged": "Nothing changed.",
}
