"""``nous-memory recall``: ranked memories and verbatim episode excerpts for a query.

Values are validated by ``MemoryStore.recall`` (empty query, ``--k`` out of range, an
unknown ``--kind``), so a bad one exits 2 naming the field, like every other command.
This module builds on ``cli``'s output helpers; ``cli.build_parser`` imports it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..context.results import MAX_K, MIN_K, RecallItem, RecallResult
from ..memories.params import parse_time
from .output import Output, add_user_option, shorten

if TYPE_CHECKING:
    from ..store import MemoryStore

TEXT_CHARS = 110

DESCRIPTION = """\
Recall what an agent remembers about a query: memories (their summaries) and verbatim
excerpts of its episodes, best first.  Each line shows the item's reference (kind and
short id, '#cN' for an episode's chunk N), its final score, the raw cosine similarity
(the one score meant for thresholds) and the text.  --json adds every typed score, the
covered messages' metadata and the timings."""


def add_recall_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                       agent: argparse.ArgumentParser) -> None:
    """Add ``recall``; ``agent`` supplies --agent and --json."""
    recall = commands.add_parser("recall", parents=[agent], help="hybrid recall for a query",
                                 description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    recall.add_argument("query", metavar="QUERY", help="any text")
    recall.add_argument("--kind", dest="kinds", action="append", metavar="KIND",
                        help="only this kind (repeatable; episode includes excerpts)")
    recall.add_argument("--k", type=int, default=10, metavar="N",
                        help=f"how many items, {MIN_K} to {MAX_K} (default 10)")
    recall.add_argument("--include-superseded", action="store_true",
                        help="also superseded versions of facts")
    recall.add_argument("--as-of", metavar="TIME",
                        help="when the query is asked (ISO 8601; default now): relative "
                             "dates in it ('last Saturday') resolve against this time")
    recall.add_argument("--current-only", action="store_true",
                        help="leave out what no longer holds (old values, and the turns "
                             "that state them)")
    add_user_option(recall)
    recall.set_defaults(handler=_recall, remote=True)


async def _recall(store: MemoryStore, args: argparse.Namespace) -> Output:
    result = await store.recall(args.agent, args.query, kinds=args.kinds, k=args.k,
                                include_superseded=args.include_superseded,
                                as_of=parse_time(args.as_of, "as_of"),
                                current_only=args.current_only, user=args.user)
    return Output(result.model_dump(mode="json"), recall_text(result))


def _line(rank: int, item: RecallItem) -> str:
    cosine = "-" if item.scores.cosine is None else f"{item.scores.cosine:.2f}"
    status = "" if item.status.value == "active" else f" [{item.status.value}]"
    if item.stale_since is not None:
        status += f" (older: superseded on {item.stale_since:%-d %b %Y})"
    elif item.told_again_on is not None:
        status += f" (older: told again on {item.told_again_on:%-d %b %Y})"
    return (f"{rank:>3}. {item.ref:<22} {item.scores.final:.4f}  cos {cosine:<5} "
            f"{shorten(item.text, TEXT_CHARS)}{status}")


def recall_text(result: RecallResult) -> str:
    if not result.items:
        return "nothing recalled"
    lines = [_line(rank, item) for rank, item in enumerate(result.items, start=1)]
    lines.append(f"({len(result.items)} items in {result.timings.total_ms:.0f} ms)")
    return "\n".join(lines)
