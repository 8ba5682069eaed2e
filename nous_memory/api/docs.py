"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) from files the package installs.

FastAPI's own pages load their scripts from a CDN, so offline they were blank while the
service promises to run fully offline.  The assets here come from the ``fastapi-offline``
package (Swagger UI and ReDoc under their MIT licences), served at ``/docs/assets``;
ReDoc goes without its web fonts.  A Content-Security-Policy keeps every fetch on this
origin (ReDoc's bundle would show a logo from its maker's CDN).  Like the OpenAPI
document, the pages need no key.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSETS_PATH = "/docs/assets"
# inline: both pages start from an inline script and style; blob: ReDoc's search worker
POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' "
          "'unsafe-inline'; img-src 'self' data:; worker-src 'self' blob:; "
          "connect-src 'self'; font-src 'self' data:; frame-ancestors 'none'")


def install_docs(app: FastAPI) -> None:
    """Routes for both pages; the app must be built with ``docs_url=None, redoc_url=None``."""
    openapi_url = app.openapi_url or "/openapi.json"
    title = f"{app.title} {app.version}"
    app.mount(ASSETS_PATH, StaticFiles(directory=ASSETS), name="docs-assets")

    async def swagger() -> HTMLResponse:
        return _own(get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{title} - Swagger UI",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon.png"))

    async def redoc() -> HTMLResponse:
        return _own(get_redoc_html(openapi_url=openapi_url, title=f"{title} - ReDoc",
                                   redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
                                   redoc_favicon_url=f"{ASSETS_PATH}/favicon.png",
                                   with_google_fonts=False))

    app.add_api_route("/docs", swagger, include_in_schema=False)
    app.add_api_route("/redoc", redoc, include_in_schema=False)


def _own(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = POLICY
    return page
