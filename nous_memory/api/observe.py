"""What an operator watches: ``/metrics`` (Prometheus text), a request id on every
request and response, one access line per request, and JSON log lines on request.

Log lines carry methods, route templates, statuses, durations, agent ids and request
ids; never a body, a query string, a header or an exception's message, which is where a
memory's text or a key could hide.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
import traceback
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import telemetry
from ..db.audit import ACTOR
from ..work.listing import QueueDepth
from .routes import get_store

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID: ContextVar[str | None] = ContextVar("nous_memory_request_id", default=None)
_VALID_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")  # what a proxy would send
_FIELDS = ("method", "route", "status", "duration_ms", "agent_id")

access_log = logging.getLogger("nous_memory.access")
metrics_router = APIRouter(tags=["health"])


class Observe:
    """ASGI middleware: request id in and out, request metrics by route template, and
    the access line.  Outermost, so refused bodies and errors are counted too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = Headers(scope=scope).get(REQUEST_ID_HEADER)
        request_id = given if given and _VALID_ID.match(given) else uuid.uuid4().hex
        token = REQUEST_ID.set(request_id)
        actor = ACTOR.set(None)  # the key check names this request's actor
        status, started = 500, time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []),
                                      (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope["method"]
            telemetry.REQUESTS.labels(method, route, str(status)).inc()
            telemetry.REQUEST_SECONDS.labels(method, route).observe(elapsed)
            agent = scope.get("path_params", {}).get("agent_id")
            access_log.info("%s %s %s %.1f ms", method, route, status, elapsed * 1000,
                            extra={"method": method, "route": route, "status": status,
                                   "duration_ms": round(elapsed * 1000, 2),
                                   "agent_id": agent})
            REQUEST_ID.reset(token)
            ACTOR.reset(actor)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, request id and the access
    fields; an exception as its type and frames (its message may hold data)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(), "logger": record.name,
            "message": record.getMessage(), "request_id": REQUEST_ID.get()}
        line.update({name: getattr(record, name) for name in _FIELDS if hasattr(record, name)})
        if record.exc_info and record.exc_info[0] is not None:
            line["exception"] = record.exc_info[0].__name__
            line["frames"] = [f"{frame.filename}:{frame.lineno} {frame.name}" for frame
                              in traceback.extract_tb(record.exc_info[2])][-8:]
        return json.dumps(line, ensure_ascii=False, default=str)


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.request_id = REQUEST_ID.get() or "-"
        return super().format(record)


def configure_logging(log_format: str, *, stream: Any = None) -> None:
    """The root logger's one handler (INFO) in the chosen format; uvicorn's loggers
    propagate to it (serve turns uvicorn's own access log off: ``Observe`` writes it)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else _TextFormatter(
        "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    for name in ("httpx", "httpx2", "httpcore"):  # they log whole URLs, queries included
        logging.getLogger(name).setLevel(logging.WARNING)


class _Gauges(Collector):
    """The database's gauges, read just before a scrape renders them."""

    def __init__(self, depths: list[QueueDepth], pool: dict[str, int]) -> None:
        self.depths, self.pool = depths, pool

    def collect(self) -> Iterator[GaugeMetricFamily]:
        items = GaugeMetricFamily(f"{telemetry.PREFIX}_work_queue_items",
                                  "Open work items (every agent) by task and state",
                                  labels=["task", "state"])
        age = GaugeMetricFamily(f"{telemetry.PREFIX}_work_queue_oldest_seconds",
                                "Age of the oldest open item by task and state (since due)",
                                labels=["task", "state"])
        for depth in self.depths:
            items.add_metric([depth.task, depth.state], depth.items)
            age.add_metric([depth.task, depth.state], depth.oldest_s)
        pool = GaugeMetricFamily(f"{telemetry.PREFIX}_db_pool_connections",
                                 "Database pool connections by state", labels=["state"])
        for state, count in self.pool.items():
            pool.add_metric([state], count)
        yield from (items, age, pool)


@metrics_router.get("/metrics", summary="Prometheus metrics", response_class=Response,
                    responses={200: {"content": {CONTENT_TYPE_LATEST: {
                        "schema": {"type": "string", "description": "Prometheus text format"}}}}})
async def metrics(request: Request) -> Response:
    """Request counts and latency per route and per MCP tool, the embedding queue, LLM
    calls and tokens, job runs, and (read now) work-queue depth and age and the pool's
    connections.  Needs a key of every agent when keys are configured."""
    depths, pool = await get_store(request).service_gauges()
    gauges = CollectorRegistry(auto_describe=False)
    gauges.register(_Gauges(depths, pool))
    body = generate_latest(REGISTRY) + generate_latest(gauges)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
