"""Take an agent's memories away or bring them in, or erase the agent: the page's
buttons over the store's export, import and forget-agent calls."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from ...errors import InvalidInputError
from ..body import BodyTooLargeError, bounded_stream
from ..routes import Store
from .pages import PageRoute, posted, render, viewer_of
from .session import PageError, check_csrf

router = APIRouter(prefix="/ui/agents/{agent_id}", route_class=PageRoute,
                   include_in_schema=False)

ACTOR = "inspector"
# the upload is read as it arrives, under the import limit rather than the body limit
UI_IMPORT_PATH = re.compile(r"^/ui/agents/[^/]+/import$")


@router.get("/data")
async def data_page(request: Request, store: Store, agent_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    overview = await store.agent_overview(agent_id)
    return await render(request, viewer, "data.html", agent=agent_id, overview=overview)


@router.get("/export")
async def export(request: Request, store: Store, agent_id: str) -> Response:
    (await viewer_of(request, agent_id)).require("owner")
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
    viewer.require("owner")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "multipart/form-data":
        raise PageError(415, "Not a file upload", "Choose an export file in the form.")
    limit = request.app.state.settings.api_import_max_bytes
    parser = MultiPartParser(request.headers, _upload(request, limit), max_files=1,
                             max_fields=5)
    try:  # the file goes to a temporary file as it arrives (on disk past 1 MiB)
        form = await parser.parse()
    except MultiPartException as exc:
        raise PageError(400, "Bad upload", f"The upload could not be read: {exc}") from None
    except BodyTooLargeError:
        raise PageError(413, "File too large", f"An import may be at most {limit} bytes "
                        "(NOUS_MEMORY_API_IMPORT_MAX_BYTES).") from None
    try:
        token = form.get("csrf")
        check_csrf(viewer.session, token if isinstance(token, str) else None)
        upload = form.get("file")
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise InvalidInputError.single("file", "choose an export file to import")
        summary = await store.import_agent(upload.file, agent_id=agent_id)
    finally:
        await form.close()
    return await render(request, viewer, "imported.html", agent=agent_id, summary=summary)


async def _upload(request: Request, limit: int) -> AsyncGenerator[bytes]:
    async for chunk in bounded_stream(request, limit):
        yield chunk


@router.post("/forget-agent")
async def forget_agent(request: Request, store: Store, agent_id: str) -> Response:
    viewer = await viewer_of(request, agent_id)
    viewer.require("owner")
    form = await posted(request, viewer)
    if form.get("confirm") != agent_id:
        raise InvalidInputError.single("confirm", "type the agent's id to confirm the erasure")
    receipt = await store.forget_agent(agent_id, actor=ACTOR)
    return await render(request, viewer, "forgotten.html", agent=None, receipt=receipt)
