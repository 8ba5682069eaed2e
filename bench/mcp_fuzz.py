"""The MCP faces under generated invalid traffic: is every request answered, how fast,
and does any invalid call change a row?

    python bench/mcp_fuzz.py [--requests 500] [--seed 24] [--no-huge]

Builds a fresh database (an embedded PostgreSQL in a temporary directory, or
NOUS_MEMORY_DATABASE_URL when set) with two agents, then serves the tools as deployed:
``nous-memory mcp --agent alice`` (stdio) and ``nous-memory serve`` (``/mcp`` with a key
for alice only), both subprocesses.  Each transport gets --requests invalid requests
from ``nous_memory.testing.mcp_traffic`` (tool calls breaking one rule of the tools' own
schemas, unknown tools and methods, bob's memory, lone surrogates, batches, half lines,
bad UTF-8, binary noise) and one 10 MB line, one request at a time; an answer must come
within --timeout-s and be an error carrying the request's id.  The baseline, measured
in the same run: valid ``tools/list`` requests on the same sessions.

Prints ``requests_stdio``, ``requests_http``, ``unanswered`` (goal 0), ``wrong_answers``
(answered, but not an error for that id, or with bob's text), ``answer_ms_p50``,
``valid_answer_ms_p50`` (the baseline), ``max_answer_ms`` (goal <= 1000) and, last, the
headline ``rows_changed_by_invalid_calls`` (every row of every table, before and after;
goal 0).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from soak import free_port
from tools import serve_http

from nous_memory import MemoryStore
from nous_memory.testing.mcp_traffic import (
    HttpDriver,
    StdioDriver,
    Traffic,
    answer_problem,
    row_snapshot,
    rows_changed,
)

KEY = "bench-fuzz-alice-key-0123456789"
SECRETS = ("4471-zebra",)
GOAL_MS = 1_000.0
VALID = b'{"jsonrpc": "2.0", "id": "valid", "method": "tools/list"}'


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="nous-bench-fuzz-") as data_dir:
        async with MemoryStore.open(data_dir=Path(data_dir)) as store:
            await store.warm_up()
            await store.remember_many("alice", [
                {"kind": "fact", "content": "Alice drinks tea"},
                {"kind": "decision", "description": "Alice chose the train"}])
            bob = await store.remember("bob", "fact", content="Bob's door code is 4471-zebra")
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "NOUS_MEMORY_DATABASE_URL": store.dsn,
                   "NOUS_MEMORY_API_KEYS": f"{KEY}:alice",
                   "NOUS_MEMORY_RUN_WORKER_IN_SERVE": "false"}
            port = free_port()
            http_proc = await serve_http(env, port)
            stdio = StdioDriver([sys.executable, "-m", "nous_memory.cli", "mcp", "--agent",
                                 "alice"], env)
            http = HttpDriver(f"http://127.0.0.1:{port}/mcp",
                              {"Authorization": f"Bearer {KEY}"})
            try:
                listed = await asyncio.to_thread(stdio.initialize)
                foreign = [str(bob.id), f"fact:{bob.id.hex[:8]}"]
                faces: dict[str, tuple[Any, Traffic]] = {
                    "stdio": (stdio, Traffic(listed["tools"], foreign_ids=foreign,
                                             foreign_agent="bob")),
                    "http": (http, Traffic(await asyncio.to_thread(http.tools),
                                           foreign_ids=foreign, foreign_agent="bob"))}
                before = await row_snapshot(store.dsn)
                results = {face: await asyncio.to_thread(fuzz, driver, traffic, args)
                           for face, (driver, traffic) in faces.items()}
                after = await row_snapshot(store.dsn)
            finally:
                http.close()
                await asyncio.to_thread(stdio.close)
                http_proc.terminate()
                await http_proc.wait()
    report(results, rows_changed(before, after))


def fuzz(driver: Any, traffic: Traffic, args: argparse.Namespace) -> dict[str, Any]:
    """Invalid requests interleaved with valid ones (every tenth), timed one by one."""
    rng = random.Random(args.seed)
    probes = list(traffic.probes(rng, args.requests, 1_000))
    if not args.no_huge:
        probes.append(traffic.probe(rng, 10**6, "huge"))
    times: list[float] = []
    valid: list[float] = []
    unanswered = wrong = 0
    for n, probe in enumerate(probes):
        if n % 10 == 0:
            answer, ms = driver.ask(VALID, args.timeout_s)
            if answer is not None and b'"memory_search"' in answer:
                valid.append(ms)
        answer, ms = driver.ask(probe.body, args.timeout_s)
        if answer is None:
            unanswered += 1
            continue
        times.append(ms)
        if answer_problem(probe, answer, secrets=SECRETS) is not None:
            wrong += 1
    return {"requests": len(probes), "times": times, "valid": valid,
            "unanswered": unanswered, "wrong": wrong}


def report(results: dict[str, dict[str, Any]], changed: int) -> None:
    for face, result in results.items():
        print(f"requests_{face}: {result['requests']}")
    times = [t for r in results.values() for t in r["times"]]
    valid = [t for r in results.values() for t in r["valid"]]
    longest = max(times, default=0.0)
    unanswered = sum(r["unanswered"] for r in results.values())
    print(f"unanswered: {unanswered}")
    print(f"wrong_answers: {sum(r['wrong'] for r in results.values())}")
    print(f"answer_ms_p50: {statistics.median(times) if times else 0.0:.2f}")
    print(f"valid_answer_ms_p50: {statistics.median(valid) if valid else 0.0:.2f}")
    print(f"max_answer_ms: {longest:.2f}")
    met = unanswered == 0 and longest <= GOAL_MS and changed == 0
    print(f"# goals unanswered 0, max_answer_ms <= {GOAL_MS:.0f}, "
          f"rows_changed_by_invalid_calls 0: {'met' if met else 'NOT met'}")
    print(f"rows_changed_by_invalid_calls: {changed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500,
                        help="invalid requests per transport (plus one 10 MB line)")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--timeout-s", type=float, default=5.0,
                        help="how long to wait for an answer before it counts as unanswered")
    parser.add_argument("--no-huge", action="store_true", help="leave out the 10 MB line")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
