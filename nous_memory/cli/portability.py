"""``nous-memory export``, ``import``, ``forget-agent`` and ``forget-person``: a whole agent
to a file, from a file, or erased for good; one person of it forgotten.

The file format is docs/export-format.md.  An export written with ``-o`` goes to a
temporary name first and is renamed when complete, so a failed export never leaves a
file that looks finished.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..errors import InvalidInputError
from .output import Output

if TYPE_CHECKING:
    from ..store import MemoryStore


def add_portability_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                             agent: argparse.ArgumentParser,
                             json_flag: argparse.ArgumentParser) -> None:
    export = commands.add_parser(
        "export", parents=[agent], help="write everything of an agent to a JSON Lines file",
        description="Write every record of an agent (memories, history, transcripts, "
                    "chunks, summaries, cold storage, pending work) as one JSON Lines file.")
    export.add_argument("-o", "--output", metavar="FILE",
                        help="the file to write (default: standard output)")
    export.add_argument("--user", metavar="PERSON",
                        help="one person's own export: what is theirs and the "
                             "conversations they were in (default: everything)")
    export.set_defaults(handler=_export, remote=True)

    load = commands.add_parser(
        "import", parents=[json_flag], help="read an export into the same or another agent",
        description="Read an export file, all or nothing: a bad, truncated or conflicting "
                    "file imports nothing; rows the agent already has are skipped.")
    load.add_argument("file", metavar="FILE", help="the export file ('-': standard input)")
    load.add_argument("--agent", metavar="AGENT",
                      help="the agent to import into (default: the one it was exported from)")
    load.add_argument("--reembed", action="store_true",
                      help="accept vectors of another embedding model; the housekeeping "
                           "job re-embeds them")
    load.add_argument("--dry-run", action="store_true",
                      help="check the file and report what an import would do; change "
                           "nothing")
    load.set_defaults(handler=_import, remote=True)

    forget = commands.add_parser(
        "forget-agent", parents=[agent], help="erase every record of an agent for good",
        description="Erase every row of an agent in one transaction; only a receipt "
                    "without content (a hash of the id, the time, row counts) is kept.")
    _confirmed(forget, "the erasure", "receipt")
    forget.set_defaults(handler=_forget, remote=True)

    person = commands.add_parser(
        "forget-person", parents=[agent], help="forget one person of an agent for good",
        description="Purge every memory that is this person's alone (their facts, their "
                    "own conversations and what was learned from them) in one "
                    "transaction; they leave the conversations they had with others.")
    person.add_argument("user", metavar="PERSON", help="the person (a user id or a name)")
    _confirmed(person, "the erasure", "audit")
    person.set_defaults(handler=_forget_person, remote=True)

    message = commands.add_parser(
        "forget-message", parents=[agent], help="forget one message and every trace of it",
        description="Delete one message of an episode (open or closed), or with --redact "
                    "only some strings of it; its chunks and the summary are made again "
                    "without it and what was learned from it is purged.")
    message.add_argument("episode", metavar="EPISODE", help="the episode's id")
    message.add_argument("seq", metavar="SEQ", type=int, help="the message's seq")
    message.add_argument("--redact", action="append", metavar="TEXT",
                         help="take out only this string (repeatable)")
    _confirmed(message, "the removal", "audit")
    message.set_defaults(handler=_forget_message, remote=True)

    guard = commands.add_parser(
        "secrets-policy", parents=[agent], help="what the agent keeps out of memory",
        description="Show, or --set, what the agent keeps out of memory: redact (the "
                    "default: each secret replaced by a typed placeholder), refuse (a "
                    "write holding one fails) or keep (stored as given).")
    guard.add_argument("--set", dest="policy", choices=("redact", "refuse", "keep"),
                       help="the policy from now on (what is stored stays)")
    guard.set_defaults(handler=_secrets_policy, remote=True)


def _confirmed(command: argparse.ArgumentParser, what: str, kept_in: str) -> None:
    """An erasure's options: ``--yes`` to confirm it, ``--actor`` to name who asked."""
    command.add_argument("--yes", action="store_true", help=f"confirm {what}")
    command.add_argument("--actor", default="cli", help=f"who asked (kept in the {kept_in})")


async def _export(store: MemoryStore, args: argparse.Namespace) -> Output:
    if args.output is None:
        if args.json:
            raise InvalidInputError.single("json", "the export itself goes to standard "
                                                   "output; use -o FILE with --json")
        summary = await store.export_agent_to(args.agent, sys.stdout.buffer,
                                              user=args.user)
        sys.stdout.buffer.flush()
        print(f"exported {summary.rows} rows of {summary.agent_id}", file=sys.stderr)
        return Output(None, "")
    target = Path(args.output)
    partial = target.with_name(target.name + ".partial")
    try:
        with await asyncio.to_thread(partial.open, "wb") as out:
            summary = await store.export_agent_to(args.agent, out, user=args.user)
        partial.replace(target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    lines = [f"exported {summary.rows} rows of {summary.agent_id} to {target} "
             f"({summary.bytes} bytes, sha256 {summary.sha256})"]
    lines += [f"  {table:<24}{n}" for table, n in summary.counts.items() if n]
    return Output(summary.model_dump(mode="json") | {"file": str(target)}, "\n".join(lines))


async def _import(store: MemoryStore, args: argparse.Namespace) -> Output:
    source: BinaryIO
    with contextlib.ExitStack() as stack:
        if args.file == "-":
            source = sys.stdin.buffer
        else:
            try:
                source = stack.enter_context(await asyncio.to_thread(Path(args.file).open,
                                                                     "rb"))
            except OSError as exc:
                raise InvalidInputError.single(
                    "file", f"cannot read {args.file}: {exc.strerror or exc}") from None
        summary = await store.import_agent(source, agent_id=args.agent,
                                           allow_other_model=args.reembed,
                                           dry_run=args.dry_run)
    added, kept = sum(summary.inserted.values()), sum(summary.identical.values())
    verb = "would import" if args.dry_run else "imported"
    lines = [f"{verb} {summary.rows} rows of {summary.source_agent_id} into "
             f"{summary.agent_id}: {added} new, {kept} already there"]
    lines += [f"  {table:<24}{n} new, {summary.identical.get(table, 0)} already there"
              for table, n in summary.inserted.items()]
    if summary.reembed_pending:
        lines.append(f"{summary.reembed_pending} rows have vectors of "
                     f"{summary.embedding_model}: 'nous-memory jobs run housekeeping' "
                     "re-embeds them")
    return Output(summary.model_dump(mode="json"), "\n".join(lines))


async def _forget(store: MemoryStore, args: argparse.Namespace) -> Output:
    if not args.yes:
        raise InvalidInputError.single(
            "yes", f"forget-agent erases every record of {args.agent} for good; run it "
                   "again with --yes to confirm (nous-memory export first keeps a copy)")
    receipt = await store.forget_agent(args.agent, actor=args.actor)
    lines = [f"forgot {receipt.agent_id}: {receipt.total_rows} rows erased "
             f"(receipt {receipt.audit_id}, {receipt.erased_at.isoformat(timespec='seconds')})"]
    lines += [f"  {table:<24}{n}" for table, n in sorted(receipt.counts.items()) if n]
    return Output(receipt.model_dump(mode="json"), "\n".join(lines))


async def _forget_person(store: MemoryStore, args: argparse.Namespace) -> Output:
    if not args.yes:
        raise InvalidInputError.single(
            "yes", f"forget-person purges everything of {args.user} in {args.agent} for "
                   "good; run it again with --yes to confirm (export --user keeps a copy)")
    erased = await store.forget_person(args.agent, args.user, actor=args.actor)
    purged = sum(erased.purged.values())
    lines = [f"forgot a person of {erased.agent_id}: {purged} memories purged, "
             f"{erased.left} shared ones left to the others"]
    lines += [f"  {kind:<24}{n}" for kind, n in sorted(erased.purged.items())]
    return Output(erased.model_dump(mode="json"), "\n".join(lines))


async def _forget_message(store: MemoryStore, args: argparse.Namespace) -> Output:
    if not args.yes:
        raise InvalidInputError.single(
            "yes", f"forget-message removes message {args.seq} of episode {args.episode} "
                   "for good; run it again with --yes to confirm")
    erased = await store.forget_message(args.agent, args.episode, args.seq,
                                        redact=args.redact, actor=args.actor)
    what = "redacted" if erased.action == "redacted" else "deleted"
    lines = [f"message {erased.seq} of episode {erased.episode_id} {what}"
             + (" (restored from cold storage first)" if erased.restored else ""),
             f"  {'chunks rebuilt':<24}{erased.chunks}",
             f"  {'summary':<24}{erased.summary}",
             f"  {'facts purged':<24}{erased.facts}",
             f"  {'decisions purged':<24}{erased.decisions}",
             f"  {'rolling summaries':<24}{erased.rolling_summaries}",
             f"  {'audit values emptied':<24}{erased.events}"]
    return Output(erased.model_dump(mode="json"), "\n".join(lines))


async def _secrets_policy(store: MemoryStore, args: argparse.Namespace) -> Output:
    policy = (await store.set_secrets_policy(args.agent, args.policy) if args.policy
              else await store.secrets_policy(args.agent))
    done = {"redact": "redacted", "refuse": "refused", "keep": "kept"}[policy.value]
    return Output({"agent_id": args.agent, "secrets": policy.value},
                  f"{args.agent}: secrets in what is written are {done}")
