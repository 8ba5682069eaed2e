"""Where a read sent to an agent's Citus worker goes: the address, and how long it is
trusted."""

from __future__ import annotations

import asyncio

import pytest

from nous_memory.db import worker_reads
from nous_memory.db.worker_reads import Node, WorkerReads, node_dsn


@pytest.mark.parametrize(("dsn", "node", "expected"), [
    ("postgresql://app:s%40cret@coord.internal:5432/nous?sslmode=require",
     Node("10.0.0.7", 6432), "postgresql://app:s%40cret@10.0.0.7:6432/nous?sslmode=require"),
    ("postgres://coord/nous", Node("w1", 5432), "postgres://w1:5432/nous"),
    ("postgresql://app@coord/nous", Node("fd00::7", 5432), "postgresql://app@[fd00::7]:5432/nous"),
    ("postgresql://app@coord/nous", Node("fe80::1%eth0", 5432),
     "postgresql://app@[fe80::1%25eth0]:5432/nous"),
    # a host in the query string gives way to the node's
    ("postgresql://app@/nous?host=/run/pg&port=5433&application_name=x",
     Node("w2", 5432), "postgresql://app@w2:5432/nous?application_name=x"),
    # a node named by a directory is a Unix socket's
    ("postgresql://app@coord/nous", Node("/run/pg", 5433),
     "postgresql://app@/nous?host=%2Frun%2Fpg&port=5433"),
])
def test_the_store_url_is_pointed_at_the_node(dsn: str, node: Node, expected: str) -> None:
    assert node_dsn(dsn, node) == expected


def test_a_key_value_dsn_is_not_pointed_anywhere() -> None:
    assert node_dsn("host=coord dbname=nous user=app", Node("w1", 5432)) is None


async def _never_opened(dsn: str) -> object:
    raise AssertionError("no pool is opened without a read")


async def test_a_placement_is_kept_for_its_time_and_the_oldest_give_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    clock = [100.0]

    async def locate(agent: str) -> Node:
        asked.append(agent)
        return Node(f"node-of-{agent}", 5432)

    monkeypatch.setattr(worker_reads.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(worker_reads, "MAX_AGENTS", 2)
    reads = WorkerReads("postgresql://app@coord/nous", locate, _never_opened)  # type: ignore[arg-type]
    assert await reads._node_of("a") == Node("node-of-a", 5432)
    await reads._node_of("a")
    assert asked == ["a"]
    clock[0] += worker_reads.PLACEMENT_TTL_S + 1  # read again once its time is up
    await reads._node_of("a")
    assert asked == ["a", "a"]
    await reads._node_of("b")
    await reads._node_of("a")  # "a" used last: "b" is the oldest
    await reads._node_of("c")
    assert list(reads._placements) == ["a", "c"]
    reads.forget_placements()
    await reads._node_of("a")
    assert asked == ["a", "a", "b", "c", "a"]


class _Connection:
    async def fetch(self, statement: str, *args: object) -> list[object]:
        return [args]

    def is_closed(self) -> bool:
        return False


class _Pool:
    """What WorkerReads asks of a pool (one connection, always free), and whether it
    was closed."""

    closed = False

    def get_idle_size(self) -> int:
        return 1

    def get_size(self) -> int:
        return 1

    def get_max_size(self) -> int:
        return 1

    async def acquire(self) -> _Connection:
        return _Connection()

    async def release(self, conn: _Connection) -> None:
        pass

    async def close(self) -> None:
        self.closed = True


async def test_a_pool_that_serves_no_read_for_a_while_is_closed_and_opened_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A node whose agents moved away (or that left the cluster) keeps no connections:
    its pool is closed after IDLE_CLOSE_S without a read, and its next read opens a new
    one in the background."""
    clock = [100.0]
    opened: list[_Pool] = []

    async def locate(agent: str) -> Node:
        return Node(agent, 5432)

    async def open_pool(dsn: str) -> _Pool:
        opened.append(_Pool())
        return opened[-1]

    monkeypatch.setattr(worker_reads.time, "monotonic", lambda: clock[0])
    reads = WorkerReads("postgresql://app@coord/nous", locate, open_pool)  # type: ignore[arg-type]
    gone, kept = Node("gone", 5432), Node("kept", 5432)
    for node in (gone, kept):
        assert reads._ready(node) is None  # opening
    await asyncio.gather(*reads._opening.values())
    assert reads._ready(gone) is opened[0] and reads._ready(kept) is opened[1]
    clock[0] += worker_reads.IDLE_CLOSE_S / 2
    assert await reads.fetch("SELECT $1", "kept") == [("kept",)]  # gone serves none
    clock[0] += worker_reads.IDLE_CLOSE_S / 2 + 1
    await reads._node_of("another")  # a placement read looks at the pools
    await asyncio.sleep(0)
    assert opened[0].closed and not opened[1].closed
    assert reads._ready(gone) is None  # opening again
    await asyncio.gather(*reads._opening.values())
    assert reads._ready(gone) is opened[2]
    await reads.close()
    assert all(pool.closed for pool in opened[1:])
