"""Framework adapters: what each one adds over the store call it makes, same run.

    python bench/integrations.py [--memories 500] [--turns 40] [--calls 60] [--warmup 5]

One store (an embedded PostgreSQL in a temporary directory, or NOUS_MEMORY_DATABASE_URL
when set) with one agent of --memories facts and an open episode of --turns turns.  Each
operation is timed two ways in alternation, in the same process and round: the adapter's
call, and the store call it makes (the baseline):
  - openai_agents get_items (the session's compacted history) / build_prompt;
  - openai_agents add_items (one user item) / append;
  - langchain retrieve (``ainvoke``) / recall;
  - langgraph get / list by tag; langgraph search / recall; langgraph put (an update) /
    update;
  - hermes prefetch (from a Hermes thread, as Hermes calls it) / assemble_context (when
    hermes-agent is installed).
The first --warmup rounds are not counted.  Prints per operation
``{op}_direct_ms_p50``, ``{op}_adapter_ms_p50`` and ``{op}_overhead_ms_p50`` (adapter
minus direct, of the p50s); the headline ``integrations_overhead_ms_p50`` is the largest
of those overheads.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from nous_memory import MemoryStore
from nous_memory.integrations.langchain import NousMemoryRetriever
from nous_memory.integrations.langgraph import NousMemoryStore, _key_tag
from nous_memory.integrations.openai_agents import NousMemorySession

AGENT = "bench-integrations"
QUERIES = ["Where does the user's sister live?", "Which database did we choose?",
           "What does the user eat?", "Who is on the team?", "When is the next trip?"]
Op = Callable[[int], Awaitable[object]]


async def seed(store: MemoryStore, memories: int, turns: int) -> str:
    topics = ["sister", "database", "flight", "diet", "team", "garden", "car", "music"]
    items = [{"kind": "fact", "content": f"Fact {i}: the user's {topics[i % 8]} note {i}"}
             for i in range(memories)]
    for start in range(0, len(items), 500):
        await store.remember_many(AGENT, items[start:start + 500])
    episode = await store.start_episode(AGENT, title="Bench conversation")
    await store.append(AGENT, episode.id, [
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": f"Turn {i}: about the {topics[i % 8]} and Lisbon on day {i}."}
        for i in range(2 * turns)])
    return str(episode.id)


async def operations(store: MemoryStore, episode: str) -> dict[str, tuple[Op, Op]]:
    loop = asyncio.get_running_loop()
    budget = 2000
    session = NousMemorySession(store, AGENT, episode, budget_tokens=budget)
    retriever = NousMemoryRetriever(store=store, agent_id=AGENT, k=4, loop=loop)
    graph_store = NousMemoryStore(store, agent_id=AGENT)
    await graph_store.aput(("prefs",), "seat", {"content": "Window seats, always."})
    item = await store.list(AGENT, kind="fact", tag=_key_tag(("prefs",), "seat"), limit=1)
    seat = item.items[0].id
    ops: dict[str, tuple[Op, Op]] = {
        "openai_agents_get_items": (
            lambda i: store.build_prompt(AGENT, episode, "", budget,
                                         policy=session.policy),
            lambda i: session.get_items()),
        "openai_agents_add_items": (
            lambda i: store.append(AGENT, episode, [{"role": "user", "content": f"d{i}"}]),
            lambda i: session.add_items([{"role": "user", "content": f"a{i}"}])),
        "langchain_retrieve": (
            lambda i: store.recall(AGENT, QUERIES[i % len(QUERIES)], k=4),
            lambda i: retriever.ainvoke(QUERIES[i % len(QUERIES)])),
        "langgraph_get": (
            lambda i: store.list(AGENT, kind="fact", tag=_key_tag(("prefs",), "seat"),
                                 limit=1),
            lambda i: graph_store.aget(("prefs",), "seat")),
        "langgraph_search": (
            lambda i: store.recall(AGENT, QUERIES[i % len(QUERIES)], kinds=["fact"], k=10),
            lambda i: graph_store.asearch((), query=QUERIES[i % len(QUERIES)], limit=10)),
        "langgraph_put": (
            lambda i: store.update(AGENT, seat, content=f"Window seats, round {i}."),
            lambda i: graph_store.aput(("prefs",), "seat", {"content": f"Aisle, round {i}."})),
    }
    try:
        from nous_memory.integrations.hermes import NousMemoryProvider
    except ImportError:
        print("# hermes: hermes-agent is not installed, its line is left out")
    else:
        provider = NousMemoryProvider(store, loop=loop, agent_id=AGENT)
        ops["hermes_prefetch"] = (
            lambda i: store.assemble_context(AGENT, QUERIES[i % len(QUERIES)],
                                             budget_tokens=600),
            lambda i: asyncio.to_thread(provider.prefetch, QUERIES[i % len(QUERIES)]))
    return ops


async def measure(args: argparse.Namespace, data_dir: Path) -> None:
    async with MemoryStore.open(data_dir=data_dir) as store:
        episode = await seed(store, args.memories, args.turns)
        ops = await operations(store, episode)
        times: dict[str, dict[str, list[float]]] = {
            name: {"direct": [], "adapter": []} for name in ops}
        for round_no in range(args.warmup + args.calls):
            for name, (direct, adapter) in ops.items():
                pair = [("direct", direct), ("adapter", adapter)]
                for face, call in pair if round_no % 2 == 0 else reversed(pair):
                    start = time.perf_counter()
                    await call(round_no)
                    elapsed = (time.perf_counter() - start) * 1000
                    if round_no >= args.warmup:
                        times[name][face].append(elapsed)
    load = os.getloadavg()
    print(f"# machine: {os.cpu_count()} CPUs, load average {load[0]:.2f}; {args.memories} "
          f"facts, {args.turns} turns, {args.calls} counted rounds")
    overheads: list[float] = []
    for name, faces in times.items():
        direct = statistics.median(faces["direct"])
        adapter = statistics.median(faces["adapter"])
        print(f"{name}_direct_ms_p50: {direct:.2f}")
        print(f"{name}_adapter_ms_p50: {adapter:.2f}")
        print(f"{name}_overhead_ms_p50: {adapter - direct:.2f}")
        overheads.append(adapter - direct)
    print(f"integrations_overhead_ms_p50: {max(overheads):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--calls", type=int, default=60, help="counted rounds")
    parser.add_argument("--warmup", type=int, default=5, help="rounds not counted")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nous-bench-integrations-") as data_dir:
        asyncio.run(measure(args, Path(data_dir)))


if __name__ == "__main__":
    main()
