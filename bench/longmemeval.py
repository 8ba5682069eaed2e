"""LongMemEval-S retrieval through the real write and read paths (no LLM anywhere).

    python bench/longmemeval.py [--data PATH] [--questions N] [--sessions N] [--k 5,10]
                                [--key-context on|off]

Each question is its own user (one agent): its haystack of ~48 sessions goes in through
``MemoryStore.ingest`` (the history import: one episode per session, started at the
session's date, every turn one message with ``{"turn": "<session id>#<index>"}`` as
metadata, each episode closed without an LLM), the store's worker drains the queue (rule
summaries, chunks, embeddings, rule facts), and then the question is asked with
``recall`` and ``assemble_context`` with ``as_of`` = the question's date.

Ingestion rate: turns (and cl100k tokens of turn text) per second of wall clock from
the import's first write to the drained queue.  The model-bound rate beside it, in the
same run: every text the store gave the model while ingesting a question (recorded by a
wrapper around the embedder) is embedded again by the bare model, right after that
question's ingest, and timed; ``lme_ingest_over_model`` is the ratio of the two rates.
``lme_model_full_turn_per_s`` is the bare model over each turn's whole text (its
256-token window), for comparison with what the store chose to embed.

Retrieval metrics follow the LongMemEval repository's ``src/retrieval/eval_utils.py``:
per question, the ranked items become a ranking of distinct sessions (an item's session
is the session of the turns it covers; a fact learned from a turn counts as that turn)
and of distinct turns; ``recall_any@k`` (an answer session / evidence turn in the top k),
``recall_all@k`` (all of them), ``ndcg_any@k`` (binary relevance, the first place
undiscounted as upstream).  Upstream indexes user turns only; this store indexes what it
stores (every turn, facts, summaries).  Evidence turns are the ``has_answer`` turns; a
question without any is left out of the turn-level figures.

What the assistant sees: the share of questions whose assembled context (2,000 and 4,000
tokens) holds an evidence turn's words (the whole turn, as spoken).  Knowledge updates: for
``knowledge-update`` questions whose evidence turns span sessions of different dates,
whether the newest evidence turn ranks before every older one (``lme_ku_newest_first``).

``--key-context off`` is an ablation, not the product: each turn is embedded as its own
words only, without the end of the turns before it (see ``episodes/chunks.py``,
``embedding_text``), to measure what that context buys in recall and costs in rate.

Runs on a fresh embedded PostgreSQL in a temporary directory (or
NOUS_MEMORY_DATABASE_URL, under new agent ids).  Prints ``name: value`` lines, the
headline ``lme_turn_recall_any@10`` last.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from backends import add_backend_option, local_embedder

from nous_memory import MemoryStore
from nous_memory.embeddings import Embedder, Vector
from nous_memory.episodes.chunks import KEY_CHARS, embedding_text
from nous_memory.history import HistorySession, HistoryTurn
from nous_memory.history.files import longmemeval_time
from nous_memory.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[1]
DATA_REL = Path("shared") / "data" / "longmemeval" / "longmemeval-s-dev.json.gz"
TYPES = ("temporal-reasoning", "multi-session", "knowledge-update", "single-session-user",
         "single-session-assistant", "single-session-preference")
DEPTH = 50  # recall depth: enough items for 10 distinct sessions and turns
CONTEXT_BUDGETS = (2000, 4000)


def default_data() -> Path:
    for parent in ROOT.parents:
        if (parent / DATA_REL).is_file():
            return parent / DATA_REL
    return ROOT.parent / DATA_REL


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    qid: str
    qtype: str
    text: str
    asked_at: datetime
    answer_sessions: frozenset[str]
    evidence: frozenset[str]  # turn ids "<session>#<index>" marked has_answer
    evidence_text: dict[str, str]
    turn_session: dict[str, str]
    turn_time: dict[str, datetime]
    sessions: list[HistorySession]

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def load(path: Path, limit: int, sessions: int = 0,
         types: Sequence[str] = ()) -> list[Question]:
    """The questions, interleaved by type so that ``limit`` takes every type in turn
    (only ``types`` when given)."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in raw:
        if not types or item["question_type"] in types:
            by_type[item["question_type"]].append(item)
    order: list[dict[str, Any]] = []
    while any(by_type.values()):
        for qtype in TYPES:
            if by_type[qtype]:
                order.append(by_type[qtype].pop(0))
    return [_question(item, sessions) for item in (order[:limit] if limit else order)]


def _question(item: dict[str, Any], keep: int = 0) -> Question:
    sessions: list[HistorySession] = []
    answers = set(item["answer_session_ids"])
    others = 0
    evidence: dict[str, str] = {}
    turn_session: dict[str, str] = {}
    turn_time: dict[str, datetime] = {}
    for sid, date, turns in zip(item["haystack_session_ids"], item["haystack_dates"],
                                item["haystack_sessions"], strict=True):
        if keep and sid not in answers:
            others += 1
            if others > keep:
                continue
        started = longmemeval_time(date)
        out: list[HistoryTurn] = []
        for i, turn in enumerate(turns):
            tid = f"{sid}#{i}"
            turn_session[tid] = sid
            turn_time[tid] = started
            if turn.get("has_answer"):
                evidence[tid] = turn["content"]
            out.append(HistoryTurn(role=turn["role"], content=turn["content"],
                                   at=started + timedelta(seconds=i),
                                   metadata={"turn": tid}))
        sessions.append(HistorySession(key=sid, started_at=started, turns=out))
    return Question(qid=item["question_id"], qtype=item["question_type"],
                    text=item["question"], asked_at=longmemeval_time(item["question_date"]),
                    answer_sessions=frozenset(item["answer_session_ids"]),
                    evidence=frozenset(evidence), evidence_text=evidence,
                    turn_session=turn_session, turn_time=turn_time, sessions=sessions)


class RecordingEmbedder:
    """The store's embedder, recording every text it is given (for the model-bound rate)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.texts.extend(texts)
        return await self.inner.embed(texts)


def dcg(relevances: Sequence[int], k: int) -> float:
    rel = list(relevances)[:k]
    return (rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))
            if rel else 0.0)


def ndcg_any(ranked: Sequence[str], relevant: frozenset[str], corpus: int, k: int) -> float:
    """Upstream's nDCG: binary relevance over the ranked ids, ideal = all relevant first."""
    ideal = dcg([1] * min(len(relevant), corpus), k)
    return dcg([1 if r in relevant else 0 for r in ranked], k) / ideal if ideal else 0.0


def distinct(ranked: Sequence[str | None]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for ident in ranked:
        if ident is not None and ident not in seen:
            seen.add(ident)
            out.append(ident)
    return out


def item_turns(item: Any) -> list[str]:
    """The turns an item covers: a chunk's messages, a fact's source turn."""
    ids = [m.get("turn") for m in item.message_metadata if isinstance(m, dict)]
    return [i for i in ids if isinstance(i, str)]


@dataclass(slots=True)
class Answer:
    qtype: str
    session: dict[str, float] = field(default_factory=dict)
    turn: dict[str, float] | None = None
    context: dict[int, float] = field(default_factory=dict)
    ku_newest_first: float | None = None
    recall_ms: float = 0.0
    context_ms: float = 0.0


def normalised(text: str) -> str:
    return " ".join(text.split())


async def ask(store: MemoryStore, agent: str, q: Question, ks: Sequence[int],
              explain: bool = False) -> Answer:
    t0 = time.perf_counter()
    result = await store.recall(agent, q.text, k=DEPTH, as_of=q.asked_at)
    ms = (time.perf_counter() - t0) * 1000
    turn_rank = distinct([t for item in result.items for t in item_turns(item)])
    session_rank = distinct([q.turn_session.get(t) for item in result.items
                             for t in item_turns(item)])
    answer = Answer(qtype=q.qtype, recall_ms=ms)
    n_sessions = len(q.sessions)
    for k in ks:
        top = set(session_rank[:k])
        answer.session[f"recall_any@{k}"] = float(bool(top & q.answer_sessions))
        answer.session[f"recall_all@{k}"] = float(q.answer_sessions <= top)
        answer.session[f"ndcg_any@{k}"] = ndcg_any(session_rank, q.answer_sessions,
                                                   n_sessions, k)
    if q.evidence:
        answer.turn = {}
        for k in ks:
            top = set(turn_rank[:k])
            answer.turn[f"recall_any@{k}"] = float(bool(top & q.evidence))
            answer.turn[f"recall_all@{k}"] = float(q.evidence <= top)
            answer.turn[f"ndcg_any@{k}"] = ndcg_any(turn_rank, q.evidence, q.turns, k)
        dates = {q.turn_time[t] for t in q.evidence}
        if q.qtype == "knowledge-update" and len(dates) > 1:
            newest = max(dates)
            positions = {t: turn_rank.index(t) if t in turn_rank else len(turn_rank)
                         for t in q.evidence}
            best_new = min(p for t, p in positions.items() if q.turn_time[t] == newest)
            best_old = min(p for t, p in positions.items() if q.turn_time[t] < newest)
            answer.ku_newest_first = float(best_new < best_old)
            if explain:
                print(f"# ku {q.qid} {'ok' if best_new < best_old else 'MISSED'}: "
                      f"{q.text!r}", file=sys.stderr)
                for t in sorted(q.evidence, key=lambda t: q.turn_time[t]):
                    print(f"#   {q.turn_time[t]:%Y-%m-%d} rank {positions[t]}: "
                          f"{q.evidence_text[t][:160]!r}", file=sys.stderr)
                for item in result.items[:3]:
                    print(f"#   top: {item.text[:120]!r}", file=sys.stderr)
    t0 = time.perf_counter()
    for budget in CONTEXT_BUDGETS:
        context = await store.assemble_context(agent, q.text, budget_tokens=budget,
                                               as_of=q.asked_at)
        text = normalised(context.text)
        held = any(normalised(words) in text for words in q.evidence_text.values())
        answer.context[budget] = float(held)
    answer.context_ms = (time.perf_counter() - t0) * 1000 / len(CONTEXT_BUDGETS)
    return answer


@dataclass(slots=True)
class Rates:
    turns: int = 0
    tokens: int = 0
    ingest_s: float = 0.0
    model_s: float = 0.0  # the bare model over the texts the store embedded
    full_s: float = 0.0  # the bare model over every turn's whole text
    embedded_texts: int = 0


async def ingest_one(store: MemoryStore, recorder: RecordingEmbedder, bare: Embedder,
                     agent: str, q: Question, rates: Rates, run_id: str) -> None:
    recorder.texts.clear()
    t0 = time.perf_counter()
    await store.ingest(agent, q.sessions)
    await store.worker(worker_id=f"bench-{run_id}").drain()
    rates.ingest_s += time.perf_counter() - t0
    texts = list(recorder.texts)
    rates.embedded_texts += len(texts)
    rates.turns += q.turns
    rates.tokens += sum(count_tokens(t.content) for s in q.sessions for t in s.turns)
    t0 = time.perf_counter()
    for first in range(0, len(texts), 256):
        await bare.embed(texts[first:first + 256])
    rates.model_s += time.perf_counter() - t0


async def full_turn_rate(bare: Embedder, questions: Sequence[Question], rates: Rates) -> None:
    """The bare model over each turn's whole text, on the first question only (a sample:
    it is the slowest way to embed a turn and only a point of comparison)."""
    texts = [t.content for s in questions[0].sessions for t in s.turns]
    t0 = time.perf_counter()
    for first in range(0, len(texts), 256):
        await bare.embed(texts[first:first + 256])
    rates.full_s = (time.perf_counter() - t0) / len(texts)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def report(answers: Sequence[Answer], rates: Rates, ks: Sequence[int]) -> None:
    print(f"# {len(answers)} questions, {rates.turns} turns, {rates.tokens} tokens of turn "
          f"text; the store embedded {rates.embedded_texts} texts "
          f"({rates.embedded_texts / max(rates.turns, 1):.2f} per turn)")
    ingest_rate = rates.turns / rates.ingest_s
    model_rate = rates.turns / rates.model_s if rates.model_s else float("nan")
    print(f"lme_ingest_s: {rates.ingest_s:.1f}")
    print(f"lme_ingest_tokens_per_s: {rates.tokens / rates.ingest_s:.0f}")
    print("# the bare model over the texts the store embedded, and over each turn's whole text")
    print(f"lme_model_turns_per_s: {model_rate:.2f}")
    if rates.full_s:
        print(f"lme_model_full_turn_per_s: {1 / rates.full_s:.2f}")
    print("# targets: ingest_over_model >= 0.8; ingest_turns_per_s >= 25 on a quiet machine")
    print(f"lme_ingest_over_model: {ingest_rate / model_rate:.3f}")
    print(f"lme_ingest_turns_per_s: {ingest_rate:.2f}")
    with_turns = [a for a in answers if a.turn is not None]
    for qtype in TYPES:
        group = [a for a in answers if a.qtype == qtype]
        if not group:
            continue
        turned = [a.turn["recall_any@10"] for a in group if a.turn is not None]
        print(f"# {qtype} ({len(group)}): session recall_any@5 "
              f"{mean([a.session['recall_any@5'] for a in group]):.3f}, recall_all@10 "
              f"{mean([a.session['recall_all@10'] for a in group]):.3f}; turn recall_any@10 "
              f"{mean(turned):.3f}; context@2000 "
              f"{mean([a.context[2000] for a in group]):.3f}")
    for k in ks:
        for metric in ("recall_any", "recall_all", "ndcg_any"):
            print(f"lme_session_{metric}@{k}: "
                  f"{mean([a.session[f'{metric}@{k}'] for a in answers]):.4f}")
    for k in ks:
        for metric in ("recall_any", "recall_all", "ndcg_any"):
            print(f"lme_turn_{metric}@{k}: "
                  f"{mean([a.turn[f'{metric}@{k}'] for a in with_turns if a.turn]):.4f}")
    for budget in CONTEXT_BUDGETS:
        print(f"lme_context{budget}_holds_evidence: "
              f"{mean([a.context[budget] for a in with_turns]):.4f}")
    ku = [a.ku_newest_first for a in answers if a.ku_newest_first is not None]
    print(f"# knowledge-update questions with evidence on several dates: {len(ku)}")
    if ku:
        print(f"lme_ku_newest_first: {mean(ku):.4f}")
    recall_ms = [a.recall_ms for a in answers]
    context_ms = [a.context_ms for a in answers]
    print(f"lme_recall_ms_p50: {statistics.median(recall_ms):.1f}")
    print(f"lme_recall_ms_p95: {pct(recall_ms, 0.95):.1f}")
    print(f"lme_context_ms_p50: {statistics.median(context_ms):.1f}")
    print(f"lme_context_ms_p95: {pct(context_ms, 0.95):.1f}")
    print(f"# machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    headline = mean([a.turn["recall_any@10"] for a in with_turns if a.turn])
    print(f"lme_turn_recall_any@10: {headline:.4f}")


async def run(args: argparse.Namespace) -> None:
    questions = load(args.data, args.questions, args.sessions, args.types)
    if args.key_context == "off":
        import nous_memory.episodes.learn as learn

        def turn_only(content: str, context: str, max_chars: int = KEY_CHARS) -> str:
            return embedding_text(content, "", max_chars)

        setattr(learn, "embedding_text", turn_only)  # noqa: B010 (an ablation's patch)
    run_id = uuid.uuid4().hex[:8]
    bare = local_embedder(args.backend)
    recorder = RecordingEmbedder(bare)
    rates = Rates()
    answers: list[Answer] = []
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="nous-lme-") as tmp:
        opened = (MemoryStore.open(database_url=url, embedder=recorder) if url
                  else MemoryStore.open(data_dir=tmp, database_url=None, embedder=recorder))
        async with opened as store:
            await full_turn_rate(bare, questions, rates)
            for n, q in enumerate(questions, start=1):
                agent = f"lme-{run_id}-{q.qid}"
                await ingest_one(store, recorder, bare, agent, q, rates, run_id)
                if n == 1:  # warm-up of the read path (connections, plans), not timed
                    await store.recall(agent, "warm up", k=1)
                answers.append(await ask(store, agent, q, args.k, args.explain))
                if args.verbose:
                    print(f"# {n}/{len(questions)} {q.qid} {q.qtype}: "
                          f"{q.turns} turns, ingest so far {rates.turns / rates.ingest_s:.1f} "
                          f"turns/s", file=sys.stderr)
    report(answers, rates, args.k)


def parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("--k takes integers like 5,10") from None
    if not ks or ks[0] < 1 or 10 not in ks or 5 not in ks:
        raise argparse.ArgumentTypeError("--k takes positive integers and includes 5 and 10")
    return ks


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data(),
                        help="the LongMemEval-S dev file (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=0,
                        help="only the first N questions, types interleaved (quick runs)")
    parser.add_argument("--sessions", type=int, default=0,
                        help="only the answer sessions and the first N others of each "
                             "haystack (quick runs)")
    parser.add_argument("--key-context", choices=("on", "off"), default="on",
                        help="ablation: 'off' embeds each turn without the turns before "
                             "it (default: on, as the product)")
    parser.add_argument("--k", type=parse_ks, default=[5, 10],
                        help="comma-separated cut-offs (default: 5,10)")
    parser.add_argument("--types", type=lambda t: [x for x in t.split(",") if x],
                        default=[], help=f"only these question types (of {', '.join(TYPES)})")
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    parser.add_argument("--explain", action="store_true",
                        help="each knowledge-update question's evidence ranks on stderr")
    add_backend_option(parser)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        sys.exit(f"no data file at {args.data}")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
