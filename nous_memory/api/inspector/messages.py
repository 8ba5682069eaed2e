"""Forgetting one message of an episode from its page: a confirmation that shows the
message and offers to delete it whole or to redact only some strings of it, then one
store call behind a CSRF-checked form."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request, Response

from ..routes import Store
from .pages import PageRoute, posted, redirect, render, viewer_of
from .session import PageError

router = APIRouter(prefix="/ui/agents/{agent_id}/episodes/{episode_id}/messages/{seq}",
                   route_class=PageRoute, include_in_schema=False)

ACTOR = "inspector"


@router.get("/forget")
async def forget_page(request: Request, store: Store, agent_id: str, episode_id: str,
                      seq: int) -> Response:
    viewer = await viewer_of(request, agent_id)
    viewer.require("owner")
    record = await store.get_episode(agent_id, episode_id)
    said = await store.transcript(agent_id, record.id, from_seq=seq, limit=1)
    if not said or said[0].seq != seq:
        raise PageError(404, "Not found", f"Message {seq} is not in this episode's "
                                          "transcript.")
    return await render(request, viewer, "forget_message.html", agent=agent_id,
                        episode=record, message=said[0])


@router.post("/forget")
async def forget(request: Request, store: Store, agent_id: str, episode_id: str,
                 seq: int) -> Response:
    viewer = await viewer_of(request, agent_id)
    viewer.require("owner")  # it erases for good, as forgetting an agent does
    form = await posted(request, viewer)
    strings = [s for s in (form.fields.get("redact") or []) if s.strip()]
    if form.get("whole") != "true" and not strings:
        raise PageError(422, "Nothing to redact",
                        "Write the text to take out, or forget the whole message.")
    erased = await store.forget_message(agent_id, episode_id, seq,
                                        redact=None if form.get("whole") == "true"
                                        else strings, actor=ACTOR)
    return redirect(f"/ui/agents/{quote(agent_id, safe='')}/episodes/{erased.episode_id}"
                    f"?forgot={erased.seq}")
