"""A served instance on 127.0.0.1 inside the test's event loop, and the normaliser that
makes results of two agents comparable (ids, times and timings differ, nothing else)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any
from uuid import UUID

import uvicorn
from pydantic import BaseModel

from nous_memory import MemoryStore
from nous_memory.api import create_app
from tests.integration.http_helpers import free_port

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_REF = re.compile(r"\b(?P<kind>[a-z]+):(?P<hex>[0-9a-f]{8})\b")
_VOLATILE = {"timings", "total_ms", "embed_ms", "sql_ms", "elapsed_ms", "audit_id",
             "sha256", "bytes", "erased_at", "agent_sha256",
             "recency", "final"}  # scores of age: the two runs are seconds apart
_CHAIN_IDS = {"summary_id", "story_id", "parent_id"}  # serial ids of the summary chain


@asynccontextmanager
async def served(store: MemoryStore, **options: Any) -> AsyncIterator[str]:
    """``create_app(store)`` under uvicorn on a free 127.0.0.1 port, on this loop."""
    port = free_port()
    config = uvicorn.Config(create_app(store, **options), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


class Normaliser:
    """Replaces each agent's ids by their order of first appearance, so the same calls on
    two agents give equal transcripts."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.ids: dict[str, str] = {}
        self.chain: dict[int, str] = {}

    def _id(self, value: str) -> str:
        return self.ids.setdefault(value, f"<id{len(self.ids)}>")

    def text(self, value: str) -> str:
        value = _UUID.sub(lambda m: self._id(m.group()), value)
        hexes = {k.replace("-", "")[:8]: v for k, v in self.ids.items()}
        value = _REF.sub(lambda m: f"{m['kind']}:{hexes.get(m['hex'], m['hex'])}", value)
        return value.replace(self.agent_id, "<agent>")

    def _chain_id(self, value: Any) -> Any:
        if not isinstance(value, int):
            return value
        return self.chain.setdefault(value, f"<summary{len(self.chain)}>")

    def __call__(self, value: Any) -> Any:
        """Records become dicts that name their type, so both surfaces must return the
        same record types, not only the same values."""
        if isinstance(value, BaseModel):
            value = {"__type__": type(value).__name__, **value.model_dump(mode="json")}
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = {"__type__": type(value).__name__,
                     **{f.name: getattr(value, f.name) for f in dataclasses.fields(value)}}
        if isinstance(value, dict):
            if value.get("next_cursor"):  # opaque: a time and an id
                value = {**value, "next_cursor": "<cursor>"}
            return {k: self._chain_id(v) if k in _CHAIN_IDS else self(v)
                    for k, v in value.items()
                    if k not in _VOLATILE and not (k == "id" and isinstance(v, int))}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, UUID):
            return self._id(str(value))
        if isinstance(value, str):
            return "<time>" if _TIME.match(value) else self.text(value)
        if isinstance(value, datetime):
            return "<time>"
        if isinstance(value, float):
            return round(value, 3)
        return value
