"""Reads sent straight to the Citus worker that holds the agent's shards.

Through the coordinator, a call of a distributed read function costs a hop: it is
planned there, sent on to the worker as text, and its rows come back through it (about
half a millisecond, plus the rows: docs/scaling.md).  Every node of a Citus 11+ cluster
has the metadata, so the store can call the function on the agent's worker itself,
where it finds the agent's shards local and runs its prepared statement.

The placement is read from the coordinator's catalog and kept a minute.  A call that
reaches a node no longer holding the agent's shards (moved meanwhile) is right all the
same: the node hands it on to the new one, as the coordinator would, and the function
runs its prepared statement only over shards placed on its own node.  A node's pool is
opened in the background, and until it is ready, or while the node is unusable, its
agents' reads go through the coordinator, as do all reads when the store's database is
not given as a URL (a key=value DSN).  A pool that serves no read for ten minutes is
closed (its agents moved, or the node left), and opened again when a read needs it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import asyncpg

from .errors import is_unavailable

_log = logging.getLogger(__name__)

PLACEMENT_TTL_S = 60.0  # how long an agent's node is trusted before it is read again
MAX_AGENTS = 100_000  # placements kept (least recently used go first)
DOWN_S = 30.0  # how long an unusable node's reads go through the coordinator
CONNECT_TIMEOUT_S = 3.0
# a read that takes longer on a node is given up (a hung node): the node is left alone
COMMAND_TIMEOUT_S = 10.0
# a node's pool unused this long is closed (its agents moved away, or it left the
# cluster); its next read opens it again, in the background
IDLE_CLOSE_S = 600.0
# connections per node and process, all opened (and taught the reads' types) up front:
# the driver's type lookup takes seconds on a node holding many shards, so no read waits
# for a connection being opened
POOL_SIZE = 2


@dataclass(frozen=True, slots=True)
class Node:
    host: str
    port: int


def pointable(dsn: str) -> bool:
    """Whether ``dsn`` can be pointed at another node: a URL, not a key=value DSN."""
    return urlsplit(dsn).scheme in ("postgresql", "postgres")


def node_dsn(dsn: str, node: Node) -> str | None:
    """``dsn`` pointed at ``node`` (same user, password, database and options), or None
    when it is not ``pointable``.  A host given in the query string gives way to the
    node's; a node named by a directory is a Unix socket's."""
    if not pointable(dsn):
        return None
    parts = urlsplit(dsn)
    options = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
               if k not in ("host", "hostaddr", "port")]
    userinfo = parts.netloc.rpartition("@")[0]
    prefix = f"{userinfo}@" if userinfo else ""
    if node.host.startswith("/"):
        netloc = prefix
        options += [("host", node.host), ("port", str(node.port))]
    else:
        # an IPv6 address in brackets, its zone (fe80::1%eth0) percent-encoded
        host = f"[{node.host.replace('%', '%25')}]" if ":" in node.host else node.host
        netloc = f"{prefix}{host}:{node.port}"
    query = f"?{urlencode(options)}" if options else ""
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{parts.scheme}://{netloc}{parts.path}{query}{fragment}"


Locate = Callable[[str], Awaitable[Node | None]]
PoolFactory = Callable[[str], Awaitable[asyncpg.Pool]]


class WorkerReads:
    """The agent's node (cached), a pool per node opened in the background, and the way
    back to the coordinator while a node's pool is not ready or the node is unusable."""

    def __init__(self, dsn: str, locate: Locate, open_pool: PoolFactory) -> None:
        self._dsn = dsn
        self._locate = locate
        self._open_pool = open_pool
        self._placements: OrderedDict[str, tuple[Node | None, float]] = OrderedDict()
        self._pools: dict[Node, asyncpg.Pool] = {}
        self._opening: dict[Node, asyncio.Task[None]] = {}
        self._down_until: dict[Node, float] = {}
        self._used: dict[Node, float] = {}  # when each open pool last served a read
        self._closing: set[asyncio.Task[None]] = set()
        self._swept = time.monotonic()
        self._closed = False

    async def fetch(self, statement: str, agent: str, *args: Any
                    ) -> list[asyncpg.Record] | None:
        """The statement's rows from the agent's node, or None: then the caller reads
        through the coordinator (the placement is unknown, the node's pool not open yet,
        or the node unusable: unreachable, refusing the login, timing out).  An error of
        the statement itself, on a working connection, is raised as it is."""
        node = await self._node_of(agent)
        pool = None if node is None else self._ready(node)
        if node is None or pool is None:
            return None
        if pool.get_idle_size() == 0 and pool.get_size() >= pool.get_max_size():
            return None  # every connection busy: through the coordinator, not in a queue
        self._used[node] = time.monotonic()
        try:
            conn = await pool.acquire()
        except Exception as exc:  # connect, login, database: not usable for now
            self._down(node, exc)
            return None
        try:
            rows: list[asyncpg.Record] = await conn.fetch(statement, agent, *args)
            return rows
        except Exception as exc:
            if conn.is_closed() or (is_unavailable(exc) and not isinstance(
                    exc, asyncpg.InterfaceError)):
                self._down(node, exc)
                return None
            raise
        finally:
            await pool.release(conn)

    def forget_placements(self) -> None:
        """Read every agent's node again when next asked (after moving shards)."""
        self._placements.clear()

    async def close(self) -> None:
        self._closed = True
        opening, self._opening = list(self._opening.values()), {}
        for task in opening:
            task.cancel()
        await asyncio.gather(*opening, return_exceptions=True)
        pools, self._pools = list(self._pools.values()), {}
        await asyncio.gather(*(pool.close() for pool in pools), *self._closing,
                             return_exceptions=True)

    async def _node_of(self, agent: str) -> Node | None:
        now = time.monotonic()
        known = self._placements.get(agent)
        if known is not None and known[1] > now:
            self._placements.move_to_end(agent)
            return known[0]
        self._close_idle(now)
        node = await self._locate(agent)
        self._placements[agent] = (node, now + PLACEMENT_TTL_S)
        self._placements.move_to_end(agent)
        while len(self._placements) > MAX_AGENTS:
            self._placements.popitem(last=False)
        return node

    def _close_idle(self, now: float) -> None:
        """Close the pools that served no read for ``IDLE_CLOSE_S`` (looked at once a
        minute, when a placement is read)."""
        if now - self._swept < PLACEMENT_TTL_S:
            return
        self._swept = now
        for node in [n for n, used in self._used.items() if now - used > IDLE_CLOSE_S]:
            del self._used[node]
            pool = self._pools.pop(node, None)
            if pool is not None:
                task = asyncio.create_task(pool.close(), name=f"close {node.host}:{node.port}")
                self._closing.add(task)
                task.add_done_callback(self._closed_one)

    def _closed_one(self, task: asyncio.Task[None]) -> None:
        """An idle pool's close is over; a failure (its node gone) is said, not lost."""
        self._closing.discard(task)
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            _log.info("closing the idle pool of a Citus node failed (%s: %s)",
                      type(exc).__name__, exc)

    def _ready(self, node: Node) -> asyncpg.Pool | None:
        """The node's open pool; else None, and its opening started (once)."""
        if self._down_until.get(node, 0.0) > time.monotonic():
            return None
        pool = self._pools.get(node)
        if pool is not None or self._closed or node in self._opening:
            return pool
        dsn = node_dsn(self._dsn, node)
        if dsn is not None:
            self._opening[node] = asyncio.create_task(self._open(node, dsn),
                                                      name=f"pool of {node.host}:{node.port}")
        return None

    async def _open(self, node: Node, dsn: str) -> None:
        try:
            pool = await self._open_pool(dsn)
        except Exception as exc:
            self._down(node, exc)
        else:
            if self._closed:
                await pool.close()
            else:
                self._pools[node] = pool
                self._used[node] = time.monotonic()
        finally:
            self._opening.pop(node, None)

    def _down(self, node: Node, exc: BaseException) -> None:
        """Leave the node alone for ``DOWN_S``; said once per time it goes down."""
        now = time.monotonic()
        if self._down_until.get(node, 0.0) <= now:
            _log.warning("Citus node %s:%s not usable for direct reads (%s: %s); its "
                         "agents' reads go through the coordinator for %.0f s", node.host,
                         node.port, type(exc).__name__, exc, DOWN_S)
        self._down_until[node] = now + DOWN_S
