"""LoCoMo evidence recall of ``MemoryStore.recall`` (no LLM anywhere).

    python bench/locomo_recall.py [--data PATH] [--k 5,10,25] [--conversations N]
                                  [--sessions N] [--trim-all] [--archive-all]

Ingest goes through the real write path: one agent per conversation, one episode per
session (started at the session's date), each turn one message (speaker_a as ``user``,
speaker_b as ``assistant``, ``name`` = the speaker, the shared photo's caption appended
to the text, ``{"dia_id": ...}`` as metadata), every episode closed without an LLM, then
the store's worker drains the queue so all close processing and embedding is done before
the first question.  Each question is then asked with ``recall`` against its own
conversation's agent.

Scoring follows the data README: evidence entries are split on ';', ids that are not in
the conversation are ignored, questions left without evidence are skipped.  k counts
distinct turns in rank order: an item covering several turns takes that many places,
an item covering none (a summary, a fact) takes one.  recall@k = |evidence in the first
k places| / |evidence|, averaged over questions.  ``--conversations N`` and ``--sessions N``
(quick runs) ingest only the first N conversations and the first N sessions of each; the
evidence outside what was ingested is then ignored like any unknown id.

With ``--trim-all`` the questions are asked again after the trim job's code path ran
on every episode (``store.maintenance.trim`` with its clock past the trim age: each
transcript's messages beyond the hot head to cold storage; chunks stay hot); with
``--archive-all`` again after the archive job's (``store.archive_episodes``: detail and
transcript to cold storage; summaries, chunks and embeddings stay hot).  The report is of
the last state, with ``trim_recall_ratio`` / ``archive_recall_ratio`` (recall@10 cat 1-4
in that state / as ingested; the target is >= 0.95).

Runs on a fresh embedded PostgreSQL in a temporary directory, or on
NOUS_MEMORY_DATABASE_URL when set (under new agent ids).  Prints ``name: value`` lines,
the headline ``locomo_recall@10_cat1-4`` last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from backends import add_backend_option

from nous_memory import MemoryStore
from nous_memory.context.recall import RecallItem

ROOT = Path(__file__).resolve().parents[1]
DATA_REL = Path("shared") / "data" / "locomo" / "locomo-dev.json"


def default_data() -> Path:
    """``../shared/data/...`` beside the repo root; from a git worktree nested deeper, the
    nearest ancestor that has it."""
    for parent in ROOT.parents:
        if (parent / DATA_REL).is_file():
            return parent / DATA_REL
    return ROOT.parent / DATA_REL


SESSION_KEY = re.compile(r"session_(\d+)")
CATEGORIES = (1, 2, 3, 4, 5)
HEADLINE_K = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    sample_id: str
    sessions: list[tuple[datetime, list[dict[str, Any]]]]  # (started_at, messages)
    questions: list[Question]
    skipped: int  # questions without usable evidence


def session_time(text: str) -> datetime:
    """LoCoMo writes "1:56 pm on 8 May, 2023"; taken as UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_message(turn: dict[str, Any], role: str, at: datetime) -> dict[str, Any]:
    text = str(turn.get("text") or "")
    caption = turn.get("blip_caption")
    if caption:  # the shared photo is part of what was said, not evidence
        text = f"{text} [shares a photo of {caption}]".strip()
    # both speakers are people of the conversation (people/), whatever their role
    return {"role": role, "name": turn["speaker"], "user": turn["speaker"], "content": text,
            "created_at": at, "metadata": {"dia_id": turn["dia_id"]}}


def load(path: Path, max_sessions: int = 0) -> list[Conversation]:
    out: list[Conversation] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
        numbers = sorted(int(m.group(1)) for key in conv
                         if (m := SESSION_KEY.fullmatch(key)) and conv[key])
        numbers = numbers[:max_sessions] if max_sessions else numbers
        sessions = []
        known: set[str] = set()
        for n in numbers:
            started = session_time(conv[f"session_{n}_date_time"])
            turns = conv[f"session_{n}"]
            # one second apart keeps the turns' order visible in their timestamps
            sessions.append((started, [
                turn_message(t, roles.get(t["speaker"], "user"), started + timedelta(seconds=i))
                for i, t in enumerate(turns)]))
            known.update(t["dia_id"] for t in turns)
        questions, skipped = [], 0
        for qa in sample["qa"]:
            ids = {part.strip() for entry in qa.get("evidence") or []
                   for part in str(entry).split(";")}
            evidence = frozenset(ids & known)
            if not evidence:
                skipped += 1
                continue
            questions.append(Question(text=qa["question"], category=int(qa["category"]),
                                      evidence=evidence))
        out.append(Conversation(sample_id=sample["sample_id"], sessions=sessions,
                                questions=questions, skipped=skipped))
    return out


async def ingest(store: MemoryStore, conversations: Sequence[Conversation],
                 run_id: str) -> dict[str, str]:
    """Every conversation into its own agent; returns sample_id -> agent id."""
    agents: dict[str, str] = {}
    for conv in conversations:
        agent = f"locomo-{run_id}-{conv.sample_id}"
        agents[conv.sample_id] = agent
        for started, messages in conv.sessions:
            names = list(dict.fromkeys(m["name"] for m in messages))
            episode = await store.start_episode(agent, participants=names, started_at=started)
            for first in range(0, len(messages), 500):
                await store.append(agent, episode.id, messages[first:first + 500])
            await store.close_episode(agent, episode.id)
    # close processing (rule summary, chunks) and every deferred embedding, before questions
    await store.worker(worker_id=f"bench-{run_id}").drain()
    return agents


def places(items: Sequence[RecallItem]) -> list[str | None]:
    """Ranked distinct turns; an item without turns takes one place (None)."""
    seen: set[str] = set()
    out: list[str | None] = []
    for item in items:
        ids = [m.get("dia_id") for m in item.message_metadata if isinstance(m, dict)]
        turns = [i for i in ids if isinstance(i, str)]
        if not turns:
            out.append(None)
            continue
        for turn in turns:
            if turn not in seen:
                seen.add(turn)
                out.append(turn)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Answered:
    category: int
    recall: dict[int, float]
    ms: float
    embed_ms: float
    sql_ms: float


def named_speaker(conv: Conversation, question: str) -> str | None:
    """The one speaker of the conversation the question names (a word of it), if one."""
    names = {m["name"] for _, messages in conv.sessions for m in messages}
    named = [n for n in names if re.search(rf"\b{re.escape(n)}\b", question, re.I)]
    return named[0] if len(named) == 1 else None


async def ask(store: MemoryStore, conversations: Sequence[Conversation],
              agents: dict[str, str], ks: Sequence[int], *,
              speaker: bool = False) -> list[Answered]:
    """``speaker``: each question asked by the speaker it names (``user=``), if one."""
    depth = max(ks)
    out: list[Answered] = []
    for conv in conversations:
        for q in conv.questions:
            asker = named_speaker(conv, q.text) if speaker else None
            t0 = time.perf_counter()
            result = await store.recall(agents[conv.sample_id], q.text, k=depth, user=asker)
            ms = (time.perf_counter() - t0) * 1000
            ranked = places(result.items)
            out.append(Answered(
                category=q.category, ms=ms, embed_ms=result.timings.embed_ms,
                sql_ms=result.timings.sql_ms,
                recall={k: len(q.evidence & set(ranked[:k])) / len(q.evidence) for k in ks}))
    return out


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def report(answered: Sequence[Answered], ks: Sequence[int], skipped: int,
           conversations: int, ingest_s: float,
           stages: Sequence[tuple[str, Sequence[Answered]]] = ()) -> None:
    """``stages``: (name, answers) of every state asked in order, as ingested first."""
    main = [a for a in answered if 1 <= a.category <= 4]
    print(f"# {conversations} conversations, {len(answered)} questions with evidence "
          f"({len(main)} in categories 1-4), {skipped} skipped without evidence; "
          f"ingest and drain {ingest_s:.1f} s")
    for k in ks:
        print(f"recall@{k}_cat1-4: {mean([a.recall[k] for a in main]):.4f}")
    for k in ks:
        print(f"recall@{k}_all: {mean([a.recall[k] for a in answered]):.4f}")
    focus = HEADLINE_K if HEADLINE_K in ks else ks[0]
    for cat in CATEGORIES:
        hits = [a.recall[focus] for a in answered if a.category == cat]
        print(f"# category {cat}: {len(hits)} questions")
        print(f"recall@{focus}_cat{cat}: {mean(hits):.4f}")
    times = sorted(a.ms for a in answered)
    print(f"recall_ms_p50: {statistics.median(times):.2f}")
    print(f"recall_ms_p95: {times[int(0.95 * (len(times) - 1))]:.2f}")
    # where the time goes: the query's embedding (a new text each time) and the SQL
    print(f"recall_embed_ms_p50: {statistics.median(a.embed_ms for a in answered):.2f}")
    print(f"recall_sql_ms_p50: {statistics.median(a.sql_ms for a in answered):.2f}")
    print(f"# machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    headline = mean([a.recall[focus] for a in main])
    if stages:
        ingested = mean([a.recall[focus] for a in stages[0][1] if 1 <= a.category <= 4])
        print(f"recall@{focus}_cat1-4_as_ingested: {ingested:.4f}")
        for name, asked in stages[1:]:
            state = mean([a.recall[focus] for a in asked if 1 <= a.category <= 4])
            print(f"recall@{focus}_cat1-4_after_{name}: {state:.4f}")
            print(f"# target {name}_recall_ratio >= 0.95")
            print(f"{name}_recall_ratio: {state / ingested:.4f}")
    print(f"locomo_recall@{focus}_cat1-4: {headline:.4f}")


async def run(args: argparse.Namespace) -> None:
    conversations = load(args.data, args.sessions)
    if args.conversations:
        conversations = conversations[:args.conversations]
    skipped = sum(c.skipped for c in conversations)
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="nous-locomo-") as tmp:
        opened = (MemoryStore.open(database_url=url, embedding_backend=args.backend) if url
                  else MemoryStore.open(data_dir=tmp, database_url=None,
                                        embedding_backend=args.backend))
        async with opened as store:
            t0 = time.perf_counter()
            agents = await ingest(store, conversations, uuid.uuid4().hex[:8])
            ingest_s = time.perf_counter() - t0
            # warm-up (model and connections), not timed
            await store.recall(next(iter(agents.values())), "warm up", k=1)
            answered = await ask(store, conversations, agents, args.k)
            if args.speaker:  # beside it: each question asked by the speaker it names
                spoken = await ask(store, conversations, agents, args.k, speaker=True)
                focus = HEADLINE_K if HEADLINE_K in args.k else args.k[0]
                print(f"locomo_recall@{focus}_cat1-4_speaker: "
                      f"{mean([a.recall[focus] for a in spoken if 1 <= a.category <= 4]):.4f}")
            stages: list[tuple[str, list[Answered]]] = [("ingested", answered)]
            if args.trim_all:
                await trim_all(store, conversations, agents)
                answered = await ask(store, conversations, agents, args.k)
                stages.append(("trim", answered))
            if args.archive_all:
                t0 = time.perf_counter()
                archived = 0
                for agent in agents.values():
                    archived += (await store.archive_episodes(agent)).counts["archived"]
                print(f"# archive-all: {archived} episodes archived in "
                      f"{time.perf_counter() - t0:.1f} s; the questions asked again")
                answered = await ask(store, conversations, agents, args.k)
                stages.append(("archive", answered))
            if len(stages) > 1:
                print("# the latency lines below are from the last pass: query embeddings "
                      "come from the cache")
    report(answered, args.k, skipped, len(conversations), ingest_s,
           stages if len(stages) > 1 else ())


async def trim_all(store: MemoryStore, conversations: Sequence[Conversation],
                   agents: dict[str, str]) -> None:
    """The trim job on every agent, its clock a day past the trim age of the newest turn."""
    newest = max(m["created_at"] for conv in conversations for _, messages in conv.sessions
                 for m in messages)
    now = newest + timedelta(days=store.maintenance.policy.trim_after_days + 1)
    t0 = time.perf_counter()
    counts: dict[str, int] = {}
    for agent in agents.values():
        for name, value in (await store.maintenance.trim(now=now, agent_id=agent)).counts.items():
            counts[name] = counts.get(name, 0) + value
    print(f"# trim-all: {counts.get('trimmed_transcripts', 0)} transcripts trimmed "
          f"({counts.get('trimmed_messages', 0)} messages to cold storage) in "
          f"{time.perf_counter() - t0:.1f} s; the questions asked again")


def parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("--k takes integers like 5,10,25") from None
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError("--k takes positive integers")
    return ks


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data(),
                        help="a LoCoMo-shaped JSON file (default: %(default)s)")
    parser.add_argument("--k", type=parse_ks, default=[5, 10, 25],
                        help="comma-separated cut-offs, in turns (default: 5,10,25)")
    parser.add_argument("--conversations", type=int, default=0,
                        help="only the first N conversations (quick runs)")
    parser.add_argument("--sessions", type=int, default=0,
                        help="only the first N sessions of each conversation (quick runs)")
    parser.add_argument("--trim-all", action="store_true",
                        help="ask again after trimming every episode; print the ratio")
    parser.add_argument("--archive-all", action="store_true",
                        help="ask again after archiving every episode; print the ratio")
    parser.add_argument("--speaker", action="store_true",
                        help="ask again as the speaker each question names (user=)")
    add_backend_option(parser)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        sys.exit(f"no data file at {args.data}")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
