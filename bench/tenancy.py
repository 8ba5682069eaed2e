"""Many tenants in one table: recall's agreement with an exact search, and its latency,
for small, median and large agents.

    python bench/tenancy.py [--agents 10000] [--min-size 10] [--max-size 500]
                            [--large 3] [--large-size 100000] [--topics 4000]
                            [--queries 60] [--warmup 5] [--seed 5]
                            [--exact-scan-max-rows 20000] [--own-index-rows 20000]
                            [--shared-buffers SIZE]

Builds a fresh database (an embedded PostgreSQL in a temporary directory, or
NOUS_MEMORY_DATABASE_URL when set, an empty database): --agents agents whose sizes are
drawn log-uniformly from [--min-size, --max-size] memories, plus --large agents of
--large-size memories each, every memory a fact.  Everything is synthetic and loaded
with binary COPY straight into the store's tables (memories, facts), the non-unique
indexes built afterwards (HNSW with generous maintenance_work_mem and parallel
workers; both build times are printed):

  - vectors: --topics topic centroids (unit vectors sharing a common direction, so
    unrelated texts have cosine ~0.2 as real sentence embeddings do); each agent writes
    about a few topics (a large agent about many), each memory its topic's centroid
    plus Gaussian noise (cosine ~0.7 to the centroid, ~0.5 between two memories of a
    topic on average) that lies mostly in 16 directions of the topic's own (sentence
    embeddings vary along few directions locally), normalised: clustered like real
    text, with a 10th and a 20th neighbour 0.02-0.04 of cosine apart;
  - words: each topic has its own words (made-up tokens), a summary is 8 of them;
  - priors neutral: one creation time, importance 0.5, no confidence, never accessed,
    so nothing but the legs orders an answer.

For each size class (the smallest agents, those around the median size, the large
ones), --queries queries in rotation over its agents, each a new point near one of the
agent's topics (a synthetic vector: no model runs):

  - agreement: ``recall(k=10)`` with a query text that shares no word with any memory
    (the text leg finds nothing, the priors are neutral, so the answer is the store's
    vector leg) against the exact cosine top-10 over that agent's own rows (numpy over
    the rows read back); also checked: never fewer than min(10, rows) results;
  - latency: ``recall(k=10)`` with words of the topic (both legs work) and
    ``assemble_context`` with the same text, both with the vector given
    (``query_embedding=``: the model's time is excluded; bench/context_latency.py
    measures context with it).  ``recall_sql`` is the statement alone (``timings``).

Both recall paths are also measured for every class, through two more stores on the
same database that always scan exactly or always use the indexes
(``recall_exact_scan_max_rows`` 10**9 and 0): ``{class}_{exact,index}_path_recall_at_10``
and ``..._recall_sql_ms_p50``, the evidence for the store's choice.

After the build the store's ``indexes`` job gives the large agents indexes of their own
(maintenance/indexes.py; its time is printed).  Per class it prints the plans PostgreSQL
chose for that agent's recall statements (EXPLAIN ANALYZE of the statements the store
ran, a large agent's candidate read and the ranking, as ``#`` lines: the scans and the
indexes they use), then ``{class}_recall_at_10``, ``{class}_fewer_than_k`` (queries
answered with fewer results than the agent could give), ``{class}_recall_sql_ms_p50/p95``,
``{class}_recall_ms_p50/p95``, ``{class}_context_ms_p50/p95``, and last
``tenancy_min_recall_at_10`` (goal >= 0.99).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from nous_memory import MemoryStore
from nous_memory.db.connector import Connection

GOAL_RECALL = 0.99
GOAL_SQL_MS = 5.0  # recall's statement at --large-size memories for one agent
DIM = 384
WORDS_PER_TOPIC = 200
WORDS_PER_SUMMARY = 8
TOPICS_SMALL = (1, 6)  # topics per ordinary agent (inclusive range)
TOPICS_LARGE = 60
NOISE = 1.0  # norm of a memory's offset from its topic's centroid, within the topic's
LOCAL_DIM = 16  # directions (local intrinsic dimension of sentence embeddings: 10-20)
RESIDUAL = 0.2  # plus this much isotropic noise
COMMON = 0.5  # weight of the direction every centroid shares
CREATED = datetime(2026, 1, 1, tzinfo=UTC)
CLASS_AGENTS = 20  # agents queried per ordinary class
NO_WORD = "zzqv"  # a query word no memory has


@dataclass(frozen=True, slots=True, kw_only=True)
class Agent:
    name: str
    size: int
    topics: tuple[int, ...]


class World:
    """The topics (centroids and words) and every agent's plan, all from one seed."""

    def __init__(self, args: argparse.Namespace) -> None:
        rng = np.random.default_rng(args.seed)
        common = rng.normal(size=DIM)
        common /= np.linalg.norm(common)
        raw = rng.normal(size=(args.topics, DIM))
        raw /= np.linalg.norm(raw, axis=1, keepdims=True)
        centroids = COMMON * common + raw
        self.centroids = (centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
                          ).astype(np.float32)
        # each topic's spread lies in a few directions of its own (LOCAL_DIM), as sentence
        # embeddings vary along few directions locally: isotropic noise over all 384 would
        # make every memory of a topic almost equally far from a query (a 10th and a 20th
        # neighbour within 0.01 of cosine), which no real text does
        self.spread = rng.normal(size=(args.topics, LOCAL_DIM, DIM)).astype(np.float32)
        self.spread /= np.linalg.norm(self.spread, axis=2, keepdims=True)
        self.words = [[f"t{t}w{w}" for w in range(WORDS_PER_TOPIC)] for t in range(args.topics)]
        low, high = math.log(args.min_size), math.log(args.max_size)
        sizes = np.exp(rng.uniform(low, high, args.agents)).round().astype(int)
        self.agents: list[Agent] = []
        for i, size in enumerate(sizes):
            count = int(rng.integers(TOPICS_SMALL[0], TOPICS_SMALL[1] + 1))
            topics = tuple(int(t) for t in rng.choice(args.topics, count, replace=False))
            self.agents.append(Agent(name=f"t-{i:05d}", size=int(size), topics=topics))
        for i in range(args.large):
            topics = tuple(int(t) for t in rng.choice(args.topics, min(TOPICS_LARGE, args.topics),
                                                      replace=False))
            self.agents.append(Agent(name=f"large-{i}", size=args.large_size, topics=topics))
        self.seed = args.seed

    def near(self, topics: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One unit vector near each given topic's centroid."""
        local = rng.normal(0, NOISE / math.sqrt(LOCAL_DIM), (len(topics), LOCAL_DIM))
        noise = rng.normal(0, RESIDUAL / math.sqrt(DIM), (len(topics), DIM))
        for topic in np.unique(topics):
            rows = topics == topic
            noise[rows] += local[rows] @ self.spread[topic]
        points = self.centroids[topics] + noise
        unit: np.ndarray = points / np.linalg.norm(points, axis=1, keepdims=True)
        return unit.astype(np.float32)

    def summary(self, topic: int, rng: np.random.Generator) -> str:
        words = self.words[topic]
        return " ".join(words[int(i)] for i in rng.integers(0, len(words), WORDS_PER_SUMMARY))

    def classes(self) -> dict[str, list[Agent]]:
        ordinary = sorted((a for a in self.agents if not a.name.startswith("large")),
                          key=lambda a: (a.size, a.name))
        large = [a for a in self.agents if a.name.startswith("large")]
        middle = len(ordinary) // 2
        half = CLASS_AGENTS // 2
        out = {"small": ordinary[:CLASS_AGENTS],
               "median": ordinary[max(middle - half, 0):middle + half]}
        if large:
            out["large"] = large
        return out


# ------------------------------------------------------------------------- build


def agent_rows(world: World, agent: Agent, index: int, model: str
               ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    rng = np.random.default_rng([world.seed, index])
    topics = np.asarray(agent.topics)[rng.integers(0, len(agent.topics), agent.size)]
    vectors = world.near(topics, rng)
    memories: list[tuple[Any, ...]] = []
    facts: list[tuple[Any, ...]] = []
    for i in range(agent.size):
        ident = uuid.UUID(bytes=rng.bytes(16), version=4)
        text = world.summary(int(topics[i]), rng)
        memories.append((agent.name, ident, "fact", text, "given", WORDS_PER_SUMMARY,
                         vectors[i], model, CREATED, CREATED))
        facts.append((agent.name, ident, text, hashlib.sha256(text.encode()).digest()))
    return memories, facts


MEMORY_COLUMNS = ["agent_id", "id", "kind", "summary", "summary_source", "summary_tokens",
                  "embedding", "embedding_model", "created_at", "updated_at"]
FACT_COLUMNS = ["agent_id", "memory_id", "content", "normalized_hash"]


async def build(store: MemoryStore, world: World, args: argparse.Namespace) -> dict[str, float]:
    conn = await asyncpg.connect(store.dsn)
    await register_vector(conn)
    model = store.memories.model_name
    timings: dict[str, float] = {}
    try:
        found = await conn.fetch(
            "SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS def "
            "FROM pg_index WHERE indrelid IN ('memories'::regclass, 'facts'::regclass) "
            "AND NOT indisprimary AND NOT indisunique")
        for row in found:
            await conn.execute(f"DROP INDEX {row['name']}")
        started = time.perf_counter()
        memories: list[tuple[Any, ...]] = []
        facts: list[tuple[Any, ...]] = []
        rows = 0
        for index, agent in enumerate(world.agents):
            m, f = agent_rows(world, agent, index, model)
            memories += m
            facts += f
            if len(memories) >= 50_000 or index == len(world.agents) - 1:
                await conn.copy_records_to_table("memories", columns=MEMORY_COLUMNS,
                                                 records=memories)
                await conn.copy_records_to_table("facts", columns=FACT_COLUMNS, records=facts)
                rows += len(memories)
                memories, facts = [], []
                print(f"# loaded {rows} memories ({time.perf_counter() - started:.0f} s)",
                      file=sys.stderr)
        timings["load_s"] = time.perf_counter() - started
        timings["rows"] = rows
        await conn.execute(f"SET maintenance_work_mem = '{args.build_memory}'")
        await conn.execute(f"SET max_parallel_maintenance_workers = {args.build_workers}")
        started = time.perf_counter()
        timings["hnsw_s"] = 0.0
        for row in sorted(found, key=lambda r: "hnsw" not in r["def"]):
            began = time.perf_counter()
            await conn.execute(row["def"])
            if "hnsw" in row["def"]:
                timings["hnsw_s"] += time.perf_counter() - began
            print(f"# built {row['name']} ({time.perf_counter() - began:.0f} s)",
                  file=sys.stderr)
        await conn.execute("VACUUM ANALYZE memories")
        await conn.execute("VACUUM ANALYZE facts")
        timings["index_s"] = time.perf_counter() - started
    finally:
        await conn.close()
    return timings


async def set_shared_buffers(data_dir: str, size: str) -> None:
    """The embedded server's buffer cache (ALTER SYSTEM), in effect from its next start:
    the store is closed (the embedded server stops with its last user) and reopened."""
    async with MemoryStore.open(data_dir=data_dir, database_url=None) as store:
        conn = await asyncpg.connect(store.dsn)
        try:
            await conn.execute(f"ALTER SYSTEM SET shared_buffers = '{size}'")
        finally:
            await conn.close()


async def reuse(store: MemoryStore, world: World) -> dict[str, float] | None:
    """Development only: measure again on a database an earlier --keep-data-dir run
    built with the same arguments."""
    conn = await asyncpg.connect(store.dsn)
    try:
        have = await conn.fetchval("SELECT count(*) FROM memories")
    finally:
        await conn.close()
    if have == 0:
        return None
    if have != sum(a.size for a in world.agents):
        sys.exit(f"--reuse: the kept database holds {have} memories, not this data set's "
                 f"{sum(a.size for a in world.agents)}; give another --keep-data-dir")
    print("# reused a database built by an earlier run (development only)")
    return {"load_s": float("nan"), "hnsw_s": float("nan"), "index_s": float("nan"),
            "rows": float(have)}


# ------------------------------------------------------------------------- measuring


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


class StatementSpy:
    """Keeps the arguments and session settings of the last recall statements the store
    ran (its index reads and its ranking), so that the very statements can be explained
    (the library is unchanged)."""

    NAMES = ("recall_index_legs", "recall")

    def __init__(self) -> None:
        self.last: dict[str, tuple[tuple[Any, ...], dict[str, str]]] = {}
        self.watching = False  # only the store under test, not the forced-path stores
        self._original: Callable[..., Any] = Connection.fetch

    def __enter__(self) -> StatementSpy:
        spy, original = self, self._original

        async def fetch(conn: Connection, name: str, *args: Any) -> Any:
            rows = await original(conn, name, *args)
            if spy.watching and name in spy.NAMES:
                settings = await conn.raw.fetch(
                    "SELECT name, setting FROM pg_settings WHERE name IN "
                    "('plan_cache_mode', 'enable_seqscan', 'hnsw.iterative_scan', "
                    "'hnsw.ef_search', 'hnsw.max_scan_tuples')")
                spy.last[name] = (args, {r["name"]: r["setting"] for r in settings})
            return rows

        Connection.fetch = fetch  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        Connection.fetch = self._original  # type: ignore[method-assign]


def plan_summary(plan: dict[str, Any]) -> list[str]:
    """Scan nodes (with their index) that ran, in plan order."""
    out: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        kind = node["Node Type"]
        if "Scan" in kind and node.get("Actual Loops", 0) > 0 and node.get("Relation Name"):
            where = node.get("Index Name")
            out.append(f"{kind} on {node['Relation Name']}"
                       + (f" using {where}" if where else "")
                       + f" ({node.get('Actual Rows', 0):.0f} rows x {node.get('Actual Loops')}"
                       f", {node.get('Actual Total Time', 0):.2f} ms)")
        for child in node.get("Plans", []):
            walk(child)

    walk(plan["Plan"])
    return out


async def explain(store: MemoryStore, spy: StatementSpy) -> list[str]:
    from nous_memory.db.queries import QUERIES

    lines: list[str] = []
    conn = await asyncpg.connect(store.dsn)
    await register_vector(conn)
    try:
        for name in StatementSpy.NAMES:
            if name not in spy.last:
                continue
            args, settings = spy.last[name]
            async with conn.transaction():
                for key, value in settings.items():
                    await conn.execute("SELECT set_config($1, $2, true)", key, value)
                raw = await conn.fetchval(
                    "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + QUERIES[name], *args)
            plan = json.loads(raw)[0] if isinstance(raw, str) else raw[0]
            shown = ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
            lines.append(f"statement {name}; {shown}; planning {plan['Planning Time']:.2f} "
                         f"ms, execution {plan['Execution Time']:.2f} ms")
            lines += plan_summary(plan)
    finally:
        await conn.close()
    return lines


async def own_rows(store: MemoryStore, agent: str) -> tuple[list[uuid.UUID], np.ndarray]:
    conn = await asyncpg.connect(store.dsn)
    await register_vector(conn)
    try:
        rows = await conn.fetch("SELECT id, embedding FROM memories WHERE agent_id = $1 "
                                "AND status = 'active'", agent)
    finally:
        await conn.close()
    return [r["id"] for r in rows], np.stack([r["embedding"].to_numpy() for r in rows])


async def measure_class(store: MemoryStore, paths: dict[str, MemoryStore], world: World,
                        agents: list[Agent], args: argparse.Namespace,
                        rng: np.random.Generator) -> tuple[dict[str, list[float]], list[str]]:
    out: dict[str, list[float]] = {k: [] for k in (
        "recall_at_10", "fewer", "recall_sql", "recall", "context")}
    for path in paths:
        out[f"{path}_recall_at_10"], out[f"{path}_recall_sql"] = [], []
    rows = {a.name: await own_rows(store, a.name) for a in agents}
    plan: list[str] = []
    with StatementSpy() as spy:
        for i in range(args.warmup + args.queries):
            agent = agents[i % len(agents)]
            topic = int(agent.topics[int(rng.integers(0, len(agent.topics)))])
            vector = world.near(np.asarray([topic]), rng)[0]
            ids, matrix = rows[agent.name]
            exact = {ids[j] for j in np.argsort(-(matrix @ vector), kind="stable")[:10]}
            result = await store.recall(agent.name, NO_WORD, k=10, query_embedding=vector)
            found = {item.memory_id for item in result.items}
            words = " ".join(world.words[topic][int(j)] for j in rng.integers(
                0, WORDS_PER_TOPIC, 3))
            last = i == args.warmup + args.queries - 1
            if last:  # the statements explained (after the timed calls: the spy's own
                # read of the session settings is not timed)
                spy.watching = True
                await store.recall(agent.name, words, k=10, query_embedding=vector)
                spy.watching = False
            started = time.perf_counter()
            worded = await store.recall(agent.name, words, k=10, query_embedding=vector)
            recalled = time.perf_counter()
            await store.assemble_context(agent.name, words, query_embedding=vector)
            done = time.perf_counter()
            forced = {}
            for path, other in paths.items():
                answer = await other.recall(agent.name, NO_WORD, k=10, query_embedding=vector)
                timed = await other.recall(agent.name, words, k=10, query_embedding=vector)
                forced[path] = ({item.memory_id for item in answer.items}, timed.timings.sql_ms)
            if i < args.warmup:
                continue
            for path, (ids_found, sql_ms) in forced.items():
                out[f"{path}_recall_at_10"].append(len(ids_found & exact) / len(exact))
                out[f"{path}_recall_sql"].append(sql_ms)
            out["recall_at_10"].append(len(found & exact) / len(exact))
            out["fewer"].append(float(len(result.items) < min(10, len(ids))))
            out["recall_sql"].append(worded.timings.sql_ms)
            out["recall"].append((recalled - started) * 1000)
            out["context"].append((done - recalled) * 1000)
        plan = await explain(store, spy)
    return out, plan


async def run(args: argparse.Namespace) -> None:
    world = World(args)
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="nous-bench-tenancy-") as tmp:
        data_dir = args.keep_data_dir or tmp
        tuning = {"recall_exact_scan_max_rows": args.exact_scan_max_rows,
                  "agent_indexes_min_rows": args.own_index_rows}
        if args.shared_buffers and not url:
            await set_shared_buffers(data_dir, args.shared_buffers)
        opened = (MemoryStore.open(database_url=url, **tuning) if url
                  else MemoryStore.open(data_dir=data_dir, database_url=None, **tuning))
        async with opened as store:
            built = await reuse(store, world) if args.reuse else None
            if built is None:
                built = await build(store, world, args)
            began = time.perf_counter()
            own = await store.maintenance.indexes(now=datetime.now(UTC))
            built["own_s"] = time.perf_counter() - began
            built["own_agents"] = own.counts["agents_with_own_indexes"]
            built["own_created"] = own.counts["agent_indexes_created"]
            conn = await asyncpg.connect(store.dsn)
            try:
                buffers = str(await conn.fetchval("SHOW shared_buffers"))
            finally:
                await conn.close()
            rng = np.random.default_rng([args.seed, 99])
            results = {}
            async with contextlib.AsyncExitStack() as stack:
                # the same rows through each path, whatever the agent's size
                paths = {path: await stack.enter_async_context(MemoryStore.open(
                    database_url=store.dsn, embedder=store.embedder,
                    recall_exact_scan_max_rows=limit))
                    for path, limit in (("exact", 10**9), ("index", 0))}
                for name, agents in world.classes().items():
                    results[name] = (agents, *await measure_class(store, paths, world, agents,
                                                                  args, rng))
    report(args, world, built, results, buffers)


def report(args: argparse.Namespace, world: World, built: dict[str, float],
           results: dict[str, tuple[list[Agent], dict[str, list[float]], list[str]]],
           buffers: str) -> None:
    load = os.getloadavg()
    print(f"# server: shared_buffers {buffers}")
    print(f"# machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} at the end")
    sizes = sorted(a.size for a in world.agents)
    print(f"# data: {len(world.agents)} agents, {int(built['rows'])} memories (synthetic "
          f"clustered vectors over {args.topics} topics, made-up words; no model); agent "
          f"sizes min {sizes[0]}, median {sizes[len(sizes) // 2]}, max {sizes[-1]}")
    print(f"# build: COPY {built['load_s']:.1f} s, indexes {built['index_s']:.1f} s of which "
          f"HNSW {built['hnsw_s']:.1f} s (maintenance_work_mem {args.build_memory}, "
          f"{args.build_workers} parallel workers)")
    print(f"# own indexes (the indexes job): {built['own_agents']:.0f} agents, "
          f"{built['own_created']:.0f} indexes built in {built['own_s']:.1f} s")
    print("# latency: vectors given (no model time); recall_sql is the statement alone")
    worst = 1.0
    for name, (agents, out, plan) in results.items():
        rows = sorted(a.size for a in agents)
        print(f"# {name}: {len(agents)} agents of {rows[0]}-{rows[-1]} memories; plan:")
        for line in plan:
            print(f"#   {line}")
        recall = statistics.mean(out["recall_at_10"])
        worst = min(worst, recall)
        print(f"{name}_recall_at_10: {recall:.4f}")
        print(f"{name}_fewer_than_k: {int(sum(out['fewer']))}")
        for metric in ("recall_sql", "recall", "context"):
            print(f"{name}_{metric}_ms_p50: {pct(out[metric], 0.5):.2f}")
            print(f"{name}_{metric}_ms_p95: {pct(out[metric], 0.95):.2f}")
        for path in ("exact", "index"):
            print(f"{name}_{path}_path_recall_at_10: "
                  f"{statistics.mean(out[f'{path}_recall_at_10']):.4f}")
            print(f"{name}_{path}_path_recall_sql_ms_p50: "
                  f"{pct(out[f'{path}_recall_sql'], 0.5):.2f}")
    if "large" in results:
        sql = pct(results["large"][1]["recall_sql"], 0.5)
        print(f"# goal: large_recall_sql_ms_p50 < {GOAL_SQL_MS} at {args.large_size} "
              f"memories: {'met' if sql < GOAL_SQL_MS else 'NOT met'}")
    print(f"# goal: tenancy_min_recall_at_10 >= {GOAL_RECALL}: "
          f"{'met' if worst >= GOAL_RECALL else 'NOT met'}")
    print(f"tenancy_min_recall_at_10: {worst:.4f}")


def buffer_size(text: str) -> str:
    if not re.fullmatch(r"[1-9][0-9]{0,6}(kB|MB|GB)", text):
        raise argparse.ArgumentTypeError("a size such as 512MB or 4GB")
    return text


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--min-size", type=int, default=10)
    parser.add_argument("--max-size", type=int, default=500)
    parser.add_argument("--large", type=int, default=3)
    parser.add_argument("--large-size", type=int, default=100_000)
    parser.add_argument("--topics", type=int, default=4_000)
    parser.add_argument("--queries", type=int, default=60, help="timed queries per class")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--build-memory", default="4GB", help="maintenance_work_mem")
    parser.add_argument("--build-workers", type=int, default=2,
                        help="max_parallel_maintenance_workers")
    parser.add_argument("--exact-scan-max-rows", type=int, default=20_000,
                        help="the store's recall_exact_scan_max_rows (its default)")
    parser.add_argument("--own-index-rows", type=int, default=20_000,
                        help="the store's agent_indexes_min_rows (its default)")
    parser.add_argument("--shared-buffers", metavar="SIZE", type=buffer_size,
                        help="the embedded server's shared_buffers (e.g. 4GB; default: "
                             "PostgreSQL's 128MB), set before measuring")
    parser.add_argument("--keep-data-dir", metavar="DIR",
                        help="development: keep the embedded server's data in DIR")
    parser.add_argument("--reuse", action="store_true",
                        help="development: measure on the database in --keep-data-dir "
                             "when it already holds this data set")
    args = parser.parse_args(argv)
    if not 1 <= args.min_size <= args.max_size or args.agents < 2 or args.topics < 1:
        parser.error("need 1 <= --min-size <= --max-size, --agents >= 2, --topics >= 1")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
