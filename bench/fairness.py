"""Fairness: one agent's bulk work must not stall another agent's interactive calls.

    python bench/fairness.py [--bulk 5000] [--transcript 1500] [--queries 100]

On a fresh embedded PostgreSQL (or NOUS_MEMORY_DATABASE_URL), agent ``quiet`` holds a
few hundred facts.  Its recall latency (a new question each time, so the model runs)
is measured idle, then while agent ``bulk`` runs a ``remember_many`` of ``--bulk``
facts and, beside it, the worker closes an episode of ``--transcript`` messages (its
chunks are embedded in bulk).  The same is done twice in one run: with the store's
query-first scheduling, and with a first-come-first-served model queue (whole requests
in arrival order, as before scheduling) as the baseline; each run has agents of its own
(``quiet-scheduled``, ``bulk-fifo``, ...), so on NOUS_MEMORY_DATABASE_URL, one database
for both, the baseline starts from the same data.

Prints ``name: value`` lines; the headline (``fairness_p95_ratio``: the quiet agent's
recall p95 under load over idle, with scheduling; goal <= 3) last.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from typing import Any

import numpy as np

from nous_memory import MemoryStore, OnnxEmbedder
from nous_memory.config import default_model_cache_dir

WORDS = ("budget Lisbon sister vegetarian deadline Tuesday invoice migration coffee "
         "marathon doctor flight refund allergy birthday recipe timeout gym promotion "
         "report staging contract hiring release rotation backup pricing survey").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n))


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q * 100)) if values else float("nan")


async def recall_times(store: MemoryStore, rng: random.Random, count: int, quiet: str,
                       until: asyncio.Task[Any] | None = None) -> list[float]:
    times: list[float] = []
    for i in range(count):
        if until is not None and until.done():
            break
        query = f"what about the {sentence(rng, 4)} {rng.random():.6f} ({i})?"
        started = time.perf_counter()
        await store.recall(quiet, query, k=5)
        times.append((time.perf_counter() - started) * 1000)
    return times


async def bulk_load(store: MemoryStore, rng: random.Random, args: argparse.Namespace,
                    tag: str) -> None:
    facts = [{"kind": "fact", "content": f"{sentence(rng, 12)} ({tag} {i})"}
             for i in range(args.bulk)]
    bulk = f"bulk-{tag}"
    episode = await store.start_episode(bulk, title=f"long chat {tag}")
    messages = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": sentence(rng, 40)} for i in range(args.transcript)]
    for start in range(0, len(messages), 500):
        await store.append(bulk, episode.id, messages[start:start + 500])
    await store.close_episode(bulk, episode.id)
    worker = store.worker(worker_id=f"fairness-{tag}")

    async def drain() -> None:
        while await worker.run_once():
            pass

    await asyncio.gather(store.remember_many(bulk, facts), drain())


async def phase(store: MemoryStore, rng: random.Random, args: argparse.Namespace,
                tag: str) -> dict[str, float]:
    quiet = f"quiet-{tag}"
    idle = await recall_times(store, rng, args.queries, quiet)
    load = asyncio.create_task(bulk_load(store, rng, args, tag))
    await asyncio.sleep(0.5)  # the bulk work is on the model
    loaded = await recall_times(store, rng, args.queries, quiet, until=load)
    if not loaded:
        raise SystemExit("the bulk work ended before a recall ran beside it: "
                         "raise --bulk or --transcript")
    started = time.perf_counter()
    learned = await store.learn_fact(quiet, f"The quiet agent likes {sentence(rng, 3)}")
    learn_ms = (time.perf_counter() - started) * 1000
    load_started = time.perf_counter()
    await load
    return {"idle_p50": pct(idle, 0.5), "idle_p95": pct(idle, 0.95),
            "loaded_p50": pct(loaded, 0.5), "loaded_p95": pct(loaded, 0.95),
            "loaded_max": max(loaded, default=float("nan")),
            "loaded_n": float(len(loaded)), "learn_ms": learn_ms,
            "load_tail_s": time.perf_counter() - load_started,
            "learned": float(learned.fact is not None)}


def fifo(embedder: OnnxEmbedder) -> OnnxEmbedder:
    """The baseline: every request whole, in arrival order (no priority, no slices)."""
    queue = embedder._queue
    queue.interactive_max = 10**9
    queue.interactive_chars = 10**12
    queue.slice_texts = 10**9
    queue.slice_chars = 10**12
    return embedder


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    cache = default_model_cache_dir()
    scheduled = OnnxEmbedder(cache_dir=cache)
    baseline = fifo(OnnxEmbedder(cache_dir=cache, batch_size=63))  # a queue of its own
    scheduled.warm_up()
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="nous-bench-fair-") as tmp:
        for tag, embedder in (("scheduled", scheduled), ("fifo", baseline)):
            async with MemoryStore.open(database_url=url, data_dir=tmp, embedder=embedder,
                                        database_name=f"fair_{tag}") as store:
                await store.remember_many(f"quiet-{tag}", [
                    {"kind": "fact", "content": f"{sentence(rng, 10)} (quiet {i})"}
                    for i in range(300)])
                await recall_times(store, rng, 5, f"quiet-{tag}")  # warm-up, not counted
                results[tag] = await phase(store, rng, args, tag)
    print(f"# machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"bulk: remember_many of {args.bulk} facts + closing an episode of "
          f"{args.transcript} messages, beside the quiet agent's recalls")
    for tag, r in results.items():
        print(f"# {tag}: {int(r['loaded_n'])} recalls under load; the load's tail after "
              f"them {r['load_tail_s']:.1f} s")
        for key in ("idle_p50", "idle_p95", "loaded_p50", "loaded_p95", "loaded_max"):
            print(f"{tag}_recall_{key}_ms: {r[key]:.1f}")
        print(f"{tag}_learn_fact_under_load_ms: {r['learn_ms']:.1f}")
    print(f"fifo_p95_ratio: {results['fifo']['loaded_p95'] / results['fifo']['idle_p95']:.2f}")
    ratio = results["scheduled"]["loaded_p95"] / results["scheduled"]["idle_p95"]
    print(f"# target fairness_p95_ratio <= 3: {'met' if ratio <= 3 else 'NOT met'}")
    print(f"fairness_p95_ratio: {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bulk", type=int, default=5000)
    parser.add_argument("--transcript", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
