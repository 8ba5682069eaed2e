"""``nous-memory ingest``: a person's past conversations, imported as closed episodes.

The import writes each session in one short transaction (fast); the close work after it
(chunks, embeddings, the facts the sessions state) is the work queue's, and is where the
time goes.  By default this command also works that queue off itself, showing both
phases with a rate and an ETA, so one command takes a history from a file to recall.
Stopped at any point (Ctrl-C, a crash), running it again imports nothing twice: sessions
already there are skipped by key and the queued close work is picked up where it was.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidInputError
from ..history import HistoryFile, IngestProgress, IngestResult, read_history
from ..history.files import FORMATS
from ..store import MemoryStore
from .output import Output, stop_on_signals

POLL_S = 0.5  # how often the backlog is counted while working
REDRAW_S = 0.25  # on a terminal
LOG_EVERY_S = 10.0  # when standard error is a file or a pipe

DESCRIPTION = """\
Import a history: each session becomes a closed episode of AGENT, dated as the file
says, and the worker then chunks, embeds and learns from it exactly as from a live
conversation.  FILE is JSON Lines with one session per line:

  {"key": "2024-03-02-a", "started_at": "2024-03-02T09:00:00Z", "title": "optional",
   "turns": [{"role": "user", "content": "...", "at": "optional ISO time"}, ...]}

or a LongMemEval- or LoCoMo-shaped JSON file (gzip too), whose histories (samples) are
chosen with --sample or --all-samples.  Sessions already imported (same key) are
skipped, so an interrupted import is finished by running the same command again."""


def add_history_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                        agent: argparse.ArgumentParser) -> None:
    ingest = commands.add_parser("ingest", parents=[agent], help="import past conversations",
                                 description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ingest.add_argument("file", metavar="FILE", help="the history file (.gz is read too)")
    ingest.add_argument("--format", choices=FORMATS, default="auto",
                        help="the file's shape (default: told from its content)")
    which = ingest.add_mutually_exclusive_group()
    which.add_argument("--sample", metavar="ID",
                       help="the one history of a benchmark file to import into AGENT")
    which.add_argument("--all-samples", action="store_true",
                       help="every history of a benchmark file, each into AGENT-ID")
    ingest.add_argument("--no-wait", action="store_true",
                        help="only import; leave the close work to a running worker "
                             "('nous-memory serve' or 'nous-memory worker')")
    ingest.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ingest.set_defaults(handler=_ingest)


@dataclass(slots=True)
class Bar:
    """One progress line on stderr: redrawn in place on a terminal, logged otherwise."""

    label: str
    total: int
    unit: str
    out: TextIO | None
    started: float = field(default_factory=time.monotonic)
    shown: float = 0.0

    def update(self, done: int, *, extra: str = "", final: bool = False) -> None:
        if self.out is None:
            return
        now = time.monotonic()
        tty = self.out.isatty()
        if not final and now - self.shown < (REDRAW_S if tty else LOG_EVERY_S):
            return
        self.shown = now
        elapsed = max(now - self.started, 1e-9)
        rate = done / elapsed
        left = (self.total - done) / rate if rate > 0 else float("inf")
        eta = "done" if done >= self.total else (
            "--:--" if left == float("inf") else _clock(left))
        width = 24
        filled = int(width * done / self.total) if self.total else width
        line = (f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} "
                f"{self.unit}  {rate:.1f}/s  {extra}{'ETA ' if eta[0].isdigit() else ''}"
                f"{eta}  ({_clock(elapsed)})")
        if tty:
            self.out.write("\r\x1b[K" + line + ("\n" if final else ""))
        else:
            self.out.write(line + "\n")
        self.out.flush()


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _choose(files: list[HistoryFile], agent: str, args: argparse.Namespace
            ) -> list[tuple[str, HistoryFile]]:
    """(agent, history) pairs the options ask for."""
    samples = [f.sample for f in files if f.sample is not None]
    if args.sample is not None:
        chosen = [f for f in files if f.sample == args.sample]
        if not chosen:
            raise InvalidInputError.single(
                "sample", f"not in the file ({len(samples)} samples: {_listed(samples)})")
        return [(agent, chosen[0])]
    if args.all_samples:
        return [(agent if f.sample is None else f"{agent}-{f.sample}", f) for f in files]
    if len(files) > 1:
        raise InvalidInputError.single(
            "sample", f"the file holds {len(files)} histories; pass --sample ID (one of "
                      f"{_listed(samples)}) or --all-samples")
    return [(agent, files[0])]


def _listed(samples: list[str], most: int = 10) -> str:
    return ", ".join(samples[:most]) + (" ..." if len(samples) > most else "") or "none"


async def _ingest(store: MemoryStore, args: argparse.Namespace) -> Output:
    files = await asyncio.to_thread(read_history, Path(args.file), args.format)
    out = None if args.quiet else sys.stderr
    started = time.monotonic()
    results: list[IngestResult] = []
    for agent, history in _choose(files, args.agent, args):
        bar = Bar(label=f"import {agent}", total=len(history.sessions), unit="sessions",
                  out=out)

        def show(p: IngestProgress, bar: Bar = bar) -> None:
            bar.update(p.sessions_done, extra=f"{p.turns_done} turns, {p.skipped} skipped  ",
                       final=p.sessions_done >= p.sessions_total)

        results.append(await store.ingest(agent, history.sessions, progress=show))
    data: dict[str, Any] = {"imports": [r.model_dump(mode="json") for r in results]}
    lines = [f"{r.agent_id}: {r.sessions_imported} sessions imported ({r.turns_imported} "
             f"turns), {r.sessions_skipped} already there" for r in results]
    if not args.no_wait:
        open_, failed = await _close_all(store, [r.agent_id for r in results], out)
        data |= {"close_work_open": open_, "close_work_failed": failed}
        lines.append(f"close work: {'all done' if not open_ else f'{open_} left'}"
                     + (f", {failed} failed (the inspector's Operations page says why)"
                        if failed else ""))
    else:
        lines.append("close work queued for the worker")
    data["seconds"] = round(time.monotonic() - started, 3)
    return Output(data, "\n".join(lines))


async def _backlog(store: MemoryStore, agents: list[str]) -> tuple[int, int]:
    """The agents' episodes still closing, and close work that failed for good."""
    statuses = [await store.ingest_status(agent) for agent in agents]
    return sum(s.closing for s in statuses), sum(s.failed for s in statuses)


async def _close_all(store: MemoryStore, agents: list[str], out: TextIO | None
                     ) -> tuple[int, int]:
    """Work the queue off in this process until the agents' close work is done (or
    Ctrl-C: the item in hand finishes, the rest stays queued for the next run)."""
    first, _ = await _backlog(store, agents)
    bar = Bar(label="close", total=first, unit="episodes", out=out)
    worker = store.worker()
    stop = asyncio.Event()
    open_ = first
    looked = time.monotonic()
    with stop_on_signals(stop):
        async with worker.presence():
            while open_ and not stop.is_set():
                worked = await worker.run_once()
                if not worked:
                    await asyncio.sleep(POLL_S)  # what is left is leased or waits to retry
                if not worked or time.monotonic() - looked >= POLL_S:
                    open_, _ = await _backlog(store, agents)
                    looked = time.monotonic()
                    bar.total = max(bar.total, open_)  # another import added work
                    bar.update(bar.total - open_)
    bar.update(bar.total - open_, final=True)
    return await _backlog(store, agents)
