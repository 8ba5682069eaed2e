"""A transaction run again when PostgreSQL chose it as a deadlock's victim (or it lost a
serialization check or a lock wait): nothing of it was written, so running it again is
safe, and after a short, jittered pause it usually goes through."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..errors import ContentionError

T = TypeVar("T")

ATTEMPTS = 4
BASE_S = 0.05


async def again_on_contention(run: Callable[[], Awaitable[T]], *,
                              attempts: int = ATTEMPTS) -> T:
    """``run()``, again (up to ``attempts`` in all) while it raises ContentionError."""
    for attempt in range(attempts - 1):
        try:
            return await run()
        except ContentionError:
            await asyncio.sleep(BASE_S * 2 ** attempt * (1 + random.random()))
    return await run()
