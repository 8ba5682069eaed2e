"""A figure per agent (its size, its corpus), counted at most once in a while."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

AGENT_ROWS_CACHED = 10_000  # agents whose figure is remembered (least recently used go)

T = TypeVar("T")


class PerAgent(Generic[T]):
    """A figure per agent, counted at most once per ``ttl_s`` (or per what ``ttl_of``
    says for the figure counted), for the ``AGENT_ROWS_CACHED`` agents used last (the
    others are counted again when asked)."""

    def __init__(self, ttl_s: float, ttl_of: Callable[[T], float] | None = None) -> None:
        self._ttl_of = ttl_of or (lambda _: ttl_s)
        self._known: OrderedDict[str, tuple[T, float]] = OrderedDict()  # figure, expiry

    async def get(self, agent: str, count: Callable[[], Awaitable[T]]) -> T:
        now = time.monotonic()
        known = self._known.get(agent)
        if known is None or now > known[1]:
            value = await count()
            known = (value, now + self._ttl_of(value))
            self._known[agent] = known
            if len(self._known) > AGENT_ROWS_CACHED:
                self._known.popitem(last=False)
        self._known.move_to_end(agent)
        return known[0]

    def clear(self) -> None:
        """Forget every figure: each is counted again when next asked."""
        self._known.clear()
