"""The REST service: ``create_app(store)`` builds a FastAPI app over a MemoryStore."""

from .app import create_app
from .body import MAX_BODY_BYTES

__all__ = ["MAX_BODY_BYTES", "create_app"]
