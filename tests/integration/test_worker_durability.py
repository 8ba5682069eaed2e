"""Durability of episode close processing (docs/architecture.md, principle 8) on real parts.

A worker may die at any instant; the work item is claimed again once its lease runs
out, and the effect is the same as one clean run: the episode closed once, its facts
and decisions written once.  Also: two workers at once, the input cap (parts + merge),
the rule fallback and retries, and the idle sweep.  Real PostgreSQL, the real bundled
model, the real ``openai`` client against ``ScriptedLLMServer``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.memories.kinds import EpisodeState, FactsState, SummarySource
from nous_memory.testing import Delayed, JSONReply, ScriptedLLMServer, ScriptStep
from nous_memory.tokens import count_tokens
from tests.conftest import LLMStoreFactory

LEASE_S = 2

EXTRACTION: dict[str, Any] = {
    "title": "Planning Noor's move to Rotterdam",
    "summary": ("Noor told the assistant she is moving to Rotterdam in September and "
                "asked for help with the paperwork. " * 6).strip(),
    "key_points": ["Move in September", "Paperwork first"],
    "outcome": "A checklist for the move was agreed.",
    "topics": ["moving", "paperwork"],
    "facts": [
        {"content": "Noor is moving to Rotterdam in September", "subject": "Noor",
         "category": "schedule", "confidence": 0.9},
        {"content": "Noor keeps two cats named Pip and Olive", "subject": "Noor",
         "category": "person", "confidence": 0.8},
    ],
    "decisions": [{"description": "Register at the Rotterdam town hall first",
                   "outcome": "pending", "confidence": 0.7}],
    "lessons": [],
}

MESSAGES = [
    {"role": "user", "name": "Noor", "content": "I'm moving to Rotterdam in September."},
    {"role": "assistant", "content": "Congratulations! What should we sort out first?"},
    {"role": "user", "name": "Noor",
     "content": "The paperwork. And the cats, Pip and Olive, need a vet check."},
    {"role": "assistant", "content": "Then register at the town hall first."},
]

# A real worker process.  It loads the model first (the slow part, so tests can start it
# early), then reads its job as one JSON line from stdin: database_url, llm_base_url,
# worker_id, lease_s, mode.
# mode "die-in-write": the result transaction is written in full, then the process
# SIGKILLs itself before the commit (patched here, in this process only).
WORKER_SCRIPT = r"""
import asyncio, json, logging, os, signal, sys
from nous_memory import MemoryStore, OnnxEmbedder
from nous_memory.config import default_model_cache_dir
from nous_memory.episodes.close import EpisodeCloser
from nous_memory.work.worker import Worker

logging.basicConfig(level=logging.WARNING, stream=sys.stdout)
logging.getLogger("nous_memory.work.worker").setLevel(logging.INFO)  # "result ... dropped"
original_run_once = Worker.run_once


async def run_once_reporting(self):
    processed = await original_run_once(self)
    if processed:
        print("run_once processed an item", flush=True)
    return processed


Worker.run_once = run_once_reporting
embedder = OnnxEmbedder(cache_dir=default_model_cache_dir())
embedder.warm_up()
print("model loaded", flush=True)
job = json.loads(sys.stdin.readline())

if job["mode"] == "die-in-write":
    original_write = EpisodeCloser.write

    async def write_then_die(self, conn, close):
        await original_write(self, conn, close)
        print("result written, dying before commit", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    EpisodeCloser.write = write_then_die


async def main():
    async with MemoryStore.open(database_url=job["database_url"], embedder=embedder,
                                llm_base_url=job["llm_base_url"], llm_model="scripted",
                                worker_lease_s=job["lease_s"], llm_max_attempts=1) as store:
        print("worker ready", flush=True)
        await store.worker(worker_id=job["worker_id"], poll_s=0.1).run(asyncio.Event())


asyncio.run(main())
"""


# ------------------------------------------------------------------ fixtures, helpers


@pytest.fixture
def llm(llm_server: ScriptedLLMServer) -> ScriptedLLMServer:
    return llm_server


@pytest.fixture
async def llm_store(open_llm_store: LLMStoreFactory) -> AsyncIterator[MemoryStore]:
    async with open_llm_store(worker_lease_s=LEASE_S, episode_chunk_tokens=160) as store:
        yield store


async def _sql(dsn: str, query: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def _val(dsn: str, query: str, *args: Any) -> Any:
    rows = await _sql(dsn, query, *args)
    return rows[0][0]


async def _wait_until(check: Callable[[], Awaitable[bool]], timeout_s: float,
                      what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.05)


async def _closing_episode(store: MemoryStore, agent: str, messages: list[dict[str, Any]],
                           title: str | None = None) -> UUID:
    episode = await store.start_episode(agent, title=title)
    await store.append(agent, episode.id, messages)
    await store.close_episode(agent, episode.id)
    return episode.id


async def _effects(dsn: str, agent: str, episode_id: UUID) -> dict[str, Any]:
    """Everything close processing writes for one episode, counted."""
    return {
        "state": await _val(dsn, "SELECT state FROM episodes WHERE agent_id = $1 "
                                 "AND memory_id = $2", agent, episode_id),
        "closed_events": await _val(
            dsn, "SELECT count(*) FROM memory_events WHERE agent_id = $1 AND memory_id = $2 "
                 "AND event = 'updated' AND new_values->>'state' = 'closed'", agent, episode_id),
        "facts": await _val(dsn, "SELECT count(*) FROM facts WHERE agent_id = $1 "
                                 "AND source_episode_id = $2", agent, episode_id),
        "distinct_fact_contents": await _val(
            dsn, "SELECT count(DISTINCT content) FROM facts WHERE agent_id = $1 "
                 "AND source_episode_id = $2", agent, episode_id),
        "decisions": await _val(dsn, "SELECT count(*) FROM decisions WHERE agent_id = $1 "
                                     "AND source_episode_id = $2", agent, episode_id),
        "chunks": await _val(dsn, "SELECT count(*) FROM episode_chunks WHERE agent_id = $1 "
                                  "AND episode_id = $2", agent, episode_id),
        "summary_source": await _val(dsn, "SELECT summary_source FROM memories "
                                          "WHERE agent_id = $1 AND id = $2", agent, episode_id),
        "facts_state": await _val(dsn, "SELECT facts_state FROM episodes WHERE agent_id = $1 "
                                       "AND memory_id = $2", agent, episode_id),
        "unembedded": await _val(
            dsn, "SELECT (SELECT count(*) FROM episode_chunks WHERE agent_id = $1 AND "
                 "episode_id = $2 AND embedding IS NULL) + (SELECT count(*) FROM memories "
                 "WHERE agent_id = $1 AND id = $2 AND embedding IS NULL)", agent, episode_id),
    }


async def _work(dsn: str, agent: str, episode_id: UUID,
                task: str | None = "episode_close") -> list[dict[str, Any]]:
    """The episode's work items (of one task, or all with ``task=None``), oldest first."""
    rows = await _sql(dsn, "SELECT task, state, attempts, locked_by, run_after > now() AS later "
                           "FROM work_items WHERE agent_id = $1 AND memory_id = $2 "
                           "AND ($3::text IS NULL OR task = $3) ORDER BY id",
                      agent, episode_id, task)
    return [dict(r) for r in rows]


async def _llm_calls(dsn: str, agent: str) -> list[tuple[str, str]]:
    rows = await _sql(dsn, "SELECT purpose, outcome FROM llm_calls WHERE agent_id = $1 "
                           "ORDER BY id", agent)
    return [(r["purpose"], r["outcome"]) for r in rows]


def _user_text(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


class WorkerProcess:
    """The worker script in a child process; its output goes to a log file."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None

    async def spawn(self) -> None:
        """Start the child; it loads the model and then waits for its job."""
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        with self.log_path.open("wb") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", WORKER_SCRIPT, stdin=asyncio.subprocess.PIPE,
                stdout=log, stderr=asyncio.subprocess.STDOUT, env=env)

    async def start(self, database_url: str, llm_url: str, worker_id: str, mode: str,
                    lease_s: float = LEASE_S) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        await self.alive()
        job = {"database_url": database_url, "llm_base_url": llm_url,
               "worker_id": worker_id, "lease_s": lease_s, "mode": mode}
        self.proc.stdin.write(json.dumps(job).encode() + b"\n")
        await self.proc.stdin.drain()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    async def alive(self) -> bool:
        assert self.proc is not None
        if self.proc.returncode is not None:
            raise AssertionError(f"worker process exited early ({self.proc.returncode}):\n"
                                 f"{self.log()}")
        return True

    async def wait(self, timeout_s: float) -> int:
        assert self.proc is not None
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout_s)
        except TimeoutError:
            raise AssertionError(f"worker process still running:\n{self.log()}") from None

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()


@pytest.fixture(scope="module", autouse=True)
async def spare_workers(request: pytest.FixtureRequest,
                        tmp_path_factory: pytest.TempPathFactory
                        ) -> AsyncIterator[list[WorkerProcess]]:
    """One child worker per selected SIGKILL test, started when the module starts, so
    that their model loading overlaps the other tests (the SIGKILL tests come last)."""
    wanted = len([item for item in request.session.items
                  if getattr(item, "module", None) is request.module
                  and "worker_process" in getattr(item, "fixturenames", ())])
    logs = tmp_path_factory.mktemp("workers")
    children = [WorkerProcess(logs / f"worker{i}.log") for i in range(wanted)]
    for child in children:
        await child.spawn()
    try:
        yield children
    finally:
        for child in children:
            await child.kill()


@pytest.fixture
async def worker_process(spare_workers: list[WorkerProcess]) -> AsyncIterator[WorkerProcess]:
    assert spare_workers, "more SIGKILL tests than spare worker processes"
    child = spare_workers.pop(0)
    try:
        yield child
    finally:
        await child.kill()


async def _recover(store: MemoryStore, timeout_s: float = 20.0) -> int:
    """A second worker drains until it has processed something (after the lease ran out)."""
    worker = store.worker(worker_id="second")
    done = 0

    async def processed() -> bool:
        nonlocal done
        done += await worker.drain()
        return done > 0

    await _wait_until(processed, timeout_s, "the dead worker's item to be claimed again")
    return done


def _assert_closed_once(effects: dict[str, Any]) -> None:
    assert effects == {"state": "closed", "closed_events": 1, "facts": 2,
                       "distinct_fact_contents": 2, "decisions": 1,
                       "chunks": effects["chunks"], "summary_source": "llm",
                       "facts_state": "extracted", "unembedded": 0}
    assert effects["chunks"] >= 1


# ------------------------------------------------------------------ two workers

TOPICS = [
    "Maria rents a small flat above a bakery in Lisbon",
    "Tomasz plays the cello in an amateur orchestra every Sunday",
    "Aiko is severely allergic to peanuts and carries an epinephrine pen",
    "Priya drives a red 2012 Toyota Corolla that needs new brakes",
    "Jonas works night shifts as a nurse at the children's hospital",
]


def _topic_reply(request: dict[str, Any]) -> ScriptStep:
    """An answer built from the transcript: the topic sentence it mentions becomes the fact."""
    text = _user_text(request)
    (topic,) = [t for t in TOPICS if t in text]
    answer = {**EXTRACTION, "title": topic[:40], "summary": f"{topic}. " * 10,
              "facts": [{"content": topic, "confidence": 0.9}],
              "decisions": [{"description": f"Follow up on: {topic}"}]}
    return Delayed(seconds=0.3, then=JSONReply(content=answer))


async def test_two_workers_at_once_close_every_episode_exactly_once(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str) -> None:
    agent = "team"
    ids = [await _closing_episode(llm_store, agent, [
        {"role": "user", "content": f"Something to remember: {topic}."},
        {"role": "assistant", "content": "Noted, thank you."}]) for topic in TOPICS]
    llm.default = _topic_reply
    first, second = llm_store.worker(worker_id="w1"), llm_store.worker(worker_id="w2")
    done = await asyncio.gather(first.drain(), second.drain())
    assert sum(done) == 10  # five closes and their five follow-ups
    assert min(done) >= 1, f"both workers should have taken items, got {done}"
    assert len(llm.requests) == 5
    owners = set()
    for topic, episode_id in zip(TOPICS, ids, strict=True):
        effects = await _effects(database_url, agent, episode_id)
        assert (effects["state"], effects["closed_events"], effects["facts"],
                effects["decisions"], effects["summary_source"]) == (
                    "closed", 1, 1, 1, "llm"), topic
        facts = await llm_store.facts_from_episode(agent, episode_id)
        assert [f.summary for f in facts] == [topic]
        (item,) = await _work(database_url, agent, episode_id)
        assert (item["state"], item["attempts"]) == ("done", 1)
        owners.add(item["locked_by"])
    assert owners == {"w1", "w2"}
    assert await _llm_calls(database_url, agent) == [("episode_close", "ok")] * 5


# ------------------------------------------------------------------ the input cap

WORDS = ("river lantern copper meadow violin harbor pepper glacier orchard canvas "
         "thunder marble saddle walnut prism falcon ember tundra quartz velvet").split()


def _long_messages(count: int) -> list[dict[str, Any]]:
    """``count`` messages of roughly 50 tokens, each with a unique marker."""
    out = []
    for i in range(count):
        words = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(40))
        out.append({"role": "user" if i % 2 == 0 else "assistant",
                    "content": f"marker-{i:02d} {words}."})
    return out


MARKER = re.compile(r"marker-\d\d")

MERGED_SUMMARY = ("The long conversation walked through twenty numbered notes about rivers, "
                  "lanterns and orchards; every part was summarised and merged. " * 4).strip()


def _part_or_merge(request: dict[str, Any]) -> ScriptStep:
    text = _user_text(request)
    if text.startswith("<parts>"):
        return JSONReply(content={**EXTRACTION, "summary": MERGED_SUMMARY, "facts": [],
                                  "decisions": []})
    markers = sorted(set(MARKER.findall(text)))
    return JSONReply(content={**EXTRACTION, "summary": "Part with " + ", ".join(markers),
                              "facts": [], "decisions": []})


async def test_over_the_cap_parts_and_one_merge_under_the_cap_one_call(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str,
        embedder: Any) -> None:
    messages = _long_messages(20)
    contents = [m["content"] for m in messages]
    total = sum(count_tokens(c) for c in contents)
    assert 900 <= total <= 1200
    llm.default = _part_or_merge
    cap = 200
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                llm_base_url=llm.base_url, llm_model="scripted",
                                close_input_cap_tokens=cap) as capped:
        episode_id = await _closing_episode(capped, "capped", messages)
        assert await capped.worker().drain() == 2  # the close, then its follow-up

    requests = [_user_text(r) for r in llm.requests]
    parts = [r for r in requests if r.startswith("<transcript>")]
    merges = [r for r in requests if r.startswith("<parts>")]
    assert len(parts) + len(merges) == len(requests)
    assert len(merges) == 1 and requests[-1] == merges[0]
    assert len(parts) >= math.ceil(total / cap)
    # every message in exactly one part, and the parts in transcript order
    for content in contents:
        assert sum(content in p for p in parts) == 1, content
    in_order = [m for p in parts for m in MARKER.findall(p)]
    assert in_order == [f"marker-{i:02d}" for i in range(20)]
    # each part, as sent (tags included), stays under the cap
    assert max(count_tokens(p) for p in parts) <= cap
    # the merge call received every part's answer, in order
    sent_parts = json.loads(merges[0].removeprefix("<parts>").removesuffix("</parts>"))
    assert [x["summary"] for x in sent_parts] == [
        "Part with " + ", ".join(MARKER.findall(p)) for p in parts]
    assert await _llm_calls(database_url, "capped") == (
        [("episode_close", "ok")] * len(parts) + [("episode_close_merge", "ok")])
    closed = await llm_store.get_episode("capped", episode_id)
    assert closed.summary == MERGED_SUMMARY
    assert closed.summary_source is SummarySource.LLM

    # the same transcript under the default cap (8,000): exactly one call
    seen = len(llm.requests)
    uncapped_id = await _closing_episode(llm_store, "uncapped", messages)
    assert await llm_store.worker().drain() == 2
    assert len(llm.requests) == seen + 1
    only = _user_text(llm.requests[-1])
    assert all(c in only for c in contents)
    assert await _llm_calls(database_url, "uncapped") == [("episode_close", "ok")]
    assert (await llm_store.get_episode("uncapped", uncapped_id)).summary.startswith("Part with")


# ------------------------------------------------------------------ failures


async def test_invalid_output_twice_gives_a_rule_summary_and_queues_an_upgrade(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str) -> None:
    agent = "flaky"
    episode_id = await _closing_episode(llm_store, agent, MESSAGES, title="Moving house")
    llm.reply_text("Sure! Here is the summary you asked for.")
    llm.reply_text('{"title": "still not the schema"}')
    assert await llm_store.worker().drain() == 2  # the close, then its embedding follow-up
    assert len(llm.requests) == 2  # the call and its one repair round
    closed = await llm_store.get_episode(agent, episode_id)
    assert closed.summary_source is SummarySource.RULE
    assert closed.summary.startswith("Moving house. Conversation between Noor, assistant")
    assert closed.episode.state is EpisodeState.CLOSED
    assert closed.episode.facts_state is FactsState.NOT_EXTRACTED
    effects = await _effects(database_url, agent, episode_id)
    # no LLM extraction: the rules learned what Noor stated, and no decision
    assert (effects["closed_events"], effects["facts"], effects["decisions"]) == (1, 1, 0)
    assert [f.fact.content for f in await llm_store.facts_from_episode(
        agent, episode_id)] == ["Noor is moving to Rotterdam in September."]
    work = await _work(database_url, agent, episode_id, task=None)
    assert [(w["task"], w["state"], w["later"]) for w in work] == [
        ("episode_close", "done", False), ("episode_learn", "done", False),
        ("episode_upgrade", "pending", True)]
    assert await _llm_calls(database_url, agent) == [("episode_close", "invalid_output")] * 2
    assert await llm_store.worker().drain() == 0  # the upgrade waits for its time


async def test_rate_limited_then_success_gives_the_llm_summary(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str) -> None:
    agent = "busy"
    episode_id = await _closing_episode(llm_store, agent, MESSAGES)
    llm.fail(429, "slow down", retry_after=0.1)
    llm.reply_json(EXTRACTION)
    assert await llm_store.worker().drain() == 2
    assert len(llm.requests) == 2
    closed = await llm_store.get_episode(agent, episode_id)
    assert closed.summary_source is SummarySource.LLM
    assert closed.summary == EXTRACTION["summary"]
    _assert_closed_once(await _effects(database_url, agent, episode_id))
    assert await _llm_calls(database_url, agent) == [("episode_close", "rate_limited"),
                                                     ("episode_close", "ok")]
    assert [w["task"] for w in await _work(database_url, agent, episode_id)] == [
        "episode_close"]


# ------------------------------------------------------------------ idle close


async def test_idle_episode_is_closed_by_the_sweep_and_processed(
        database_url: str, embedder: Any, llm: ScriptedLLMServer) -> None:
    long_ago = datetime.now(UTC) - timedelta(minutes=5)
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                llm_base_url=llm.base_url, llm_model="scripted",
                                episode_idle_close_s=60) as store:
        idle = await store.start_episode("a", started_at=long_ago)
        await store.append("a", idle.id, [{**m, "created_at": long_ago} for m in MESSAGES])
        busy = await store.start_episode("a")
        await store.append("a", busy.id, MESSAGES[:1])
        llm.reply_json(EXTRACTION)
        worker = store.worker()
        assert await worker.close_idle() == 1
        assert (await store.get_episode("a", idle.id)).episode.state is (
            EpisodeState.CLOSING)
        assert (await store.get_episode("a", busy.id)).episode.state is (
            EpisodeState.OPEN)
        assert await worker.drain() == 2  # the close, then its follow-up
        assert await worker.close_idle() == 0
        closed = await store.get_episode("a", idle.id)
        assert closed.episode.state is EpisodeState.CLOSED
        assert closed.summary_source is SummarySource.LLM
        assert closed.episode.ended_at == long_ago
        assert len(llm.requests) == 1
        _assert_closed_once(await _effects(database_url, "a", idle.id))


async def test_follow_up_failing_midway_is_rolled_back_and_learned_once(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str) -> None:
    """The follow-up's transaction fails after the first fact: nothing of it stays, and
    the retry learns every fact and decision exactly once."""
    agent = "midway"
    episode_id = await _closing_episode(llm_store, agent, MESSAGES)
    llm.reply_json(EXTRACTION)
    worker = llm_store.worker(worker_id="w")
    worker._retry_base_s = 0.0
    assert await worker.run_once()  # the close
    closed = await _effects(database_url, agent, episode_id)
    assert (closed["state"], closed["facts_state"], closed["facts"], closed["decisions"]) == (
        "closed", "pending", 0, 0)
    assert closed["unembedded"] == closed["chunks"] + 1

    apply = llm_store.facts.apply
    calls = 0

    async def failing_second(conn: Any, prepared: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("injected failure after the first fact")
        return await apply(conn, prepared)

    llm_store.facts.apply = failing_second  # type: ignore[method-assign]
    try:
        assert await worker.run_once()  # the follow-up fails inside its transaction
    finally:
        llm_store.facts.apply = apply  # type: ignore[method-assign]
    failed = await _effects(database_url, agent, episode_id)
    assert (failed["facts_state"], failed["facts"], failed["decisions"]) == ("pending", 0, 0)
    assert failed["unembedded"] == closed["unembedded"]  # the vectors rolled back too
    (item,) = await _work(database_url, agent, episode_id, task="episode_learn")
    assert (item["state"], item["attempts"]) == ("pending", 1)

    assert await worker.drain() == 1
    _assert_closed_once(await _effects(database_url, agent, episode_id))
    assert await worker.drain() == 0


# ------------------------------------------------------------------ SIGKILL


async def test_sigkill_during_the_llm_call_then_another_worker_finishes(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str,
        worker_process: WorkerProcess) -> None:
    """Killed mid-call: nothing was written, the item is claimed again after the lease and
    the episode is closed exactly once, with one more LLM call."""
    agent = "noor"
    episode_id = await _closing_episode(llm_store, agent, MESSAGES)
    llm.enqueue(Delayed(seconds=120, then=JSONReply(content=EXTRACTION)))  # holds the call
    await worker_process.start(database_url, llm.base_url, "doomed", "plain")

    async def request_arrived() -> bool:
        return await worker_process.alive() and len(llm.requests) == 1

    await _wait_until(request_arrived, 120, "the child worker's LLM request")
    # the worker is inside the LLM call: no transaction may be open meanwhile (principle 4)
    assert await _val(database_url, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                      "current_database() AND state LIKE 'idle in transaction%'") == 0
    await worker_process.kill()
    assert worker_process.proc is not None and worker_process.proc.returncode == -signal.SIGKILL

    (item,) = await _work(database_url, agent, episode_id)
    assert (item["state"], item["attempts"], item["locked_by"]) == ("running", 1, "doomed")
    before = await _effects(database_url, agent, episode_id)
    assert (before["state"], before["closed_events"], before["facts"], before["decisions"],
            before["chunks"]) == ("closing", 0, 0, 0, 0)

    llm.reply_json(EXTRACTION)
    assert await _recover(llm_store) == 2  # the close, then its follow-up
    _assert_closed_once(await _effects(database_url, agent, episode_id))
    (item,) = await _work(database_url, agent, episode_id)
    assert (item["task"], item["state"], item["attempts"], item["locked_by"]) == (
        "episode_close", "done", 2, "second")
    assert len(llm.requests) == 2
    assert await llm_store.worker().drain() == 0
    assert len(llm.requests) == 2


async def test_a_killed_workers_item_is_claimed_at_once_not_after_its_lease(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str,
        worker_process: WorkerProcess) -> None:
    """The dead worker held a 300 s lease; its presence lock died with its process, so a
    second worker takes the item within seconds (a lease wait would time out below)."""
    agent = "noor"
    episode_id = await _closing_episode(llm_store, agent, MESSAGES)
    llm.enqueue(Delayed(seconds=120, then=JSONReply(content=EXTRACTION)))
    await worker_process.start(database_url, llm.base_url, "doomed", "plain", lease_s=300)

    async def request_arrived() -> bool:
        return await worker_process.alive() and len(llm.requests) == 1

    await _wait_until(request_arrived, 120, "the child worker's LLM request")
    # alive, it keeps its item although another worker is ready
    assert await llm_store.worker(worker_id="second").run_once() is False
    await worker_process.kill()
    (item,) = await _work(database_url, agent, episode_id)
    assert (item["state"], item["locked_by"]) == ("running", "doomed")
    llm.reply_json(EXTRACTION)
    assert await _recover(llm_store, timeout_s=30) == 2
    _assert_closed_once(await _effects(database_url, agent, episode_id))


async def test_sigkill_after_the_answer_before_the_commit(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str,
        worker_process: WorkerProcess) -> None:
    """Killed inside the result transaction, after every row was written but before the
    commit: none of it is visible; the next worker writes the whole result once."""
    agent = "noor"
    episode_id = await _closing_episode(llm_store, agent, MESSAGES)
    llm.reply_json(EXTRACTION)
    await worker_process.start(database_url, llm.base_url, "doomed", "die-in-write")
    assert await worker_process.wait(120) == -signal.SIGKILL, worker_process.log()
    assert "result written, dying before commit" in worker_process.log()
    assert len(llm.requests) == 1
    # the call itself was paid for and is on record, although its result was lost
    assert await _llm_calls(database_url, agent) == [("episode_close", "ok")]

    before = await _effects(database_url, agent, episode_id)
    assert (before["state"], before["closed_events"], before["facts"], before["decisions"],
            before["chunks"]) == ("closing", 0, 0, 0, 0)
    assert before["summary_source"] != "llm"
    (item,) = await _work(database_url, agent, episode_id)
    assert (item["state"], item["locked_by"]) == ("running", "doomed")

    llm.reply_json(EXTRACTION)
    assert await _recover(llm_store) == 2  # the close, then its follow-up
    _assert_closed_once(await _effects(database_url, agent, episode_id))
    (item,) = await _work(database_url, agent, episode_id)
    assert (item["state"], item["attempts"], item["locked_by"]) == ("done", 2, "second")
    assert len(llm.requests) == 2
    assert await _llm_calls(database_url, agent) == [("episode_close", "ok")] * 2


async def test_paused_worker_loses_its_lease_and_its_late_result_is_dropped(
        llm_store: MemoryStore, llm: ScriptedLLMServer, database_url: str,
        worker_process: WorkerProcess) -> None:
    """SIGSTOP mid-call (a frozen VM, a long GC pause): its heartbeat stops, the lease runs
    out, a second worker closes the episode.  Resumed, the first worker gets its answer
    but the result transaction finds the lease gone and writes nothing."""
    agent = "noor"
    episode_id = await _closing_episode(llm_store, agent, MESSAGES)
    late = {**EXTRACTION, "summary": "The late answer that must never be stored. " * 8,
            "facts": [{"content": "Noor owns a green canal boat called Nettle"}],
            "decisions": [{"description": "Sell the canal boat before the move"}]}
    llm.enqueue(Delayed(seconds=2, then=JSONReply(content=late)))
    await worker_process.start(database_url, llm.base_url, "paused", "plain")

    async def request_arrived() -> bool:
        return await worker_process.alive() and len(llm.requests) == 1

    await _wait_until(request_arrived, 120, "the child worker's LLM request")
    assert worker_process.proc is not None
    os.kill(worker_process.proc.pid, signal.SIGSTOP)
    try:
        llm.reply_json(EXTRACTION)
        assert await _recover(llm_store) == 2  # the close, then its follow-up
    finally:
        os.kill(worker_process.proc.pid, signal.SIGCONT)

    async def late_result_handled() -> bool:
        return await worker_process.alive() and "run_once processed an item" in (
            worker_process.log())

    await _wait_until(late_result_handled, 30, "the resumed worker to finish its item")
    _assert_closed_once(await _effects(database_url, agent, episode_id))
    closed = await llm_store.get_episode(agent, episode_id)
    assert closed.summary == EXTRACTION["summary"]
    facts = await llm_store.facts_from_episode(agent, episode_id)
    assert sorted(f.summary for f in facts) == sorted(f["content"] for f in EXTRACTION["facts"])
    (item,) = await _work(database_url, agent, episode_id)
    assert (item["state"], item["attempts"], item["locked_by"]) == ("done", 2, "second")
    assert len(llm.requests) == 2
    assert re.search(r"result of work item \d+ dropped: lease on work item \d+ lost",
                     worker_process.log())  # LeaseLost, logged as expected, not as an error
