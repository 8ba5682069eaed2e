"""The embedding engine: ONNX Runtime and torch side by side, in one run.

    python bench/embeddings.py [--queries 300] [--batches 20] [--agreement 1000] [--rounds 2]

Each backend runs in a child process of its own (so its model load time and memory are
its own), in alternating order over ``--rounds`` rounds; the figures are the medians
over rounds.  Per backend: model load seconds (import, export check, session or model
load), batch-1 query latency p50/p95 over distinct short queries, batch-64 throughput
over summary-like sentences, and the process RSS after the work.  Then the cosine
agreement of the two backends over ``--agreement`` varied texts (short, sentences,
texts past the model's window) and, for the thread policy, ONNX query p50 and batch
throughput at 1..4 intra-op threads.

Prints ``name: value`` lines, the headline (``onnx_over_torch_query_p50``, goal <= 0.5)
last.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WORDS = ("meeting budget Lisbon sister Ana vegetarian deadline March Tuesday invoice "
         "migration Postgres coffee marathon doctor appointment flight refund allergy "
         "birthday grandmother recipe kubernetes timeout gym promotion manager salary "
         "report staging contract hiring release rotation backup pricing survey").split()


def queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"what about the {' '.join(rng.choices(WORDS, k=rng.randint(2, 6)))} {i}?"
            for i in range(n)]


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(8, 24))) + f" (note {i})."
            for i in range(n)]


def varied(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):  # one text in ten runs past the model's 256-token window
        k = (rng.randint(200, 400) if i % 10 == 0
             else rng.randint(1, 6) if i % 2 else rng.randint(8, 30))
        out.append(" ".join(rng.choices(WORDS, k=k)) + ("?" if k < 7 else "."))
    return out


def child(backend: str, threads: int | None, args: argparse.Namespace, out: Path) -> None:
    """Runs in the child: load, measure, save the agreement vectors, print JSON."""
    import asyncio

    import psutil

    started = time.perf_counter()
    from nous_memory import OnnxEmbedder, SentenceTransformerEmbedder
    from nous_memory.config import default_model_cache_dir

    embedder = (OnnxEmbedder(cache_dir=default_model_cache_dir(), threads=threads)
                if backend == "onnx" else SentenceTransformerEmbedder(threads=threads))
    embedder.warm_up()
    embedder.encode(["warm"])  # the first call allocates; it is part of loading
    load_s = time.perf_counter() - started

    async def query_latencies() -> list[float]:
        times = []
        for text in queries(args.queries, seed=args.seed + (threads or 0)):
            t0 = time.perf_counter()
            await embedder.embed([text])  # through the scheduler, as the store calls it
            times.append((time.perf_counter() - t0) * 1000)
        return times

    latencies = asyncio.run(query_latencies())
    texts = sentences(64 * args.batches, seed=args.seed)
    t0 = time.perf_counter()
    for start in range(0, len(texts), 64):
        embedder.encode(texts[start:start + 64])
    per_s = len(texts) / (time.perf_counter() - t0)
    if args.agreement and threads is None:
        np.save(out.with_suffix(".npy"), np.asarray(embedder.encode(varied(args.agreement,
                                                                           args.seed))))
    rss_mb = psutil.Process().memory_info().rss / 2**20
    out.write_text(json.dumps({
        "load_s": load_s, "query_ms_p50": statistics.median(latencies),
        "query_ms_p95": float(np.percentile(latencies, 95)), "batch64_per_s": per_s,
        "rss_mb": rss_mb, "threads": threads}))


def run_child(backend: str, threads: int | None, args: argparse.Namespace,
              folder: Path) -> dict[str, float]:
    out = folder / f"{backend}-{threads}-{time.monotonic_ns()}.json"
    command = [sys.executable, __file__, "--child", backend, "--out", str(out),
               "--queries", str(args.queries), "--batches", str(args.batches),
               "--agreement", str(args.agreement), "--seed", str(args.seed)]
    if threads is not None:
        command += ["--threads", str(threads)]
    subprocess.run(command, check=True, env=os.environ | {"HF_HUB_OFFLINE": "1"})
    result: dict[str, float] = json.loads(out.read_text())
    result["vectors"] = str(out.with_suffix(".npy"))  # type: ignore[assignment]
    return result


def median_of(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--agreement", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--no-thread-sweep", action="store_true")
    parser.add_argument("--child", choices=("onnx", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.threads, args, args.out)
        return

    with tempfile.TemporaryDirectory(prefix="nous-bench-embed-") as tmp:
        folder = Path(tmp)
        runs: dict[str, list[dict[str, float]]] = {"onnx": [], "torch": []}
        for round_ in range(args.rounds):
            order = ("torch", "onnx") if round_ % 2 == 0 else ("onnx", "torch")
            for backend in order:
                runs[backend].append(run_child(backend, None, args, folder))
        onnx_vectors = np.load(str(runs["onnx"][0]["vectors"]))
        torch_vectors = np.load(str(runs["torch"][0]["vectors"]))
        cosines = (onnx_vectors * torch_vectors).sum(axis=1)
        sweep = [] if args.no_thread_sweep else [
            run_child("onnx", n, argparse.Namespace(**{**vars(args), "agreement": 0}), folder)
            for n in range(1, 5)]

    print(f"# {args.rounds} round(s) per backend, each in its own process, order "
          f"alternating; {args.queries} distinct queries one at a time; "
          f"{args.batches} batches of 64 sentences; {os.cpu_count()} cores; "
          f"default intra-op threads {runs['onnx'][0]['threads'] or 'auto'}")
    for backend in ("torch", "onnx"):
        for key in ("load_s", "query_ms_p50", "query_ms_p95", "batch64_per_s", "rss_mb"):
            value = median_of(runs[backend], key)
            print(f"{backend}_{key}: {value:.3f}" if key != "rss_mb"
                  else f"{backend}_{key}: {value:.0f}")
    for result in sweep:
        n = int(result["threads"])
        print(f"onnx_threads{n}_query_ms_p50: {result['query_ms_p50']:.3f}")
        print(f"onnx_threads{n}_batch64_per_s: {result['batch64_per_s']:.1f}")
    print(f"agreement_texts: {len(cosines)}")
    print(f"agreement_cosine_min: {cosines.min():.6f}")
    print(f"agreement_cosine_mean: {cosines.mean():.6f}")
    def ratio(key: str) -> float:
        return median_of(runs["onnx"], key) / median_of(runs["torch"], key)

    print(f"onnx_over_torch_batch64: {ratio('batch64_per_s'):.3f}")
    print(f"onnx_over_torch_query_p50: {ratio('query_ms_p50'):.3f}")


if __name__ == "__main__":
    main()
