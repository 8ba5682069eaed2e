"""Capacity: rows, bytes and index bytes per agent, the inputs of docs/scaling.md's model.

    python bench/context_latency.py --keep-data-dir DIR ...   # build and measure first
    python bench/capacity.py --data-dir DIR [--p95-ms 127.6] [--node-gb 64]

Reads the database a ``context_latency.py --keep-data-dir`` run left (or
NOUS_MEMORY_DATABASE_URL): for every table its rows, heap + TOAST bytes and each index's
bytes (``pg_relation_size``), divided by the number of agents.  With a worker node's
memory it prints how many such agents fit with their indexes and hot rows in memory,
which is what keeps the measured p95 (``--p95-ms``, from the same build) true on one shard.
``--write-sample N`` also writes N facts through the real write path (``remember_many``)
into a fresh embedded database and reports what that path adds per memory beyond the
bulk-loaded rows: the audit event and the embedding cache row.
Prints ``name: value`` lines, the headline (agents_per_node_in_memory) last.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

import asyncpg

from nous_memory import MemoryStore
from nous_memory.config import Settings
from nous_memory.db import EmbeddedServer

TABLES_SQL = """
SELECT * FROM (
SELECT c.relname AS name, c.reltuples::bigint AS rows,
       pg_relation_size(c.oid) + coalesce(pg_total_relation_size(c.reltoastrelid), 0)
           AS table_bytes,
       coalesce((SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i
                 WHERE i.indrelid = c.oid), 0)::bigint AS index_bytes
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind = 'r') t
ORDER BY table_bytes + index_bytes DESC"""

INDEXES_SQL = """
SELECT i.relname AS name, pg_relation_size(i.oid) AS bytes
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND i.relname IN ('memories_embedding_hnsw', 'memories_search',
      'episode_chunks_hnsw', 'episode_chunks_search')
ORDER BY 1"""


async def write_path_bytes(n: int) -> dict[str, float]:
    """Bytes per memory of memory_events and embedding_cache after n real writes."""
    with tempfile.TemporaryDirectory() as tmp:
        # Settings built here, not from the environment: NOUS_MEMORY_DATABASE_URL names
        # the database being measured, which these writes must not touch
        async with MemoryStore.open(settings=Settings(data_dir=Path(tmp))) as store:
            for start in range(0, n, 500):
                await store.remember_many("capacity-agent", [
                    {"kind": "fact", "content": f"Fact number {i}: the {i % 7}th shelf holds "
                                                f"box {i * 31 % 997} of the archive"}
                    for i in range(start, min(n, start + 500))])
            conn = await asyncpg.connect(store.dsn)
            try:
                await conn.execute("ANALYZE")
                sizes = {t: await conn.fetchval("SELECT pg_total_relation_size($1::regclass)", t)
                         for t in ("memory_events", "embedding_cache")}
            finally:
                await conn.close()
    return {t: b / n for t, b in sizes.items()}


async def measure(url: str, p95_ms: float | None, node_gb: float, memory_share: float,
                  write_sample: int) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("ANALYZE")
        agents = await conn.fetchval("SELECT count(DISTINCT agent_id) FROM memories")
        tables = await conn.fetch(TABLES_SQL)
        indexes = await conn.fetch(INDEXES_SQL)
    finally:
        await conn.close()
    print(f"# {agents} agents; sizes from pg_relation_size after ANALYZE")
    total_rows = total_table = total_index = 0
    for t in tables:
        if not t["rows"] and not t["table_bytes"]:
            continue
        total_rows += max(t["rows"], 0)
        total_table += t["table_bytes"]
        total_index += t["index_bytes"]
        print(f"# {t['name']}: {max(t['rows'], 0)} rows, table {t['table_bytes'] / 2**20:.1f} "
              f"MiB, indexes {t['index_bytes'] / 2**20:.1f} MiB")
    for i in indexes:
        print(f"{i['name']}_bytes_per_agent: {i['bytes'] / agents:.0f}")
    per_agent = (total_table + total_index) / agents
    if write_sample:
        extra = await write_path_bytes(write_sample)
        memories_per_agent = await _memories_per_agent(url)
        for table, per_memory in extra.items():
            print(f"write_path_{table}_bytes_per_memory: {per_memory:.0f}")
        added = sum(extra.values()) * memories_per_agent
        print(f"# the write path adds {sum(extra.values()):.0f} B per memory x "
              f"{memories_per_agent:.0f} memories = {added / 2**20:.2f} MiB per agent")
        per_agent += added
    print(f"agents: {agents}")
    print(f"rows_per_agent: {total_rows / agents:.0f}")
    print(f"table_bytes_per_agent: {total_table / agents:.0f}")
    print(f"index_bytes_per_agent: {total_index / agents:.0f}")
    print(f"total_bytes_per_agent: {per_agent:.0f}")
    if p95_ms is not None:
        print(f"# context p95 measured on this build (--p95-ms, given): {p95_ms} ms")
    budget = node_gb * 2**30 * memory_share
    print(f"# a node of {node_gb:g} GiB giving {memory_share:.0%} of it to PostgreSQL's cache "
          f"(shared_buffers + page cache) holds {budget / 2**30:.1f} GiB")
    print(f"agents_per_node_in_memory: {budget / per_agent:.0f}")


async def _memories_per_agent(url: str) -> float:
    conn = await asyncpg.connect(url)
    try:
        value: float = await conn.fetchval(
            "SELECT count(*)::float / count(DISTINCT agent_id) FROM memories")
        return value
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", help="the --keep-data-dir of a context_latency.py run")
    parser.add_argument("--p95-ms", type=float, help="context p95 measured on that build")
    parser.add_argument("--node-gb", type=float, default=64.0, help="a worker node's memory")
    parser.add_argument("--memory-share", type=float, default=0.75,
                        help="share of the node's memory that caches PostgreSQL pages")
    parser.add_argument("--write-sample", type=int, default=0, metavar="N",
                        help="also measure what N real writes add per memory")
    args = parser.parse_args()
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")

    async def run() -> None:
        if url:
            await measure(url, args.p95_ms, args.node_gb, args.memory_share,
                          args.write_sample)
            return
        if not args.data_dir:
            parser.error("give --data-dir (or set NOUS_MEMORY_DATABASE_URL)")
        # starts (or attaches to) the embedded server of that directory
        server = EmbeddedServer.acquire(Path(args.data_dir))
        try:
            await measure(server.dsn(Settings().database_name), args.p95_ms, args.node_gb,
                          args.memory_share,
                          args.write_sample)
        finally:
            server.release()

    asyncio.run(run())


if __name__ == "__main__":
    main()
