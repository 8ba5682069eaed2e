"""Soak: the REST service under a steady mixed load, watching errors and memory.

    python bench/soak.py [--clients 16] [--minutes 10] [--agents 50]

Starts ``nous-memory serve`` on 127.0.0.1 (a fresh embedded PostgreSQL in a temporary
directory, or NOUS_MEMORY_DATABASE_URL) with the scripted LLM server on loopback, so
episode closes make real LLM calls through the real client.  ``--clients`` concurrent
clients loop for ``--minutes`` over a mix of remember, learn_fact, recall, context,
expand, episode append and close, list and history across ``--agents`` agents; every
client's requests are bounded by the time limit.  The server's RSS is sampled every
5 s; growth is measured from the end of the first 20% of the run (warm-up: model,
pools, caches filling) to the end.

Prints requests, ``errors_5xx`` (goal 0), other errors, p50/p99 per operation, RSS at
start and end, ``rss_growth_pct`` (goal <= 10 after warm-up), and last
``soak_errors`` (5xx plus transport failures).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

from nous_memory.testing import JSONReply, ScriptedLLMServer

WORDS = ("budget Lisbon sister vegetarian deadline Tuesday invoice migration coffee "
         "marathon doctor flight refund allergy birthday recipe timeout gym promotion "
         "report staging contract hiring release rotation backup pricing survey").split()
EXTRACTION = {"title": "A chat", "summary": "They talked about plans and preferences. " * 8,
              "key_points": ["plans"], "outcome": "settled", "topics": ["plans"],
              "facts": [{"content": "The user plans a trip to Porto in May"}],
              "decisions": [], "lessons": []}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n))


class Client:
    """One simulated backend: a loop of operations on random agents."""

    def __init__(self, http: httpx.AsyncClient, rng: random.Random, agents: list[str],
                 stats: dict[str, list[float]], errors: dict[str, int]) -> None:
        self.http, self.rng, self.agents = http, rng, agents
        self.stats, self.errors = stats, errors
        self.ids: dict[str, list[str]] = defaultdict(list)
        self.episodes: dict[str, str] = {}

    async def call(self, op: str, method: str, url: str, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            response = await self.http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            self.errors[f"transport:{type(exc).__name__}"] += 1
            return None
        self.stats[op].append((time.perf_counter() - started) * 1000)
        if response.status_code >= 500:
            self.errors[f"5xx:{op}"] += 1
        elif response.status_code >= 400:
            self.errors[f"4xx:{op}:{response.status_code}"] += 1
        return response.json() if response.content else None

    async def step(self) -> None:
        agent = self.rng.choice(self.agents)
        base = f"/agents/{agent}"
        roll = self.rng.random()
        if roll < 0.2:
            body = {"kind": "fact", "content": f"{words(self.rng, 8)} {self.rng.random():.5f}"}
            made = await self.call("remember", "POST", f"{base}/memories", json=body)
            if made and "id" in made:
                self.ids[agent].append(made["id"])
        elif roll < 0.3:
            await self.call("learn_fact", "POST", f"{base}/facts/learn",
                            json={"content": f"The user likes {words(self.rng, 3)}"})
        elif roll < 0.45:
            await self.call("recall", "POST", f"{base}/recall",
                            json={"query": f"what about {words(self.rng, 3)}?", "k": 8})
        elif roll < 0.6:
            await self.call("context", "POST", f"{base}/context",
                            json={"query": f"tell me about {words(self.rng, 3)}",
                                  "budget_tokens": 1500})
        elif roll < 0.67 and self.ids[agent]:
            await self.call("expand", "GET",
                            f"{base}/memories/{self.rng.choice(self.ids[agent])}/expand")
        elif roll < 0.8:
            episode = self.episodes.get(agent)
            if episode is None:
                made = await self.call("episode_start", "POST", f"{base}/episodes",
                                       json={"title": "chat"})
                if made and "id" in made:
                    self.episodes[agent] = made["id"]
                return
            messages = [{"role": r, "content": words(self.rng, 30)}
                        for r in ("user", "assistant")]
            await self.call("append", "POST", f"{base}/episodes/{episode}/messages",
                            json={"messages": messages})
            if self.rng.random() < 0.15:
                await self.call("close", "POST", f"{base}/episodes/{episode}/close")
                del self.episodes[agent]
        elif roll < 0.9:
            await self.call("list", "GET", f"{base}/memories", params={"limit": 20})
        elif self.ids[agent]:
            await self.call("history", "GET",
                            f"{base}/memories/{self.rng.choice(self.ids[agent])}/history")


async def sample_rss(pid: int, out: list[tuple[float, float]], stop: asyncio.Event) -> None:
    proc = psutil.Process(pid)
    while not stop.is_set():
        out.append((time.monotonic(), proc.memory_info().rss / 2**20))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=5)


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    agents = [f"soak-{i:03d}" for i in range(args.agents)]
    port = free_port()
    stats: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    with tempfile.TemporaryDirectory(prefix="nous-soak-") as tmp:
        async with ScriptedLLMServer(default=lambda _: JSONReply(content=EXTRACTION)) as llm:
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "NOUS_MEMORY_DATA_DIR": tmp,
                   "NOUS_MEMORY_LLM_BASE_URL": llm.base_url, "NOUS_MEMORY_LLM_MODEL": "soak"}
            server = await asyncio.to_thread(start_server, Path(tmp) / "serve.log", port, env)
            base = f"http://127.0.0.1:{port}"
            try:
                await wait_healthy(base, server)
                rss: list[tuple[float, float]] = []
                stop = asyncio.Event()
                sampler = asyncio.create_task(sample_rss(server.pid, rss, stop))
                deadline = time.monotonic() + args.minutes * 60
                started = time.monotonic()
                limits = httpx.Limits(max_connections=args.clients)
                async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
                    clients = [Client(http, random.Random(rng.random()), agents, stats, errors)
                               for _ in range(args.clients)]

                    async def loop(client: Client) -> None:
                        while time.monotonic() < deadline:
                            await client.step()

                    await asyncio.gather(*(loop(c) for c in clients))
                elapsed = time.monotonic() - started
                stop.set()
                await sampler
                alive = server.poll() is None
            finally:
                server.terminate()
                try:
                    server.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    server.kill()
    report(args, stats, errors, rss, elapsed, alive)


def start_server(log_path: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "nous_memory.cli", "serve", "--host", "127.0.0.1",
             "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)


async def wait_healthy(base: str, server: subprocess.Popen[bytes]) -> None:
    async with httpx.AsyncClient(timeout=2) as http:
        for _ in range(300):
            if server.poll() is not None:
                raise SystemExit("serve exited before it was healthy")
            try:
                if (await http.get(f"{base}/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.5)
    raise SystemExit("serve did not become healthy")


def report(args: argparse.Namespace, stats: dict[str, list[float]], errors: dict[str, int],
           rss: list[tuple[float, float]], elapsed: float, alive: bool) -> None:
    requests = sum(len(v) for v in stats.values()) + sum(
        n for k, n in errors.items() if k.startswith("transport"))
    errors_5xx = sum(n for k, n in errors.items() if k.startswith("5xx"))
    transport = sum(n for k, n in errors.items() if k.startswith("transport"))
    warm_until = rss[0][0] + 0.2 * (rss[-1][0] - rss[0][0])
    after_warmup = [mb for t, mb in rss if t >= warm_until]
    growth = (rss[-1][1] - after_warmup[0]) / after_warmup[0] * 100
    print(f"# machine: {os.cpu_count()} CPUs; {args.clients} clients x {elapsed / 60:.1f} "
          f"min over {args.agents} agents; the server {'stayed up' if alive else 'DIED'}")
    others = dict(sorted((k, n) for k, n in errors.items() if k.startswith("4xx")))
    print(f"# other responses: {others}")
    print(f"requests: {requests}")
    print(f"requests_per_s: {requests / elapsed:.1f}")
    for op in sorted(stats):
        values = stats[op]
        print(f"{op}_ms_p50: {np.percentile(values, 50):.1f}")
        print(f"{op}_ms_p99: {np.percentile(values, 99):.1f}")
    print(f"rss_start_mb: {rss[0][1]:.0f}")
    print(f"rss_after_warmup_mb: {after_warmup[0]:.0f}")
    print(f"rss_end_mb: {rss[-1][1]:.0f}")
    print(f"rss_max_mb: {max(mb for _, mb in rss):.0f}")
    print(f"rss_growth_pct: {growth:.1f}")
    print(f"errors_5xx: {errors_5xx}")
    print(f"transport_errors: {transport}")
    print(f"soak_errors: {errors_5xx + transport}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--seed", type=int, default=9)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
