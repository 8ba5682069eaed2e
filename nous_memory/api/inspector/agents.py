"""Sign-in and sign-out, the agents a visitor may see, and the page's stylesheet."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, Request, Response

from ..routes import Store
from .pages import PageRoute, posted, read_form, redirect, render, safe_next, viewer_of
from .session import NOBODY, PageError, Viewer, check_csrf

router = APIRouter(prefix="/ui", route_class=PageRoute, include_in_schema=False)

AGENTS_PAGE = 50  # each agent's counts and storage are read: a page bounds the work

_CSS = resources.files(__package__).joinpath("static/inspector.css").read_bytes()


@router.get("/static/inspector.css")
async def stylesheet() -> Response:
    return Response(_CSS, media_type="text/css",
                    headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"})


@router.get("/signin")
async def signin_page(request: Request, next: str | None = None) -> Response:
    gate = request.app.state.inspector_gate
    if gate.ring is None:
        return redirect("/ui/")
    session = await gate.anonymous(request)
    viewer = Viewer(NOBODY, session, signed_in=False)
    return await render(request, viewer, "signin.html", next=safe_next(next), error=None)


@router.post("/signin")
async def signin(request: Request) -> Response:
    gate = request.app.state.inspector_gate
    if gate.ring is None:
        return redirect("/ui/")
    form = await read_form(request)
    session = await gate.session(request)
    if session is None:
        raise PageError(403, "Form expired", "Your session expired; reload the sign-in page.")
    check_csrf(session, form.get("csrf"))
    target = safe_next(form.get("next"))
    fresh = await gate.sign_in(request, (form.get("key") or "").strip())
    if fresh is None:
        viewer = Viewer(NOBODY, session, signed_in=False)
        return await render(request, viewer, "signin.html", status=401, next=target,
                            error="Unknown API key.")
    response = redirect(target)
    await gate.set_cookie(request, response, fresh)
    return response


@router.post("/signout")
async def signout(request: Request) -> Response:
    viewer = await viewer_of(request)
    await posted(request, viewer)
    response = redirect("/ui/signin" if viewer.signed_in else "/ui/")
    await request.app.state.inspector_gate.set_cookie(request, response, None)
    return response


@router.get("/")
async def agents(request: Request, store: Store, after: str = "") -> Response:
    viewer = await viewer_of(request)
    if viewer.agents is not None:
        names = sorted(a for a in viewer.agents if a > after)[:AGENTS_PAGE + 1]
    else:
        names = await store.agents(limit=AGENTS_PAGE + 1, after=after)
    following = names[AGENTS_PAGE - 1] if len(names) > AGENTS_PAGE else None
    overviews = [await store.agent_overview(name) for name in names[:AGENTS_PAGE]]
    return await render(request, viewer, "agents.html", overviews=overviews,
                        following=following, paged=bool(after))
