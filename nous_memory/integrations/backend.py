"""What the adapters call: every operation both faces of the store offer
(``StoreOperations``), so each adapter runs on ``MemoryStore`` in process or on
``AsyncMemoryClient`` over the service, and mypy checks both against the one protocol
(``nous_memory.conformance``)."""

from __future__ import annotations

from typing import TypeAlias

from ..operations import StoreOperations

Backend: TypeAlias = StoreOperations

__all__ = ["Backend"]
