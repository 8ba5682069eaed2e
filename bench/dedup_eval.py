"""Fact dedup quality on STS-B through the real learn_fact path, without an LLM.

    python bench/dedup_eval.py [--data ../shared/data/stsb/dev.csv] [--learn-n 2000]
                               [--limit N]

Pairs scored >= 4.0 are duplicates, <= 2.0 different, others skipped.  For each pair a
fresh agent learns sentence 1 then sentence 2; the second action decides: confirmed or
merged = merged, anything else = kept apart.  Also: the raw-cosine ROC-AUC of the pairs
with the bundled model, and learn_fact throughput on distinct facts for one agent.
``--limit N`` takes only the first N pairs (quick runs).
Prints ``name: value`` lines, the headline (dedup_f1) last.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from backends import add_backend_option, local_embedder
from shared_data import shared_data

from nous_memory import MemoryStore
from nous_memory.facts.learning import LearnAction

DATA = shared_data("stsb/dev.csv")
MERGED = {LearnAction.CONFIRMED, LearnAction.MERGED}


def load_pairs(path: Path, limit: int | None) -> list[tuple[str, str, bool]]:
    with path.open(newline="") as handle:
        rows = [r for r in csv.reader(handle) if len(r) == 3]
    return [(a, b, float(s) >= 4.0) for a, b, s in rows
            if float(s) >= 4.0 or float(s) <= 2.0][:limit]


def roc_auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """Probability that a random duplicate scores above a random non-duplicate."""
    order = scores.argsort()
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):  # average ranks of ties
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    positives = int(truth.sum())
    negatives = len(truth) - positives
    return float((ranks[truth].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def distinct_facts(n: int) -> list[str]:
    people = ["Maria", "Tomasz", "Aiko", "Priya", "Jonas", "Fatima", "Liam", "Chen"]
    things = ["tea", "the Lisbon office", "cycling", "the billing team", "jazz", "Rust",
              "early meetings", "the quarterly report", "sailing", "the Osaka trip"]
    verbs = ["likes", "manages", "asked about", "wrote about", "prefers", "reviewed"]
    return [f"{people[i % 8]} {verbs[(i // 8) % 6]} {things[(i // 48) % 10]} "
            f"(note {i}, week {i % 52 + 1})" for i in range(n)]


async def run(args: argparse.Namespace) -> None:
    pairs = load_pairs(args.data, args.limit)
    truth = np.array([t for _, _, t in pairs])
    embedder = local_embedder(args.backend)
    left = np.stack(embedder.encode([a for a, _, _ in pairs]))
    right = np.stack(embedder.encode([b for _, b, _ in pairs]))
    cosine = (left * right).sum(axis=1)
    with tempfile.TemporaryDirectory(prefix="nous-dedup-") as tmp:
        url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
        async with MemoryStore.open(embedder=embedder, data_dir=Path(tmp),
                                    database_url=url) as store:
            assert store.llm is None, "this benchmark measures the no-LLM rule"
            run_id = uuid.uuid4().hex[:8]
            merged = np.zeros(len(pairs), dtype=bool)
            actions: dict[str, int] = {}
            for i, (a, b, _) in enumerate(pairs):
                agent = f"dedup-{run_id}-{i}"
                await store.learn_fact(agent, a)
                result = await store.learn_fact(agent, b)
                merged[i] = result.action in MERGED
                actions[result.action.value] = actions.get(result.action.value, 0) + 1
            facts = distinct_facts(args.learn_n)
            agent = f"dedup-{run_id}-throughput"
            started = time.perf_counter()
            for text in facts:
                await store.learn_fact(agent, text)
            learn_per_s = len(facts) / (time.perf_counter() - started)
    tp = int((merged & truth).sum())
    precision = tp / max(int(merged.sum()), 1)
    recall = tp / max(int(truth.sum()), 1)
    f1 = 2 * precision * recall / max(precision + recall, 1e-9)
    print(f"# {len(pairs)} pairs from {args.data.name} ({int(truth.sum())} duplicates); "
          f"second-learn actions: {dict(sorted(actions.items()))}")
    print("# targets: dedup_f1 >= 0.85 with dedup_precision >= 0.93 (no LLM)")
    print(f"dedup_precision: {precision:.3f}")
    print(f"dedup_recall: {recall:.3f}")
    print(f"cosine_roc_auc: {roc_auc(cosine, truth):.3f}")
    print(f"learn_per_s: {learn_per_s:.1f}")
    print(f"dedup_f1: {f1:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--learn-n", type=int, default=2000)
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first N pairs (quick runs)")
    add_backend_option(parser)
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be >= 1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
