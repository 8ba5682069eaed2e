"""The queue of facts flagged as a possible conflict, and its three decisions."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request, Response

from ..routes import Store
from .pages import PageRoute, posted, redirect, render, viewer_of

router = APIRouter(prefix="/ui/agents/{agent_id}/conflicts", route_class=PageRoute,
                   include_in_schema=False)

DONE = {
    "keep_both": "Kept both facts; they are no longer flagged.",
    "keep_one": "Kept one fact; the other is now a superseded version of it.",
    "merge": "Merged: the kept fact has the new wording; the other is superseded by it.",
}


@router.get("")
async def conflicts(request: Request, store: Store, agent_id: str,
                    done: str = "") -> Response:
    viewer = await viewer_of(request, agent_id)
    pairs = await store.fact_conflicts(agent_id, limit=100)
    return await render(request, viewer, "conflicts.html", agent=agent_id, pairs=pairs,
                        notice=DONE.get(done))


@router.post("/resolve")
async def resolve(request: Request, store: Store, agent_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    form = await posted(request, viewer)
    resolution = form.get("resolution") or ""
    await store.resolve_conflict(agent_id, form.get("keep") or "", form.get("other") or "",
                                 resolution,
                                 content=form.get("content") if resolution == "merge" else None,
                                 actor="inspector")
    return redirect(f"/ui/agents/{quote(agent_id, safe='')}/conflicts?done={resolution}")
