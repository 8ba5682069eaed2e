"""Inspector latency: the memory list of an agent with 100,000 memories and a page of a
5,000-message transcript, as a browser gets them from a served instance.

    python bench/inspector.py [--memories 100000] [--messages 5000] [--requests 200]
                              [--warmup 20]

Builds a fresh database (an embedded PostgreSQL in a temporary directory, or
NOUS_MEMORY_DATABASE_URL when set): one agent with --memories facts bulk-loaded in SQL
(generate_series; the write path would spend its time embedding, which the list never
reads), another agent with as many again (so the table is not one agent's), and one
episode whose --messages messages go through ``store.append`` in batches.  The app
(``create_app``, no keys, as ``nous-memory serve`` on loopback) runs under uvicorn in
this process; a client thread sends plain HTTP/1.1 requests and times the first byte of
the answer (status line) and the whole body.

Measured, interleaved in rotating order after a warm-up: the inspector's first memory
page (50 rows), a page deep in the list (through its cursor), the same list filtered by
tag, the transcript page at the start and in the middle (100 messages each), and the
baseline: the REST list of the same 50 memories as JSON (``GET /agents/{a}/memories``),
which shares the store call and leaves out only the page.  Prints ``name: value`` lines;
the headline ``inspector_list_ms_p95`` (goal <= 150) last.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from urllib.parse import quote

import asyncpg
import uvicorn

from nous_memory import MemoryStore
from nous_memory.api import create_app

GOAL_LIST_P95_MS = 150.0
AGENT = "bench-owner"
OTHER = "bench-other"
TOPICS = ["the billing migration", "Ana's diet", "the Porto trip", "the release train",
          "the on-call rota", "the vendor contract", "the design review", "the budget"]

SEED_SQL = """
WITH rows AS (
    INSERT INTO memories (agent_id, id, kind, summary, summary_source, summary_tokens,
                          importance, tags, created_at, updated_at)
    SELECT $1, gen_random_uuid(), 'fact',
           'Fact ' || i || ': a note about ' || ($3::text[])[1 + i % cardinality($3::text[])]
               || ' written on day ' || (i % 365),
           'template', 14, 0.5,
           CASE WHEN i % 10 = 0 THEN ARRAY['core'] ELSE '{}'::text[] END,
           now() - make_interval(secs => i), now() - make_interval(secs => i)
    FROM generate_series(1, $2::int) AS i
    RETURNING agent_id, id, summary
)
INSERT INTO facts (agent_id, memory_id, content, normalized_hash)
SELECT agent_id, id, summary, sha256(convert_to(summary, 'UTF8')) FROM rows
"""


async def seed(store: MemoryStore, memories: int, messages: int) -> tuple[str, str, float]:
    """The two agents' facts (SQL) and the long episode (the write path); returns the
    episode id, the cursor of a deep list page and the seconds it took."""
    started = time.perf_counter()
    conn = await asyncpg.connect(store.dsn)
    try:
        for agent in (AGENT, OTHER):
            await conn.execute(SEED_SQL, agent, memories, TOPICS)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    episode = await store.start_episode(AGENT, title="A very long conversation")
    batch = 500
    for start in range(0, messages, batch):
        await store.append(AGENT, episode.id, [
            {"role": "user" if i % 2 == 0 else "assistant",
             "content": f"Message {i} about {TOPICS[i % len(TOPICS)]}: " + "words " * 30}
            for i in range(start, min(messages, start + batch))])
    deep = None
    page = await store.list(AGENT, limit=500)
    for _ in range(memories // 1000):  # about the middle of the list
        if page.next_cursor is None:
            break
        deep = page.next_cursor
        page = await store.list(AGENT, limit=500, cursor=deep)
    return str(episode.id), deep or "", time.perf_counter() - started


def fetch(port: int, path: str, cookie: str | None) -> tuple[float, float, int, str | None]:
    """(ms to the first byte, ms to the whole body, body bytes, a session cookie)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Cookie": cookie} if cookie else {}
    started = time.perf_counter()
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()  # returns once the status line and headers are in
    first = time.perf_counter()
    body = response.read()
    done = time.perf_counter()
    if response.status != 200:
        raise SystemExit(f"GET {path} answered {response.status}: {body[:300]!r}")
    conn.close()
    set_cookie = response.getheader("set-cookie")
    return ((first - started) * 1000, (done - started) * 1000, len(body),
            set_cookie.split(";", 1)[0] if set_cookie else None)


def measure(port: int, paths: dict[str, str], requests: int, warmup: int
            ) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {
        name: {"ttfb": [], "full": [], "bytes": []} for name in paths}
    cookie: str | None = None
    names = list(paths)
    for i in range(warmup + requests):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            ttfb, full, size, fresh = fetch(port, paths[name], cookie)
            cookie = cookie or fresh
            if i >= warmup:
                out[name]["ttfb"].append(ttfb)
                out[name]["full"].append(full)
                out[name]["bytes"].append(size)
    return out


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def serve_and_measure(store: MemoryStore, port: int,
                            work: Callable[[], dict[str, dict[str, list[float]]]]
                            ) -> dict[str, dict[str, list[float]]]:
    config = uvicorn.Config(create_app(store), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
        await asyncio.sleep(0.05)
    try:
        return await asyncio.to_thread(work)  # the client in a thread, the server here
    finally:
        server.should_exit = True
        await task


async def run(args: argparse.Namespace) -> None:
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="nous-bench-ui-") as tmp:
        opened = (MemoryStore.open(database_url=url) if url
                  else MemoryStore.open(data_dir=tmp, database_url=None))
        async with opened as store:
            await store.warm_up()
            episode, deep, seed_s = await seed(store, args.memories, args.messages)
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            base = f"/ui/agents/{quote(AGENT, safe='')}"
            paths = {
                "inspector_list": f"{base}/memories",
                "inspector_list_deep": f"{base}/memories?cursor={quote(deep)}",
                "inspector_list_tag": f"{base}/memories?tag=core",
                "inspector_transcript": f"{base}/episodes/{episode}",
                "inspector_transcript_middle": f"{base}/episodes/{episode}"
                                               f"?from_seq={args.messages // 2}",
                "rest_list": f"/agents/{quote(AGENT, safe='')}/memories?limit=50",
            }
            out = await serve_and_measure(
                store, port, lambda: measure(port, paths, args.requests, args.warmup))
            counts = await store.counts(AGENT)
    report(args, out, seed_s, sum(n for per in counts.values() for n in per.values()))


def report(args: argparse.Namespace, out: dict[str, dict[str, list[float]]], seed_s: float,
           agent_memories: int) -> None:
    load = os.getloadavg()
    print(f"# machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} at the end; python {sys.version.split()[0]}")
    print(f"# data: {agent_memories} memories in the agent listed (+{args.memories} in "
          f"another agent), one episode of {args.messages} messages; seeded in {seed_s:.1f} s")
    print(f"# {args.requests} timed requests per page after {args.warmup} untimed, "
          "pages interleaved; one connection per request (HTTP/1.1, loopback)")
    for name, values in out.items():
        print(f"# {name}: {statistics.median(values['bytes']) / 1024:.1f} kB per answer")
    list95 = pct(out["inspector_list"]["full"], 0.95)
    print(f"# target: inspector_list_ms_p95 <= {GOAL_LIST_P95_MS:.0f} "
          f"({'met' if list95 <= GOAL_LIST_P95_MS else 'NOT met'})")
    print(f"memories: {agent_memories}")
    print(f"transcript_messages: {args.messages}")
    for name, values in out.items():
        print(f"{name}_ttfb_ms_p50: {pct(values['ttfb'], 0.5):.2f}")
        print(f"{name}_ms_p50: {pct(values['full'], 0.5):.2f}")
        print(f"{name}_ms_p95: {pct(values['full'], 0.95):.2f}")
    ratio = pct(out["inspector_list"]["full"], 0.5) / pct(out["rest_list"]["full"], 0.5)
    print(f"inspector_list_over_rest_list_p50: {ratio:.2f}")
    print(f"inspector_list_ms_p95: {list95:.2f}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=5_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
