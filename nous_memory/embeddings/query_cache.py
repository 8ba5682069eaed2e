"""A small in-process cache of query vectors, in front of the model.

An assistant often asks about the same thing turn after turn (a tool loop, a retried
request, the same user question); a hit costs a dictionary lookup instead of a model
call (a few milliseconds on ONNX Runtime, tens on torch) or a database round trip.
Bounded in entries and in the length of a cached text; keyed by agent, so one agent's
timing never tells another what was asked.
"""

from __future__ import annotations

from collections import OrderedDict

from .base import Vector

MAX_ENTRIES = 1_024
MAX_TEXT_CHARS = 2_000  # longer texts are rarely repeated queries; they pass through


class QueryCache:
    """Least-recently-used (agent, text) -> vector, at most ``max_entries`` of them."""

    def __init__(self, max_entries: int = MAX_ENTRIES,
                 max_text_chars: int = MAX_TEXT_CHARS) -> None:
        self._entries: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._max_entries = max_entries
        self._max_text_chars = max_text_chars

    def get(self, agent: str, text: str) -> Vector | None:
        vector = self._entries.get((agent, text))
        if vector is not None:
            self._entries.move_to_end((agent, text))
        return vector

    def put(self, agent: str, text: str, vector: Vector) -> None:
        if len(text) > self._max_text_chars or self._max_entries == 0:
            return
        vector = vector.copy()  # the cache's own, frozen: shared by every caller that gets it
        vector.setflags(write=False)
        self._entries[(agent, text)] = vector
        self._entries.move_to_end((agent, text))
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def forget(self, agent: str, text: str) -> None:
        """Drop one entry (a purge removes its text from this process too)."""
        self._entries.pop((agent, text), None)

    def forget_agent(self, agent: str) -> None:
        """Drop every entry of one agent (the agent was erased)."""
        for key in [k for k in self._entries if k[0] == agent]:
            del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
