"""Every operation of the Python API and every maintenance job, on any database.

    python bench/operations.py [--database-url URL] [--agents 3] [--load-agents 20]
                               [--load-memories 2000] [--recalls 200] [--scripted-llm]
                               [--baseline-database-url URL]

Meant for checking a deployment (plain PostgreSQL 15-18, or a Citus coordinator,
docs/scaling.md) with the project's own calls.  For each of ``--agents`` agents of this
run (ids unique to the run): every ``MemoryStore`` operation (memories, facts, episodes
and their close by the worker, working memory, cold storage, recall, context, expand,
the owner views, export, import dry and real, forget and re-import), then every job in
``jobs.JOBS`` (dry run, then real), each reported as ``# ok NAME`` or ``# FAILED NAME:
error``.  Every agent's content carries a word of its own: the isolation check reads each
agent back (list, recall, context, export) and counts rows or text of another agent.
Then a load: ``--load-memories`` memories over ``--load-agents`` agents and
``--recalls`` recalls and context assemblies with precomputed query embeddings (what the
database does, not the model), whose p50s are printed.  ``--baseline-database-url``
(a plain PostgreSQL beside a Citus coordinator) gets the same load in the same run, each
query on one and then the other: its p50s and the ratios of the two are printed too.

``--scripted-llm`` serves the LLM paths (episode extraction, summaries, compress,
backfill) from ``nous_memory.testing``'s scripted server answering every request with a
minimal reply valid against its JSON schema; without it (and without
NOUS_MEMORY_LLM_*), those paths run without an LLM, as configured stores do.

Prints ``name: value`` lines; the headline (``operations_failed``: operations and job
runs that raised, plus isolation violations; goal 0) last.  Exits 1 when it is not 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import random
import sys
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from schema_replies import schema_reply

from jobs import JOBS, JobRunner
from nous_memory import MemoryStore
from nous_memory.testing import ScriptedLLMServer

WORDS = ("budget Lisbon sister vegetarian deadline Tuesday invoice migration coffee "
         "marathon doctor flight refund allergy birthday recipe timeout gym promotion "
         "report staging contract hiring release rotation backup pricing survey").split()
LONG_AGO = timedelta(days=400)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q * 100)) if values else float("nan")


class Report:
    def __init__(self) -> None:
        self.ok = 0
        self.failed: list[str] = []

    async def run(self, name: str, call: Callable[[], Awaitable[Any]]) -> Any:
        try:
            result = await call()
        except Exception as exc:  # every failure is reported, the run goes on
            first = str(exc).splitlines()[0] if str(exc) else ""
            self.failed.append(name)
            print(f"# FAILED {name}: {type(exc).__name__}: {first[:300]}", flush=True)
            if os.environ.get("OPERATIONS_TRACEBACK"):
                traceback.print_exc()
            return None
        self.ok += 1
        print(f"# ok {name}", flush=True)
        return result


async def agent_operations(store: MemoryStore, report: Report, agent: str, marker: str,
                           ) -> None:
    """Every per-agent operation of the Python API, in an order where each finds what it
    needs; ``marker`` is a word only this agent's content has."""
    r, ended = report.run, datetime.now(UTC) - LONG_AGO
    fact = await r("remember fact", lambda: store.remember(
        agent, "fact", content=f"{marker} prefers tea", subject=marker))
    await r("remember decision", lambda: store.remember(
        agent, "decision", description=f"{marker} chose Lisbon for the offsite",
        outcome="success", confidence=0.8))
    await r("remember procedure", lambda: store.remember(
        agent, "procedure", name=f"{marker} release", core_patterns=["tag", "build"],
        implementation_notes=[f"note {i} about {marker}" for i in range(12)],
        activation_count=9, success_count=1, failure_count=8, effectiveness=0.1))
    await r("remember censor", lambda: store.remember(
        agent, "censor", trigger_pattern=f"{marker} password", action="warn",
        reason="secrets", activation_count=9, false_positive_count=8))
    old = await r("remember old episode", lambda: store.remember(
        agent, "episode", title=f"{marker} kitchen", detail=f"{marker} compared quotes. " * 300,
        started_at=(ended - timedelta(hours=1)).isoformat(), ended_at=ended.isoformat()))
    later = ended + timedelta(days=1)  # past archive_episodes' cut below: the jobs' episode
    await r("remember old episode 2", lambda: store.remember(
        agent, "episode", title=f"{marker} garden", detail=f"{marker} planted beans. " * 300,
        started_at=(later - timedelta(hours=1)).isoformat(), ended_at=later.isoformat()))
    await r("remember_many", lambda: store.remember_many(agent, [
        {"kind": "fact", "content": f"{marker} {w} note", "subject": marker}
        for w in WORDS[:8]]))
    if fact is not None:
        await r("get", lambda: store.get(agent, fact.id))
        await r("update", lambda: store.update(agent, fact.id, importance=0.9))
        await r("history", lambda: store.history(agent, fact.id))
        await r("resolve", lambda: store.resolve(agent, str(fact.id)))
        await r("expand fact", lambda: store.expand(agent, fact.id))
        await r("fact_history", lambda: store.fact_history(agent, fact.id))
    await r("counts", lambda: store.counts(agent))
    await r("list", lambda: store.list(agent, kind="fact", limit=5))
    for i in range(4):  # confirmations: the lifecycle job promotes the fact
        await r(f"learn_fact {i}", lambda: store.learn_fact(
            agent, f"{marker} owns a red bicycle", subject=marker))
    await r("learn_fact change", lambda: store.learn_fact(
        agent, f"{marker} lives in Porto", subject=marker))
    await r("learn_fact change 2", lambda: store.learn_fact(
        agent, f"{marker} lives in Lisbon", subject=marker))
    episode = await r("start_episode", lambda: store.start_episode(
        agent, title=f"{marker} planning", participants=["user", "assistant"]))
    if episode is not None:
        await r("append", lambda: store.append(agent, episode.id, [
            {"role": "user" if i % 2 == 0 else "assistant",
             "content": f"{marker} message {i}: the {WORDS[i % len(WORDS)]} is due Friday."}
            for i in range(12)]))
        await r("transcript", lambda: store.transcript(agent, episode.id))
        await r("get_episode", lambda: store.get_episode(agent, episode.id))
        await r("set_conversation_policy", lambda: store.set_conversation_policy(
            agent, trigger_messages=40))
        await r("conversation_policy", lambda: store.conversation_policy(agent))
        await r("build_prompt", lambda: store.build_prompt(
            agent, episode.id, "You are helpful.", 2000, query=f"what is due {marker}"))
        await r("summarize_conversation", lambda: store.summarize_conversation(
            agent, episode.id, force=True))
        await r("conversation_summary", lambda: store.conversation_summary(agent, episode.id))
        await r("summary_history", lambda: store.summary_history(agent, episode.id))
        await r("edit_message", lambda: store.edit_message(
            agent, episode.id, 1, f"{marker} edited message"))
        await r("delete_message", lambda: store.delete_message(agent, episode.id, 2))
        await r("close_episode", lambda: store.close_episode(agent, episode.id))
        await r("worker drain", lambda: store.worker(worker_id=f"ops-{agent}").drain())
        await r("facts_from_episode", lambda: store.facts_from_episode(agent, episode.id))
        await r("learned_from_episode", lambda: store.learned_from_episode(agent, episode.id))
    await r("ingest", lambda: store.ingest(agent, [{
        "started_at": (ended - timedelta(days=1)).isoformat(), "key": f"{agent}-s1",
        "title": f"{marker} history", "turns": [
            {"role": "user", "content": f"{marker} asked about the {w}"} for w in WORDS[:6]]}]))
    await r("ingest_status", lambda: store.ingest_status(agent))
    await r("worker drain after ingest", lambda: store.worker(worker_id=f"ops-{agent}").drain())
    await r("recall", lambda: store.recall(agent, f"what does {marker} prefer", k=5))
    await r("assemble_context", lambda: store.assemble_context(
        agent, f"what does {marker} prefer", budget_tokens=800))
    if old is not None:
        await r("archive_episodes", lambda: store.archive_episodes(
            agent, ended_before=ended + timedelta(seconds=1)))
        await r("expand archived", lambda: store.expand(agent, old.id))
        await r("restore", lambda: store.restore(agent, old.id))
    gone = await r("remember to delete", lambda: store.remember(
        agent, "fact", content=f"{marker} temporary note"))
    if gone is not None:
        await r("delete", lambda: store.delete(agent, gone.id))
        await r("restore_deleted", lambda: store.restore_deleted(agent, gone.id))
        await r("delete purge", lambda: store.delete(agent, gone.id, purge=True))
    await r("llm_usage", lambda: store.llm_usage(agent))
    await r("llm_usage_by_day", lambda: store.llm_usage_by_day(agent))
    await r("agent_overview", lambda: store.agent_overview(agent))
    await r("fact_conflicts", lambda: store.fact_conflicts(agent))
    await r("work_queue", lambda: store.work_queue(agent))


async def portability(store: MemoryStore, report: Report, agent: str) -> None:
    """Export, import (dry and into a copy), forget, and import the export back."""
    r = report.run
    out = io.BytesIO()
    if await r("export_agent_to", lambda: store.export_agent_to(agent, out)) is None:
        return
    data = out.getvalue()
    await r("import_agent dry_run", lambda: store.import_agent(io.BytesIO(data), dry_run=True))
    await r("import_agent again (skips)", lambda: store.import_agent(io.BytesIO(data)))
    await r("forget_agent", lambda: store.forget_agent(agent, actor="bench"))
    await r("import_agent after forget", lambda: store.import_agent(io.BytesIO(data)))


async def close_without_llm(report: Report, overrides: dict[str, Any], agent: str,
                            marker: str) -> None:
    """An episode closed by a store without an LLM (its facts from the rules), for the
    backfill job to queue for the LLM upgrade."""
    plain = {k: v for k, v in overrides.items() if not k.startswith("llm_")}
    async with MemoryStore.open(**plain, llm_base_url=None, llm_model=None) as store:
        episode = await report.run("start_episode without LLM", lambda: store.start_episode(
            agent, title=f"{marker} without a model"))
        if episode is None:
            return
        await report.run("append without LLM", lambda: store.append(agent, episode.id, [
            {"role": "user", "content": f"{marker} said the invoice is due Monday."}]))
        await report.run("close_episode without LLM",
                         lambda: store.close_episode(agent, episode.id))
        await report.run("worker drain without LLM",
                         lambda: store.worker(worker_id="ops-plain").drain())


async def service_operations(store: MemoryStore, report: Report, tag: str) -> None:
    r = report.run
    await r("agents", lambda: store.agents(limit=50))
    await r("service_gauges", lambda: store.service_gauges())
    await r("job_history", lambda: store.job_history(limit=5))
    await r("create_key", lambda: store.create_key(f"{tag}-key", role="read-only",
                                                     agents=[f"{tag}-0"]))
    await r("list_keys", lambda: store.list_keys())
    await r("rotate_key", lambda: store.rotate_key(f"{tag}-key"))
    await r("revoke_key", lambda: store.revoke_key(f"{tag}-key"))
    await r("health", lambda: store.health())


async def run_jobs(store: MemoryStore, report: Report) -> None:
    """Every job, dry then real; the clock is far ahead so every age threshold passes
    (retention needs NOUS_MEMORY_RETENTION_DAYS, which main() sets when unset)."""
    runner = JobRunner(store, clock=lambda: datetime.now(UTC) + LONG_AGO)
    # backfill while the episodes are hot, trim before archive takes them
    for name in sorted(JOBS, key=lambda job: {"backfill": 0, "trim": 1}.get(job, 2)):
        for dry in (True, False):
            label = f"job {name}{' dry_run' if dry else ''}"

            async def job(name: str = name, dry: bool = dry, label: str = label) -> Any:
                run = await runner.run(name, dry_run=dry)
                if run.status == "failed":
                    raise RuntimeError(run.error or "failed")
                print(f"# {label}: {run.status} {dict(run.counts)} {run.note or ''}")
                return run

            await report.run(label, job)
    await report.run("worker drain after jobs", lambda: store.worker(worker_id="ops").drain())


# what every agent's content has in common (and no marker: a query is echoed back, and
# the extraction it queues is in the agent's export)
SHARED_QUERIES = ("what does he prefer", "who lives in Lisbon", "what was planned",
                  "release notes", "kitchen quotes")


async def seen_by(store: MemoryStore, agent: str) -> list[str]:
    """Every text the agent reads back through list, recall, context and export."""
    seen: list[str] = []
    cursor = None
    while True:
        page = await store.list(agent, limit=100, cursor=cursor,
                                status=["active", "archived", "superseded", "deleted"])
        seen += [item.summary or "" for item in page.items]
        cursor = page.next_cursor
        if not cursor:
            break
    for query in SHARED_QUERIES:
        hits = await store.recall(agent, query, k=20)
        seen += [item.text for item in hits.items]
        context = await store.assemble_context(agent, query, budget_tokens=2000)
        seen.append(context.model_dump_json())
    out = io.BytesIO()
    await store.export_agent_to(agent, out)
    seen.append(out.getvalue().decode())
    return seen


async def isolation(store: MemoryStore, report: Report, agents: dict[str, str]) -> int:
    """Rows or text of another agent seen by each agent through list, recall, context and
    export: each agent's content carries its own marker word."""
    violations = 0
    for agent, marker in agents.items():
        others = [m for a, m in agents.items() if a != agent]
        seen = await report.run(f"isolation reads of {agent}",
                                lambda agent=agent: seen_by(store, agent))
        leaks = [(other, text) for text in seen or [] for other in others if other in text]
        for other, text in leaks[:3]:
            at = text.index(other)
            print(f"# ISOLATION {agent} read {other}: ...{text[max(0, at - 80):at + 40]!r}")
        bad = len(leaks)
        if marker not in "".join(seen or []):
            print(f"# ISOLATION {agent} did not see its own rows")
            bad += 1
        if bad:
            print(f"# ISOLATION {agent} saw {bad} texts of other agents")
        violations += bad
    return violations


async def load(stores: list[MemoryStore], tag: str, agents: int, memories: int,
               recalls: int) -> list[tuple[list[float], list[float]]]:
    """The same facts in each store, then each query on each store in turn (so a change
    of the machine's load falls on all of them): recall and context times per store."""
    rng = random.Random(7)
    names = [f"{tag}-load-{i}" for i in range(agents)]
    per = max(1, memories // agents)
    for name in names:
        items = [{"kind": "fact", "content": " ".join(rng.choices(WORDS, k=8)),
                  "subject": rng.choice(WORDS)} for _ in range(per)]
        for store in stores:
            for start in range(0, len(items), 500):
                await store.remember_many(name, items[start:start + 500])
    queries = [" ".join(rng.choices(WORDS, k=5)) for _ in range(recalls)]
    vectors = [np.asarray(v) for v in await stores[0].embedder.embed(queries)]
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in stores]
    for store in stores:
        await store.recall(names[0], queries[0], query_embedding=vectors[0])  # warm
    for i, (query, vector) in enumerate(zip(queries, vectors, strict=True)):
        agent = names[i % len(names)]
        for store, (recall_ms, context_ms) in zip(stores, times, strict=True):
            t0 = time.perf_counter()
            await store.recall(agent, query, k=10, query_embedding=vector)
            t1 = time.perf_counter()
            await store.assemble_context(agent, query, budget_tokens=1000,
                                         query_embedding=vector)
            t2 = time.perf_counter()
            recall_ms.append((t1 - t0) * 1000)
            context_ms.append((t2 - t1) * 1000)
    return times


async def main(args: argparse.Namespace) -> int:
    os.environ.setdefault("NOUS_MEMORY_RETENTION_DAYS", "30")
    overrides: dict[str, Any] = {}
    if args.database_url:
        overrides["database_url"] = args.database_url
    llm: ScriptedLLMServer | None = None
    if args.scripted_llm:
        llm = ScriptedLLMServer(default=schema_reply)
        await llm.__aenter__()
        overrides |= {"llm_base_url": llm.base_url, "llm_model": "scripted"}
    tag = f"ops{uuid.uuid4().hex[:6]}"
    report = Report()
    try:
        async with MemoryStore.open(**overrides) as store:
            info = await store.health()
            print(f"# server {info['database']['server_version']} pgvector "
                  f"{info['database']['pgvector_version']}, reads: "
                  f"{info['database']['reads']}")
            agents = {f"{tag}-{i}": f"zq{tag}m{i}" for i in range(args.agents)}
            for agent, marker in agents.items():
                await agent_operations(store, report, agent, marker)
                if llm is not None:
                    await close_without_llm(report, overrides, agent, marker)
            await service_operations(store, report, tag)
            await run_jobs(store, report)
            await portability(store, report, next(iter(agents)))
            violations = await isolation(store, report, agents)
            async with contextlib.AsyncExitStack() as stack:
                stores = [store]
                if args.baseline_database_url:
                    stores.append(await stack.enter_async_context(MemoryStore.open(
                        database_url=args.baseline_database_url)))
                times = await load(stores, tag, args.load_agents, args.load_memories,
                                   args.recalls)
            (recall_ms, context_ms), baseline = times[0], times[1] if len(times) > 1 else None
    finally:
        if llm is not None:
            await llm.__aexit__(None, None, None)
    job_failed = sum(1 for name in report.failed if name.startswith("job "))
    print(f"operations_ok: {report.ok}")
    print(f"jobs_failed: {job_failed}")
    print(f"isolation_violations: {violations}")
    print(f"recall_ms_p50: {pct(recall_ms, 0.5):.2f}")
    print(f"context_ms_p50: {pct(context_ms, 0.5):.2f}")
    if baseline is not None:
        recall_p50, context_p50 = pct(baseline[0], 0.5), pct(baseline[1], 0.5)
        print(f"baseline_recall_ms_p50: {recall_p50:.2f}")
        print(f"baseline_context_ms_p50: {context_p50:.2f}")
        print(f"recall_over_baseline: {pct(recall_ms, 0.5) / recall_p50:.2f}")
        print(f"context_over_baseline: {pct(context_ms, 0.5) / context_p50:.2f}")
    failed = len(report.failed) + violations
    print(f"operations_failed: {failed}")
    return 1 if failed else 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None,
                        help="default: NOUS_MEMORY_DATABASE_URL, else the embedded server")
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--load-agents", type=int, default=20)
    parser.add_argument("--load-memories", type=int, default=2000)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--scripted-llm", action="store_true")
    parser.add_argument("--baseline-database-url", default=None,
                        help="a second database (plain PostgreSQL) given the same load")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
