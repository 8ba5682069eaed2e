"""Rendering: the Jinja2 templates shipped in this package, posted forms, and the route
class that turns the store's errors into pages instead of JSON."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from ...errors import (
    ClientError,
    ConflictError,
    DatabaseUnavailableError,
    InvalidInputError,
    NotFoundError,
)
from .session import Gate, PageError, SignInRequired, Viewer, check_csrf

log = logging.getLogger("nous_memory.api")

MAX_FORM_FIELDS = 400

templates = Environment(
    loader=PackageLoader("nous_memory.api.inspector", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _size(value: int) -> str:
    amount = float(value)
    for unit in ("B", "kB", "MB", "GB"):
        if amount < 1024 or unit == "GB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{value} B"


def as_text(value: Any) -> str:
    """A stored value as text: lists one per line, None as nothing, objects as JSON."""
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(as_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if hasattr(value, "value") and not isinstance(value, str | int | float):
        return str(value.value)  # an enum
    return str(value)


templates.filters.update(when=_when, size=_size, value=as_text,
                         quote=lambda s: quote(str(s), safe=""))


def gate_of(request: Request) -> Gate:
    gate: Gate = request.app.state.inspector_gate
    return gate


async def render(request: Request, viewer: Viewer | None, template: str, *,
                 status: int = 200, agent: str | None = None, **context: Any) -> HTMLResponse:
    """The page, with the session cookie set when this visit made the session."""
    html = templates.get_template(template).render(
        viewer=viewer, agent=agent, csrf=viewer.session.csrf if viewer else "",
        path=request.url.path, **context)
    response = HTMLResponse(html, status_code=status, headers=_HEADERS)
    if viewer is not None and getattr(request.state, "new_session", False):
        await gate_of(request).set_cookie(request, response, viewer.session)
    return response


# no script, style or frame from anywhere but this page's own stylesheet
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=_HEADERS)


class Form:
    """A posted urlencoded form: the first value of each field (or all of them)."""

    def __init__(self, fields: Mapping[str, list[str]]) -> None:
        self.fields = fields

    def get(self, name: str) -> str | None:
        values = self.fields.get(name)
        return values[0] if values else None

    def names(self) -> list[str]:
        return list(self.fields)


async def read_form(request: Request) -> Form:
    body = await request.body()
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if body and kind != "application/x-www-form-urlencoded":
        raise PageError(415, "Not a form", "Send the page's form (urlencoded).")
    try:
        text = body.decode("utf-8")
        return Form(parse_qs(text, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS,
                             errors="strict"))
    except (UnicodeDecodeError, ValueError):
        raise PageError(400, "Bad form", "The form could not be read.") from None


async def posted(request: Request, viewer: Viewer) -> Form:
    """A state-changing form, after its CSRF token checked out (and the key may write)."""
    viewer.require("read-write")
    form = await read_form(request)
    check_csrf(viewer.session, form.get("csrf"))
    return form


async def viewer_of(request: Request, agent: str | None = None) -> Viewer:
    viewer = await gate_of(request).viewer(request)
    if agent is not None:
        viewer.check(agent)
    return viewer


def safe_next(value: str | None) -> str:
    """Where to go after sign-in: a path of this page only (no open redirect)."""
    if value and value.startswith("/ui/") and "//" not in value and "\\" not in value:
        return value
    return "/ui/"


class PageRoute(APIRoute):
    """Errors become pages: sign-in redirects, 403/404/409/422 with a message."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        original = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await original(request)
            except SignInRequired:
                target = request.url.path + (f"?{request.url.query}" if request.url.query
                                             else "")
                return redirect(f"/ui/signin?next={quote(target)}")
            except PageError as exc:
                return await error_page(request, exc.status, exc.title, exc.message)
            except NotFoundError as exc:
                return await error_page(request, 404, "Not found", str(exc))
            except InvalidInputError as exc:
                return await error_page(request, 422, "Invalid input", "; ".join(
                    f"{p.field}: {p.reason}" for p in exc.problems))
            except ConflictError as exc:
                return await error_page(request, 409, "Not possible now", str(exc))
            except ClientError as exc:
                return await error_page(request, 400, "Not possible", str(exc))
            except RequestValidationError as exc:
                return await error_page(request, 422, "Invalid input", "; ".join(
                    f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}"
                    for e in exc.errors()))
            except DatabaseUnavailableError:
                log.debug("inspector: database unavailable")  # said once, by db.outage
                return await error_page(request, 503, "Unavailable",
                                        "The database is unavailable; try again later.")

        return handler


async def error_page(request: Request, status: int, title: str, message: str) -> HTMLResponse:
    return await render(request, None, "error.html", status=status, title=title,
                        message=message)
