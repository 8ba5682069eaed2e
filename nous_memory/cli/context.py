"""``nous-memory context`` and ``nous-memory expand``: the read path on the command line.

``context`` prints the assembled text (ready to paste into a prompt) and one line of
accounting after it; ``--json`` prints the whole result.  ``expand`` takes a memory id
or a ref printed by ``context`` (``fact:1a2b3c4d``) and prints the full record.

This module builds on ``cli``'s output helpers; ``cli.build_parser`` imports it.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..context.model import (
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_SECTION_BUDGETS,
    MIN_BUDGET_TOKENS,
    Context,
    Extraction,
)
from ..context.results import Expanded
from ..errors import InvalidInputError
from ..memories.params import parse_time
from .output import Output, add_user_option, event_text, shorten

if TYPE_CHECKING:
    from ..store import MemoryStore

FIELD_CHARS = 400

CONTEXT_DESCRIPTION = f"""\
Assemble the memories relevant to QUERY as text of at most --budget tokens (cl100k),
in sections ({", ".join(f"{s.value} {b}" for s, b in DEFAULT_SECTION_BUDGETS.items())}
tokens by default; unused budget spills to the next).  Every line carries a ref that
`nous-memory expand` accepts.  Minimum budget: {MIN_BUDGET_TOKENS}."""


def add_context_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                         agent: argparse.ArgumentParser) -> None:
    context = commands.add_parser("context", parents=[agent], help="assemble a context",
                                  description=CONTEXT_DESCRIPTION,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    context.add_argument("query", metavar="QUERY")
    context.add_argument("--budget", type=int, default=DEFAULT_BUDGET_TOKENS, metavar="TOKENS",
                         help=f"token budget of the text (default {DEFAULT_BUDGET_TOKENS})")
    context.add_argument("--section", action="append", metavar="NAME[=TOKENS]",
                         help="a section to include, optionally with its budget "
                              "(repeatable; default: all sections)")
    context.add_argument("--extraction", default=Extraction.CACHED.value,
                         metavar="|".join(e.value for e in Extraction),
                         help="tier-2 mode on a cache miss (default cached)")
    context.add_argument("--as-of", metavar="TIME",
                         help="when the query is asked (ISO 8601; default now): relative "
                              "dates in it resolve against this time")
    context.add_argument("--current-only", action="store_true",
                         help="leave out what no longer holds (old values, and the turns "
                              "that state them)")
    add_user_option(context)
    context.set_defaults(handler=_context, remote=True)

    upcoming = commands.add_parser("upcoming", parents=[agent],
                                   help="plans in the next days, soonest first")
    upcoming.add_argument("--days", type=int, default=7, metavar="N",
                          help="how many days ahead (default 7)")
    upcoming.add_argument("--as-of", metavar="TIME", help="from when (ISO 8601; default now)")
    add_user_option(upcoming)
    upcoming.set_defaults(handler=_upcoming, remote=True)

    expand = commands.add_parser("expand", parents=[agent],
                                 help="everything about one memory (id or ref)")
    expand.add_argument("id", metavar="ID_OR_REF")
    add_user_option(expand)
    expand.set_defaults(handler=_expand, remote=True)


def parse_sections(values: list[str] | None) -> list[str] | dict[str, int] | None:
    """``facts`` or ``facts=800``; all with budgets, or none (mixing takes defaults)."""
    if not values:
        return None
    if not any("=" in v for v in values):
        return list(values)
    budgets: dict[str, int] = {}
    for value in values:
        name, _, tokens = value.partition("=")
        if not tokens:
            budgets[name] = {s.value: b for s, b in DEFAULT_SECTION_BUDGETS.items()}.get(name, 0)
            continue
        try:
            budgets[name] = int(tokens)
        except ValueError:
            raise InvalidInputError.single(f"sections.{name}",
                                           f"budget must be an integer, not {tokens!r}") from None
    return budgets


async def _context(store: MemoryStore, args: argparse.Namespace) -> Output:
    result = await store.assemble_context(args.agent, args.query, budget_tokens=args.budget,
                                          sections=parse_sections(args.section),
                                          extraction=args.extraction,
                                          as_of=parse_time(args.as_of, "as_of"),
                                          current_only=args.current_only, user=args.user)
    return Output(result.model_dump(mode="json"), context_text(result))


async def _upcoming(store: MemoryStore, args: argparse.Namespace) -> Output:
    result = await store.upcoming(args.agent, days=args.days,
                                  as_of=parse_time(args.as_of, "as_of"), user=args.user)
    lines = [f"{e.event_at:%a %-d %b %Y %H:%M}  [{e.ref}] {e.text}" for e in result.events]
    return Output(result.model_dump(mode="json"),
                  "\n".join(lines) or f"No plans before {result.until:%a %-d %b %Y}.")


async def _expand(store: MemoryStore, args: argparse.Namespace) -> Output:
    result = await store.expand(args.agent, args.id, user=args.user)
    return Output(result.model_dump(mode="json"), expanded_text(result))


def context_text(result: Context) -> str:
    body = result.text or "(no memory fits)"
    return (f"{body}\n\ntokens {result.tokens_used}/{result.budget_tokens}, "
            f"{len(result.items)} items, {len(result.dropped)} dropped, extraction cache "
            f"{result.cache_hits} hits / {result.cache_misses} misses, "
            f"{result.timings.total_ms:.1f} ms")


def expanded_text(result: Expanded) -> str:
    memory = result.memory
    lines = [f"{result.ref}  {memory.id}  {memory.kind.value}  {memory.status.value}",
             f"summary: {memory.summary}"]
    for name, value in memory.detail.model_dump(mode="json").items():
        if value in (None, [], "") or name == "kind":
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"{name}: {shorten(text, FIELD_CHARS)}")
    if result.detail_restored:
        lines.append("(detail restored from cold storage)")
    for part in result.archived:
        lines.append(f"archived: {part.part} ({part.reason}, {part.archived_at:%Y-%m-%d}, "
                     f"{part.size} {'chars' if part.part == 'detail' else 'messages'})")
    if result.chain:
        lines.append("versions (oldest first):")
        lines += [f"  {m.id}  {m.status.value:<10}  {shorten(m.summary, 100)}"
                  for m in result.chain]
    if result.source_episode is not None:
        lines.append(f"source episode: {result.source_episode.id}  "
                     f"{shorten(result.source_episode.summary, 100)}")
    if result.transcript is not None:
        t = result.transcript
        cold = ", from cold storage" if t.from_cold_storage else ""
        lines.append(f"transcript excerpt ({len(t.messages)} of {t.total_messages}{cold}):")
        lines += [f"  #{m.seq} {m.name or m.role}: {shorten(m.content, 200)}"
                  for m in t.messages]
    lines.append("history:")
    lines += ["  " + event_text(e).replace("\n", "\n  ") for e in result.events]
    return "\n".join(lines)
