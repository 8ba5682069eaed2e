"""Outages: the service through fast database restarts and hard stops, under load.

    python bench/outage.py [--restarts 20] [--hard 2] [--hard-down-s 10] [--clients 4]
                           [--gap-s 1.5] [--backup-memories 0] [--backup-episodes 0]

Starts an embedded PostgreSQL of its own (a temporary directory) and ``nous-memory serve``
on it (its worker included), with the scripted LLM server on loopback answering every
episode close.  ``--clients`` loopback clients write and read in a loop (facts learned,
memories written, episodes started, appended and closed, recall, context) while the
database is restarted fast ``--restarts`` times (``pg_ctl restart -m fast``) and stopped
hard ``--hard`` times (SIGKILL of the postmaster and all its processes, down for
``--hard-down-s``, started again).  The load runs alone for ``2 * --gap-s`` first: the
baseline.  Afterwards, with the queue drained (every item done but the upgrades a close
that fell back to the rules defers by design), every acknowledged write is looked up.

Prints the baseline and outage-time successes per second, ``http_500`` (every 500, goal
0), ``acked_writes_lost`` (acknowledged memories, facts, episodes, messages or closes
missing afterwards, goal 0), ``items_processed_twice`` (episodes whose close called the
LLM more than once or was written more than once, goal 0), ``recovery_s_p95`` (from the
database accepting again to the first success of a request sent after, goal <= 2),
``log_lines_per_outage_s`` (the service's log lines other than its access lines, from
each stop to 2 s after the restart, per second of outage, goal <= 2) and last
``outage_checks_failed`` (how many of those five goals were missed).

With ``--backup-memories N`` (and ``--backup-episodes M``) it then fills a store of that
size through the store's own API (real embeddings), and times ``db backup``, ``db restore``
into an empty database and the verification: ``backup_s``, ``backup_mb``, ``restore_s``,
``verify_s`` and ``backup_mismatches`` (goal 0, counted in ``outage_checks_failed``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import numpy as np

from nous_memory.db import EmbeddedServer
from nous_memory.db.setup import ensure_database
from nous_memory.testing import JSONReply, ScriptedLLMServer, ScriptStep
from nous_memory.testing.pgcontrol import ServerControl

EXTRACTION = {"title": "A chat", "summary": "They talked about boats and plans. " * 8,
              "key_points": ["plans"], "outcome": "settled", "topics": ["plans"],
              "facts": [], "decisions": [], "lessons": []}
MARKER = re.compile(r"episode-marker-([0-9a-f]{12})")
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
SETTLE_S = 2.0


@dataclass
class Load:
    """What the clients did and were told."""

    results: list[tuple[float, float, int]] = field(default_factory=list)  # sent, done, code
    memories: list[str] = field(default_factory=list)  # acknowledged memory ids
    episodes: dict[str, int] = field(default_factory=dict)  # id -> acknowledged messages
    closed: set[str] = field(default_factory=set)
    agents: dict[str, str] = field(default_factory=dict)  # episode id -> agent


async def client(http: httpx.AsyncClient, n: int, load: Load, stop: asyncio.Event) -> None:
    rng = random.Random(n)
    agent = f"agent{n}"
    i = 0

    async def call(method: str, url: str, **kwargs: Any) -> httpx.Response | None:
        sent = time.monotonic()
        try:
            response = await http.request(method, url, **kwargs)
        except httpx.HTTPError:
            load.results.append((sent, time.monotonic(), 0))
            return None
        load.results.append((sent, time.monotonic(), response.status_code))
        if response.status_code == 503:  # as Retry-After asks, but briefly: a bench
            await asyncio.sleep(0.05)
        return response

    while not stop.is_set():
        i += 1
        op = rng.randrange(5)
        if op == 0:
            r = await call("POST", f"/agents/{agent}/facts/learn",
                           json={"content": f"client {n} fact {i}: likes boat {rng.random()}"})
            if r is not None and r.status_code == 200 and r.json().get("fact"):
                load.memories.append(r.json()["fact"]["id"])
        elif op == 1:
            r = await call("POST", f"/agents/{agent}/memories",
                           json={"kind": "decision", "description": f"decision {n}.{i}"})
            if r is not None and r.status_code == 201:
                load.memories.append(r.json()["id"])
        elif op == 2:
            r = await call("POST", f"/agents/{agent}/episodes", json={})
            if r is None or r.status_code != 201:
                continue
            ident = r.json()["id"]
            load.episodes[ident], load.agents[ident] = 0, agent
            marker = f"episode-marker-{ident.replace('-', '')[:12]}"
            for turn in range(2):
                r = await call("POST", f"/agents/{agent}/episodes/{ident}/messages",
                               json={"messages": [{"role": "user",
                                                   "content": f"{marker} turn {turn}"}]})
                if r is not None and r.status_code == 201:
                    load.episodes[ident] += 1
            r = await call("POST", f"/agents/{agent}/episodes/{ident}/close")
            if r is not None and r.status_code == 202:
                load.closed.add(ident)
        elif op == 3:
            await call("POST", f"/agents/{agent}/recall", json={"query": "boat", "k": 5})
        else:
            await call("POST", f"/agents/{agent}/context",
                       json={"query": "plans", "budget_tokens": 300})


async def wait_healthy(base: str, server: subprocess.Popen[bytes]) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        for _ in range(1200):
            if server.poll() is not None:
                raise SystemExit("serve exited before it was healthy")
            try:
                if (await http.get(f"{base}/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit("serve did not become healthy")


def start_server(log_path: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "nous_memory.cli", "serve", "--host", "127.0.0.1",
             "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# A close that fell back to the rules (its LLM result lost to an outage on its last try)
# queues an upgrade for upgrade_delay_s later, by design: deferred, not left undone.
OPEN_WORK = ("SELECT count(*) FROM work_items WHERE state = 'running' OR (state = 'pending' "
             "AND task <> 'episode_upgrade')")


async def drained(dsn: str, timeout_s: float = 180.0) -> bool:
    """Whether every item is done but the deferred upgrades, within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            conn = await asyncpg.connect(dsn)
            try:
                left = await conn.fetchval(OPEN_WORK)
            finally:
                await conn.close()
            if left == 0:
                return True
        except (OSError, asyncpg.PostgresError):
            pass
        await asyncio.sleep(0.5)
    return False


async def left_in_queue(dsn: str) -> list[dict[str, object]]:
    """The open items a drain left behind, to say why it did not finish."""
    conn = await asyncpg.connect(dsn)
    try:
        return [dict(r) for r in await conn.fetch(
            "SELECT id, task, state, attempts, locked_by, run_after - now() AS runs_in, "
            "lease_until - now() AS lease_left, last_error FROM work_items "
            "WHERE state = 'running' OR (state = 'pending' AND task <> 'episode_upgrade') "
            "ORDER BY id LIMIT 10")]
    finally:
        await conn.close()


async def lost_writes(dsn: str, load: Load) -> dict[str, int]:
    conn = await asyncpg.connect(dsn)
    try:
        memories = set(load.memories)
        found = await conn.fetchval("SELECT count(*) FROM memories WHERE id = ANY($1::uuid[])",
                                    list(memories))
        episodes = list(load.episodes)
        messages = {str(r["memory_id"]): r["n"] for r in await conn.fetch(
            "SELECT e.memory_id, count(m.*) AS n FROM episodes e LEFT JOIN episode_messages m "
            "ON m.agent_id = e.agent_id AND m.episode_id = e.memory_id "
            "WHERE e.memory_id = ANY($1::uuid[]) GROUP BY e.memory_id", episodes)}
        states = {str(r["memory_id"]): r["state"] for r in await conn.fetch(
            "SELECT memory_id, state FROM episodes WHERE memory_id = ANY($1::uuid[])",
            list(load.closed))}
        return {
            "memories": len(memories) - int(found),
            "episodes": sum(1 for e in episodes if e not in messages),
            "messages": sum(max(0, n - messages.get(e, 0)) for e, n in load.episodes.items()),
            "closes": sum(1 for e in load.closed if states.get(e) != "closed"),
        }
    finally:
        await conn.close()


async def deferred_upgrades(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM work_items WHERE state = "
                                       "'pending' AND task = 'episode_upgrade'"))
    finally:
        await conn.close()


async def written_twice(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(
            "SELECT count(*) FROM (SELECT memory_id FROM memory_events WHERE event = 'updated' "
            "AND new_values->>'state' = 'closed' GROUP BY memory_id HAVING count(*) > 1) t"))
    finally:
        await conn.close()


def log_lines_in(log: Path, windows: list[tuple[float, float]]) -> Counter[str]:
    """The service's log lines (access lines aside) inside the outage windows (wall
    time), counted by their logger and first words."""
    found: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        matched = LOG_TIME.match(line)
        if matched is None or " nous_memory.access " in line:
            continue
        at = datetime.strptime(matched[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if any(lo <= at <= hi for lo, hi in windows):
            words = line[len(matched[0]):].split()
            found[" ".join(words[:2] + [w for w in words[3:6]])] += 1
    return found


def ok_per_s(load: Load, lo: float, hi: float) -> float:
    ok = sum(1 for _, done, code in load.results if lo <= done < hi and code < 300)
    return ok / max(hi - lo, 1e-9)


async def outages(args: argparse.Namespace, control: ServerControl
                  ) -> list[tuple[float, float, float, float]]:
    """(down, up) monotonic and (down, up) wall time of every outage, in order."""
    events = []
    for i in range(args.restarts + args.hard):
        await asyncio.sleep(args.gap_s)
        down_wall = time.time()
        if i < args.restarts:
            down, up = await asyncio.to_thread(control.restart_fast)
        else:
            down = await asyncio.to_thread(control.kill_hard)
            await asyncio.sleep(args.hard_down_s)
            up = await asyncio.to_thread(control.start)
        events.append((down, up, down_wall, down_wall + (up - down)))
    return events


async def run(args: argparse.Namespace) -> None:
    calls: Counter[str] = Counter()

    def model(request: dict[str, Any]) -> ScriptStep:
        if "EXISTING fact" in str(request["messages"][0]):  # learn_fact's classifier
            return JSONReply(content={"verdicts": []})  # unrelated: the value rule decides
        for marker in set(MARKER.findall(str(request["messages"]))):
            calls[marker] += 1
        return JSONReply(content=EXTRACTION)

    with tempfile.TemporaryDirectory(prefix="nous-outage-") as tmp:
        server = await asyncio.to_thread(EmbeddedServer.acquire, Path(tmp))
        control = ServerControl(server.pgdata, server.dsn())
        try:
            await ensure_database(server, "nous_memory")
            dsn = server.dsn("nous_memory")
            async with ScriptedLLMServer(default=model) as llm:
                failed = await measure(args, control, dsn, llm.base_url, Path(tmp), calls)
            if args.backup_memories:
                failed += await bench_backup(args, server, Path(tmp))
            print(f"outage_checks_failed: {failed}")
        finally:
            await asyncio.to_thread(control.stop)
            await asyncio.to_thread(server.release)


async def measure(args: argparse.Namespace, control: ServerControl, dsn: str, llm_url: str,
                  tmp: Path, calls: Counter[str]) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_MEMORY_")}
    env |= {"HF_HUB_OFFLINE": "1", "NOUS_MEMORY_DATABASE_URL": dsn,
            "NOUS_MEMORY_DATA_DIR": str(tmp / "unused"), "NOUS_MEMORY_LLM_BASE_URL": llm_url,
            "NOUS_MEMORY_LLM_MODEL": "scripted", "NOUS_MEMORY_LLM_MAX_ATTEMPTS": "1",
            "NOUS_MEMORY_DB_WAIT_S": "60"}
    port, log = free_port(), tmp / "serve.log"
    serve = await asyncio.to_thread(start_server, log, port, env)
    base = f"http://127.0.0.1:{port}"
    load, stop = Load(), asyncio.Event()
    try:
        await wait_healthy(base, serve)
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            clients = [asyncio.create_task(client(http, n, load, stop))
                       for n in range(args.clients)]
            started = time.monotonic()
            await asyncio.sleep(2 * args.gap_s)
            baseline_end = time.monotonic()
            events = await outages(args, control)
            await asyncio.sleep(2 * args.gap_s)
            stop.set()
            await asyncio.gather(*clients)
        during = ok_per_s(load, baseline_end, time.monotonic())
        baseline = ok_per_s(load, started, baseline_end)
        complete = await drained(dsn)
        alive = serve.poll() is None
        if not complete:
            print(f"# left in the queue: {await left_in_queue(dsn)}")
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            serve.kill()
    lost = await lost_writes(dsn, load)
    deferred = await deferred_upgrades(dsn)
    twice = sum(1 for n in calls.values() if n > 1) + await written_twice(dsn)
    recoveries = []
    for _, up, _, _ in events:
        after = [done for sent, done, code in load.results if sent >= up and code < 300]
        recoveries.append(min(after) - up if after else float("inf"))
    outage_s = sum(up - down for down, up, _, _ in events)
    logged = log_lines_in(log, [(lo, hi + SETTLE_S) for _, _, lo, hi in events])
    lines = sum(logged.values())
    codes = Counter(code for _, _, code in load.results)
    figures = {
        "http_500": codes[500],
        "acked_writes_lost": sum(lost.values()),
        "items_processed_twice": twice,
        "recovery_s_p95": float(np.percentile(recoveries, 95)) if recoveries else 0.0,
        "log_lines_per_outage_s": lines / max(outage_s, 1e-9),
    }
    goals = {"http_500": 0, "acked_writes_lost": 0, "items_processed_twice": 0,
             "recovery_s_p95": 2.0, "log_lines_per_outage_s": 2.0}
    failed = sum(figures[k] > goals[k] for k in goals) + (not complete) + (not alive)
    print(f"# {args.restarts} fast restarts, {args.hard} hard stops of {args.hard_down_s} s, "
          f"{args.clients} clients; {len(load.results)} requests ({dict(sorted(codes.items()))});"
          f" acknowledged: {len(load.memories)} memories, {len(load.episodes)} episodes, "
          f"{sum(load.episodes.values())} messages, {len(load.closed)} closes; lost: {lost}; "
          f"queue drained: {complete} ({deferred} upgrades deferred by design); the service "
          f"{'stayed up' if alive else 'DIED'}")
    print(f"ok_per_s_baseline: {baseline:.1f}")
    print(f"ok_per_s_during_outages: {during:.1f}")
    print(f"outage_s_total: {outage_s:.2f}")
    print(f"http_503: {codes[503]}")
    other = sum(n for c, n in codes.items() if c >= 300 and c not in (500, 503))
    print(f"# outages (s): {', '.join(f'{up - down:.2f}' for down, up, _, _ in events)}; "
          f"recoveries (s): {', '.join(f'{r:.2f}' for r in recoveries)}")
    print(f"http_other_errors: {other}")
    print(f"llm_calls: {sum(calls.values())}")
    print(f"recovery_s_max: {max(recoveries, default=0.0):.3f}")
    print(f"# logged in outages: {dict(logged.most_common(8))}")
    print(f"log_lines_in_outages: {lines}")
    for name, value in figures.items():
        print(f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}")
    return failed


async def bench_backup(args: argparse.Namespace, server: EmbeddedServer, tmp: Path) -> int:
    """Fill a store of the asked size through its API, then back up, restore, verify."""
    from nous_memory import MemoryStore
    from nous_memory.db import QUERIES, Connection
    from nous_memory.db.backup import backup, checksums, compare, read_manifest, restore

    await ensure_database(server, "backup_source")
    await ensure_database(server, "backup_target")
    source, target = server.dsn("backup_source"), server.dsn("backup_target")
    async with MemoryStore.open(database_url=source, data_dir=tmp / "unused") as store:
        batch = 500
        for start in range(0, args.backup_memories, batch):
            n = min(batch, args.backup_memories - start)
            await store.remember_many(f"agent{start % 7}", [
                {"kind": "fact", "content": f"fact {start + i}: the harbour boat {i % 97}"}
                for i in range(n)])
        for i in range(args.backup_episodes):
            episode = await store.start_episode(f"agent{i % 7}", title=f"episode {i}")
            await store.append(f"agent{i % 7}", episode.id, [
                {"role": "user", "content": f"Episode {i}: we planned the boat trip."},
                {"role": "assistant", "content": "Noted, the trip is on."}])
    file = tmp / "store.backup"
    made = await backup(source, file)
    restored = await restore(target, file)
    started = time.monotonic()
    raw = await asyncpg.connect(target)
    try:
        async with raw.transaction(isolation="repeatable_read", readonly=True):
            found = await checksums(Connection(raw, QUERIES))
    finally:
        await raw.close()
    mismatches = compare(read_manifest(file), found)
    verify_s = time.monotonic() - started
    print(f"# backup of {args.backup_memories} memories and {args.backup_episodes} episodes "
          f"({made.rows} rows): {made.size_bytes} bytes")
    print(f"backup_s: {made.seconds:.2f}")
    print(f"backup_mb: {made.size_bytes / 1e6:.2f}")
    print(f"restore_s: {restored.seconds:.2f}")
    print(f"verify_s: {verify_s:.2f}")
    print(f"backup_mismatches: {len(mismatches)}")
    return int(bool(mismatches))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--restarts", type=int, default=20)
    parser.add_argument("--hard", type=int, default=2)
    parser.add_argument("--hard-down-s", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--gap-s", type=float, default=1.5)
    parser.add_argument("--backup-memories", type=int, default=0)
    parser.add_argument("--backup-episodes", type=int, default=0)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
