"""How a process behaves while its database is away.

An outage is one event, not one log line per failed statement: the first unavailable
error says so once (a warning), the first statement that succeeds afterwards says it is
back and for how long it was away, and everything in between is quiet.  Every loop that
touches the database waits between attempts with a bounded, jittered backoff, so a
restarted server is neither hammered by a thundering herd nor left waiting long.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable

_log = logging.getLogger("nous_memory.db")


class Outage:
    """The process's view of its database: up, away since a moment, or back but not yet
    for ``settle_s`` (a restart often flaps: a statement gets through between the old
    server's last moments and the new one's first; that is still the same outage)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 settle_s: float = 1.0) -> None:
        self._clock = clock
        self._settle_s = settle_s
        self._started: float | None = None  # when this outage began
        self._since: float | None = None  # away since (None: not away right now)
        self._back: float | None = None  # the first success after the last failure
        self.count = 0  # outages seen by this process (for tests and metrics)

    @property
    def away(self) -> bool:
        return self._since is not None

    @property
    def unsettled(self) -> bool:
        """Away, or back too recently to say so: a success is worth reporting."""
        return self._started is not None

    def went_away(self, reason: object) -> None:
        """An unavailable error: warn on the first one of an outage only."""
        if self._since is not None:
            return
        now = self._clock()
        self._since, self._back = now, None
        if self._started is not None:  # a flap while settling: the same outage
            return
        self._started = now
        self.count += 1
        _log.warning("database unavailable: %s; retrying quietly until it is back",
                     str(reason).splitlines()[0] if str(reason) else type(reason).__name__)

    def came_back(self) -> None:
        """A statement succeeded: once the database has stayed back for ``settle_s``,
        say so once, with how long it was away."""
        if self._started is None:
            return
        now = self._clock()
        if self._since is not None:
            self._since, self._back = None, now
            return
        if self._back is not None and now - self._back >= self._settle_s:
            _log.warning("database back after %.1f s away", self._back - self._started)
            self._started = self._back = None


OUTAGE = Outage()


class Backoff:
    """Delays that double from ``base_s`` up to ``cap_s``, each drawn from its upper
    half at random (never zero, never above the cap); ``reset`` after a success."""

    def __init__(self, *, base_s: float = 0.1, cap_s: float = 2.0,
                 rand: Callable[[], float] = random.random) -> None:
        if not 0 < base_s <= cap_s:
            raise ValueError("a backoff needs 0 < base_s <= cap_s")
        self.base_s, self.cap_s = base_s, cap_s
        self._rand = rand
        self._attempt = 0

    def reset(self) -> None:
        self._attempt = 0

    def next_delay(self) -> float:
        ceiling: float = min(self.cap_s, self.base_s * 2.0 ** min(self._attempt, 30))
        self._attempt += 1
        return ceiling * (0.5 + 0.5 * self._rand())

    async def wait(self, stop: asyncio.Event | None = None) -> None:
        """Sleep the next delay; return early when ``stop`` is set."""
        delay = self.next_delay()
        if stop is None:
            await asyncio.sleep(delay)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=delay)


class QuietPoolLog(logging.Filter):
    """asyncpg's pool logs a full traceback each time it fails to reopen its minimum of
    connections; while the database is away that is the outage again, already said."""

    def __init__(self, is_unavailable: Callable[[BaseException], bool]) -> None:
        super().__init__()
        self._is_unavailable = is_unavailable

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and self._is_unavailable(exc):
            OUTAGE.went_away(exc)
            return False
        return True
