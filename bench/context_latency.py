"""Context latency: what assemble_context costs next to the floor of any vector read path.

    python bench/context_latency.py [--memories 100000] [--queries 200] [--seed 11]
                                    [--per-agent 1000] [--chunks-per-agent 200]
                                    [--real-agents 5] [--centroids 2000] [--warmup 20]
                                    [--build-memory 4GB] [--build-workers 2]

Builds a fresh database (an embedded PostgreSQL in a temporary directory, or
NOUS_MEMORY_DATABASE_URL when set) holding many agents of --per-agent memories each
(facts, profile facts, decisions, episodes with short and long detail, procedures with
few and many patterns, censors) plus verbatim episode chunks, bulk-loaded with COPY
(not the write path).  The agents queried get real all-MiniLM-L6-v2 embeddings; every
other row gets a synthetic vector: a real embedding of a template sentence plus
Gaussian noise, normalised, so the index sees clustered data like real text rather
than uniform noise.  The HNSW and GIN indexes are rebuilt after the load.

Then, for each query (one of the real agents, a question in the vocabulary of its
memories), in rotating order:
  - assemble_context with the query embedding computed inside the call (the
    in-process query cache cleared first), then the same call again (a cache hit:
    context_repeated_query_ms_p50);
  - assemble_context with a precomputed query embedding;
  - the floor: one bare embedding call plus one bare HNSW top-10 query on the same
    table (this agent's active memories ordered by cosine distance).
Prints ``name: value`` lines: the breakdown of a context call (medians of its parts),
the precomputed and floor figures, then the headline, context_ms_p50, last, with the
goal for the size measured on a ``#`` line.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
from backends import add_backend_option
from pgvector.asyncpg import register_vector

from nous_memory import MemoryStore
from nous_memory.tokens import count_tokens

TARGET_OVER_FLOOR = 1.5
TARGET_PRECOMPUTED_P95_MS = 15.0
# the goal for context_ms_p50 (query embedding included) by store size, on a quiet machine
GOAL_CONTEXT_P50_MS = {100_000: 10.0, 1_000_000: 15.0}
NOISE = 0.35  # std of the per-dimension noise added to a template embedding (x 1/sqrt(dim))

PEOPLE = ["Maren", "Tobias", "Keiko", "Anil", "Greta", "Omar", "Lucia", "Bram", "Sunita",
          "Pavel", "Ines", "Kofi", "Yara", "Felix", "Mei", "Dario", "Nadia", "Hugo"]
PROJECTS = ["billing", "search", "checkout", "mobile app", "data lake", "auth service",
            "reporting", "onboarding flow", "email pipeline", "pricing engine", "CDN",
            "warehouse sync", "support portal", "feature flags", "audit log"]
OBJECTS = ["the database migration", "the vendor contract", "the release train",
           "the incident review", "the hiring loop", "the load test", "the budget forecast",
           "the API deprecation", "the backup restore drill", "the security audit",
           "the design system", "the on-call handbook", "the data retention policy"]
ACTIONS = ["approved", "postponed", "rewrote", "reviewed", "cancelled", "scheduled",
           "escalated", "simplified", "benchmarked", "documented", "split", "automated"]
TASTES = ["tea over coffee", "written updates", "meetings after 10am", "short answers",
          "metric units", "dark mode", "bullet points", "no calls on Fridays"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]

FACT = "{p} {a} {o} for the {j} project on {d}; reference {n}."
PROFILE = "{p} prefers {t}."
DECISION = "Decided to move {o} of the {j} project to {d} because {p} asked ({n})."
EPISODE = "{p} and the {j} team discussed {o}."
PROCEDURE = "Runbook {n}: handling {o} for {j}"
CENSOR = "never touch the {j} production data {n}"
QUESTIONS = ["What did {p} decide about {o}?", "When is {o} for the {j} project?",
             "Who owns {o} on {j}?", "What happened with {o} last {d}?",
             "Does {p} prefer {t}?", "Status of the {j} project and {o}"]


def fill(template: str, rng: random.Random) -> str:
    return template.format(p=rng.choice(PEOPLE), a=rng.choice(ACTIONS), o=rng.choice(OBJECTS),
                           j=rng.choice(PROJECTS), d=rng.choice(DAYS), t=rng.choice(TASTES),
                           n=rng.randrange(10_000))


def long_detail(rng: random.Random, sentences: int) -> str:
    return " ".join(fill(rng.choice([FACT, DECISION, EPISODE]), rng) for _ in range(sentences))


# ------------------------------------------------------------------------- data


class AgentData:
    """One agent's rows for COPY, with the texts that need vectors in order."""

    def __init__(self, agent: str, per_agent: int, chunks: int, rng: random.Random) -> None:
        self.agent = agent
        self.memories: list[tuple[Any, ...]] = []
        self.details: dict[str, list[tuple[Any, ...]]] = {
            "facts": [], "decisions": [], "episodes": [], "procedures": [], "censors": []}
        self.chunks: list[tuple[Any, ...]] = []
        self.texts: list[str] = []  # memory summaries, then chunk contents
        now = datetime.now(UTC)
        episodes: list[uuid.UUID] = []
        for i in range(per_agent):
            ident = uuid.UUID(int=rng.getrandbits(128), version=4)
            roll = rng.random()
            created = now - timedelta(days=rng.uniform(0, 400))
            if i < 8:
                kind, summary = "fact", fill(PROFILE, rng)
                self.details["facts"].append((agent, ident, summary, "preference"))
            elif i < 10:
                kind, trigger = "censor", fill(CENSOR, rng)
                summary = f"BLOCK: {trigger} — production changes go through review"
                self.details["censors"].append((agent, ident, trigger, "block",
                                                "production changes go through review"))
            elif roll < 0.55:
                kind, summary = "fact", fill(FACT, rng)
                self.details["facts"].append((agent, ident, summary, None))
            elif roll < 0.80:
                kind, summary = "decision", fill(DECISION, rng)
                self.details["decisions"].append((agent, ident, summary))
            elif roll < 0.94:
                kind, summary = "episode", fill(EPISODE, rng)
                detail = long_detail(rng, rng.choice([3, 4, 20, 30]))  # some over 1,000 chars
                self.details["episodes"].append((agent, ident, summary[:60], detail))
                episodes.append(ident)
            else:
                kind = "procedure"
                patterns = [fill(FACT, rng) for _ in range(rng.choice([3, 4, 8]))]
                summary = fill(PROCEDURE, rng) + ": " + "; ".join(patterns[:3])
                self.details["procedures"].append((agent, ident, summary[:80], patterns))
            self.memories.append((agent, ident, kind, summary, count_tokens(summary),
                                  rng.uniform(0.2, 0.9), created, created))
            self.texts.append(summary)
        for n in range(chunks if episodes else 0):
            episode = episodes[n % len(episodes)]
            content = "\n".join(f"{rng.choice(PEOPLE)}: {fill(FACT, rng)}" for _ in range(3))
            self.chunks.append((agent, episode, n // len(episodes), 3 * n, 3 * n + 2, content,
                                count_tokens(content)))
            self.texts.append(content)


async def copy_agent(conn: asyncpg.Connection, data: AgentData, vectors: np.ndarray,
                     model: str) -> None:
    count = len(data.memories)
    await conn.copy_records_to_table(
        "memories", columns=["agent_id", "id", "kind", "summary", "summary_tokens", "importance",
                             "created_at", "updated_at", "summary_source", "embedding",
                             "embedding_model"],
        records=[(*row, "template", vectors[i], model) for i, row in enumerate(data.memories)])
    d = data.details
    await conn.copy_records_to_table("facts", columns=["agent_id", "memory_id", "content",
                                                       "category", "normalized_hash"],
                                     records=[(*r, uuid.uuid4().bytes * 2) for r in d["facts"]])
    await conn.copy_records_to_table("decisions", columns=["agent_id", "memory_id",
                                                           "description"],
                                     records=d["decisions"])
    await conn.copy_records_to_table("episodes", columns=["agent_id", "memory_id", "title",
                                                          "detail"], records=d["episodes"])
    await conn.copy_records_to_table("procedures", columns=["agent_id", "memory_id", "name",
                                                            "core_patterns"],
                                     records=d["procedures"])
    await conn.copy_records_to_table("censors", columns=["agent_id", "memory_id",
                                                         "trigger_pattern", "action", "reason"],
                                     records=d["censors"])
    await conn.copy_records_to_table(
        "episode_chunks", columns=["agent_id", "episode_id", "chunk_no", "first_seq",
                                   "last_seq", "content", "tokens", "embedding",
                                   "embedding_model"],
        records=[(*row, vectors[count + i], model) for i, row in enumerate(data.chunks)])


class Synthetic:
    """Vectors near real embeddings of template sentences (clustered, like real text)."""

    def __init__(self, centroids: np.ndarray, rng: np.random.Generator) -> None:
        self._centroids = centroids
        self._rng = rng

    def __call__(self, n: int) -> np.ndarray:
        dim = self._centroids.shape[1]
        picks = self._centroids[self._rng.integers(0, len(self._centroids), n)]
        noisy = picks + self._rng.normal(0, NOISE / np.sqrt(dim), (n, dim))
        unit: np.ndarray = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
        return unit.astype(np.float32)


async def build(store: MemoryStore, args: argparse.Namespace, rng: random.Random
                ) -> tuple[list[AgentData], dict[str, float]]:
    agents = max(args.memories // args.per_agent, 1)
    real = min(args.real_agents, agents)
    timings: dict[str, float] = {}
    conn = await asyncpg.connect(store.dsn)
    await register_vector(conn)
    model = store.embedder.model_name
    try:
        indexes = [r["def"] for r in await conn.fetch(
            "SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index "
            "WHERE indrelid IN ('memories'::regclass, 'episode_chunks'::regclass) "
            "AND NOT indisprimary AND NOT indisunique")]
        names = [r["name"] for r in await conn.fetch(
            "SELECT indexrelid::regclass::text AS name FROM pg_index "
            "WHERE indrelid IN ('memories'::regclass, 'episode_chunks'::regclass) "
            "AND NOT indisprimary AND NOT indisunique")]
        for name in names:
            await conn.execute(f"DROP INDEX {name}")
        started = time.perf_counter()
        templates = [fill(rng.choice([FACT, DECISION, EPISODE, PROFILE]), rng)
                     for _ in range(args.centroids)]
        synthetic = Synthetic(np.asarray(await store.embedder.embed(templates)),
                              np.random.default_rng(args.seed))
        kept: list[AgentData] = []
        real_vectors = 0
        for index in range(agents):
            data = AgentData(f"bench-{index:05d}", args.per_agent, args.chunks_per_agent, rng)
            if index < real:
                vectors = np.asarray(await store.embedder.embed(data.texts), dtype=np.float32)
                real_vectors += len(data.texts)
                kept.append(data)
            else:
                vectors = synthetic(len(data.texts))
            async with conn.transaction():
                await copy_agent(conn, data, vectors, model)
            if index % 100 == 99:
                print(f"# loaded {index + 1}/{agents} agents "
                      f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        timings["load_s"] = time.perf_counter() - started
        timings["real_vectors"] = real_vectors
        started = time.perf_counter()
        # the HNSW graph built in memory (1,000,000 vectors need about 3 GB; past the
        # setting the build goes on far more slowly), with parallel workers
        await conn.execute(f"SET maintenance_work_mem = '{args.build_memory}'")
        await conn.execute(f"SET max_parallel_maintenance_workers = {args.build_workers}")
        for definition in indexes:
            await conn.execute(definition)
        # steady state: an insert-only bulk load leaves the visibility map and hint bits
        # unset, and autovacuum would otherwise do that work during the measurement
        await conn.execute("VACUUM ANALYZE")
        timings["index_s"] = time.perf_counter() - started
    finally:
        await conn.close()
    return kept, timings


# ------------------------------------------------------------------------- measuring


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


async def measure(store: MemoryStore, agents: list[AgentData], args: argparse.Namespace,
                  rng: random.Random) -> dict[str, list[float]]:
    conn = await asyncpg.connect(store.dsn)
    await register_vector(conn)
    await conn.execute("SET hnsw.iterative_scan = relaxed_order")
    floor_sql = ("SELECT id FROM memories WHERE agent_id = $1 AND status = 'active' "
                 "ORDER BY embedding <=> $2 LIMIT 10")
    out: dict[str, list[float]] = {k: [] for k in (
        "context", "repeat", "precomputed", "floor", "floor_embed", "floor_hnsw", "items",
        "tokens",
        "t_embed", "t_candidates", "t_extraction", "t_assemble")}

    async def with_embedding(agent: str, query: str, timed: bool) -> None:
        store.embeddings.recent_queries.clear()  # a new query: the model runs in the call
        started = time.perf_counter()
        ctx = await store.assemble_context(agent, query)
        repeated = time.perf_counter()
        await store.assemble_context(agent, query)  # the same query again: a cache hit
        if timed:
            out["repeat"].append((time.perf_counter() - repeated) * 1000)
            out["context"].append((repeated - started) * 1000)
            out["items"].append(len(ctx.items))
            out["tokens"].append(ctx.tokens_used)
            t = ctx.timings
            for name, value in (("t_embed", t.embed_ms), ("t_candidates", t.candidates_ms),
                                ("t_extraction", t.extraction_ms),
                                ("t_assemble", t.assemble_ms)):
                out[name].append(value)

    async def precomputed(agent: str, query: str, timed: bool) -> None:
        vector = (await store.embedder.embed([query]))[0]
        started = time.perf_counter()
        await store.assemble_context(agent, query, query_embedding=vector)
        if timed:
            out["precomputed"].append((time.perf_counter() - started) * 1000)

    async def floor(agent: str, query: str, timed: bool) -> None:
        started = time.perf_counter()
        vector = (await store.embedder.embed([query]))[0]
        embedded = time.perf_counter()
        await conn.fetch(floor_sql, agent, vector)
        done = time.perf_counter()
        if timed:
            out["floor"].append((done - started) * 1000)
            out["floor_embed"].append((embedded - started) * 1000)
            out["floor_hnsw"].append((done - embedded) * 1000)

    steps = [with_embedding, precomputed, floor]
    try:
        for i in range(args.warmup + args.queries):
            agent = rng.choice(agents).agent
            query = fill(rng.choice(QUESTIONS), rng)
            order = steps[i % 3:] + steps[:i % 3]  # each step first as often as the others
            for step in order:
                await step(agent, query, i >= args.warmup)
    finally:
        await conn.close()
    return out


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="nous-bench-ctx-") as tmp:
        data_dir = args.keep_data_dir or tmp
        opened = (MemoryStore.open(database_url=url, embedding_backend=args.backend) if url
                  else MemoryStore.open(data_dir=data_dir, database_url=None,
                                        embedding_backend=args.backend))
        async with opened as store:
            agents, built = await reuse(store, args, rng) if args.reuse else (None, None)
            if agents is None or built is None:
                agents, built = await build(store, args, rng)
            out = await measure(store, agents, args, rng)
            report(args, agents, built, out)


async def reuse(store: MemoryStore, args: argparse.Namespace, rng: random.Random
                ) -> tuple[list[AgentData] | None, dict[str, float] | None]:
    """Development only: measure again on a database an earlier --keep-data-dir run
    built with the same sizes and seed (the data is regenerated, not re-inserted)."""
    conn = await asyncpg.connect(store.dsn)
    try:
        have = await conn.fetchval("SELECT count(*) FROM memories")
    finally:
        await conn.close()
    agents = max(args.memories // args.per_agent, 1)
    if have != agents * args.per_agent:
        return None, None
    kept = [AgentData(f"bench-{i:05d}", args.per_agent, args.chunks_per_agent, rng)
            for i in range(min(args.real_agents, agents))]
    print("# reused a database built by an earlier run (development only)")
    return kept, {"load_s": float("nan"), "index_s": float("nan"),
                  "real_vectors": float(sum(len(a.texts) for a in kept))}


def report(args: argparse.Namespace, agents: list[AgentData], built: dict[str, float],
           out: dict[str, list[float]]) -> None:
    n_agents = max(args.memories // args.per_agent, 1)
    load = os.getloadavg()
    print(f"# machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} at the end")
    print(f"# data: {n_agents} agents x {args.per_agent} memories "
          f"(+{args.chunks_per_agent} chunks each); real all-MiniLM-L6-v2 embeddings for "
          f"the {len(agents)} agents queried ({int(built['real_vectors'])} rows), synthetic "
          f"vectors (real template embeddings + noise) for every other row")
    print(f"# build: load {built['load_s']:.1f} s, index rebuild {built['index_s']:.1f} s "
          f"(maintenance_work_mem {args.build_memory}, {args.build_workers} parallel workers)")
    print(f"# per call: {statistics.median(out['items']):.0f} items, "
          f"{statistics.median(out['tokens']):.0f} tokens of the default 4000 (medians)")
    print(f"# floor (median ms): embed {statistics.median(out['floor_embed']):.2f}, "
          f"hnsw top-10 {statistics.median(out['floor_hnsw']):.2f}")
    p50, p95 = pct(out["context"], 0.5), pct(out["context"], 0.95)
    pre95 = pct(out["precomputed"], 0.95)
    floor50 = pct(out["floor"], 0.5)
    ratio = p50 / floor50
    print(f"# targets: context_over_floor_p50 <= {TARGET_OVER_FLOOR} "
          f"({'met' if ratio <= TARGET_OVER_FLOOR else 'NOT met'}); "
          f"context_precomputed_ms_p95 <= {TARGET_PRECOMPUTED_P95_MS} at 100,000 memories "
          f"({'met' if pre95 <= TARGET_PRECOMPUTED_P95_MS else 'NOT met'})")
    print(f"memories: {n_agents * args.per_agent}")
    print(f"queries: {args.queries}")
    # the breakdown of context_ms_p50 (medians of each part; they need not add up to it)
    for name, key in (("embed", "t_embed"), ("candidates", "t_candidates"),
                      ("extraction", "t_extraction"), ("assemble", "t_assemble")):
        print(f"context_{name}_ms_p50: {statistics.median(out[key]):.2f}")
    print(f"context_ms_p95: {p95:.2f}")
    print(f"context_repeated_query_ms_p50: {pct(out['repeat'], 0.5):.2f}")
    print(f"context_precomputed_ms_p50: {pct(out['precomputed'], 0.5):.2f}")
    print(f"context_precomputed_ms_p95: {pre95:.2f}")
    print(f"floor_ms_p50: {floor50:.2f}")
    print(f"context_over_floor_p50: {ratio:.3f}")
    print(goal_line(n_agents * args.per_agent, p50))
    print(f"context_ms_p50: {p50:.2f}")


def goal_line(memories: int, p50: float) -> str:
    """The goal for context_ms_p50 at this size (the sizes it is set for, else none)."""
    goals = ", ".join(f"<= {ms:g} ms at {size:,}" for size, ms in GOAL_CONTEXT_P50_MS.items())
    goal = GOAL_CONTEXT_P50_MS.get(memories)
    if goal is None:
        return f"# goal: context_ms_p50 {goals} memories (none set for {memories:,})"
    return (f"# goal: context_ms_p50 <= {goal:g} ms at {memories:,} memories, quiet machine "
            f"({'met' if p50 <= goal else 'NOT met'}: {p50:.2f})")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--per-agent", type=int, default=1_000)
    parser.add_argument("--chunks-per-agent", type=int, default=200)
    parser.add_argument("--real-agents", type=int, default=5,
                        help="agents embedded with the real model (the ones queried)")
    parser.add_argument("--centroids", type=int, default=2_000,
                        help="template sentences whose embeddings seed the synthetic vectors")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--build-memory", default="4GB",
                        help="maintenance_work_mem for the index rebuild")
    parser.add_argument("--build-workers", type=int, default=2,
                        help="max_parallel_maintenance_workers for the index rebuild")
    parser.add_argument("--keep-data-dir", metavar="DIR",
                        help="development: keep the embedded server's data in DIR")
    parser.add_argument("--reuse", action="store_true",
                        help="development: measure on the database in --keep-data-dir "
                             "when it already holds this data set")
    add_backend_option(parser)
    asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
