"""What is true now: does the context give the current value first, and mark old ones?

    python bench/staleness.py [--cases N] [--budget 800] [--verbose]

The cases: the developers' histories of ``staleness_cases.py`` and the histories written
for the dev set by other hands (``staleness_histories_*.json``: every kind of change
several ways, chains of three values, implied changes, plans, other people and things, a
second speaker), split by a fixed seed into a half to tune on and a half that is only
measured.  Both halves are printed (``tune_*``, then the unprefixed measured half);
``--verbose`` lists the failures of the tuning half only.

Each case is its own user (agent): dated sessions go in through
the history import (``MemoryStore.ingest``, no LLM: the rules learn the facts), two
unrelated sessions beside them, some imported newest first; the worker drains; then the
case's question is asked with ``assemble_context`` (``--budget`` tokens, ``as_of`` a month
after the last session), once as is and once with ``current_only=True``.  A value is
found in the text as a whole word or phrase (a plural too), case folded; a line "states" an
old value when it holds the old value and not the current one.

- ``stale_current_present``: the current value is in the context;
- ``stale_old_marked``: every line stating an old value says it is older ("(older:");
- ``stale_current_only_clean``: with ``current_only``, no line states an old value;
- ``stale_old_called_current``: some line states an old value (or a value only planned,
  ``never_current``) and calls it current ("(current");
- ``stale_current_first`` (headline): the current value comes before any line stating an
  old value (and is present).

The upcoming part (``PLANS``): each history's plans, then ``upcoming(agent, days=...,
as_of=...)``; ``upcoming_precision`` is the share of returned events that are expected
ones (a word of each), ``upcoming_recall`` the share of expected events returned.

Runs on a fresh embedded PostgreSQL in a temporary directory (or
NOUS_MEMORY_DATABASE_URL, under new agent ids).  Prints ``name: value`` lines, the
headline last.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from staleness_cases import (
    CASES,
    FILLER,
    PLANS,
    Case,
    Plan,
    Session,
    histories,
    rounds,
    split,
)

from nous_memory import MemoryStore


@dataclass(slots=True)
class Verdict:
    present: bool
    marked: bool
    clean: bool
    first: bool
    called_current: bool


def _word(value: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w])" + re.escape(value.lower()) + r"(?:s|es)?(?![\w])")


def judge(text: str, clean_text: str, case: Case) -> Verdict:
    """The four checks on one context (and its current_only twin)."""
    low = text.lower()
    current = _word(case.current)
    olds = [_word(v) for v in case.old]
    not_now = [_word(v) for v in [*case.old, *case.never_current]]

    def stating_old(line: str) -> bool:
        return any(p.search(line) for p in olds) and not current.search(line)

    lines = low.splitlines()
    found = current.search(low)
    first_old = next((i for i, line in enumerate(lines) if stating_old(line)), None)
    first_current = next((i for i, line in enumerate(lines) if current.search(line)), None)
    return Verdict(
        present=found is not None,
        marked=all("(older:" in line for line in lines if stating_old(line)),
        clean=not any(stating_old(line) for line in clean_text.lower().splitlines()),
        first=first_current is not None and (first_old is None or first_current < first_old),
        called_current=any("(current" in line and any(p.search(line) for p in not_now)
                           and not current.search(line) for line in lines))


def sessions_of(case_sessions: Sequence[Session], reverse: bool,
                filler: bool) -> list[dict[str, object]]:
    chosen = list(case_sessions) + (FILLER if filler else [])
    chosen.sort(key=lambda s: s[0], reverse=reverse)
    return [{"started_at": f"{day}T10:00:00+00:00",
             "turns": [{"role": role, "content": text} for role, text in turns]}
            for day, turns in chosen]


def asked_at(case_sessions: Sequence[Session]) -> str:
    last = max(datetime.fromisoformat(f"{day}T10:00:00+00:00") for day, _ in case_sessions)
    return (last + timedelta(days=30)).isoformat()


async def run_case(store: MemoryStore, agent: str, case: Case, budget: int) -> Verdict:
    await store.ingest(agent, sessions_of(case.sessions, case.reverse, case.filler))
    await store.worker().drain()
    when = asked_at(case.sessions)
    context = await store.assemble_context(agent, case.question, budget_tokens=budget,
                                           as_of=when)
    clean = await store.assemble_context(agent, case.question, budget_tokens=budget,
                                         as_of=when, current_only=True)
    return judge(context.text, clean.text, case)


async def run_plan(store: MemoryStore, agent: str, plan: Plan) -> tuple[float, float]:
    """(precision, recall) of ``upcoming`` for one history."""
    await store.ingest(agent, sessions_of(plan.sessions, False, False))
    await store.worker().drain()
    got = await store.upcoming(agent, days=plan.days, as_of=plan.as_of)
    texts = [e.text.lower() for e in got.events]
    right = [t for t in texts if any(w.lower() in t for w in plan.expected)
             and not any(w.lower() in t for w in plan.not_expected)]
    precision = len(right) / len(texts) if texts else 1.0
    recall = mean(float(any(w.lower() in t for t in right)) for w in plan.expected)
    return precision, recall


def _ok(verdict: Verdict) -> bool:
    return (verdict.present and verdict.marked and verdict.clean and verdict.first
            and not verdict.called_current)


def _figures(prefix: str, verdicts: Sequence[Verdict]) -> list[str]:
    if not verdicts:
        return []
    return [f"{prefix}stale_current_present: {mean(float(v.present) for v in verdicts):.4f}",
            f"{prefix}stale_old_marked: {mean(float(v.marked) for v in verdicts):.4f}",
            f"{prefix}stale_current_only_clean: {mean(float(v.clean) for v in verdicts):.4f}",
            f"{prefix}stale_old_called_current: "
            f"{mean(float(v.called_current) for v in verdicts):.4f}",
            f"{prefix}stale_current_first: {mean(float(v.first) for v in verdicts):.4f}"]


async def run(args: argparse.Namespace) -> None:
    tune, measure = split(CASES + histories())
    if args.cases:  # a smoke run: the first N of each half
        tune, measure = tune[:args.cases], measure[:args.cases]
    plans = PLANS[:args.plans] if args.plans is not None else PLANS
    run_id = uuid.uuid4().hex[:8]
    url = os.environ.get("NOUS_MEMORY_DATABASE_URL")
    verdicts: dict[str, list[tuple[Case, Verdict]]] = {"tune": [], "measure": []}
    upcoming: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="nous-stale-") as tmp:
        opened = (MemoryStore.open(database_url=url) if url
                  else MemoryStore.open(data_dir=tmp, database_url=None))
        async with opened as store:
            for half, cases in (("tune", tune), ("measure", measure)):
                for case in cases:
                    verdict = await run_case(store, f"stale-{run_id}-{case.name}", case,
                                             args.budget)
                    verdicts[half].append((case, verdict))
                    if args.verbose and half == "tune" and not _ok(verdict):
                        print(f"# {case.name}: {verdict}", file=sys.stderr)
            for plan in plans:
                scores = await run_plan(store, f"plan-{run_id}-{plan.name}", plan)
                upcoming.append(scores)
                if args.verbose and scores != (1.0, 1.0):
                    print(f"# {plan.name}: precision, recall {scores}", file=sys.stderr)
    print(f"# cases: {len(verdicts['tune'])} tuned on, {len(verdicts['measure'])} only "
          f"measured; plans: {len(upcoming)}; budget: {args.budget} tokens")
    if upcoming:
        print(f"upcoming_precision: {mean(p for p, _ in upcoming):.4f}")
        print(f"upcoming_recall: {mean(r for _, r in upcoming):.4f}")
    for half in ("tune", "measure"):  # the headline by kind of change, as a comment
        kinds = sorted({case.kind for case, _ in verdicts[half]})
        shares = [f"{kind} {mean(float(v.first) for c, v in verdicts[half] if c.kind == kind):.2f}"
                  f" ({sum(1 for c, _ in verdicts[half] if c.kind == kind)})" for kind in kinds]
        print(f"# {half} current first, by kind: {', '.join(shares)}")
    if not args.cases:  # each round's measured half on its own (a later round is new text)
        measured = {case.name: v for case, v in verdicts["measure"]}
        for number, names in enumerate(rounds(CASES + histories()), start=1):
            part = [measured[n] for n in names if n in measured]
            print(f"# round {number}, measured half ({len(part)}): current first "
                  f"{mean(float(v.first) for v in part):.4f}, old marked "
                  f"{mean(float(v.marked) for v in part):.4f}, old called current "
                  f"{mean(float(v.called_current) for v in part):.4f}")
    lines = _figures("tune_", [v for _, v in verdicts["tune"]])
    lines += _figures("", [v for _, v in verdicts["measure"]])
    print("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=0, help="the first N cases (0: all)")
    parser.add_argument("--plans", type=int, default=None, help="the first N plan histories")
    parser.add_argument("--budget", type=int, default=800, help="context budget in tokens")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.cases < 0 or args.budget < 64:
        parser.error("--cases must be >= 0 and --budget >= 64")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
