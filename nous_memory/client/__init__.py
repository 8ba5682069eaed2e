"""A remote ``MemoryStore``: the REST service behind the store's own methods and types.

``AsyncMemoryClient`` (async, on httpx) and ``MemoryClient`` (its blocking face).  Errors
come back as the package's exceptions: a 422 is an ``InvalidInputError`` naming the
field, a 404 a ``NotFoundError``, a 409 a ``ConflictError``, 401/403
``AuthenticationError``/``PermissionDeniedError``, an unreachable service a
``ServiceUnavailableError``.
"""

from .blocking import MemoryClient
from .http import Transport
from .remote import KEY_ENV, URL_ENV, AsyncMemoryClient

__all__ = ["KEY_ENV", "URL_ENV", "AsyncMemoryClient", "MemoryClient", "Transport"]
