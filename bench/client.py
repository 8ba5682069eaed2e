"""The remote client: what a call costs through ``nous_memory.client`` against a served
instance next to the same call on the in-process store, and what the CLI costs for one
``recall`` with ``--url`` next to without.

    python bench/client.py [--memories 500] [--calls 40] [--warmup 3] [--cli-runs 5]
                           [--baseline DIR]

Builds a fresh database (an embedded PostgreSQL in a temporary directory, or
NOUS_MEMORY_DATABASE_URL when set) with one agent of --memories memories, then serves it
with ``nous-memory serve`` (a subprocess on 127.0.0.1, no worker) and runs each operation
--calls times per face, the two faces alternating call by call so that drift on a shared
machine hits both alike; the first --warmup rounds are not counted.

Prints ``client_<op>_ms_p50`` beside ``store_<op>_ms_p50`` for every operation, the
median over operations of the difference (``client_overhead_ms_p50``), the CLI's wall
time for one ``recall`` without ``--url`` (``cli_recall_local_s_p50``: start-up, database,
model) and the headline ``cli_recall_url_s_p50`` (goal <= 0.5 s, checked on a ``#`` line).
With ``--baseline DIR`` (another checkout, e.g. an export of the previous ``main``), the
same ``--url`` command also runs with that checkout's package first on the path, its runs
alternating with this one's against the same service: ``cli_recall_url_baseline_s_p50``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from soak import free_port

from nous_memory import MemoryStore
from nous_memory.client import AsyncMemoryClient

AGENT = "bench-client"
CLI_GOAL_S = 0.5
QUERIES = ["Where does the user's sister live?", "Which database did we choose?",
           "What does the user eat?", "Who is on the team?", "When is the next trip?"]
SCRIPT = Path(sys.executable).with_name("nous-memory")
ROOT = Path(__file__).resolve().parent.parent  # this checkout: its package, not an install
Op = Callable[[Any, int], Awaitable[object]]


def cli() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "nous_memory.cli"]


async def seed_episode(store: MemoryStore) -> str:
    """An open episode of 40 turns for the working-memory calls."""
    episode = await store.start_episode(AGENT, title="Bench conversation")
    await store.append(AGENT, episode.id, [
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": f"Turn {i}: we talk about the trip to stop {i // 2} and its timing."}
        for i in range(40)])
    return str(episode.id)


async def seed(store: MemoryStore, count: int) -> list[str]:
    topics = ["sister", "database", "diet", "team", "trip", "garden", "car", "music"]
    items = [{"kind": "fact", "content": f"Fact {i}: the user's {topics[i % 8]} note {i}"}
             for i in range(count)]
    ids: list[str] = []
    for start in range(0, count, 500):
        ids += [str(m.id) for m in await store.remember_many(AGENT, items[start:start + 500])]
    return ids


def operations(ids: list[str], episode: str) -> dict[str, Op]:
    """Each operation on either face; ``n`` varies arguments (writes never repeat)."""
    return {
        "remember": lambda m, n: m.remember(AGENT, "fact", content=f"Bench note {n} {id(m)}"),
        "get": lambda m, n: m.get(AGENT, ids[n % len(ids)]),
        "list": lambda m, n: m.list(AGENT, limit=20),
        "history": lambda m, n: m.history(AGENT, ids[n % len(ids)]),
        "learn_fact": lambda m, n: m.learn_fact(AGENT, f"The user's locker number is {n}"),
        "recall": lambda m, n: m.recall(AGENT, QUERIES[n % len(QUERIES)], k=10),
        "assemble_context": lambda m, n: m.assemble_context(
            AGENT, QUERIES[n % len(QUERIES)], budget_tokens=800, extraction="off"),
        "expand": lambda m, n: m.expand(AGENT, ids[n % len(ids)]),
        "build_prompt": lambda m, n: m.build_prompt(AGENT, episode, "Be brief.", 600,
                                                    summarize=False),
        "conversation_summary": lambda m, n: m.conversation_summary(AGENT, episode),
    }


async def serve(env: dict[str, str], port: int) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        *cli(), "serve", "--port", str(port), "--no-worker", env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    async with httpx.AsyncClient() as http:
        for _ in range(900):
            try:
                if (await http.get(f"http://127.0.0.1:{port}/ready")).status_code == 200:
                    return proc
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    proc.terminate()
    raise SystemExit("the service did not become ready")


async def time_cli(variants: dict[str, tuple[list[str], dict[str, str]]],
                   runs: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU (user + system) time of the whole process, start to exit, per
    variant (argv and environment), the variants' runs alternating: on a loaded machine
    the wall time waits for the cores, the CPU time does not."""
    walls: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, (argv, env) in variants.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                *argv, env=env, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE)
            _, err = await proc.communicate()
            walls[name].append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime - before.ru_utime
                              + after.ru_stime - before.ru_stime)
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} failed: {err.decode()[-2000:]}")
    return {name: (statistics.median(walls[name]), statistics.median(cpus[name]))
            for name in variants}


def with_path(env: dict[str, str], checkout: Path) -> dict[str, str]:
    """``env`` with ``checkout``'s package first on the path (before an installed one)."""
    rest = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": f"{checkout}{os.pathsep}{rest}" if rest else str(checkout)}


async def measure(args: argparse.Namespace, data_dir: Path) -> None:
    async with MemoryStore.open(data_dir=data_dir) as store:
        await store.warm_up()
        ids = await seed(store, args.memories)
        episode = await seed_episode(store)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "NOUS_MEMORY_DATABASE_URL": store.dsn}
        env.pop("NOUS_MEMORY_URL", None)
        port = free_port()
        proc = await serve(env, port)
        url = f"http://127.0.0.1:{port}"
        try:
            async with AsyncMemoryClient(url) as client:
                faces = {"store": store, "client": client}
                timings: dict[tuple[str, str], list[float]] = {}
                ops = operations(ids, episode)
                for n in range(args.warmup + args.calls):
                    for name, op in ops.items():
                        order = ("store", "client") if n % 2 else ("client", "store")
                        for face in order:
                            started = time.perf_counter()
                            await op(faces[face], n)
                            if n >= args.warmup:
                                timings.setdefault((name, face), []).append(
                                    (time.perf_counter() - started) * 1000)
            query = ["recall", "--agent", AGENT, QUERIES[0]]
            variants = {"url": ([*cli(), "--url", url, *query], with_path(env, ROOT)),
                        "local": ([*cli(), *query], with_path(env, ROOT))}
            if args.baseline is not None:
                variants["baseline"] = ([*cli(), "--url", url, *query],
                                        with_path(env, args.baseline.resolve()))
            timed = await time_cli(variants, args.cli_runs)
        finally:
            proc.terminate()
            await proc.wait()
    overheads = []
    remote, local = timed["url"], timed["local"]
    for name in operations(ids, episode):
        mine = statistics.median(timings[(name, "store")])
        theirs = statistics.median(timings[(name, "client")])
        overheads.append(theirs - mine)
        print(f"client_{name}_ms_p50: {theirs:.2f}")
        print(f"store_{name}_ms_p50: {mine:.2f}")
    print(f"client_overhead_ms_p50: {statistics.median(overheads):.2f}")
    print(f"cli_recall_local_cpu_s_p50: {local[1]:.3f}")
    print(f"cli_recall_local_s_p50: {local[0]:.3f}")
    print(f"cli_recall_url_cpu_s_p50: {remote[1]:.3f}")
    if "baseline" in timed:
        print(f"cli_recall_url_baseline_cpu_s_p50: {timed['baseline'][1]:.3f}")
        print(f"cli_recall_url_baseline_s_p50: {timed['baseline'][0]:.3f}")
    load = os.getloadavg()
    print(f"# machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} (wall times wait for the cores; CPU times do not)")
    print(f"# cli recall with --url: goal <= {CLI_GOAL_S} s: "
          f"{'met' if remote[0] <= CLI_GOAL_S else 'missed'}")
    print(f"cli_recall_url_s_p50: {remote[0]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--cli-runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another checkout whose package the --url command also runs "
                             "from, alternating with this one (e.g. the previous main)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nous-bench-client-") as data_dir:
        asyncio.run(measure(args, Path(data_dir)))


if __name__ == "__main__":
    main()
