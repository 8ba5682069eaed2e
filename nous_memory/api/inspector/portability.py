"""Take an agent's memories away or bring them in, or erase the agent: the page's
buttons over the store's export, import and forget-agent calls."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse
from starlette.datastructures import UploadFile

from ...errors import InvalidInputError
from ..routes import Store
from .pages import PageRoute, posted, render, viewer_of
from .session import PageError, check_csrf

router = APIRouter(prefix="/ui/agents/{agent_id}", route_class=PageRoute,
                   include_in_schema=False)

ACTOR = "inspector"


@router.get("/data")
async def data_page(request: Request, store: Store, agent_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    overview = await store.agent_overview(agent_id)
    return await render(request, viewer, "data.html", agent=agent_id, overview=overview)


@router.get("/export")
async def export(request: Request, store: Store, agent_id: str) -> Response:
    await viewer_of(request, agent_id)
    stream = store.export_agent(agent_id)
    chunks = aiter(stream)
    first = await anext(chunks)  # an unknown agent fails here, before any byte is sent

    async def body() -> AsyncIterator[bytes]:
        yield first
        async for chunk in chunks:
            yield chunk

    filename = re.sub(r"[^A-Za-z0-9._-]+", "_", agent_id) + ".jsonl"
    return StreamingResponse(body(), media_type="application/x-ndjson", headers={
        "Content-Disposition": f"attachment; filename=\"{filename}\"; "
                               f"filename*=UTF-8''{quote(agent_id, safe='')}.jsonl",
        "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})


@router.post("/import")
async def import_file(request: Request, store: Store, agent_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "multipart/form-data":
        raise PageError(415, "Not a file upload", "Choose an export file in the form.")
    async with request.form(max_files=1, max_fields=5) as form:
        token = form.get("csrf")
        check_csrf(viewer.session, token if isinstance(token, str) else None)
        upload = form.get("file")
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise InvalidInputError.single("file", "choose an export file to import")
        summary = await store.import_agent(upload.file, agent_id=agent_id)
    return await render(request, viewer, "imported.html", agent=agent_id, summary=summary)


@router.post("/forget-agent")
async def forget_agent(request: Request, store: Store, agent_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    form = await posted(request, viewer)
    if form.get("confirm") != agent_id:
        raise InvalidInputError.single("confirm", "type the agent's id to confirm the erasure")
    receipt = await store.forget_agent(agent_id, actor=ACTOR)
    return await render(request, viewer, "forgotten.html", agent=None, receipt=receipt)
