"""``nous-memory db init|status|citus-script`` (``backup|restore`` in ``backup``) and the
memory commands: ``remember``, ``get``, ``list``, ``update``, ``delete`` and ``history``.

Values go to the store as given, so validation and its "field: reason" messages stay in
one place.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError, a_or_an
from ..memories.kinds import Kind, Status
from .backup import add_backup_commands
from .fields import add_field_options, collect_fields, options_for_kind, options_for_update
from .output import (
    Output,
    add_user_option,
    dump,
    event_text,
    memory_line,
    memory_text,
    shorten,
)

if TYPE_CHECKING:
    from ..store import MemoryStore

LIST_SUMMARY_CHARS = 100


def add_memory_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                        agent: argparse.ArgumentParser, json_flag: argparse.ArgumentParser
                        ) -> None:
    db = commands.add_parser("db", help="database administration")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_commands.add_parser("init", parents=[json_flag],
                           help="create or migrate the schema and show the setup"
                           ).set_defaults(handler=_db_init)
    db_commands.add_parser("status", parents=[json_flag],
                           help="schema version, server and pgvector versions"
                           ).set_defaults(handler=_db_status)
    db_commands.add_parser(
        "citus-script", parents=[json_flag],
        help="the SQL that distributes this schema on Citus (docs/scaling.md)",
        description="Create or migrate the schema (as init), then print the SQL an operator "
                    "runs once on the Citus coordinator: every tenant table distributed by "
                    "agent_id and co-located; the rest stays on the coordinator."
    ).set_defaults(handler=_db_citus_script)
    add_backup_commands(db_commands, json_flag)

    remember = commands.add_parser("remember", help="store a new memory",
                                   description="Store a new memory of one kind; see "
                                   "'nous-memory remember KIND --help' for its fields.")
    kinds = remember.add_subparsers(dest="kind", required=True)
    for kind in Kind:
        options = options_for_kind(kind)
        sub = kinds.add_parser(kind.value, parents=[agent],
                               help=f"remember {a_or_an(kind.value)}")
        add_field_options(sub, options)
        add_user_option(sub, writes=True)
        sub.set_defaults(handler=_remember, field_options=options, remote=True)

    get = commands.add_parser("get", parents=[agent], help="show one memory")
    get.add_argument("id", metavar="ID")
    get.add_argument("--include-deleted", action="store_true",
                     help="also show a soft-deleted memory")
    get.set_defaults(handler=_get, remote=True)

    listing = commands.add_parser("list", parents=[agent], help="list memories, newest first")
    listing.add_argument("--kind", choices=[k.value for k in Kind])
    listing.add_argument("--status", nargs="+", action="extend", metavar="STATUS",
                         choices=[s.value for s in Status],
                         help="one or more of: %(choices)s (default: all but deleted)")
    listing.add_argument("--limit", type=int, default=50, metavar="N",
                         help="page size, 1 to 500 (default 50)")
    listing.add_argument("--cursor", metavar="C", help="the next cursor a previous page printed")
    add_user_option(listing)
    listing.set_defaults(handler=_list, remote=True)

    update = commands.add_parser(
        "update", parents=[agent], help="change fields of a memory",
        description="Change fields of a memory; each option takes the field's new value "
                    "(a list option replaces the whole list).  The summary follows.")
    update.add_argument("id", metavar="ID")
    update.add_argument("--actor", help="who made the change (recorded in the history)")
    update_options = options_for_update()
    add_field_options(update, update_options)
    update.set_defaults(handler=_update, field_options=update_options, remote=True)

    delete = commands.add_parser("delete", parents=[agent], help="delete a memory")
    delete.add_argument("id", metavar="ID")
    delete.add_argument("--purge", action="store_true",
                        help="remove the content for good (default: soft delete)")
    delete.add_argument("--actor", help="who deleted it (recorded in the history)")
    delete.set_defaults(handler=_delete, remote=True)

    history = commands.add_parser("history", parents=[agent], help="audit trail of a memory")
    history.add_argument("id", metavar="ID")
    history.set_defaults(handler=_history, remote=True)


async def _db_init(store: MemoryStore, args: argparse.Namespace) -> Output:
    data = await _db_report(store)
    return Output(data, "\n".join([
        "database ready",
        f"database:        {data['database']['dsn']}"
        f" ({'embedded' if store.embedded else 'external'})",
        f"schema version:  {store.schema.version}",
        f"schema drift:    {_drift_text(data['schema']['drift'])}",
        f"embedding model: {store.embedder.model_name} ({store.embedder.dimension} dimensions)",
    ]))


async def _db_citus_script(store: MemoryStore, args: argparse.Namespace) -> Output:
    from ..db.distribution import COORDINATOR_LOCAL, DISTRIBUTED, citus_script

    script = citus_script()
    return Output({"sql": script, "distributed": list(DISTRIBUTED),
                   "coordinator_local": dict(COORDINATOR_LOCAL)}, script.rstrip("\n"))


async def _db_status(store: MemoryStore, args: argparse.Namespace) -> Output:
    data = await _db_report(store)
    schema, database = data["schema"], data["database"]
    state = "up to date" if schema["up_to_date"] else "NOT up to date"
    return Output(data, "\n".join([
        f"database:         {database['dsn']} ({'embedded' if store.embedded else 'external'})",
        f"server version:   {database['server_version']}",
        f"pgvector version: {database['pgvector_version']}",
        f"schema version:   {schema['version']} (expected {schema['expected_version']}, {state})",
        f"schema drift:     {_drift_text(schema['drift'])}",
        f"embedding model:  {store.embedder.model_name} ({store.embedder.dimension} dimensions)",
    ]))


async def _db_report(store: MemoryStore) -> dict[str, Any]:
    data = await store.health()
    data["schema"] = {"version": store.schema.version,
                      "expected_version": store.schema.expected_version,
                      "up_to_date": store.schema.up_to_date,
                      "drift": await store.schema_drift()}
    return data


async def _remember(store: MemoryStore, args: argparse.Namespace) -> Output:
    fields = collect_fields(args, args.field_options, reserved=("agent_id", "kind"))
    if args.user is not None:
        if fields.get("user") not in (None, args.user):
            raise InvalidInputError.single("user", "given by --user and in --fields; "
                                                   "give it once")
        fields["user"] = args.user
    memory = await store.remember(args.agent, args.kind, **fields)
    return Output(dump(memory), memory_line(memory))


async def _get(store: MemoryStore, args: argparse.Namespace) -> Output:
    memory = await store.get(args.agent, args.id, include_deleted=args.include_deleted)
    return Output(dump(memory), memory_text(memory))


async def _list(store: MemoryStore, args: argparse.Namespace) -> Output:
    page = await store.list(args.agent, kind=args.kind, status=args.status, limit=args.limit,
                            cursor=args.cursor, user=args.user)
    lines = [f"{m.id}  {m.kind.value:<9}  {m.status.value:<10}  "
             f"{shorten(m.summary, LIST_SUMMARY_CHARS)}" for m in page.items]
    if not lines:
        lines.append("no memories")
    if page.next_cursor:
        lines.append(f"next cursor: {page.next_cursor}")
    return Output(page.model_dump(mode="json"), "\n".join(lines))


async def _update(store: MemoryStore, args: argparse.Namespace) -> Output:
    changes = collect_fields(args, args.field_options,
                             reserved=("agent_id", "memory_id", "actor"))
    memory = await store.update(args.agent, args.id, actor=args.actor, **changes)
    return Output(dump(memory), f"{memory_line(memory)}  (version {memory.version})")


async def _delete(store: MemoryStore, args: argparse.Namespace) -> Output:
    await store.delete(args.agent, args.id, purge=args.purge, actor=args.actor)
    what = "purged" if args.purge else "deleted (get --include-deleted still shows it)"
    return Output({"id": args.id, "deleted": True, "purged": args.purge}, f"{args.id} {what}")


async def _history(store: MemoryStore, args: argparse.Namespace) -> Output:
    events = await store.history(args.agent, args.id)
    return Output([e.model_dump(mode="json") for e in events],
                  "\n".join(event_text(e) for e in events))


def _drift_text(drift: list[str]) -> str:
    """"none", or every difference on a line of its own."""
    return "\n    ".join(["none (the tables match this version)"] if not drift
                          else [f"{len(drift)} difference(s)", *drift])
