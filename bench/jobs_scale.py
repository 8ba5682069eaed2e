"""Maintenance jobs at scale: trim and archive over many episodes of many agents.

    python bench/jobs_scale.py [--episodes 1000000] [--agents 1000] [--batch 2000]

Builds a fresh database (an embedded PostgreSQL in a temporary directory that is deleted
afterwards, or NOUS_MEMORY_DATABASE_URL when set, which must then be an empty database)
and generates, in SQL (generate_series; nothing goes through Python): closed episodes
spread evenly over ``--agents`` agents, each with a 3-10 KB detail cut at a random place
from one of 400 texts of random words over a 20,000-word vocabulary (varied; too few
repeats for pglz, so PostgreSQL stores every detail uncompressed), an end time spread
uniformly over the last 200 days, a summary (2% under 50 characters, so trim queues
regeneration work), and no embedding (embeddings are omitted: the jobs never read or
write them).

Then a separate process, the job runner, runs the real jobs exactly as the scheduler
does (``jobs.JobRunner.run``: the advisory lock, a ``job_runs`` row, the store's
batched set-based SQL), in their nightly order: first archive (ended > 90 days), then
trim (ended > 30 days; what archive moved is no longer trimmed).
It reports each job's wall time and its own peak RSS (``resource.getrusage``).  A sample
of the cold copies is checked against the checksum taken from the original detail.

Prints ``name: value`` lines, the headline (rows_per_s: episodes moved by trim and
archive per second of job time) last; ``#`` lines say what was measured and whether the
targets (at 1,000,000 episodes: trim and archive <= 120 s each, peak RSS <= 500 MB) hold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jobs import JobRunner  # noqa: E402
from nous_memory import MemoryStore  # noqa: E402
from nous_memory.db import EmbeddedServer  # noqa: E402

TARGET_S = 120.0
TARGET_RSS_MB = 500.0
TARGET_AT = 1_000_000
VOCABULARY = 20_000
PIECES = 400
SAMPLE = 1_000
NOW = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)

# One statement per chunk of agents; $1/$2 the agent range, $3 episodes per agent,
# $4 the clock.  The corpus and vocabulary are temporary tables of this session.
GENERATE = """
WITH ep AS (
    SELECT 'agent-' || lpad(a::text, 5, '0') AS agent_id, gen_random_uuid() AS id,
           3000 + floor(random() * 7001)::int AS len,
           1 + floor(random() * $5::int)::int AS piece,
           1 + floor(random() * 1000)::int AS start,
           $4::timestamptz - random() * interval '200 days' AS ended_at,
           random() < 0.02 AS short_summary
    FROM generate_series($1::int, $2::int) AS a, generate_series(1, $3::int) AS i
), src AS (
    SELECT ep.*, substr(c.t, ep.start, ep.len) AS detail
    FROM ep JOIN corpus c ON c.i = ep.piece
), m AS (
    INSERT INTO memories (agent_id, id, kind, summary, summary_source, summary_tokens,
                          created_at, updated_at)
    SELECT agent_id, id, 'episode',
           CASE WHEN short_summary THEN 'Short chat.'
                ELSE 'Conversation about ' || left(detail, 160) END,
           'rule', 40, ended_at, ended_at
    FROM src
)
INSERT INTO episodes (agent_id, memory_id, state, title, detail, started_at, ended_at,
                      facts_state, message_count)
SELECT agent_id, id, 'closed', 'Episode ' || left(id::text, 8), detail,
       ended_at - interval '1 hour', ended_at, 'extracted', 0
FROM src
"""

# PIECES pieces of random words, each over 11,000 characters (so any 1,000 + 10,000 cut
# fits); a detail is a random cut of a random piece.
CORPUS = """
CREATE TEMP TABLE vocab AS
SELECT i, substr(md5(i::text || 'w'), 1, 3 + (i % 8)) AS w
FROM generate_series(1, {vocabulary}) AS i;
CREATE TEMP TABLE corpus (i int PRIMARY KEY, t text NOT NULL);
INSERT INTO corpus
SELECT p, string_agg(v.w, ' ')
FROM (SELECT p, 1 + floor(random() * {vocabulary})::int AS k
      FROM generate_series(1, {pieces}) AS p, generate_series(1, 1900)) r
JOIN vocab v ON v.i = r.k
GROUP BY p;
ANALYZE corpus;
"""


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


async def generate(dsn: str, episodes: int, agents: int) -> tuple[float, int]:
    per_agent = max(1, episodes // agents)
    conn = await asyncpg.connect(dsn)
    try:
        started = time.perf_counter()
        await conn.execute(CORPUS.format(vocabulary=VOCABULARY, pieces=PIECES))
        shortest = await conn.fetchval("SELECT min(length(t)) FROM corpus")
        assert shortest > 11_000, shortest
        step = max(1, 20_000 // per_agent)  # about 20k episodes per statement
        for first in range(1, agents + 1, step):
            last = min(agents, first + step - 1)
            async with conn.transaction():
                await conn.execute(GENERATE, first, last, per_agent, NOW, PIECES)
        await conn.execute("VACUUM ANALYZE memories, episodes")
        size = await conn.fetchval("SELECT pg_database_size(current_database())")
        return time.perf_counter() - started, int(size)
    finally:
        await conn.close()


async def run_jobs(dsn: str, batch: int) -> dict[str, float]:
    """The job-runner process: trim, then archive, through the scheduler's code path."""
    async with MemoryStore.open(database_url=dsn, job_batch_size=batch,
                                data_dir=Path("/nonexistent-unused")) as store:
        runner = JobRunner(store, clock=lambda: NOW, runner_id="bench")
        out: dict[str, float] = {"rss_after_open_mb": rss_mb()}
        for name in ("archive", "trim"):  # the nightly order (archive's cron is earlier)
            started = time.perf_counter()
            run = await runner.run(name)
            out[f"{name}_s"] = time.perf_counter() - started
            if run.status != "ok":
                raise SystemExit(f"{name} ended {run.status}: {run.error or run.note}")
            for key, value in run.counts.items():
                out[f"{name}.{key}"] = float(value)
        out["peak_rss_mb"] = rss_mb()
        return out


async def verify(dsn: str) -> tuple[int, int]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT a.checksum = hashtextextended(left(coalesce(e.detail, ''), a.start_offset)"
            " || a.content, 0) AS ok FROM memory_archive a TABLESAMPLE SYSTEM (1) "
            "JOIN episodes e ON e.agent_id = a.agent_id AND e.memory_id = a.memory_id "
            "WHERE a.part = 'detail' LIMIT $1", SAMPLE)
        return sum(1 for r in rows if r["ok"]), len(rows)
    finally:
        await conn.close()


async def database_size(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval("SELECT pg_database_size(current_database())"))
    finally:
        await conn.close()


def machine_line() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"# machine: {os.cpu_count()} CPUs, load average {load}"


async def create_schema(dsn: str) -> None:
    store = await MemoryStore.connect(database_url=dsn, data_dir=Path("/nonexistent-unused"))
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--agents", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=2_000, help="job batch size")
    parser.add_argument("--job-runner", metavar="DSN", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job_runner:  # the child: print the measurements as one JSON line
        print(json.dumps(asyncio.run(run_jobs(args.job_runner, args.batch))))
        return

    temp_dir: Path | None = None
    server: EmbeddedServer | None = None
    dsn = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    if not dsn:
        temp_dir = Path(tempfile.mkdtemp(prefix="nous-jobs-bench-"))
        server = EmbeddedServer.acquire(temp_dir / "pg")
        dsn = server.dsn("postgres")
    try:
        print(machine_line())
        asyncio.run(create_schema(dsn))
        gen_s, size_before = asyncio.run(generate(dsn, args.episodes, args.agents))
        total = max(1, args.episodes // args.agents) * args.agents
        print(f"# generated {total} episodes for {args.agents} agents in SQL in {gen_s:.1f} s; "
              f"database {size_before / 2**30:.2f} GiB; embeddings omitted")
        child = subprocess.run(
            [sys.executable, __file__, "--job-runner", dsn, "--batch", str(args.batch)],
            capture_output=True, text=True, check=False,
            env={**os.environ, "HF_HUB_OFFLINE": "1"})
        if child.returncode != 0:
            raise SystemExit(f"job runner failed:\n{child.stderr[-4000:]}")
        result = json.loads(child.stdout.strip().splitlines()[-1])
        ok, sampled = asyncio.run(verify(dsn))
        size_after = asyncio.run(database_size(dsn))
        moved = result["trim.trimmed"] + result["archive.archived"]
        job_s = result["trim_s"] + result["archive_s"]
        print(f"# trim: {result['trim.trimmed']:.0f} episodes trimmed "
              f"({result['trim.trimmed_chars'] / 2**20:.0f} Mi chars to cold storage), "
              f"{result['trim.summaries_queued']:.0f} short summaries queued")
        print(f"# archive (runs first, as scheduled): {result['archive.archived']:.0f} episodes "
              "archived")
        print(f"# cold copies checked against their checksum: {ok}/{sampled} (1% sample)")
        print(f"# database {size_before / 2**30:.2f} GiB before the jobs, "
              f"{size_after / 2**30:.2f} GiB after (dead tuples not yet vacuumed)")
        print(f"# job runner RSS after opening the store: {result['rss_after_open_mb']:.0f} MB")
        print(f"episodes: {total}")
        print(f"generate_s: {gen_s:.1f}")
        print(f"trim_s: {result['trim_s']:.1f}")
        print(f"archive_s: {result['archive_s']:.1f}")
        print(f"peak_rss_mb: {result['peak_rss_mb']:.0f}")
        if total >= TARGET_AT:
            met = (result["trim_s"] <= TARGET_S and result["archive_s"] <= TARGET_S
                   and result["peak_rss_mb"] <= TARGET_RSS_MB)
            print(f"# targets at {TARGET_AT}: trim and archive <= {TARGET_S:.0f} s each, peak "
                  f"RSS <= {TARGET_RSS_MB:.0f} MB: {'met' if met else 'NOT met'}")
        else:
            print(f"# targets apply at {TARGET_AT} episodes; this run had {total}")
        print(f"rows_per_s: {moved / job_s:.0f}")
    finally:
        if server is not None:
            server.release()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
