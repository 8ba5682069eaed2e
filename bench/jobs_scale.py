"""Maintenance jobs at scale: trim and archive over many episodes of many agents.

    python bench/jobs_scale.py [--episodes 1000000] [--agents 1000] [--batch 2000]
                               [--workers 2]
                               [--one-agent]

Builds a fresh database (an embedded PostgreSQL in a temporary directory that is deleted
afterwards, or NOUS_MEMORY_DATABASE_URL when set, which must then be an empty database
whose role may create databases) and generates, in SQL (generate_series; nothing goes
through Python): closed episodes spread evenly over ``--agents`` agents, each with a
3-10 KB detail cut at a random place from one of 400 texts of random words over a
20,000-word vocabulary (varied; too few repeats for pglz, so PostgreSQL stores every
detail uncompressed), an end time spread uniformly over the last 200 days, a summary (2%
under 50 characters, so trim queues regeneration work), and no embedding (embeddings are
omitted: the jobs never read or write them).

Then a separate process, the job runner, runs the real jobs exactly as the scheduler
does (``jobs.JobRunner.run``: the advisory lock, a ``job_runs`` row, the store's
batched set-based SQL, ``--workers`` batches at once), in their nightly order: first
archive (ended > 90 days), then trim (ended > 30 days; what archive moved is no longer
trimmed).
It reports each job's wall time and its own peak RSS (``resource.getrusage``).  A sample
of the cold copies is checked against the checksum taken from the original detail.

The jobs run twice on copies of the same data (``CREATE DATABASE ... TEMPLATE``): in the
per-agent form Citus needs (``job_sweeps=agent``, the baseline), then in the form a
single PostgreSQL takes (``job_sweeps=table``, one pass over the whole table).  With
``--one-agent`` the table form also runs on as many episodes held by a single agent.

Prints ``name: value`` lines, the headline (rows_per_s: episodes moved by trim and
archive per second of job time, the whole-table form) last; ``#`` lines say what was
measured and whether the targets (at 1,000,000 episodes: trim and archive <= 120 s each,
peak RSS <= 500 MB; 8,333 rows/s) hold.
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
from urllib.parse import urlparse

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jobs import JobRunner  # noqa: E402
from nous_memory import MemoryStore  # noqa: E402
from nous_memory.db import EmbeddedServer  # noqa: E402

TARGET_S = 120.0
TARGET_ROWS_PER_S = 1_000_000 / 120
FORMS = ("agent", "table")  # the baseline first, the headline's form last
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


async def run_jobs(dsn: str, batch: int, form: str, workers: int) -> dict[str, float]:
    """The job-runner process: trim, then archive, through the scheduler's code path."""
    async with MemoryStore.open(database_url=dsn, job_batch_size=batch, job_sweeps=form,
                                job_workers=workers,
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


async def new_database(dsn: str, suffix: str, *, copy: bool) -> str:
    """Another database beside the one at ``dsn`` (a copy of it when ``copy``: no session
    may be connected to it then), and its dsn."""
    name = urlparse(dsn).path.lstrip("/")
    other = f"{name}_{suffix}"
    conn = await asyncpg.connect(dsn, database="template1")
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{other}"')
        await conn.execute(f'CREATE DATABASE "{other}"'
                           + (f' TEMPLATE "{name}" STRATEGY FILE_COPY' if copy else ""))
    finally:
        await conn.close()
    return urlparse(dsn)._replace(path="/" + other).geturl()


async def drop_database(dsn: str) -> None:
    name = urlparse(dsn).path.lstrip("/")
    conn = await asyncpg.connect(dsn, database="template1")
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def job_runner(dsn: str, batch: int, form: str, workers: int) -> dict[str, float]:
    """Runs the jobs in a process of their own (its RSS is the job runner's alone)."""
    child = subprocess.run(
        [sys.executable, __file__, "--job-runner", dsn, "--batch", str(batch),
         "--workers", str(workers),
         "--form", form],
        capture_output=True, text=True, check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if child.returncode != 0:
        raise SystemExit(f"job runner failed:\n{child.stderr[-4000:]}")
    result: dict[str, float] = json.loads(child.stdout.strip().splitlines()[-1])
    return result


def rows_per_s(result: dict[str, float]) -> float:
    return (result["trim.trimmed"] + result["archive.archived"]) / (
        result["trim_s"] + result["archive_s"])


def report(dsn: str, results: dict[str, dict[str, float]], one: dict[str, float] | None,
           total: int, gen_s: float, size_before: int) -> None:
    table = results["table"]
    ok, sampled = asyncio.run(verify(dsn))
    size_after = asyncio.run(database_size(dsn))
    print(f"# trim: {table['trim.trimmed']:.0f} episodes trimmed "
          f"({table['trim.trimmed_chars'] / 2**20:.0f} Mi chars to cold storage), "
          f"{table['trim.summaries_queued']:.0f} short summaries queued")
    print(f"# archive (runs first, as scheduled): {table['archive.archived']:.0f} episodes "
          "archived")
    for key in ("trim.trimmed", "archive.archived", "trim.trimmed_chars",
                "trim.summaries_queued"):
        if results["agent"][key] != table[key]:
            raise SystemExit(f"the two forms disagree on {key}: "
                             f"{results['agent'][key]:.0f} per agent, {table[key]:.0f} table")
    print("# both forms moved the same episodes and queued the same work")
    print(f"# cold copies checked against their checksum: {ok}/{sampled} (1% sample)")
    print(f"# database {size_before / 2**30:.2f} GiB before the jobs, "
          f"{size_after / 2**30:.2f} GiB after (dead tuples not yet vacuumed)")
    print(f"# job runner RSS after opening the store: {table['rss_after_open_mb']:.0f} MB")
    print(f"episodes: {total}")
    print(f"generate_s: {gen_s:.1f}")
    for form, label in (("agent", "per_agent_"), ("table", "")):
        result = results[form]
        print(f"{label}trim_s: {result['trim_s']:.1f}")
        print(f"{label}archive_s: {result['archive_s']:.1f}")
    print(f"peak_rss_mb: {max(r['peak_rss_mb'] for r in results.values()):.0f}")
    headline = rows_per_s(table)
    if one is not None:
        print(f"one_agent_rows_per_s: {rows_per_s(one):.0f}")
        print(f"# whole-table form, {total} episodes of many agents against one agent's: "
              f"{headline / rows_per_s(one):.2f}x (goal >= 0.9x)")
    if total >= TARGET_AT:
        met = (table["trim_s"] <= TARGET_S and table["archive_s"] <= TARGET_S
               and table["peak_rss_mb"] <= TARGET_RSS_MB)
        print(f"# targets at {TARGET_AT}: trim and archive <= {TARGET_S:.0f} s each, peak "
              f"RSS <= {TARGET_RSS_MB:.0f} MB: {'met' if met else 'NOT met'}")
    print(f"# goal >= {TARGET_ROWS_PER_S:.0f} rows/s (a million episodes in two minutes): "
          f"{'met' if headline >= TARGET_ROWS_PER_S else 'NOT met'}; the whole-table form "
          f"{headline / rows_per_s(results['agent']):.2f}x the per-agent form")
    print(machine_line().replace("machine:", "machine at the end:"))
    print(f"per_agent_rows_per_s: {rows_per_s(results['agent']):.0f}")
    print(f"rows_per_s: {headline:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--agents", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=2_000, help="job batch size")
    parser.add_argument("--workers", type=int, default=2,
                        help="batches of one job at once (job_workers)")
    parser.add_argument("--one-agent", action="store_true",
                        help="also run the whole-table form on one agent's episodes")
    parser.add_argument("--job-runner", metavar="DSN", help=argparse.SUPPRESS)
    parser.add_argument("--form", choices=FORMS, default="table", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job_runner:  # the child: print the measurements as one JSON line
        print(json.dumps(asyncio.run(run_jobs(args.job_runner, args.batch, args.form,
                                                     args.workers))))
        return

    temp_dir: Path | None = None
    server: EmbeddedServer | None = None
    dsn = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    if not dsn:
        temp_dir = Path(tempfile.mkdtemp(prefix="nous-jobs-bench-"))
        server = EmbeddedServer.acquire(temp_dir / "pg")
        dsn = server.dsn("postgres")
    copies: list[str] = []
    try:
        print(machine_line())
        asyncio.run(create_schema(dsn))
        gen_s, size_before = asyncio.run(generate(dsn, args.episodes, args.agents))
        total = max(1, args.episodes // args.agents) * args.agents
        print(f"# generated {total} episodes for {args.agents} agents in SQL in {gen_s:.1f} s; "
              f"database {size_before / 2**30:.2f} GiB; embeddings omitted")
        copies.append(asyncio.run(new_database(dsn, "per_agent", copy=True)))
        results = {"agent": job_runner(copies[-1], args.batch, "agent", args.workers)}
        print(f"# per-agent form (job_sweeps=agent, what Citus runs): "
              f"{rows_per_s(results['agent']):.0f} rows/s")
        results["table"] = job_runner(dsn, args.batch, "table", args.workers)
        one: dict[str, float] | None = None
        if args.one_agent:
            copies.append(asyncio.run(new_database(dsn, "one_agent", copy=False)))
            asyncio.run(create_schema(copies[-1]))
            asyncio.run(generate(copies[-1], total, 1))
            one = job_runner(copies[-1], args.batch, "table", args.workers)
        report(dsn, results, one, total, gen_s, size_before)
    finally:
        for copy in copies:
            asyncio.run(drop_database(copy))
        if server is not None:
            server.release()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
