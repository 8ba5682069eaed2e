"""``nous-memory facts learn|history``: fact consolidation on the command line.

``learn`` hands its options to ``MemoryStore.learn_fact`` and prints what it did; a
rejected fact is an answer (exit 0, with the reason), not an error.  ``history`` prints a
fact's supersession chain, oldest first, and the audit events of every version.  The
options are generated from ``FactDetail``'s fields, as ``fields`` does for
``remember``, so values are validated (and reported) by the store.

This module builds on ``cli``'s output helpers; ``cli.build_parser`` imports it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..facts.results import LEARN_FIELDS, FactHistory, LearnResult
from ..memories.kinds import FactDetail
from ..memories.records import Memory
from .fields import ALL_KINDS, FieldOption, field_option
from .output import Output, add_user_option, event_text, shorten

if TYPE_CHECKING:
    from ..store import MemoryStore

CHAIN_CONTENT_CHARS = 100

LEARN_DESCRIPTION = """\
Learn a fact for an agent: it is created, or confirms, merges into, supersedes or
reactivates a fact the agent already has.  The first output line is the action, the
fact's id and its summary; a rejected fact (too short, an echo of instructions, blocked
by a censor) prints its reason and still exits 0."""


def _learn_options() -> list[FieldOption]:
    return [field_option(name, FactDetail.model_fields[name], ALL_KINDS)
            for name in LEARN_FIELDS]


def add_fact_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                      agent: argparse.ArgumentParser) -> None:
    """Add ``facts learn`` and ``facts history``; ``agent`` supplies --agent and --json."""
    facts = commands.add_parser("facts", help="learn facts and show their history",
                                description="Fact consolidation: deduplication, updates "
                                "and contradictions, with the full history kept.")
    actions = facts.add_subparsers(dest="facts_command", required=True, metavar="ACTION")

    learn = actions.add_parser("learn", parents=[agent], help="learn a fact",
                               description=LEARN_DESCRIPTION,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    options = _learn_options()
    group = learn.add_argument_group("fields")
    for option in options:
        group.add_argument(*option.flags(frozenset()), dest=option.dest,
                           metavar=option.metavar, type=option.convert,
                           required=option.name == "content", help=option.help)
    add_user_option(learn, writes=True)
    learn.set_defaults(handler=_learn, field_options=options, remote=True)

    history = actions.add_parser("history", parents=[agent],
                                 help="a fact's versions (oldest first) and audit trail")
    history.add_argument("id", metavar="FACT_ID", help="the id of any version of the fact")
    history.set_defaults(handler=_history, remote=True)


async def _learn(store: MemoryStore, args: argparse.Namespace) -> Output:
    options: list[FieldOption] = args.field_options
    fields = {o.name: getattr(args, o.dest) for o in options
              if getattr(args, o.dest) is not None}
    content = fields.pop("content")
    result = await store.learn_fact(args.agent, content, **fields, user=args.user)
    return Output(result.model_dump(mode="json"), learn_text(result))


async def _history(store: MemoryStore, args: argparse.Namespace) -> Output:
    history = await store.fact_history(args.agent, args.id)
    return Output(history.model_dump(mode="json"), history_text(history))


def learn_text(result: LearnResult) -> str:
    if result.fact is None:
        return f"{result.action.value}  {result.reason or '-'}"
    lines = [f"{result.action.value}  {result.fact.id}  {result.fact.summary}"]
    if result.decided_by:
        similarity = ("" if result.similarity is None
                      else f" (similarity {result.similarity:.2f})")
        lines.append(f"decided by: {result.decided_by}{similarity}")
    if result.reason:
        lines.append(f"reason: {result.reason}")
    if result.related:
        lines.append("related: " + ", ".join(str(ident) for ident in result.related))
    return "\n".join(lines)


def _content(memory: Memory) -> str:
    text = memory.detail.content if isinstance(memory.detail, FactDetail) else memory.summary
    return shorten(text, CHAIN_CONTENT_CHARS)


def history_text(history: FactHistory) -> str:
    lines = ["chain (oldest first):"]
    lines += [f"  {m.id}  {m.status.value:<10}  {_content(m)}" for m in history.chain]
    lines.append("events:")
    lines += [f"  {event.memory_id}  " + event_text(event).replace("\n", "\n  ")
              for event in history.events]
    return "\n".join(lines)
