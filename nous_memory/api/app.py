"""The application factory and the store's lifetime.

A caller that passes a store keeps ownership of it (tests, embedding the API in a
larger program); otherwise the app opens one at startup and closes it at shutdown.
Settings are checked here, so a bad ``api_keys`` fails before the server listens.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from starlette.routing import Route

from .. import __version__
from ..config import Settings
from ..store import MemoryStore
from . import errors
from .auth import key_ring, require_key
from .background import background_scheduler, background_worker
from .body import MAX_BODY_BYTES, BodySizeLimit
from .context import context_request_schemas
from .context import router as context_router
from .conversation import conversation_request_schemas
from .conversation import router as conversation_router
from .docs import install_docs
from .episodes import episode_request_schemas
from .episodes import router as episodes_router
from .facts import fact_request_schemas
from .facts import router as facts_router
from .history import history_request_schemas
from .history import router as history_router
from .inspector import install as install_inspector
from .inspector.portability import UI_IMPORT_PATH
from .keys import key_request_schemas
from .keys import router as keys_router
from .maintenance import router as maintenance_router
from .mcp import PATH as MCP_PATH
from .mcp import McpEndpoint
from .observe import Observe, metrics_router
from .portability import IMPORT_PATH
from .portability import router as portability_router
from .recall import recall_request_schemas
from .recall import router as recall_router
from .routes import health_router, router
from .schemas import request_schemas

DESCRIPTION = f"""\
Long-term memory for LLM agents: typed memories (decision, fact, episode, procedure,
censor) stored per agent in PostgreSQL + pgvector.

* Every memory route is scoped to the agent in its path; another agent's memory id is
  reported exactly like an unknown one (404).
* Invalid input is always a 422 whose `detail` lists `{{"field", "reason"}}` objects.
* Request bodies over {MAX_BODY_BYTES} bytes are refused with 413 (an import's over
  `NOUS_MEMORY_API_IMPORT_MAX_BYTES`, 4 GiB by default: it is read as it arrives, never
  buffered whole).
* When API keys are configured (`NOUS_MEMORY_API_KEYS`), every route except `/health`,
  `/ready` and the docs needs `Authorization: Bearer KEY` or `X-API-Key: KEY`.
* `/metrics` is Prometheus text; every response carries `X-Request-ID` (the caller's,
  when it sends a sane one).
* `/mcp` serves the agent tools over MCP (streamable HTTP, stateless, JSON responses);
  a key's tool calls may name only that key's agents.
"""

TAGS = [
    {"name": "memories", "description": "Create, read, change, delete and list memories."},
    {"name": "facts", "description": "Learn facts with deduplication, updates and "
                                     "contradictions; read a fact's versions."},
    {"name": "episodes", "description": "Live conversations: start, append messages, close "
                                        "(summarised by the worker), read the transcript."},
    {"name": "working memory", "description": "Rolling summaries of live conversations: "
                                              "the prompt for the next call, the summary "
                                              "and its chain, message edits."},
    {"name": "recall", "description": "Hybrid recall of memories and verbatim episode "
                                      "excerpts, with typed scores."},
    {"name": "context", "description": "Assemble a budgeted context for a query; expand a "
                                       "memory to its full record."},
    {"name": "history import", "description": "Past conversations brought in as closed "
                                             "episodes; how far their processing is."},
    {"name": "export and erasure", "description": "A whole agent: export it as JSON "
                                                  "Lines, import a file, forget it."},
    {"name": "keys", "description": "API keys kept in the database: create, list, revoke, "
                                    "rotate (an owner key of every agent)."},
    {"name": "health", "description": "Liveness (/health) and readiness (/ready) of the "
                                      "database, the embedding model and the worker."},
]


class NousMemoryAPI(FastAPI):
    """FastAPI plus the request-body schemas, which no route parameter declares."""

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            schema = super().openapi()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, body in {**request_schemas(), **fact_request_schemas(),
                               **episode_request_schemas(),
                               **recall_request_schemas(),
                               **context_request_schemas(),
                               **history_request_schemas(),
                               **conversation_request_schemas(),
                               **key_request_schemas()}.items():
                components.setdefault(name, body)
        assert self.openapi_schema is not None
        return self.openapi_schema


def create_app(store: MemoryStore | None = None, *,
               settings: Settings | None = None, run_worker: bool | None = None,
               run_scheduler: bool | None = None) -> FastAPI:
    """Build the REST service around ``store``, or around one opened at startup.

    ``run_worker``: run the work-queue worker in the app while it is up; by default only
    when the app opens its own store and ``settings.run_worker_in_serve`` is set.
    ``run_scheduler``: likewise the maintenance scheduler (``settings.run_scheduler_in_serve``).
    """
    if settings is None:
        settings = store.settings if store is not None else Settings.from_env()
    ring = key_ring(settings.api_keys)  # ConfigurationError now, not at the first request

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if store is not None:
            async with background_worker(store, enabled=run_worker is True) as task, \
                    background_scheduler(store, enabled=run_scheduler is True), \
                    mcp.running():
                app.state.worker_task = task
                yield  # the caller opened the store and will close it
            return
        worker = settings.run_worker_in_serve if run_worker is None else run_worker
        scheduler = settings.run_scheduler_in_serve if run_scheduler is None else run_scheduler
        async with MemoryStore.open(settings=settings) as opened, \
                background_worker(opened, enabled=worker) as task, \
                background_scheduler(opened, enabled=scheduler), mcp.running():
            app.state.store = opened
            app.state.worker_task = task
            app.state.model_ready = False
            await opened.warm_up()
            app.state.model_ready = True
            try:
                yield
            finally:
                app.state.store = None

    app = NousMemoryAPI(title="nous-memory", version=__version__, description=DESCRIPTION,
                        openapi_tags=TAGS, lifespan=lifespan, docs_url=None, redoc_url=None)
    install_docs(app)  # from the package's own files: nothing from a CDN
    app.state.store = store
    app.state.model_ready = store is not None  # the caller's store: its model is its own
    app.state.worker_task = None
    app.state.settings = settings
    app.state.key_ring = ring
    errors.install(app)
    guard = [Depends(require_key(ring))] if ring else []
    app.add_middleware(BodySizeLimit, max_bytes=MAX_BODY_BYTES,
                       streamed=re.compile(f"{IMPORT_PATH.pattern}|{UI_IMPORT_PATH.pattern}"),
                       streamed_max_bytes=settings.api_import_max_bytes, rpc_path=MCP_PATH)
    app.include_router(health_router)
    app.include_router(metrics_router, dependencies=guard)
    app.include_router(router, dependencies=guard)
    app.include_router(episodes_router, dependencies=guard)
    app.include_router(facts_router, dependencies=guard)
    app.include_router(conversation_router, dependencies=guard)
    app.include_router(maintenance_router, dependencies=guard)
    app.include_router(recall_router, dependencies=guard)
    app.include_router(context_router, dependencies=guard)
    app.include_router(history_router, dependencies=guard)
    mcp = McpEndpoint(app, ring, proxied=settings.insecure_no_auth_on_network)
    app.router.routes.append(Route(MCP_PATH, mcp.route, methods=["POST"],
                                   include_in_schema=False))
    app.include_router(portability_router, dependencies=guard)
    app.include_router(keys_router, dependencies=guard)
    install_inspector(app, ring, settings)  # the owner's pages at /ui (their own sign-in)
    app.add_middleware(Observe)  # last added, outermost: every request is counted
    return app
