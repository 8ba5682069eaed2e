"""The memory inspector: server-rendered pages at ``/ui`` where an owner browses,
searches, corrects and erases what an assistant remembers.

Plain HTML from Jinja2 templates shipped in this package and one stylesheet served by
the app: no script, font or anything else from another origin.  Every page is a thin
layer over ``MemoryStore`` calls scoped to the agent in its path.
"""

from __future__ import annotations

from fastapi import FastAPI

from ...config import Settings
from ..auth import KeyRing
from . import (
    agents,
    changes,
    conflicts,
    episodes,
    keys,
    memories,
    messages,
    operations,
    portability,
)
from .session import Gate


def install(app: FastAPI, ring: KeyRing | None, settings: Settings) -> None:
    """Mount the inspector's pages on ``app`` under ``/ui``."""
    app.state.inspector_gate = Gate(ring, settings)
    for module in (agents, memories, changes, conflicts, episodes, messages, operations,
                   portability, keys):
        app.include_router(module.router)
