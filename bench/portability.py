"""Export, import and forget-agent for one large agent.

    python bench/portability.py [--memories 100000]

Builds a fresh database (an embedded PostgreSQL in a temporary directory, deleted
afterwards, or NOUS_MEMORY_DATABASE_URL when set, which must then be an empty database)
and generates in SQL two agents of ``--memories`` facts each, every one with
a 384-dimensional unit vector, a sentence of text and a ``created`` event (no model
runs: export and import never embed).  Then, for the first agent, through the store:
the export to a file, the import of that file into a new agent id, the same import again
(nothing changes), and forgetting the copy.  Baseline in the same run: PostgreSQL's own
``COPY ... TO STDOUT`` of the same agent's rows of the same tables to a file, the floor
for reading them out.

Prints ``name: value`` lines, the headline (export_rows_per_s) last; the peak RSS of this
process shows that an export or import does not hold the agent in memory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nous_memory import MemoryStore  # noqa: E402
from nous_memory.db import EmbeddedServer  # noqa: E402
from nous_memory.portability import Exporter  # noqa: E402, F401  (imported before timing)
from nous_memory.testing import FakeEmbedder  # noqa: E402

GENERATE = """
WITH v AS (
    SELECT i, gen_random_uuid() AS id,
           (SELECT array_agg(random() - 0.5) FROM generate_series(1, 384) WHERE i > 0) AS x,
           'Fact number ' || i || ': the ' || md5(i::text) || ' project ships in week '
               || (i % 52) AS content
    FROM generate_series(1, $2::int) AS i
), m AS (
    INSERT INTO memories (agent_id, id, kind, summary, summary_source, summary_tokens,
                          embedding, embedding_model)
    SELECT $1, id, 'fact', content, 'template', 20, x::vector(384), $3 FROM v
), f AS (
    INSERT INTO facts (agent_id, memory_id, content, normalized_hash)
    SELECT $1, id, content, sha256(convert_to(content, 'UTF8')) FROM v
)
INSERT INTO memory_events (agent_id, memory_id, event, new_values, actor)
SELECT $1, id, 'created', jsonb_build_object('content', content), 'bench' FROM v
"""


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(memories: int) -> None:
    print(f"# machine: {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    data_dir = Path(tempfile.mkdtemp(prefix="nous-bench-portability-"))
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    server = None if url else await asyncio.to_thread(EmbeddedServer.acquire, data_dir)
    work = Path(tempfile.mkdtemp(prefix="nous-bench-portability-files-"))
    try:
        if server is None:
            dsn = str(url)
        else:
            dsn = server.dsn("nous_memory")
            admin = await asyncpg.connect(server.dsn("postgres"))
            await admin.execute("CREATE DATABASE nous_memory")
            await admin.close()
        embedder = FakeEmbedder(dimension=384)
        async with MemoryStore.open(database_url=dsn, embedder=embedder,
                                    data_dir=data_dir) as store:
            conn = await asyncpg.connect(dsn)
            started = time.perf_counter()
            for agent in ("big", "neighbour"):
                await conn.execute(GENERATE, agent, memories, embedder.model_name)
            await conn.execute("ANALYZE")
            print(f"# seeded 2 agents x {memories} facts in "
                  f"{time.perf_counter() - started:.1f} s")

            baseline = work / "copy.txt"
            started = time.perf_counter()
            with baseline.open("wb") as out:

                async def write(data: bytes) -> None:
                    out.write(data)

                for table in ("memories", "facts", "memory_events"):
                    await conn.copy_from_query(
                        f"SELECT * FROM {table} WHERE agent_id = 'big'", output=write)
            copy_s = time.perf_counter() - started
            await conn.close()
            rss_before = rss_mb()

            target = work / "big.jsonl"
            started = time.perf_counter()
            with target.open("wb") as out:
                summary = await store.export_agent_to("big", out)
            export_s = time.perf_counter() - started
            rss_export = rss_mb()

            started = time.perf_counter()
            with target.open("rb") as source:
                imported = await store.import_agent(source, agent_id="copy")
            import_s = time.perf_counter() - started
            started = time.perf_counter()
            with target.open("rb") as source:
                again = await store.import_agent(source, agent_id="copy")
            reimport_s = time.perf_counter() - started
            assert not again.changed and sum(imported.inserted.values()) == summary.rows
            rss_import = rss_mb()

            started = time.perf_counter()
            receipt = await store.forget_agent("copy", actor="bench")
            forget_s = time.perf_counter() - started
            assert receipt.total_rows == summary.rows

        print(f"rows: {summary.rows}")
        print(f"export_bytes: {summary.bytes}")
        print(f"export_bytes_per_memory: {summary.bytes / memories:.0f}")
        print(f"baseline_copy_bytes: {baseline.stat().st_size}")
        print(f"baseline_copy_s: {copy_s:.2f}")
        print(f"export_s: {export_s:.2f}")
        print(f"import_s: {import_s:.2f}")
        print(f"reimport_unchanged_s: {reimport_s:.2f}")
        print(f"forget_s: {forget_s:.2f}")
        print(f"rss_mb_before_export: {rss_before:.0f}")
        print(f"rss_mb_after_export: {rss_export:.0f}")
        print(f"rss_mb_after_imports: {rss_import:.0f}")
        print(f"import_rows_per_s: {summary.rows / import_s:.0f}")
        print(f"baseline_copy_rows_per_s: {summary.rows / copy_s:.0f}")
        print(f"export_rows_per_s: {summary.rows / export_s:.0f}")
    finally:
        if server is not None:
            await asyncio.to_thread(server.release)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    asyncio.run(main(parser.parse_args().memories))
