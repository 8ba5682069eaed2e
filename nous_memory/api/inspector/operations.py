"""What runs for one agent: its work queue and LLM usage (by day and task), and the
maintenance job runs (shared by every agent, so shown only to a viewer of all agents)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..routes import Store
from .pages import PageRoute, render, viewer_of

router = APIRouter(prefix="/ui/agents/{agent_id}/operations", route_class=PageRoute,
                   include_in_schema=False)

USAGE_DAYS = 30


@router.get("")
async def operations(request: Request, store: Store, agent_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    daily = await store.llm_usage_by_day(agent_id, days=USAGE_DAYS)
    totals = await store.llm_usage(agent_id)
    queue = await store.work_queue(agent_id, limit=50)
    runs = await store.job_history(limit=30) if viewer.agents is None else None
    return await render(request, viewer, "operations.html", agent=agent_id, daily=daily,
                        totals=totals, queue=queue, runs=runs, days=USAGE_DAYS)
