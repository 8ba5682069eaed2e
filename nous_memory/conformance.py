"""What mypy checks and nothing imports: the store and the remote client each satisfy
``operations.StoreOperations``.  A signature of either that drifts from the protocol
(a renamed or retyped argument, another result) fails ``mypy`` here."""

from __future__ import annotations

from .client import AsyncMemoryClient
from .operations import StoreOperations
from .store import MemoryStore


def _store(store: MemoryStore) -> StoreOperations:
    return store


def _client(client: AsyncMemoryClient) -> StoreOperations:
    return client
