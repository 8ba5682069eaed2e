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

from nous_memory import MemoryStore
from nous_memory.embeddings import SentenceTransformerEmbedder
from nous_memory.testing import JSONReply, ScriptedLLMServer, ScriptStep

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
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
    """Seconds spent in each part of the close processing of one work item."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    embed_calls_in_prepare: int = 0


PHASES = Phases()
# the phase a piece of code runs in; a ContextVar because the closer embeds the chunks in
# a task concurrent with the LLM call, and a task keeps the phase it was created in
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


def instrument(store: MemoryStore, db: Any) -> None:
    """Timers around the pieces of close processing (instance attributes only; the library
    code is unchanged).  The closer's first embedding call in prepare embeds the chunks,
    the second the summary; fact and decision preparation embed their own texts."""
    closer, memories, embedder = store.closer, store.memories, store.embedder
    assert store.llm is not None
    store.llm.structured = timed_async("llm", store.llm.structured)  # type: ignore[method-assign]
    closer.prepare = timed_async("prepare", closer.prepare)  # type: ignore[method-assign]
    closer._prepare_facts = timed_async(  # type: ignore[method-assign]
        "facts_prepare", closer._prepare_facts)
    closer._prepare_decisions = timed_async(  # type: ignore[method-assign]
        "decisions_prepare", closer._prepare_decisions)
    closer.write = timed_async("write", closer.write)  # type: ignore[method-assign]

    embed_texts = memories.embed_texts

    async def labelled_embed_texts(agent: str, texts: list[str]) -> Any:
        if CURRENT.get() == "prepare":
            PHASES.embed_calls_in_prepare += 1
            label = {1: "chunk_embed", 2: "summary_embed"}.get(
                PHASES.embed_calls_in_prepare, "other_embed")
            return await timed_async(label, embed_texts)(agent, texts)
        return await embed_texts(agent, texts)

    memories.embed_texts = labelled_embed_texts  # type: ignore[method-assign]

    model_embed = embedder.embed

    async def counted_model_embed(texts: Sequence[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return await model_embed(texts)
        finally:
            PHASES.seconds[f"model[{CURRENT.get()}]"] += time.perf_counter() - t0

    embedder.embed = counted_model_embed  # type: ignore[method-assign]

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


async def run(data: Path, limit: int | None) -> None:
    sessions, empty = load_sessions(data)
    if limit is not None:
        sessions = sessions[:limit]
    run_id = uuid.uuid4().hex[:8]
    agents = {s.sample_id: f"bench-{run_id}-{s.sample_id}" for s in sessions}
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="nous-bench-") as tmp:
        embedder = SentenceTransformerEmbedder()
        embedder.warm_up()
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
            instrument(store, db)

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

            per_item: list[dict[str, float]] = []
            while True:
                PHASES.seconds.clear()
                PHASES.embed_calls_in_prepare = 0
                t0 = time.perf_counter()
                if not await worker.run_once():
                    break
                phases = dict(PHASES.seconds)
                phases["total"] = time.perf_counter() - t0
                per_item.append(phases)
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
    if len(per_item) != n_episodes or sources.get("llm", 0) != n_episodes:
        print(f"# warning: {len(per_item)} items processed for {n_episodes} episodes; "
              f"summary sources {dict(sources)}", file=sys.stderr)
    totals = [p["total"] for p in per_item]
    llm_s = [p.get("llm", 0.0) for p in per_item]
    overhead = [t - x for t, x in zip(totals, llm_s, strict=True)]
    append_rate = n_messages / sum(append_s)
    calls_per_episode = calls["n"] / n_episodes
    prompt_per_episode = calls["prompt"] / n_episodes
    overhead_p50 = ms(pct(overhead, 50))

    def phase(name: str) -> list[float]:
        return [p.get(name, 0.0) for p in per_item]

    rest = [p["total"] - p.get("prepare", 0.0) - p.get("transaction", 0.0) for p in per_item]
    prepare_other = [p.get("prepare", 0.0) - sum(p.get(k, 0.0) for k in (
        "llm", "chunk_embed", "summary_embed", "facts_prepare", "decisions_prepare"))
        for p in per_item]
    model_total = [sum(v for k, v in p.items() if k.startswith("model[")) for p in per_item]
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
    print("# close time per episode: wall clock of one worker.run_once() (claim, load, chunk + "
          "embed, LLM call, embeddings, result transaction); overhead = that minus the time "
          "inside store.llm.structured")
    print(f"# written: {made['facts']} facts, {made['decisions']} decisions, {made['chunks']} "
          f"chunks; summary sources {dict(sources)}; {calls['failed']} failed LLM attempts")
    print("# chunk embedding runs concurrently with the LLM call, so the phases below can "
          "add up to more than the total")
    print("# where the close time goes, ms per episode, p50 / mean "
          "[model time inside it, p50]:")
    for label, values, key in [
            ("total", totals, None), ("llm call (excluded)", llm_s, None),
            ("chunk embedding", phase("chunk_embed"), "chunk_embed"),
            ("summary embedding", phase("summary_embed"), "summary_embed"),
            ("fact preparation (embed each fact, censor check)", phase("facts_prepare"),
             "facts_prepare"),
            ("decision preparation (embed)", phase("decisions_prepare"), "decisions_prepare"),
            ("prepare, other (chunking, rendering)", prepare_other, None),
            ("result transaction (lease check, lock, writes, commit)", phase("transaction"),
             None),
            ("  of which closer.write", phase("write"), None),
            ("claim, load episode and messages", rest, None),
            ("model time in all embeddings", model_total, None),
            ("overhead less model time (database, Python)",
             [o - m for o, m in zip(overhead, model_total, strict=True)], None)]:
        model = f" [{ms(pct(phase(f'model[{key}]'), 50)):.1f}]" if key else ""
        print(f"#   {label}: {ms(pct(values, 50)):.1f} / {ms(statistics.mean(values)):.1f}{model}")
    print(f"append_msgs_per_s: {append_rate:.1f}")
    print(f"llm_calls_per_episode: {calls_per_episode:.3f}")
    print(f"prompt_tokens_per_episode: {prompt_per_episode:.1f}")
    print(f"completion_tokens_per_episode: {calls['completion'] / n_episodes:.1f}")
    print(f"close_total_ms_p50: {ms(pct(totals, 50)):.1f}")
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
    args = parser.parse_args(argv)
    if args.limit_sessions is not None and args.limit_sessions < 1:
        parser.error("--limit-sessions must be >= 1")
    if not args.data.exists():
        parser.error(f"no data file at {args.data}")
    asyncio.run(run(args.data, args.limit_sessions))


if __name__ == "__main__":
    main()
