"""Episode close: what the close pipeline costs on top of its one LLM call.

    python bench/episode_close.py [--data ../shared/data/locomo/locomo-dev.json]
                                  [--limit-sessions N]

Every LoCoMo session becomes an episode (started at the session's date and time, the
two speakers as participants, each turn one message appended in one call per session),
which is then closed.  A worker processes the closes against a ScriptedLLMServer on
127.0.0.1 that answers, through the real openai client, a fixed-size extraction built
from the session's own transcript (a 120-word summary, 3 facts, 1 decision), so facts
differ between sessions.  Runs on a fresh embedded PostgreSQL in a temporary directory,
or on NOUS_MEMORY_DATABASE_URL when set (under new agent ids).

Prints ``name: value`` lines, the headline (close_overhead_ms_p50) last; ``#`` lines say
what was measured, where the close time goes, and whether the targets are met.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import functools
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from backends import add_backend_option, local_embedder
from shared_data import shared_data

from nous_memory import MemoryStore
from nous_memory.testing import JSONReply, ScriptedLLMServer, ScriptStep

DEFAULT_DATA = shared_data("locomo/locomo-dev.json")
TARGET_CALLS_PER_EPISODE = 1.0
TARGET_OVERHEAD_MS = 50.0
SUMMARY_WORDS = 120
FACT_WORDS = 14

# ------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Session:
    sample_id: str
    number: int
    started_at: datetime
    speakers: tuple[str, str]
    messages: list[dict[str, Any]]


def parse_when(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" (taken as UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_sessions(path: Path) -> tuple[list[Session], int]:
    """Every session with turns, in file order; and how many dated sessions had none."""
    sessions: list[Session] = []
    empty = 0
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        speakers = (conv["speaker_a"], conv["speaker_b"])
        numbers = sorted(int(m.group(1)) for key in conv
                         if (m := re.fullmatch(r"session_(\d+)_date_time", key)))
        for n in numbers:
            turns = conv.get(f"session_{n}") or []
            if not turns:
                empty += 1
                continue
            when = parse_when(conv[f"session_{n}_date_time"])
            messages = []
            for turn in turns:
                content = turn["text"]
                if turn.get("blip_caption"):
                    content += f" [shares a photo: {turn['blip_caption']}]"
                # both speakers are people, neither is the assistant: role "user", name set
                messages.append({"role": "user", "name": turn["speaker"], "content": content,
                                 "metadata": {"dia_id": turn["dia_id"]}, "created_at": when})
            sessions.append(Session(sample["sample_id"], n, when, speakers, messages))
    return sessions, empty


# ------------------------------------------------------------------------- the scripted model

_MESSAGE = re.compile(r'<message [^>]*?name="([^"]*)"[^>]*>(.*?)</message>', re.S)


def _words(text: str) -> list[str]:
    return re.sub(r"\[shares a photo:[^\]]*\]", "", text).split()


def extraction_for(request: dict[str, Any]) -> ScriptStep:
    """A fixed-size answer made from the transcript in the request: a 120-word summary,
    3 facts (from turns at the start, middle and end) and 1 decision."""
    transcript = str(request["messages"][-1]["content"])
    turns = [(name, _words(text)) for name, text in _MESSAGE.findall(transcript)]
    turns = [(name, words) for name, words in turns if words] or [("Someone", ["nothing"])]
    names = list(dict.fromkeys(name for name, _ in turns))
    pool = [w for _, words in turns for w in words]
    while len(pool) < SUMMARY_WORDS:
        pool += pool
    summary = f"{' and '.join(names[:2])} talked. " + " ".join(pool[:SUMMARY_WORDS - 3])
    picks = [turns[0], turns[len(turns) // 2], turns[-1]]
    facts = []
    for name, words in picks:
        text = " ".join((words * 3)[:FACT_WORDS])
        facts.append({"content": f"{name} said that {text}", "subject": name,
                      "category": "person", "confidence": 0.8})
    last_name, last_words = turns[-1]
    decision = {"description": f"{last_name} decided to follow up on "
                               + " ".join((last_words * 2)[:8]),
                "outcome": "pending", "confidence": 0.6}
    return JSONReply(content={
        "title": f"Conversation between {' and '.join(names[:2])}",
        "summary": summary, "key_points": [" ".join(w[:8]) for _, w in picks],
        "outcome": None, "topics": ["conversation"], "facts": facts,
        "decisions": [decision], "lessons": []})


# ------------------------------------------------------------------------- timing

@dataclass
class Phases:
    """Seconds spent in each part of the processing of one work item, and its task."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    task: str = ""


PHASES = Phases()
# the phase a piece of code runs in (a ContextVar, so timers nest per task)
CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("phase", default="other")


def timed_async(phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        token = CURRENT.set(phase)
        t0 = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            PHASES.seconds[phase] += time.perf_counter() - t0
            CURRENT.reset(token)
    return wrapper


def instrument(store: MemoryStore, worker: Any, db: Any) -> None:
    """Timers around the pieces of close processing and its follow-up (instance attributes
    only; the library code is unchanged)."""
    assert store.llm is not None
    store.llm.structured = timed_async("llm", store.llm.structured)  # type: ignore[method-assign]
    closer, learner = store.closer, store.learner
    closer.prepare = timed_async("prepare", closer.prepare)  # type: ignore[method-assign]
    closer.write = timed_async("write", closer.write)  # type: ignore[method-assign]
    learner._prepare_facts = timed_async(  # type: ignore[method-assign]
        "facts_prepare", learner._prepare_facts)
    decisions = learner._decisions
    decisions.prepare = timed_async(  # type: ignore[method-assign]
        "decisions_prepare", decisions.prepare)
    embeddings = store.embeddings
    embeddings.embed_texts = timed_async(  # type: ignore[method-assign]
        "chunk_summary_embed", embeddings.embed_texts)

    for task, handler in list(worker._handlers.items()):
        def labelled(ctx: Any, _task: str = task, _handler: Any = handler) -> Any:
            PHASES.task = _task
            return _handler(ctx)
        worker._handlers[task] = labelled

    model_embed = store.embedder.embed

    async def counted_model_embed(texts: Sequence[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return await model_embed(texts)
        finally:
            PHASES.seconds[f"model[{CURRENT.get()}]"] += time.perf_counter() - t0

    store.embedder.embed = counted_model_embed  # type: ignore[method-assign]

    transaction = db.transaction

    @contextlib.asynccontextmanager
    async def timed_transaction() -> AsyncIterator[Any]:
        t0 = time.perf_counter()
        try:
            async with transaction() as conn:
                yield conn
        finally:
            PHASES.seconds["transaction"] += time.perf_counter() - t0

    db.transaction = timed_transaction


def ms(seconds: float) -> float:
    return seconds * 1000.0


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


# ------------------------------------------------------------------------- main


async def run(data: Path, limit: int | None, backend: str) -> None:
    sessions, empty = load_sessions(data)
    if limit is not None:
        sessions = sessions[:limit]
    run_id = uuid.uuid4().hex[:8]
    agents = {s.sample_id: f"bench-{run_id}-{s.sample_id}" for s in sessions}
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="nous-bench-") as tmp:
        embedder = local_embedder(backend)
        async with (ScriptedLLMServer(default=extraction_for) as llm,
                    MemoryStore.open(data_dir=tmp, embedder=embedder, llm_base_url=llm.base_url,
                                     llm_model="scripted") as store):
            db = store._db  # for the transaction timer only
            worker = store.worker(worker_id=f"bench-{run_id}")

            # warm-up, untimed, under its own agent: model, pool, statements, openai client
            warm_agent = f"bench-{run_id}-warmup"
            warm = await store.start_episode(warm_agent, participants=["A", "B"])
            await store.append(warm_agent, warm.id, [
                {"role": "user", "name": "A", "content": f"Warm-up line {i} about gardening."}
                for i in range(6)])
            await store.close_episode(warm_agent, warm.id)
            await worker.drain()
            instrument(store, worker, db)

            append_s: list[float] = []
            episodes: list[tuple[str, Any]] = []
            for s in sessions:
                agent = agents[s.sample_id]
                episode = await store.start_episode(agent, participants=list(s.speakers),
                                                    started_at=s.started_at)
                t0 = time.perf_counter()
                await store.append(agent, episode.id, s.messages)
                append_s.append(time.perf_counter() - t0)
                await store.close_episode(agent, episode.id)
                episodes.append((agent, episode.id))
            requests_before = len(llm.requests)

            per_task: dict[str, list[dict[str, float]]] = defaultdict(list)
            while True:
                PHASES.seconds.clear()
                PHASES.task = ""
                t0 = time.perf_counter()
                if not await worker.run_once():
                    break
                phases = dict(PHASES.seconds)
                phases["total"] = time.perf_counter() - t0
                per_task[PHASES.task].append(phases)
            requests = len(llm.requests) - requests_before

            database = ("embedded, temporary data dir" if store.embedded
                        else "NOUS_MEMORY_DATABASE_URL")
            sources: dict[str, int] = defaultdict(int)
            for agent, ident in episodes:
                sources[(await store.get_episode(agent, ident)).summary_source.value] += 1
            conn = await asyncpg.connect(store.dsn)
            try:
                calls = await conn.fetchrow(
                    "SELECT count(*) AS n, coalesce(sum(prompt_tokens), 0) AS prompt, "
                    "coalesce(sum(completion_tokens), 0) AS completion, "
                    "count(*) FILTER (WHERE outcome <> 'ok') AS failed "
                    "FROM llm_calls WHERE agent_id = ANY($1::text[]) "
                    "AND purpose LIKE 'episode_close%'", list(set(agents.values())))
                made = await conn.fetchrow(
                    "SELECT (SELECT count(*) FROM facts f JOIN memories m ON m.agent_id = "
                    "f.agent_id AND m.id = f.memory_id WHERE f.agent_id = ANY($1::text[])) "
                    "AS facts, (SELECT count(*) FROM decisions WHERE agent_id = "
                    "ANY($1::text[])) AS decisions, (SELECT count(*) FROM episode_chunks "
                    "WHERE agent_id = ANY($1::text[])) AS chunks",
                    list(set(agents.values())))
            finally:
                await conn.close()
    load_after = os.getloadavg()[0]

    n_episodes = len(episodes)
    n_messages = sum(len(s.messages) for s in sessions)
    closes, learns = per_task.get("episode_close", []), per_task.get("episode_learn", [])
    others = {task: len(v) for task, v in per_task.items()
              if task not in ("episode_close", "episode_learn")}
    if (len(closes) != n_episodes or len(learns) != n_episodes or others
            or sources.get("llm", 0) != n_episodes):
        print(f"# warning: {len(closes)} closes and {len(learns)} follow-ups processed for "
              f"{n_episodes} episodes (other items: {others}); summary sources "
              f"{dict(sources)}", file=sys.stderr)
    totals = [p["total"] for p in closes]
    llm_s = [p.get("llm", 0.0) for p in closes]
    overhead = [t - x for t, x in zip(totals, llm_s, strict=True)]
    learn_totals = [p["total"] for p in learns]
    append_rate = n_messages / sum(append_s)
    calls_per_episode = calls["n"] / n_episodes
    prompt_per_episode = calls["prompt"] / n_episodes
    overhead_p50 = ms(pct(overhead, 50))

    def phase(items: list[dict[str, float]], name: str) -> list[float]:
        return [p.get(name, 0.0) for p in items]

    def model_time(items: list[dict[str, float]]) -> list[float]:
        return [sum(v for k, v in p.items() if k.startswith("model[")) for p in items]

    close_rest = [p["total"] - p.get("prepare", 0.0) - p.get("transaction", 0.0)
                  for p in closes]
    prepare_other = [p.get("prepare", 0.0) - p.get("llm", 0.0) for p in closes]
    learn_rest = [p["total"] - p.get("chunk_summary_embed", 0.0) - p.get("facts_prepare", 0.0)
                  - p.get("decisions_prepare", 0.0) - p.get("transaction", 0.0)
                  for p in learns]
    turns = [len(s.messages) for s in sessions]

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    print(f"# episode_close: {n_episodes} LoCoMo sessions as episodes ({n_messages} messages, "
          f"{statistics.mean(turns):.1f} per session, {empty} dated sessions without turns "
          f"skipped) from {data.name}; database: {database}; model {embedder.model_name}; "
          f"warm-up excluded")
    print(f"# machine: {os.cpu_count()} CPUs, 1-min load average {load_before:.2f} at start, "
          f"{load_after:.2f} at end")
    print("# messages: role 'user' with name = speaker for both speakers (two people, neither "
          "is the assistant); content = text + ' [shares a photo: caption]' when captioned; "
          "created_at = the session's date and time; one append call per session")
    print(f"# LLM: ScriptedLLMServer on 127.0.0.1 in this process (real openai client), a "
          f"fixed-size answer built from each transcript: {SUMMARY_WORDS}-word summary, 3 facts, "
          f"1 decision; {requests} requests for {n_episodes} closes")
    print("# a close is two work items: the close (claim, load, chunk, the LLM call, one result "
          "transaction: chunks, summary, episode fields, extraction kept) and its follow-up "
          "(embed chunks + summary, prepare and learn facts and decisions, one transaction); "
          "close overhead = the close item's wall clock minus the time inside "
          "store.llm.structured; the follow-up runs after it, off the close path")
    print(f"# written: {made['facts']} facts, {made['decisions']} decisions, {made['chunks']} "
          f"chunks; summary sources {dict(sources)}; {calls['failed']} failed LLM attempts")
    print("# where the time goes, ms per episode, p50 / mean [model time inside it, p50]:")
    rows: list[tuple[str, list[float], list[float] | None]] = [
        ("close item, total", totals, None), ("  llm call (excluded)", llm_s, None),
        ("  prepare less the llm call (chunking, rendering)", prepare_other, None),
        ("  result transaction (lease check, lock, writes, commit)",
         phase(closes, "transaction"), None),
        ("    of which closer.write", phase(closes, "write"), None),
        ("  claim, load episode and messages", close_rest, None),
        ("  model time (embeddings) inside the close", model_time(closes), None),
        ("follow-up item, total", learn_totals, model_time(learns)),
        ("  chunk + summary embedding", phase(learns, "chunk_summary_embed"),
         phase(learns, "model[chunk_summary_embed]")),
        ("  fact preparation (censors, one embedding call)", phase(learns, "facts_prepare"),
         phase(learns, "model[facts_prepare]")),
        ("  decision preparation (embed)", phase(learns, "decisions_prepare"),
         phase(learns, "model[decisions_prepare]")),
        ("  result transaction (learn facts, write decisions, vectors)",
         phase(learns, "transaction"), None),
        ("  claim, loads", learn_rest, None)]
    for label, values, model in rows:
        extra = f" [{ms(pct(model, 50)):.1f}]" if model is not None else ""
        print(f"#   {label}: {ms(pct(values, 50)):.1f} / {ms(statistics.mean(values)):.1f}{extra}")
    print(f"append_msgs_per_s: {append_rate:.1f}")
    print(f"llm_calls_per_episode: {calls_per_episode:.3f}")
    print(f"prompt_tokens_per_episode: {prompt_per_episode:.1f}")
    print(f"completion_tokens_per_episode: {calls['completion'] / n_episodes:.1f}")
    print(f"close_total_ms_p50: {ms(pct(totals, 50)):.1f}")
    print(f"followup_ms_p50: {ms(pct(learn_totals, 50)):.1f}")
    print(f"llm_call_ms_p50: {ms(pct(llm_s, 50)):.1f}")
    print(f"close_overhead_ms_p95: {ms(pct(overhead, 95)):.1f}")
    print(f"# target llm_calls_per_episode = {TARGET_CALLS_PER_EPISODE}: "
          f"{verdict(calls_per_episode == TARGET_CALLS_PER_EPISODE)} ({calls_per_episode:.3f})")
    print(f"# target close_overhead_ms_p50 <= {TARGET_OVERHEAD_MS:.0f}: "
          f"{verdict(overhead_p50 <= TARGET_OVERHEAD_MS)} ({overhead_p50:.1f})")
    print(f"close_overhead_ms_p50: {overhead_p50:.1f}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"LoCoMo JSON (default {DEFAULT_DATA})")
    parser.add_argument("--limit-sessions", type=int, default=None,
                        help="only the first N sessions (default: all)")
    add_backend_option(parser)
    args = parser.parse_args(argv)
    if args.limit_sessions is not None and args.limit_sessions < 1:
        parser.error("--limit-sessions must be >= 1")
    if not args.data.exists():
        parser.error(f"no data file at {args.data}")
    asyncio.run(run(args.data, args.limit_sessions, args.backend))


if __name__ == "__main__":
    main()
