"""Several people, one assistant: is each person's private memory theirs, and is the
asker's own value the one they get?

    python bench/people.py [--groups N] [--budget 800] [--as-owner] [--verbose]

The dev set (``people_groups_*.json``, written for it by other hands): households,
families, teams, group chats and gateway bots of 2-6 people; each person talks to the
assistant alone (their private sessions) and in the group; each states their own values
(often the same attributes as the others', some changed over time) and the group's
shared ones.  Split by a fixed seed into a half to tune on and a half that is only
measured; both are printed (``tune_*``, then the measured half); ``--verbose`` lists the
failures of the tuning half only.

Each group is its own agent.  Its sessions go in through the history import
(``MemoryStore.ingest``: a private session is its person's, ``user``; in a group session
each turn names its speaker), no LLM (the rules learn the facts); the worker drains; then
each question is asked as its asker (``user=``) a day after the last session.

- ``people_leaks``: the number of another person's private markers (words said only in
  that person's own sessions) found in an asker's reads: the context
  (``assemble_context``), recall (k=10), ``expand`` of every recalled memory, the
  asker's ``list`` and ``upcoming``.  Must be 0.
- ``people_shared_found``: share of shared questions whose answer is in the context.
- ``people_misattributed``: share of the askers' questions about their own value whose
  context holds another person's value for it (one the asker never said) before the
  asker's own, or without it: the wrong person's answer.
- ``people_attribution`` (headline): share of the askers' questions about their own
  value whose context holds an answer, and holds it before any other value the question
  names (another person's, or the asker's own old one).

``--as-owner`` reads without the asker (``user=None``): what a store that does not know
who is asking gives everyone, for comparison.

Runs on a fresh embedded PostgreSQL in a temporary directory (or
NOUS_MEMORY_DATABASE_URL, under new agent ids).  Prints ``name: value`` lines, the
headline last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nous_memory import MemoryStore

HERE = Path(__file__).resolve().parent
SEED = 45  # the split: never changed after the first run


def groups() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(HERE.glob("people_groups_*.json")):
        found.extend(json.loads(path.read_text("utf-8")))
    return found


def split(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    order = sorted(items, key=lambda g: g["name"])
    random.Random(SEED).shuffle(order)
    half = len(order) // 2
    return {"tune": order[:half], "measure": order[half:]}


def sessions(group: dict[str, Any]) -> list[dict[str, Any]]:
    """The group's sessions as history-import sessions."""
    names = group["people"]
    out = []
    for index, session in enumerate(group["sessions"]):
        start = datetime.fromisoformat(session["date"] + "T18:00:00+00:00")
        turns = []
        for i, (speaker, text) in enumerate(session["turns"]):
            turn: dict[str, Any] = {"content": text,
                                    "at": (start + timedelta(minutes=i)).isoformat()}
            if speaker == "assistant":
                turn["role"] = "assistant"
            else:
                turn.update(role="user", user=speaker, name=names[speaker])
            turns.append(turn)
        item: dict[str, Any] = {"key": f"{group['name']}-{index}",
                                "started_at": start.isoformat(), "turns": turns}
        if "user" in session:
            item["user"] = session["user"]
        out.append(item)
    return out


def _found(text: str, value: str) -> int:
    """Where ``value`` first is in ``text`` as a word or phrase (case folded), or -1."""
    hit = re.search(r"(?<!\w)" + re.escape(value.lower()) + r"(?!\w)", text.lower())
    return hit.start() if hit else -1


async def reads(store: MemoryStore, agent: str, asker: str | None, question: str,
                as_of: datetime, budget: int) -> tuple[str, list[str]]:
    """The asker's context, and every text of theirs the other faces return."""
    context = await store.assemble_context(agent, question, user=asker, as_of=as_of,
                                           budget_tokens=budget, extraction="off")
    recalled = await store.recall(agent, question, user=asker, k=10, as_of=as_of)
    texts = [item.text for item in recalled.items]
    for item in recalled.items:
        expanded = await store.expand(agent, item.memory_id, user=asker)
        texts.append(expanded.memory.summary)
        if expanded.transcript is not None:
            texts.extend(m.content for m in expanded.transcript.messages)
    return context.text, texts


async def run_group(store: MemoryStore, group: dict[str, Any], budget: int,
                    verbose: bool, as_owner: bool = False) -> dict[str, list[float]]:
    agent = f"people-{group['name']}-{uuid.uuid4().hex[:6]}"
    await store.ingest(agent, sessions(group))
    await store.worker().drain()
    last = max(datetime.fromisoformat(s["date"] + "T18:00:00+00:00")
               for s in group["sessions"])
    as_of = last + timedelta(days=1)
    markers = {p: [m.lower() for m in ms] for p, ms in group.get("private", {}).items()}
    out: dict[str, list[float]] = {"leaks": [], "attribution": [], "shared": [],
                                   "misattributed": []}
    spoken = {p: " ".join(t for s in group["sessions"] for who, t in s["turns"]
                          if who == p).lower() for p in group["people"]}
    listed = {}
    for asker in group["people"]:
        reader = None if as_owner else asker
        page = await store.list(agent, user=reader, limit=200)
        events = await store.upcoming(agent, user=reader, as_of=as_of, days=60)
        listed[asker] = [m.summary for m in page.items] + [e.text for e in events.events]
    for q in group["questions"]:
        asker = q["asker"]
        context, texts = await reads(store, agent, None if as_owner else asker,
                                     q["question"], as_of, budget)
        everything = "\n".join([context, *texts, *listed[asker]]).lower()
        leaks = [(p, m) for p, ms in markers.items() if p != asker for m in ms
                 if _found(everything, m) >= 0]
        out["leaks"].append(len(leaks))
        if leaks and verbose:
            print(f"# leak {group['name']} {asker}: {leaks}", file=sys.stderr)
        if q["kind"] == "own":
            answers = [_found(context, a) for a in q["answer"]]
            first = min((a for a in answers if a >= 0), default=-1)
            others = [_found(context, v) for v in q.get("not", [])]
            ok = first >= 0 and all(o < 0 or o > first for o in others)
            out["attribution"].append(float(ok))
            theirs = [_found(context, v) for v in q.get("not", [])
                      if _found(spoken[asker], v) < 0]  # values the asker never said
            out["misattributed"].append(float(any(
                o >= 0 and (first < 0 or o < first) for o in theirs)))
            if not ok and verbose:
                print(f"# attribution {group['name']} {asker}: {q['question']} "
                      f"{q['answer']} not {q.get('not')}\n{context}\n", file=sys.stderr)
        else:
            out["shared"].append(float(any(_found(context, a) >= 0 for a in q["answer"])))
    return out


async def run(args: argparse.Namespace) -> None:
    halves = split(groups())
    if args.groups:
        halves = {name: items[:args.groups] for name, items in halves.items()}
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    figures: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="nous-people-") as tmp:
        opened = (MemoryStore.open(database_url=url) if url
                  else MemoryStore.open(data_dir=tmp, database_url=None))
        async with opened as store:
            for half, items in halves.items():
                total: dict[str, list[float]] = {"leaks": [], "attribution": [], "shared": [],
                                                 "misattributed": []}
                for group in items:
                    result = await run_group(store, group, args.budget,
                                             args.verbose and half == "tune", args.as_owner)
                    for key, values in result.items():
                        total[key].extend(values)
                figures[half] = total
    print(f"# groups: {len(halves['tune'])} tuned on, {len(halves['measure'])} only measured; "
          f"questions: {sum(len(g['questions']) for h in halves.values() for g in h)}")
    lines: list[str] = []
    for half, prefix in (("tune", "tune_"), ("measure", "")):
        total = figures[half]
        lines.append(f"{prefix}people_leaks: {int(sum(total['leaks']))}")
        lines.append(f"{prefix}people_shared_found: {mean(total['shared'] or [0]):.4f}")
        lines.append(f"{prefix}people_misattributed: "
                     f"{mean(total['misattributed'] or [0]):.4f}")
        lines.append(f"{prefix}people_attribution: {mean(total['attribution'] or [0]):.4f}")
    # the measured half's headline last
    print("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=0, help="the first N groups of each "
                                                              "half (0: all)")
    parser.add_argument("--budget", type=int, default=800, help="context budget in tokens")
    parser.add_argument("--as-owner", action="store_true",
                        help="read without the asker, for comparison")
    parser.add_argument("--verbose", action="store_true")
    asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
