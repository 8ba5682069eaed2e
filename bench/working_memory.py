"""Working memory on LoCoMo: each conversation replayed as one long conversation.

    python bench/working_memory.py [--data ../shared/data/locomo/locomo-dev.json]
                                   [--window 4096] [--limit N] [--turns N]

Every conversation's sessions are concatenated into one open episode (speaker_a as
``user``, speaker_b as ``assistant``, the speaker's name as ``name``; a shared photo adds
its caption).  After each appended turn the store builds the prompt for the next model
call with ``build_prompt(system, budget_tokens=window)`` under the default policy with
``window_tokens=window``, which folds whatever the policy says is due first.  This runs
twice: in rule mode (no LLM) and in LLM mode against the scripted OpenAI-compatible
server (``nous_memory.testing``), whose default responder plays a deterministic model
(it keeps the first words of each message and the newest part of the old summary, and
honours the requested size).  The embedder is the hash FakeEmbedder: working memory
embeds nothing, and the append path does not either.

Lines (``name: value``, headline last):
- summarize_calls_per_100_msgs: summarising passes that wrote a chain record, per 100
  messages (rule mode; the ``_llm`` line is LLM mode; llm_requests_per_100_msgs counts
  HTTP requests to the model);
- overhead_ms_per_turn_p50 / _p95: wall time of build_prompt per turn, rule mode (no LLM
  anywhere); ``_llm_mode`` lines: the same in LLM mode, where build_prompt leaves a due
  fold to the worker and the replay then drains the queue at once (timed too), minus the
  time spent inside the LLM client's calls;
- entity_retention: share of the distinct capitalised names and numbers of the whole
  conversation (``facets.entities_in``) found as words in what the final prompt shows the
  model after the system prompt (summary block incl. its facets line + tail), rule mode;
  entity_retention_prose: the same without the facets;
- dropped_unfolded_messages_max: the most unfolded messages any prompt of either mode
  left out to stay in budget (in neither the summary nor the prompt at that turn), so
  that the budget line below cannot be met by silently dropping history;
- max_prompt_tokens_over_budget: the largest (prompt tokens - budget) over every prompt of
  both modes, recounted exactly from the messages; it must be 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from shared_data import shared_data

from nous_memory import MemoryStore
from nous_memory.conversation.facets import entities_in
from nous_memory.conversation.prompt import prompt_tokens
from nous_memory.testing import FakeEmbedder, JSONReply, ScriptedLLMServer

DATA = shared_data("locomo/locomo-dev.json")
SYSTEM = "You are a friendly assistant who remembers what both speakers said."


def load(path: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    import json

    out = []
    for item in json.loads(path.read_text()):
        conv = item["conversation"]
        a = conv["speaker_a"]
        numbers = sorted(int(k.split("_")[1]) for k in conv
                         if re.fullmatch(r"session_\d+", k) and conv[k])
        turns = []
        for n in numbers:
            for turn in conv[f"session_{n}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                turns.append({"role": "user" if turn["speaker"] == a else "assistant",
                              "name": turn["speaker"], "content": text})
        out.append((item["sample_id"], turns))
    return out


# ------------------------------------------------------------------ the scripted model


def _tag(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.S)
    return found.group(1) if found else ""


def _newest(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[len(text) - chars:].split(" ", 1)[-1]


def _number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    if found is None:
        raise ValueError(f"the prompt does not say {pattern!r}")
    return int(found.group(1))


def scripted_model(request: dict[str, Any]) -> JSONReply:
    system = request["messages"][0]["content"]
    user = request["messages"][-1]["content"]
    if system.startswith("Shorten"):
        chars = _number(r"at most (\d+) characters", system)
        text = _newest(_tag(user, "summary"), chars * 4 // 5)
    elif system.startswith("Merge"):
        chars = _number(r"under (\d+) characters", system)
        text = _newest(_tag(user, "summary") + " " + _tag(user, "chapter"), chars * 4 // 5)
    else:
        target = _number(r"Stay under (\d+)", system)
        lines = []
        for name, body in re.findall(r'<message [^>]*?(?:name="([^"]*)")?>(.*?)</message>',
                                     _tag(user, "messages"), re.S):
            lines.append(f"{name or 'someone'}: {' '.join(body.split()[:12])}")
        text = _newest((_tag(user, "summary") + "\n" + "\n".join(lines)).strip(), target * 3)
    names = sorted(set(entities_in(text)))[:40]
    return JSONReply(content={"summary": text, "participants": [], "decisions": [],
                              "action_items": [], "unresolved": [], "entities": names})


# ------------------------------------------------------------------ replay


@dataclass
class Tally:
    messages: int = 0
    folds: int = 0
    overhead_ms: list[float] = field(default_factory=list)
    over_budget: int = 0
    dropped_max: int = 0
    retention: list[float] = field(default_factory=list)
    retention_prose: list[float] = field(default_factory=list)


def retention(entities: set[str], text: str) -> float:
    words = set(entities_in(text)) | set(re.findall(r"\w+", text))
    return sum(1 for e in entities if e in words) / max(len(entities), 1)


async def replay(store: MemoryStore, agent: str, turns: list[dict[str, Any]], window: int,
                 tally: Tally, llm_seconds: list[float]) -> None:
    episode = await store.start_episode(agent)
    policy = {"window_tokens": window}
    worker = store.worker()
    prompt = None
    for turn in turns:
        await store.append(agent, episode.id, [turn])
        before = llm_seconds[0]
        started = time.perf_counter()
        prompt = await store.build_prompt(agent, episode.id, SYSTEM, window, policy=policy)
        folded = bool(prompt.summarized and prompt.summarized.steps)
        if prompt.summarized and prompt.summarized.deferred:  # the LLM fold: the worker's job
            folded = await worker.drain() > 0
        elapsed = time.perf_counter() - started - (llm_seconds[0] - before)
        tally.overhead_ms.append(elapsed * 1000)
        tally.messages += 1
        tally.folds += folded
        recount = prompt_tokens(prompt.messages)
        assert recount == prompt.tokens, (recount, prompt.tokens)
        tally.over_budget = max(tally.over_budget, recount - window)
        tally.dropped_max = max(tally.dropped_max, prompt.dropped_messages)
    assert prompt is not None
    entities = {e for t in turns for e in entities_in(t["content"])}
    shown = "\n".join(m["content"] for m in prompt.messages[1:])
    tally.retention.append(retention(entities, shown))
    summary = await store.conversation_summary(agent, episode.id)
    tail = "\n".join(m["content"] for m in prompt.messages[1:] if m["role"] != "system")
    tally.retention_prose.append(retention(entities, summary.text + "\n" + tail))


def timed_llm(store: MemoryStore) -> list[float]:
    """Sum the time spent inside the LLM client's structured calls."""
    spent = [0.0]
    assert store.llm is not None
    original = store.llm.structured

    async def structured(**kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(**kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    store.llm.structured = structured  # type: ignore[method-assign]
    return spent


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


async def run(data: Path, window: int, limit: int | None, max_turns: int | None) -> None:
    conversations = load(data)[:limit]
    if max_turns:
        conversations = [(sid, turns[:max_turns]) for sid, turns in conversations]
    run_id = uuid.uuid4().hex[:8]
    load_before = os.getloadavg()[0]
    rule, llm = Tally(), Tally()
    with tempfile.TemporaryDirectory(prefix="nous-bench-") as tmp:
        url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
        async with (ScriptedLLMServer(default=scripted_model) as server,
                    MemoryStore.open(data_dir=tmp, database_url=url,
                                     embedder=FakeEmbedder()) as plain,
                    MemoryStore.open(data_dir=tmp, database_url=url, embedder=FakeEmbedder(),
                                     llm_base_url=server.base_url, llm_model="scripted",
                                     llm_max_attempts=2) as with_llm):
            none = [0.0]
            # warm-up, untimed: pool, statements, tokenizer, openai client
            warm = [{"role": "user", "name": "W", "content": f"Warm-up {i} in Oslo."}
                    for i in range(80)]
            await replay(plain, f"bench-{run_id}-warm", warm, window, Tally(), none)
            spent = timed_llm(with_llm)
            await replay(with_llm, f"bench-{run_id}-warm-llm", warm, window, Tally(), spent)
            requests_before = len(server.requests)
            for sid, turns in conversations:
                await replay(plain, f"bench-{run_id}-rule-{sid}", turns, window, rule, none)
                await replay(with_llm, f"bench-{run_id}-llm-{sid}", turns, window, llm, spent)
            requests = len(server.requests) - requests_before
    print(f"# machine: {os.cpu_count()} cpus, load average {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print(f"# {len(conversations)} conversations, {rule.messages} messages per mode, "
          f"window {window} tokens = prompt budget; default policy otherwise")
    print(f"# rule-mode retention per conversation: "
          f"{', '.join(f'{r:.3f}' for r in rule.retention)}")
    print(f"summarize_calls_per_100_msgs_llm: {100 * llm.folds / max(llm.messages, 1):.2f}")
    print(f"llm_requests_per_100_msgs: {100 * requests / max(llm.messages, 1):.2f}")
    print(f"overhead_ms_per_turn_p50_llm_mode: {pct(llm.overhead_ms, 50):.2f}")
    print(f"overhead_ms_per_turn_p95_llm_mode: {pct(llm.overhead_ms, 95):.2f}")
    print(f"overhead_ms_per_turn_p95: {pct(rule.overhead_ms, 95):.2f}")
    print(f"entity_retention_llm_mode: {statistics.fmean(llm.retention):.3f}")
    print(f"entity_retention_prose: {statistics.fmean(rule.retention_prose):.3f}")
    print(f"summarize_calls_per_100_msgs: {100 * rule.folds / max(rule.messages, 1):.2f}")
    print(f"overhead_ms_per_turn_p50: {pct(rule.overhead_ms, 50):.2f}")
    print(f"entity_retention: {statistics.fmean(rule.retention):.3f}")
    print(f"dropped_unfolded_messages_max: {max(rule.dropped_max, llm.dropped_max)}")
    print(f"max_prompt_tokens_over_budget: {max(rule.over_budget, llm.over_budget, 0)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--window", type=int, default=4096)
    parser.add_argument("--limit", type=int, default=None, help="first N conversations")
    parser.add_argument("--turns", type=int, default=None, help="first N turns of each")
    args = parser.parse_args()
    asyncio.run(run(args.data, args.window, args.limit, args.turns))


if __name__ == "__main__":
    main()
