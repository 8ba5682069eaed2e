"""Changing one memory: edit its fields, forget it (soft delete), restore what was
forgotten, purge it, and bring an episode back from cold storage.  Each is one store
call behind a CSRF-checked form."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request, Response

from ...errors import ConflictError, InvalidInputError
from ...memories.kinds import Status
from ...memories.records import Memory
from ..routes import Store
from .fields import changes_from, current_values, errors_by_field, field_specs
from .pages import PageRoute, posted, redirect, render, viewer_of
from .session import Viewer

router = APIRouter(prefix="/ui/agents/{agent_id}/memories/{memory_id}", route_class=PageRoute,
                   include_in_schema=False)

ACTOR = "inspector"


def memory_url(memory: Memory, notice: str | None = None) -> str:
    url = f"/ui/agents/{quote(memory.agent_id, safe='')}/memories/{memory.id}"
    return f"{url}?notice={notice}" if notice else url


async def _edit_page(request: Request, viewer: Viewer, memory: Memory, *,
                     values: dict[str, str], errors: dict[str, list[str]],
                     general: list[str], status: int = 200) -> Response:
    return await render(request, viewer, "edit.html", status=status, agent=memory.agent_id,
                        memory=memory, specs=field_specs(memory.kind), values=values,
                        errors=errors, general=general)


@router.get("/edit")
async def edit_page(request: Request, store: Store, agent_id: str,
                    memory_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    memory = await store.get(agent_id, memory_id)
    return await _edit_page(request, viewer, memory, values=current_values(memory),
                            errors={}, general=[])


@router.post("/edit")
async def edit(request: Request, store: Store, agent_id: str, memory_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    form = await posted(request, viewer)
    memory = await store.get(agent_id, memory_id)
    specs = field_specs(memory.kind)
    before = current_values(memory)
    changes = changes_from(form, specs, before)
    if not changes:
        return redirect(memory_url(memory, "unchanged"))
    try:
        updated = await store.update(agent_id, memory.id, actor=ACTOR, **changes)
    except (InvalidInputError, ConflictError) as exc:
        status = 409 if isinstance(exc, ConflictError) else 422
        errors, general = errors_by_field(exc.problems, specs) if isinstance(
            exc, InvalidInputError) else ({}, [str(exc)])
        submitted = {s.name: (form.get(s.name) or "").replace("\r\n", "\n") for s in specs}
        return await _edit_page(request, viewer, memory, values=before | submitted,
                                errors=errors, general=general, status=status)
    return redirect(memory_url(updated, "updated"))


@router.get("/forget")
async def forget_page(request: Request, store: Store, agent_id: str, memory_id: str,
                      purge: bool = False) -> Response:
    viewer = await viewer_of(request, agent_id)
    memory = await store.get(agent_id, memory_id, include_deleted=purge)
    return await render(request, viewer, "forget.html", agent=agent_id, memory=memory,
                        purge=purge)


@router.post("/forget")
async def forget(request: Request, store: Store, agent_id: str, memory_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    form = await posted(request, viewer)
    purge = form.get("purge") == "true"
    memory = await store.get(agent_id, memory_id, include_deleted=purge)
    await store.delete(agent_id, memory.id, purge=purge, actor=ACTOR)
    if purge:
        return await render(request, viewer, "purged.html", agent=agent_id, memory=memory)
    return redirect(memory_url(memory.model_copy(update={"status": Status.DELETED}),
                               "forgotten"))


@router.post("/restore")
async def restore(request: Request, store: Store, agent_id: str, memory_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    await posted(request, viewer)
    memory = await store.get(agent_id, memory_id, include_deleted=True)
    if memory.status is Status.DELETED:  # the undo of a forget
        back = await store.restore_deleted(agent_id, memory.id, actor=ACTOR)
        return redirect(memory_url(back.memory, f"undeleted-{back.action.value}"))
    await store.restore(agent_id, memory.id, actor=ACTOR)
    return redirect(memory_url(memory, "restored"))
