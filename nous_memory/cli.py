"""The ``nous-memory`` command line: a thin synchronous wrapper over ``MemoryStore``.

Each invocation parses its arguments, runs one coroutine with ``asyncio.run`` and maps
errors to exit codes: 0 success, 1 other failures, 2 usage errors and invalid input,
3 not found, 4 conflict.  ``--json`` prints machine-readable JSON on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .cli_fields import (
    add_field_options,
    collect_fields,
    options_for_kind,
    options_for_update,
)
from .config import Settings
from .errors import ConflictError, InvalidInputError, NotFoundError, NousMemoryError
from .kinds import Kind, Status
from .records import Memory, MemoryEvent
from .store import MemoryStore

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_CONFLICT = 0, 1, 2, 3, 4
LIST_SUMMARY_CHARS = 100
HISTORY_VALUE_CHARS = 120

EPILOG = """\
exit codes: 0 ok, 1 error, 2 usage error or invalid input, 3 not found, 4 conflict.
Settings not given as options come from NOUS_MEMORY_* environment variables; without a
database URL an embedded PostgreSQL is started in the data directory."""


@dataclass(frozen=True)
class Output:
    """What a command prints: ``data`` with --json, ``text`` otherwise."""

    data: Any
    text: str


Command = Callable[[MemoryStore, argparse.Namespace], Awaitable[Output]]


# ---------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nous-memory", description="Long-term memory for LLM agents (PostgreSQL + pgvector).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print JSON on stdout")
    parser.add_argument("--database-url", metavar="URL",
                        help="PostgreSQL DSN (default: $NOUS_MEMORY_DATABASE_URL, else embedded)")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="embedded server directory (default: $NOUS_MEMORY_DATA_DIR)")
    # --json is also accepted after the command; SUPPRESS keeps the global value otherwise
    json_flag = argparse.ArgumentParser(add_help=False)
    json_flag.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                           help="print JSON on stdout")
    agent = argparse.ArgumentParser(add_help=False, parents=[json_flag])
    agent.add_argument("--agent", required=True, metavar="AGENT",
                       help="the agent whose memories these are")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    db = commands.add_parser("db", help="database administration")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_commands.add_parser("init", parents=[json_flag],
                           help="create or migrate the schema and show the setup"
                           ).set_defaults(handler=_db_init)
    db_commands.add_parser("status", parents=[json_flag],
                           help="schema version, server and pgvector versions"
                           ).set_defaults(handler=_db_status)

    remember = commands.add_parser("remember", help="store a new memory",
                                   description="Store a new memory of one kind; see "
                                   "'nous-memory remember KIND --help' for its fields.")
    kinds = remember.add_subparsers(dest="kind", required=True)
    for kind in Kind:
        options = options_for_kind(kind)
        sub = kinds.add_parser(kind.value, parents=[agent], help=f"remember a {kind.value}")
        add_field_options(sub, options)
        sub.set_defaults(handler=_remember, field_options=options)

    get = commands.add_parser("get", parents=[agent], help="show one memory")
    get.add_argument("id", metavar="ID")
    get.add_argument("--include-deleted", action="store_true",
                     help="also show a soft-deleted memory")
    get.set_defaults(handler=_get)

    listing = commands.add_parser("list", parents=[agent], help="list memories, newest first")
    listing.add_argument("--kind", choices=[k.value for k in Kind])
    listing.add_argument("--status", nargs="+", action="extend", metavar="STATUS",
                         choices=[s.value for s in Status],
                         help="one or more of: %(choices)s (default: all but deleted)")
    listing.add_argument("--limit", type=int, default=50, metavar="N",
                         help="page size, 1 to 500 (default 50)")
    listing.add_argument("--cursor", metavar="C", help="the next cursor a previous page printed")
    listing.set_defaults(handler=_list)

    update = commands.add_parser(
        "update", parents=[agent], help="change fields of a memory",
        description="Change fields of a memory; each option takes the field's new value "
                    "(a list option replaces the whole list).  The summary follows.")
    update.add_argument("id", metavar="ID")
    update.add_argument("--actor", help="who made the change (recorded in the history)")
    update_options = options_for_update()
    add_field_options(update, update_options)
    update.set_defaults(handler=_update, field_options=update_options)

    delete = commands.add_parser("delete", parents=[agent], help="delete a memory")
    delete.add_argument("id", metavar="ID")
    delete.add_argument("--purge", action="store_true",
                        help="remove the content for good (default: soft delete)")
    delete.add_argument("--actor", help="who deleted it (recorded in the history)")
    delete.set_defaults(handler=_delete)

    history = commands.add_parser("history", parents=[agent], help="audit trail of a memory")
    history.add_argument("id", metavar="ID")
    history.set_defaults(handler=_history)

    # imported here: cli_facts builds on this module's Output and formatters
    from .cli_facts import add_fact_commands
    add_fact_commands(commands, agent)
    from .cli_episodes import add_episode_commands
    add_episode_commands(commands, agent, json_flag)
    # maintenance jobs (issue 6): scheduler, jobs list|run|history, memories restore
    from jobs.cli import add_job_commands
    add_job_commands(commands, agent, json_flag)
    from .cli_recall import add_recall_command
    add_recall_command(commands, agent)
    from .cli_context import add_context_commands
    add_context_commands(commands, agent)

    serve = commands.add_parser("serve", help="run the REST API")
    serve.add_argument("--host", help="interface to bind (default: settings api_host)")
    serve.add_argument("--port", type=int, help="port (default: settings api_port)")
    serve.add_argument("--no-worker", action="store_true",
                       help="do not process the work queue in the server (run "
                            "'nous-memory worker' instead; default: "
                            "$NOUS_MEMORY_RUN_WORKER_IN_SERVE, true)")
    serve.add_argument("--scheduler", action="store_true", default=None,
                       help="also run the maintenance scheduler in the server (default: "
                            "$NOUS_MEMORY_RUN_SCHEDULER_IN_SERVE, false; or run "
                            "'nous-memory scheduler')")
    return parser


# ---------------------------------------------------------------------- commands


async def _db_init(store: MemoryStore, args: argparse.Namespace) -> Output:
    data = await _db_report(store)
    return Output(data, "\n".join([
        "database ready",
        f"database:        {data['database']['dsn']}"
        f" ({'embedded' if store.embedded else 'external'})",
        f"schema version:  {store.schema.version}",
        f"embedding model: {store.embedder.model_name} ({store.embedder.dimension} dimensions)",
    ]))


async def _db_status(store: MemoryStore, args: argparse.Namespace) -> Output:
    data = await _db_report(store)
    schema, database = data["schema"], data["database"]
    state = "up to date" if schema["up_to_date"] else "NOT up to date"
    return Output(data, "\n".join([
        f"database:         {database['dsn']} ({'embedded' if store.embedded else 'external'})",
        f"server version:   {database['server_version']}",
        f"pgvector version: {database['pgvector_version']}",
        f"schema version:   {schema['version']} (expected {schema['expected_version']}, {state})",
        f"embedding model:  {store.embedder.model_name} ({store.embedder.dimension} dimensions)",
    ]))


async def _db_report(store: MemoryStore) -> dict[str, Any]:
    data = await store.health()
    data["schema"] = {"version": store.schema.version,
                      "expected_version": store.schema.expected_version,
                      "up_to_date": store.schema.up_to_date}
    return data


async def _remember(store: MemoryStore, args: argparse.Namespace) -> Output:
    fields = collect_fields(args, args.field_options, reserved=("agent_id", "kind"))
    memory = await store.remember(args.agent, args.kind, **fields)
    return Output(_dump(memory), _memory_line(memory))


async def _get(store: MemoryStore, args: argparse.Namespace) -> Output:
    memory = await store.get(args.agent, args.id, include_deleted=args.include_deleted)
    return Output(_dump(memory), _memory_text(memory))


async def _list(store: MemoryStore, args: argparse.Namespace) -> Output:
    page = await store.list(args.agent, kind=args.kind, status=args.status, limit=args.limit,
                            cursor=args.cursor)
    lines = [f"{m.id}  {m.kind.value:<9}  {m.status.value:<10}  "
             f"{_shorten(m.summary, LIST_SUMMARY_CHARS)}" for m in page.items]
    if not lines:
        lines.append("no memories")
    if page.next_cursor:
        lines.append(f"next cursor: {page.next_cursor}")
    return Output(page.model_dump(mode="json"), "\n".join(lines))


async def _update(store: MemoryStore, args: argparse.Namespace) -> Output:
    changes = collect_fields(args, args.field_options,
                             reserved=("agent_id", "memory_id", "actor"))
    memory = await store.update(args.agent, args.id, actor=args.actor, **changes)
    return Output(_dump(memory), f"{_memory_line(memory)}  (version {memory.version})")


async def _delete(store: MemoryStore, args: argparse.Namespace) -> Output:
    await store.delete(args.agent, args.id, purge=args.purge, actor=args.actor)
    what = "purged" if args.purge else "deleted (get --include-deleted still shows it)"
    return Output({"id": args.id, "deleted": True, "purged": args.purge}, f"{args.id} {what}")


async def _history(store: MemoryStore, args: argparse.Namespace) -> Output:
    events = await store.history(args.agent, args.id)
    return Output([e.model_dump(mode="json") for e in events],
                  "\n".join(_event_text(e) for e in events))


# ---------------------------------------------------------------------- formatting


def _dump(memory: Memory) -> dict[str, Any]:
    return memory.model_dump(mode="json")


def _stamp(value: datetime | None) -> str:
    return value.isoformat(timespec="seconds") if value else "-"


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _memory_line(memory: Memory) -> str:
    return f"{memory.id}  {memory.kind.value}  {memory.summary}"


def _memory_text(memory: Memory) -> str:
    pairs: list[tuple[str, Any]] = [
        ("id", memory.id), ("kind", memory.kind.value), ("status", memory.status.value),
        ("summary", memory.summary), ("importance", memory.importance),
        ("tags", ", ".join(memory.tags) or "-"),
        ("version", memory.version), ("created", _stamp(memory.created_at)),
        ("updated", _stamp(memory.updated_at)),
    ]
    if memory.deleted_at:
        pairs.append(("deleted", _stamp(memory.deleted_at)))
    detail = memory.detail.model_dump(mode="json", exclude={"kind"})
    pairs += [(key, value) for key, value in detail.items() if value not in (None, [])]
    width = max(len(key) for key, _ in pairs) + 2
    lines: list[str] = []
    for key, value in pairs:
        if isinstance(value, list):
            items = value or ["-"]
            lines.append(f"{key + ':':<{width}}{'- ' if value else ''}{items[0]}")
            lines += [f"{'':<{width}}- {item}" for item in items[1:]]
        else:
            lines.append(f"{key + ':':<{width}}{value}")
    return "\n".join(lines)


def _event_text(event: MemoryEvent) -> str:
    """A heading line, then one indented line per changed field."""
    new, old = event.new_values or {}, event.old_values or {}
    lines = [f"{_stamp(event.created_at)}  {event.event}  by {event.actor or '-'}"]
    for key in sorted(set(new) | set(old)):
        after = _json_value(new.get(key))
        lines.append(f"    {key}: {_json_value(old[key])} -> {after}" if key in old
                     else f"    {key}: {after}")
    return "\n".join(lines)


def _json_value(value: Any) -> str:
    return _shorten(json.dumps(value, ensure_ascii=False), HISTORY_VALUE_CHARS)


# ---------------------------------------------------------------------- running


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(database_url=args.database_url, data_dir=args.data_dir)


async def _run(args: argparse.Namespace) -> Output:
    handler: Command = args.handler
    read_only = getattr(args, "db_command", None) == "status"
    async with MemoryStore.open(settings=_settings(args), migrate=not read_only) as store:
        return await handler(store, args)


async def _serve(args: argparse.Namespace) -> None:
    settings = _settings(args)
    try:
        from .api import create_app
    except ImportError as exc:
        raise NousMemoryError(f"the REST API is not available: {exc}") from exc
    import uvicorn

    app = create_app(settings=settings, run_worker=False if args.no_worker else None,
                     run_scheduler=args.scheduler)
    config = uvicorn.Config(app,
                            host=args.host or settings.api_host,
                            port=args.port if args.port is not None else settings.api_port)
    await uvicorn.Server(config).serve()


def _print_output(output: Output, as_json: bool) -> None:
    text = json.dumps(output.data, indent=2, ensure_ascii=False) if as_json else output.text
    if text:
        print(text)


def _fail(messages: Iterable[str], code: int) -> int:
    for message in messages:
        print(f"nous-memory: error: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    # platformdirs warns about this when the embedded server starts; it is noise here
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if args.command == "serve":
            with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a server stops
                asyncio.run(_serve(args))
            return EXIT_OK
        output = asyncio.run(_run(args))
    except InvalidInputError as exc:
        return _fail((str(p) for p in exc.problems), EXIT_USAGE)
    except NotFoundError as exc:
        return _fail([str(exc)], EXIT_NOT_FOUND)
    except ConflictError as exc:
        return _fail([str(exc)], EXIT_CONFLICT)
    except NousMemoryError as exc:
        return _fail([str(exc)], EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail(["interrupted"], 130)
    try:
        _print_output(output, args.json)
    except BrokenPipeError:  # e.g. piped into head: the reader has all it wants
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
