"""Agent tools: what a call costs through MCP (stdio and HTTP) next to the same call in
Python.

    python bench/tools.py [--memories 2000] [--calls 60] [--baseline DIR]

Builds a fresh database (an embedded PostgreSQL in a temporary directory, or
NOUS_MEMORY_DATABASE_URL when set) with one agent of --memories memories written through
the store (facts, decisions, procedures), then serves the tools three ways against it:
  - python: ``ToolBox.call`` in this process (the baseline: the store's own work);
  - stdio: ``nous-memory mcp --agent ...`` as a subprocess, driven by the MCP SDK client;
  - http: ``nous-memory serve`` as a subprocess, ``/mcp`` driven by the SDK client.
Each round calls every tool once per face, the faces in each of their orders in turn (so
drift on this shared machine, and one face's leftover work, hit the faces alike); the
first --warmup rounds are not counted.  Write
tools get fresh arguments every call (a new fact, a new memory to forget).

With ``--baseline DIR`` (another checkout, e.g. an export of ``main``), a fourth face
``http_baseline`` is a second ``nous-memory serve`` with that checkout's package first on
the path, in the same rotation: the same calls against the same database in the same run.

Prints per tool and face ``tools_<tool>_<face>_ms_p50`` / ``_p95``, then per transport the
median over tools of (face p50 - python p50): ``mcp_overhead_ms_p50_stdio``,
``..._http`` (and ``..._http_baseline``); the headline ``mcp_overhead_ms_p50`` is the larger
of stdio and http (goal <= 3).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
from mcp import Client, StdioServerParameters
from soak import free_port

from nous_memory import MemoryStore
from nous_memory.tools import ToolBox

AGENT = "bench-tools"
GOAL_MS = 3.0
QUERIES = ["Where does the user's sister live?", "Which database did we choose?",
           "How do I book a flight?", "What does the user eat?", "Who is on the team?"]
Call = Callable[[str, dict[str, Any]], Awaitable[bool]]  # -> is_error


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def seed(store: MemoryStore, count: int) -> list[str]:
    """``count`` memories for AGENT; returns the refs of the facts (for expand/history)."""
    topics = ["sister", "database", "flight", "diet", "team", "garden", "car", "music"]
    items: list[dict[str, Any]] = []
    for i in range(count):
        topic = topics[i % len(topics)]
        if i % 5 == 3:
            items.append({"kind": "decision", "description": f"Decision {i} about the {topic}",
                          "reasons": [f"reason {i}"]})
        elif i % 5 == 4:
            items.append({"kind": "procedure", "name": f"Procedure {i} for the {topic}",
                          "core_patterns": [f"step {i}a", f"step {i}b"]})
        else:
            items.append({"kind": "fact", "content": f"Fact {i}: the user's {topic} note {i}"})
    refs: list[str] = []
    for start in range(0, count, 500):
        for memory in await store.remember_many(AGENT, items[start:start + 500]):
            if memory.kind.value == "fact":
                refs.append(f"fact:{memory.id.hex[:8]}")
    return refs


class Arguments:
    """Arguments per tool and call; write tools never repeat theirs."""

    def __init__(self, refs: list[str], forgettable: dict[str, list[str]]) -> None:
        self._refs = refs
        self._forgettable = forgettable
        self._n = 0

    def __call__(self, tool: str, face: str) -> dict[str, Any]:
        self._n += 1
        n = self._n
        query = QUERIES[n % len(QUERIES)]
        return {
            "memory_search": lambda: {"query": query, "k": 10},
            "memory_context": lambda: {"query": query, "budget_tokens": 1500},
            "memory_expand": lambda: {"ref": self._refs[n % len(self._refs)]},
            "memory_history": lambda: {"ref": self._refs[n % len(self._refs)]},
            "memory_upcoming": lambda: {"days": 7 + n % 7},
            "memory_remember": lambda: {"kind": "decision",
                                        "description": f"Bench decision {face} {n}"},
            "memory_learn_fact": lambda: {"content": f"The user owns {n} {face} umbrellas "
                                                     f"in colour number {n * 7}"},
            "memory_forget": lambda: {"ref": self._forgettable[face].pop()},
        }[tool]()


def with_path(env: dict[str, str], checkout: Path) -> dict[str, str]:
    """``env`` with ``checkout``'s package first on the path (before an installed one)."""
    rest = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": f"{checkout}{os.pathsep}{rest}" if rest else str(checkout)}


async def serve_http(env: dict[str, str], port: int) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nous_memory.cli", "serve", "--port", str(port), "--no-worker",
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            try:
                if (await http.get(f"http://127.0.0.1:{port}/health")).status_code == 200:
                    return proc
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    proc.terminate()
    raise SystemExit("the HTTP server did not start")


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="nous-bench-tools-") as data_dir:
        await serve_and_measure(args, Path(data_dir))


async def serve_and_measure(args: argparse.Namespace, data_dir: Path) -> None:
    async with MemoryStore.open(data_dir=data_dir) as store:
        await store.warm_up()
        refs = await seed(store, args.memories)
        rounds = args.calls + args.warmup
        forgettable: dict[str, list[str]] = {}
        http_faces = ["http"] + (["http_baseline"] if args.baseline is not None else [])
        for face in ("python", "stdio", *http_faces):
            made = await store.remember_many(AGENT, [
                {"kind": "fact", "content": f"Forgettable {face} fact {i}"}
                for i in range(rounds)])
            forgettable[face] = [f"fact:{m.id.hex[:8]}" for m in made]
        arguments = Arguments(refs, forgettable)
        box = ToolBox(store, agent_id=AGENT)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "NOUS_MEMORY_DATABASE_URL": store.dsn}
        servers: dict[str, tuple[asyncio.subprocess.Process, int]] = {}
        stdio = StdioServerParameters(command=sys.executable, env=env,
                                      args=["-m", "nous_memory.cli", "mcp", "--agent", AGENT])
        try:
            for face in http_faces:
                port = free_port()
                face_env = env if face == "http" else with_path(env, args.baseline.resolve())
                servers[face] = await serve_http(face_env, port), port
            async with AsyncExitStack() as clients:
                stdio_client = await clients.enter_async_context(
                    Client(stdio, read_timeout_seconds=120))

                async def python_call(name: str, call_args: dict[str, Any]) -> bool:
                    return (await box.call(name, call_args)).is_error

                async def stdio_call(name: str, call_args: dict[str, Any]) -> bool:
                    return bool((await stdio_client.call_tool(name, call_args)).is_error)

                faces: dict[str, Call] = {"python": python_call, "stdio": stdio_call}
                for face, (_, port) in servers.items():
                    faces[face] = http_call(await clients.enter_async_context(
                        Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120)))
                timings = await measure(faces, [t.name for t in box.tools], arguments,
                                        rounds, args.warmup)
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                await proc.wait()
    report(timings)


def http_call(client: Client) -> Call:
    async def call(name: str, call_args: dict[str, Any]) -> bool:
        result = await client.call_tool(name, {**call_args, "agent_id": AGENT})
        return bool(result.is_error)

    return call


async def measure(faces: dict[str, Call], tools: list[str], arguments: Arguments,
                  rounds: int, warmup: int) -> dict[tuple[str, str], list[float]]:
    timings: dict[tuple[str, str], list[float]] = {}
    # every order of the faces in turn: each face follows each other face (and goes
    # first) equally often, so none inherits another's leftover work more than the rest
    orders = list(itertools.permutations(faces))
    for round_no in range(rounds):
        rotation = orders[round_no % len(orders)]
        for tool in tools:
            for face in rotation:
                call_args = arguments(tool, face)
                start = time.perf_counter()
                failed = await faces[face](tool, call_args)
                elapsed = (time.perf_counter() - start) * 1000
                if failed:
                    raise SystemExit(f"{tool} over {face} failed with {call_args}")
                if round_no >= warmup:
                    timings.setdefault((tool, face), []).append(elapsed)
    return timings


def report(timings: dict[tuple[str, str], list[float]]) -> None:
    tools = sorted({tool for tool, _ in timings})
    served = [face for face in ("stdio", "http", "http_baseline")
              if any(f == face for _, f in timings)]
    overhead: dict[str, list[float]] = {face: [] for face in served}
    for tool in tools:
        p50 = {}
        for face in ("python", *served):
            values = timings[(tool, face)]
            p50[face] = statistics.median(values)
            short = tool.removeprefix("memory_")
            print(f"tools_{short}_{face}_ms_p50: {p50[face]:.2f}")
            print(f"tools_{short}_{face}_ms_p95: {percentile(values, 0.95):.2f}")
        for face in served:
            overhead[face].append(p50[face] - p50["python"])
    per_face = {face: statistics.median(values) for face, values in overhead.items()}
    for face, value in per_face.items():
        print(f"mcp_overhead_ms_p50_{face}: {value:.2f}")
    headline = max(per_face["stdio"], per_face["http"])
    print(f"# goal mcp_overhead_ms_p50 <= {GOAL_MS}: {'met' if headline <= GOAL_MS else 'NOT met'}")
    print(f"mcp_overhead_ms_p50: {headline:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2_000)
    parser.add_argument("--calls", type=int, default=60, help="counted rounds")
    parser.add_argument("--warmup", type=int, default=5, help="rounds not counted")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another checkout whose serve is measured beside this one's")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
