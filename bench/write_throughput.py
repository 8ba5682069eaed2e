"""Write throughput: what a remember costs on top of the embedding it needs.

    python bench/write_throughput.py [--n 2000] [--rounds 5] [--seed 7]

Opens a store on a fresh database (an embedded PostgreSQL in a temporary directory, or
NOUS_MEMORY_DATABASE_URL when set) under a new agent id, so the embedding cache starts
empty, and every text is distinct, so it never hides the model's cost.

Then what keeping secrets out costs (memories/guard.py): the same appended messages (the
texts above as turns, batches of 20) to an agent that redacts secrets (the default) and to
one that keeps them, batch by batch in alternating order; ``append_redact_over_keep`` is
the time ratio (goal <= 1.1); ``remember_many_redact_over_keep`` the same for the texts
written as facts (each agent embeds them: the whole write path).

Prints ``name: value`` lines, the headline (remember_many_over_embed) last; ``#`` lines
say what was measured and whether the targets are met.
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from backends import LocalEmbedder, add_backend_option, local_embedder

from nous_memory import MemoryStore

BATCH = 64  # SentenceTransformerEmbedder's default batch size
TARGET_MANY_OVER_EMBED = 0.8

# ------------------------------------------------------------------------- texts

FIRST = ["Maria", "Tomasz", "Aiko", "Priya", "Jonas", "Fatima", "Liam", "Chen", "Sofia",
         "Kwame", "Elena", "Ravi", "Ingrid", "Mateo", "Yusuf", "Hana", "Olivia", "Dmitri"]
LAST = ["Lopez", "Novak", "Tanaka", "Sharma", "Becker", "Haddad", "Murphy", "Wei", "Rossi",
        "Mensah", "Petrova", "Iyer", "Larsen", "Garcia", "Demir", "Kim", "Brown", "Sokolov"]
PLACES = ["Berlin", "Lisbon", "Osaka", "Nairobi", "Toronto", "Melbourne", "Krakow", "Austin",
          "Bangalore", "Lyon", "Bogota", "Oslo", "Seoul", "Cape Town", "Dublin", "Porto"]
TEAMS = ["billing", "search", "infrastructure", "mobile", "data platform", "support",
         "security", "onboarding", "payments", "analytics", "growth", "compliance"]
THINGS = ["the quarterly report", "the staging database", "the API gateway", "the vendor contract",
          "the hiring plan", "the release checklist", "the on-call rotation", "the style guide",
          "the backup policy", "the pricing page", "the migration script", "the design review",
          "the customer survey", "the load balancer", "the travel budget", "the team offsite"]
VERBS = ["approved", "postponed", "rewrote", "reviewed", "cancelled", "migrated", "signed off on",
         "questioned", "automated", "split up", "archived", "escalated", "benchmarked"]
LIKES = ["green tea", "early meetings", "written summaries", "pair programming", "dark mode",
         "short stand-ups", "async updates", "detailed diffs", "Friday demos", "cycling to work"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
UNITS = ["EUR", "USD", "hours", "servers", "tickets", "users", "requests per second", "GB"]

TEMPLATES = [
    "{name} {verb} {thing} for the {team} team on {month} {day}, ticket {n}.",
    "{name} prefers {like} and asked to be contacted about {thing} only by email (note {n}).",
    "The {team} team in {place} runs on {qty} {unit}; {name} owns the budget line {n}.",
    "{name} lives in {place} and works with the {team} team; their employee number is {n}.",
    "In {month}, {name} {verb} {thing}, which cut costs by {pct} percent (case {n}).",
    "{name} said {thing} must be ready before the {place} launch; the deadline is {month} {day}"
    " and the tracking id is {n}.",
    "Meeting {n}: {name} and {name2} agreed that the {team} team will own {thing} from {month}.",
    "{name} reported that {thing} failed {qty} times last week in {place}; incident {n}.",
    "Customer {n} from {place} told {name} they want {like} and a discount of {pct} percent.",
    "{name} moved from the {team} team in {place} to the {team2} team in {place2} (record {n}).",
    "The {place} office uses {qty} {unit} per month, according to {name}'s audit number {n}.",
    "{name} {verb} {thing} after {name2} pointed out {pct} percent of {unit} were wasted; see {n}.",
]


def fact_texts(count: int, seed: int) -> list[str]:
    """``count`` distinct, varied sentences (a running number makes each one unique)."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    serial = rng.randrange(10_000, 50_000)
    while len(out) < count:
        serial += rng.randrange(1, 97)
        text = rng.choice(TEMPLATES).format(
            name=f"{rng.choice(FIRST)} {rng.choice(LAST)}",
            name2=f"{rng.choice(FIRST)} {rng.choice(LAST)}",
            place=rng.choice(PLACES), place2=rng.choice(PLACES),
            team=rng.choice(TEAMS), team2=rng.choice(TEAMS), thing=rng.choice(THINGS),
            verb=rng.choice(VERBS), like=rng.choice(LIKES), month=rng.choice(MONTHS),
            day=rng.randint(1, 28), qty=rng.randint(2, 5000), unit=rng.choice(UNITS),
            pct=rng.randint(2, 60), n=serial)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def batches(items: Sequence[str], size: int) -> list[list[str]]:
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


# ------------------------------------------------------------------------- timing


def ms(seconds: float) -> float:
    return seconds * 1000.0


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def alternating(count: int) -> Iterator[tuple[int, bool]]:
    """(index, store_first): which of the paired calls goes first alternates each time."""
    for i in range(count):
        yield i, i % 2 == 0


async def measure_single(store: MemoryStore, embedder: LocalEmbedder, agent: str,
                         remember_texts: Sequence[str], embed_texts: Sequence[str]
                         ) -> tuple[list[float], list[float]]:
    """One remember and one bare encode per step, in alternating order; seconds each."""
    remember_s: list[float] = []
    embed_s: list[float] = []

    async def one_remember(text: str) -> None:
        t0 = time.perf_counter()
        await store.remember(agent, "fact", content=text)
        remember_s.append(time.perf_counter() - t0)

    def one_embed(text: str) -> None:
        t0 = time.perf_counter()
        embedder.encode([text])
        embed_s.append(time.perf_counter() - t0)

    for i, store_first in alternating(len(remember_texts)):
        if store_first:
            await one_remember(remember_texts[i])
            one_embed(embed_texts[i])
        else:
            one_embed(embed_texts[i])
            await one_remember(remember_texts[i])
    return remember_s, embed_s


@dataclass(frozen=True)
class Pair:
    """One remember_many batch and one bare encode batch of the same size, back to back."""

    round: int
    size: int
    store_s: float
    embed_s: float


async def measure_batches(store: MemoryStore, embedder: LocalEmbedder, agent: str,
                          remember_texts: Sequence[str], embed_texts: Sequence[str],
                          rounds: int) -> list[Pair]:
    """remember_many and bare encode over batches of 64, paired batch by batch.

    Batch j of each side goes to round j % rounds, so every round holds the same mix of
    batch sizes on both sides; which side of a pair runs first alternates.
    """
    store_batches = batches(remember_texts, BATCH)
    embed_batches = batches(embed_texts, BATCH)
    rounds = max(1, min(rounds, len(store_batches)))
    pairs: list[Pair] = []
    for r in range(rounds):
        for k, j in enumerate(range(r, len(store_batches), rounds)):
            items = [{"kind": "fact", "content": t} for t in store_batches[j]]
            store_first = k % 2 != r % 2
            if not store_first:
                t0 = time.perf_counter()
                embedder.encode(embed_batches[j])
                embed_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            await store.remember_many(agent, items)
            store_s = time.perf_counter() - t0
            if store_first:
                t0 = time.perf_counter()
                embedder.encode(embed_batches[j])
                embed_s = time.perf_counter() - t0
            pairs.append(Pair(r, len(items), store_s, embed_s))
    return pairs


GUARD_BATCH = 20


async def measure_guard(store: MemoryStore, texts: Sequence[str], rounds: int
                        ) -> tuple[float, float, float, float]:
    """Median seconds per batch, (redacting agent, keeping agent), of appends and then of
    remember_many (the same texts as facts, embedded by each agent)."""
    redacting, keeping = f"guard-{uuid.uuid4().hex[:8]}", f"guard-{uuid.uuid4().hex[:8]}"
    await store.set_secrets_policy(keeping, "keep")
    appends: dict[str, list[float]] = {redacting: [], keeping: []}
    remembers: dict[str, list[float]] = {redacting: [], keeping: []}
    episodes = {a: (await store.start_episode(a)).id for a in appends}
    chunks = batches(list(texts), GUARD_BATCH)
    for round_no in range(rounds):
        for index, chunk in enumerate(chunks):
            messages = [{"role": "user", "content": t} for t in chunk]
            order = [redacting, keeping] if (index + round_no) % 2 == 0 else [keeping,
                                                                                redacting]
            for agent in order:
                started = time.perf_counter()
                await store.append(agent, episodes[agent], messages)
                appends[agent].append(time.perf_counter() - started)
            if round_no == 0:  # a fact is stored once; again it is a confirmation
                for agent in order:
                    started = time.perf_counter()
                    await store.remember_many(agent, [{"kind": "fact", "content": t}
                                                      for t in chunk])
                    remembers[agent].append(time.perf_counter() - started)
    return (statistics.median(appends[redacting]), statistics.median(appends[keeping]),
            statistics.median(remembers[redacting]), statistics.median(remembers[keeping]))


def round_rates(pairs: Sequence[Pair]) -> list[tuple[float, float]]:
    """(remember_many items/s, encode items/s) of each round."""
    out = []
    for r in sorted({p.round for p in pairs}):
        mine = [p for p in pairs if p.round == r]
        n = sum(p.size for p in mine)
        out.append((n / sum(p.store_s for p in mine), n / sum(p.embed_s for p in mine)))
    return out


# ------------------------------------------------------------------------- main


async def run(n: int, rounds: int, seed: int, backend: str) -> None:
    warm_count = BATCH + 8
    texts = fact_texts(3 * n + warm_count, seed)
    warm, texts = texts[:warm_count], texts[warm_count:]
    random.Random(seed + 1).shuffle(texts)  # same length distribution in every phase
    phase_a, phase_b, phase_c = texts[:n], texts[n:2 * n], texts[2 * n:]
    agent = f"bench-{uuid.uuid4().hex[:12]}"
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="nous-bench-") as tmp:
        embedder = local_embedder(backend)
        async with MemoryStore.open(data_dir=tmp, embedder=embedder) as store:
            # warm-up, outside every timing: the model, the pool, the first statements
            for text in warm[:4]:
                embedder.encode([text])
            await store.remember(agent, "fact", content=warm[4])
            await store.remember(agent, "fact", content=warm[5])
            embedder.encode(warm[8:])
            await store.remember_many(agent, [{"kind": "fact", "content": t} for t in warm[6:]])

            single_store, single_embed = await measure_single(
                store, embedder, agent, phase_a, phase_c)
            pairs = await measure_batches(
                store, embedder, agent, phase_b, phase_c, rounds)
            guarded = await measure_guard(store, phase_a + phase_b, rounds)
            database = ("embedded, temporary data dir" if store.embedded
                        else "NOUS_MEMORY_DATABASE_URL")
            counts = await store.counts(agent)
    load_after = os.getloadavg()[0]

    stored = sum(counts.get("fact", {}).values())
    expected = 2 * n + 2 + (warm_count - 6)
    if stored != expected:
        print(f"# warning: {stored} facts stored, expected {expected}", file=sys.stderr)

    remember_p50 = ms(pct(single_store, 50))
    remember_p95 = ms(pct(single_store, 95))
    embed_p50 = ms(pct(single_embed, 50))
    batched = sum(p.size for p in pairs)
    many_per_s = batched / sum(p.store_s for p in pairs)
    embed_per_s = batched / sum(p.embed_s for p in pairs)
    ratio = many_per_s / embed_per_s
    rounds_seen = round_rates(pairs)
    round_ratios = [m / e for m, e in rounds_seen]
    pair_ratios = [p.embed_s / p.store_s for p in pairs]
    single_limit = 1.5 * embed_p50 + 5
    lengths = [len(t) for t in texts]

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    print(f"# write_throughput: n={n} per phase, agent {agent}, database: {database}, "
          f"model {embedder.model_name}, {len(texts)} distinct texts "
          f"(mean {statistics.mean(lengths):.0f} chars), warm-up excluded")
    print(f"# machine: {os.cpu_count()} CPUs, backend {backend}, "
          f"1-min load average {load_before:.2f} at start, {load_after:.2f} at end")
    print(f"# single: {n} store.remember(fact) calls interleaved 1:1 with {n} "
          f"embedder.encode([text]) calls on other texts, order alternating; wall-clock per call")
    print(f"# batch: {n} facts via store.remember_many and {n} texts via embedder.encode, "
          f"both in batches of {BATCH}, paired batch by batch (order alternating) over "
          f"{len(rounds_seen)} rounds; *_per_s are items / total time over all "
          f"{len(pairs)} pairs")
    print("# per-round remember_many/s: " + ", ".join(f"{m:.1f}" for m, _ in rounds_seen))
    print("# per-round embed batch/s:   " + ", ".join(f"{e:.1f}" for _, e in rounds_seen))
    print("# per-round remember_many_over_embed: "
          + ", ".join(f"{x:.3f}" for x in round_ratios)
          + f"; median {statistics.median(round_ratios):.3f}, median over single pairs "
          f"{statistics.median(pair_ratios):.3f}")
    print(f"remember_single_ms_p50: {remember_p50:.2f}")
    print(f"remember_single_ms_p95: {remember_p95:.2f}")
    print(f"embed_single_ms_p50: {embed_p50:.2f}")
    print(f"embed_batch_per_s: {embed_per_s:.1f}")
    print(f"remember_many_per_s: {many_per_s:.1f}")
    print(f"# target remember_many_over_embed >= {TARGET_MANY_OVER_EMBED}: "
          f"{verdict(ratio >= TARGET_MANY_OVER_EMBED)} ({ratio:.3f})")
    print(f"# target remember_single_ms_p50 <= 1.5*embed_single_ms_p50 + 5 = {single_limit:.2f}: "
          f"{verdict(remember_p50 <= single_limit)} ({remember_p50:.2f})")
    print(f"# guard: {len(phase_a + phase_b)} messages appended in batches of "
          f"{GUARD_BATCH} to a redacting and a keeping agent, alternating, {rounds} rounds")
    print(f"append_keep_ms_per_batch: {guarded[1] * 1000:.2f}")
    print(f"append_redact_ms_per_batch: {guarded[0] * 1000:.2f}")
    print(f"remember_many_keep_ms_per_batch: {guarded[3] * 1000:.2f}")
    print(f"remember_many_redact_ms_per_batch: {guarded[2] * 1000:.2f}")
    print(f"remember_many_redact_over_keep: {guarded[2] / guarded[3]:.3f}")
    print(f"# target append_redact_over_keep <= 1.1: "
          f"{verdict(guarded[0] / guarded[1] <= 1.1)}")
    print(f"append_redact_over_keep: {guarded[0] / guarded[1]:.3f}")
    print(f"remember_many_over_embed: {ratio:.3f}")




def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="facts per phase (default 2000)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds the batch phases are split into (default 5)")
    parser.add_argument("--seed", type=int, default=7, help="seed for the generated texts")
    add_backend_option(parser)
    args = parser.parse_args(argv)
    if args.n < 1 or args.rounds < 1:
        parser.error("--n and --rounds must be >= 1")
    asyncio.run(run(args.n, args.rounds, args.seed, args.backend))


if __name__ == "__main__":
    main()
