"""Reads sent straight to the Citus worker that holds the agent's shards.

Through the coordinator, a call of a distributed read function costs a hop: it is
planned there, sent on to the worker as text, and its rows come back through it (about
half a millisecond, plus the rows: docs/scaling.md).  Every node of a Citus 11+ cluster
has the metadata, so the store can call the function on the agent's worker itself,
where it finds the agent's shards local and runs its prepared statement.

The placement is read from the coordinator's catalog and kept a minute.  A shard moved
meanwhile is still answered right by the old node (the function then runs its statement
on the distributed tables) until the placement is read again.  A node that cannot be
reached is left alone for a while, and its reads go through the coordinator, as do all
reads when the store's database is not given as a URL (a key=value DSN).
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
MAX_AGENTS = 10_000  # placements kept (least recently used go first)
DOWN_S = 30.0  # how long an unreachable node's reads go through the coordinator
CONNECT_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class Node:
    host: str
    port: int


def node_dsn(dsn: str, node: Node) -> str | None:
    """``dsn`` pointed at ``node`` (same user, password, database and options), or None
    when it is not a URL.  A host given in the query string gives way to the node's; a
    node named by a directory is a Unix socket's."""
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgresql", "postgres"):
        return None
    options = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
               if k not in ("host", "hostaddr", "port")]
    userinfo = parts.netloc.rpartition("@")[0]
    prefix = f"{userinfo}@" if userinfo else ""
    if node.host.startswith("/"):
        netloc = prefix
        options += [("host", node.host), ("port", str(node.port))]
    else:
        host = f"[{node.host}]" if ":" in node.host else node.host
        netloc = f"{prefix}{host}:{node.port}"
    query = f"?{urlencode(options)}" if options else ""
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{parts.scheme}://{netloc}{parts.path}{query}{fragment}"


Locate = Callable[[str], Awaitable[Node | None]]
PoolFactory = Callable[[str], Awaitable[asyncpg.Pool]]


class WorkerReads:
    """The agent's node (cached), a small pool per node, and the way back to the
    coordinator when a node is out of reach."""

    def __init__(self, dsn: str, locate: Locate, open_pool: PoolFactory) -> None:
        self._dsn = dsn
        self._locate = locate
        self._open_pool = open_pool
        self._placements: OrderedDict[str, tuple[Node | None, float]] = OrderedDict()
        self._pools: dict[Node, asyncpg.Pool] = {}
        self._opening = asyncio.Lock()
        self._down_until: dict[Node, float] = {}

    async def fetch(self, statement: str, agent: str, *args: Any
                    ) -> list[asyncpg.Record] | None:
        """The statement's rows from the agent's node, or None: then the caller reads
        through the coordinator (the placement is unknown, or the node out of reach).
        An error of the statement itself is raised as it is."""
        node = await self._node_of(agent)
        if node is None or self._down_until.get(node, 0.0) > time.monotonic():
            return None
        try:
            pool = await self._pool(node)
            if pool is None:
                return None
            async with pool.acquire() as conn:
                rows: list[asyncpg.Record] = await conn.fetch(statement, agent, *args)
                return rows
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            _log.warning("Citus node %s:%s out of reach (%s: %s); its agents' reads go "
                         "through the coordinator for %.0f s", node.host, node.port,
                         type(exc).__name__, exc, DOWN_S)
            self._down_until[node] = time.monotonic() + DOWN_S
            return None

    def forget_placements(self) -> None:
        """Read every agent's node again when next asked (after moving shards)."""
        self._placements.clear()

    async def close(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.close()

    async def _node_of(self, agent: str) -> Node | None:
        now = time.monotonic()
        known = self._placements.get(agent)
        if known is not None and known[1] > now:
            self._placements.move_to_end(agent)
            return known[0]
        node = await self._locate(agent)
        self._placements[agent] = (node, now + PLACEMENT_TTL_S)
        self._placements.move_to_end(agent)
        while len(self._placements) > MAX_AGENTS:
            self._placements.popitem(last=False)
        return node

    async def _pool(self, node: Node) -> asyncpg.Pool | None:
        pool = self._pools.get(node)
        if pool is not None:
            return pool
        dsn = node_dsn(self._dsn, node)
        if dsn is None:
            return None
        async with self._opening:
            pool = self._pools.get(node)
            if pool is None:
                pool = self._pools[node] = await self._open_pool(dsn)
        return pool
