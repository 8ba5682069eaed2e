"""The owner's API keys (``/ui/keys``): list, create (the secret shown on this one page),
rotate and revoke.  Only for a visitor whose key is an owner of every agent (or the
machine's owner on loopback, without keys)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from ...access import ROLES
from ...errors import ClientError
from ..routes import Store
from .pages import PageRoute, posted, render, viewer_of
from .session import PageError, Viewer

router = APIRouter(prefix="/ui/keys", route_class=PageRoute, include_in_schema=False)


async def _owner(request: Request) -> Viewer:
    viewer = await viewer_of(request)
    viewer.require("owner")
    if viewer.agents is not None:
        raise PageError(403, "Not allowed", "Keys are managed with an owner key of every agent.")
    return viewer


async def _page(request: Request, store: Store, viewer: Viewer, *, status: int = 200,
                **context: Any) -> Response:
    keys = await store.list_keys(include_revoked=True)
    shown = {"shown": None, "secret": None, "revoked": None, "error": None} | context
    return await render(request, viewer, "keys.html", status=status, keys=keys, roles=ROLES,
                        **shown)


@router.get("")
async def keys_page(request: Request, store: Store) -> Response:
    return await _page(request, store, await _owner(request))


@router.post("")
async def create(request: Request, store: Store) -> Response:
    viewer = await _owner(request)
    form = await posted(request, viewer)
    agents = [a.strip() for a in (form.get("agents") or "").split(",") if a.strip()]
    try:
        info, secret = await store.create_key(
            form.get("name") or "", role=form.get("role") or "", agents=agents or None,
            actor=viewer.key_name or "inspector")
    except ClientError as exc:
        return await _page(request, store, viewer, status=422, error=str(exc))
    return await _page(request, store, viewer, shown=info, secret=secret)


@router.post("/{name}/rotate")
async def rotate(request: Request, store: Store, name: str) -> Response:
    viewer = await _owner(request)
    await posted(request, viewer)
    info, secret = await store.rotate_key(name, actor=viewer.key_name or "inspector")
    return await _page(request, store, viewer, shown=info, secret=secret)


@router.post("/{name}/revoke")
async def revoke(request: Request, store: Store, name: str) -> Response:
    viewer = await _owner(request)
    await posted(request, viewer)
    await store.revoke_key(name, actor=viewer.key_name or "inspector")
    return await _page(request, store, viewer, revoked=name)
