"""The ``nous-memory`` command line: a thin synchronous wrapper over ``MemoryStore``.

Each invocation parses its arguments, runs one coroutine with ``asyncio.run`` and maps
errors to exit codes: 0 success, 1 other failures, 2 usage errors and invalid input,
3 not found, 4 conflict.  ``--json`` prints machine-readable JSON on stdout.

With ``--url`` (or ``$NOUS_MEMORY_URL``) the memory commands go to a running service
through ``nous_memory.client``: this process then imports no database driver, store or
model and starts in a fraction of a second.  Commands that work on the database itself
(serve, mcp, db, jobs, scheduler, worker, ...) run only without it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import traceback
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConflictError, InvalidInputError, NotFoundError, NousMemoryError
from .context import add_context_commands
from .episodes import add_episode_commands
from .facts import add_fact_commands
from .memories import add_memory_commands
from .output import Command, Output
from .portability import add_portability_commands
from .recall import add_recall_command

if TYPE_CHECKING:
    from ..config import Settings

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_CONFLICT = 0, 1, 2, 3, 4
URL_ENV, KEY_ENV = "NOUS_MEMORY_URL", "NOUS_MEMORY_API_KEY"  # as nous_memory.client reads
# commands whose modules load the store (jobs, the MCP server, uvicorn): never remote
LOCAL_COMMANDS = frozenset({"serve", "mcp", "jobs", "scheduler", "memories", "keys",
                            "ingest"})

EPILOG = """\
exit codes: 0 ok, 1 error, 2 usage error or invalid input, 3 not found, 4 conflict.
Settings not given as options come from NOUS_MEMORY_* environment variables; without a
database URL an embedded PostgreSQL is started in the data directory."""


# ---------------------------------------------------------------------- parser


def build_parser(*, remote: bool = False) -> argparse.ArgumentParser:
    """Every command; ``remote``: only those a service can run (their modules are light)."""
    parser = argparse.ArgumentParser(
        prog="nous-memory", description="Long-term memory for LLM agents (PostgreSQL + pgvector).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print JSON on stdout")
    parser.add_argument("--debug", action="store_true",
                        help="print an error's traceback, not only its one line")
    parser.add_argument("--database-url", metavar="URL",
                        help="PostgreSQL DSN (default: $NOUS_MEMORY_DATABASE_URL, else embedded)")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="embedded server directory (default: $NOUS_MEMORY_DATA_DIR)")
    parser.add_argument("--url", metavar="URL",
                        help=f"a running service (nous-memory serve) to send the command to "
                             f"instead of opening the database (default: ${URL_ENV})")
    parser.add_argument("--api-key", metavar="KEY",
                        help=f"the service's API key, with --url (default: ${KEY_ENV})")
    # --json is also accepted after the command; SUPPRESS keeps the global value otherwise
    json_flag = argparse.ArgumentParser(add_help=False)
    json_flag.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                           help="print JSON on stdout")
    agent = argparse.ArgumentParser(add_help=False, parents=[json_flag])
    agent.add_argument("--agent", required=True, metavar="AGENT",
                       help="the agent whose memories these are")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_memory_commands(commands, agent, json_flag)
    add_fact_commands(commands, agent)
    add_episode_commands(commands, agent, json_flag)
    add_recall_command(commands, agent)
    add_context_commands(commands, agent)
    add_portability_commands(commands, agent, json_flag)
    if remote:
        return parser
    from .history import add_history_command
    from .jobs import add_job_commands
    from .keys import add_key_commands
    from .mcp import add_mcp_command

    add_history_command(commands, agent)
    add_job_commands(commands, agent, json_flag)
    add_key_commands(commands, json_flag)
    add_mcp_command(commands)

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
    serve.add_argument("--insecure-no-auth-on-network", action="store_true",
                       help="serve a non-loopback address without API keys (refused "
                            "otherwise; only behind a proxy that authenticates)")
    return parser


# ---------------------------------------------------------------------- running


def _settings(args: argparse.Namespace) -> Settings:
    from ..config import Settings  # not needed with --url: a service has its own

    return Settings.from_env(database_url=args.database_url, data_dir=args.data_dir)


def _remote_url(argv: Sequence[str] | None) -> tuple[str | None, bool]:
    """The service URL this invocation goes to (``--url``, else the environment's, which
    the commands that only run locally ignore), and whether the parser can leave those
    commands out."""
    pre = argparse.ArgumentParser(add_help=False)
    for name in ("--url", "--database-url", "--data-dir", "--api-key"):
        pre.add_argument(name)
    pre.add_argument("command", nargs="?")
    known, _ = pre.parse_known_args(argv)
    local = known.command in LOCAL_COMMANDS
    if known.url:
        return known.url, not local
    return (None, False) if local else (os.environ.get(URL_ENV) or None, True)


def _light_httpx() -> None:
    """Leave out what httpx and httpcore import only when it is installed and a ``--url``
    process never runs: httpx's own command line (click, rich, pygments: about 0.1 s)
    and trio (httpcore's second async backend; this process runs asyncio).  Both do
    without their import failing, so they are marked absent before httpx is imported."""
    if "httpx" not in sys.modules:
        for name in ("httpx._main", "trio"):
            sys.modules.setdefault(name, None)  # type: ignore[arg-type]


async def _run(args: argparse.Namespace) -> Output:
    handler: Command = args.handler
    if args.url:
        _light_httpx()
        from ..client import AsyncMemoryClient

        async with AsyncMemoryClient(args.url, api_key=args.api_key
                                     or os.environ.get(KEY_ENV) or None) as client:
            return await handler(client, args)
    from ..store import MemoryStore

    read_only = getattr(args, "db_command", None) == "status"
    async with MemoryStore.open(settings=_settings(args), migrate=not read_only) as store:
        store_: Any = store
        return await handler(store_, args)


async def _serve(args: argparse.Namespace) -> None:
    settings = _settings(args)
    try:
        from ..api import create_app
    except ImportError as exc:
        raise NousMemoryError(f"the REST API is not available: {exc}") from exc
    import uvicorn

    from ..api.auth import check_exposure, key_ring

    host = args.host or settings.api_host
    check_exposure(host, key_ring(settings.api_keys),
                   insecure_opt_out=args.insecure_no_auth_on_network
                   or settings.insecure_no_auth_on_network)
    from ..api.observe import configure_logging

    configure_logging(settings.log_format)
    if settings.database_url:  # wait here, so that giving up is one line, not a traceback
        from ..db.setup import probe, waiting_for_database

        dsn = settings.database_url
        await waiting_for_database(lambda: probe(dsn), dsn, settings.db_wait_s)
    app = create_app(settings=settings, run_worker=False if args.no_worker else None,
                     run_scheduler=args.scheduler)
    # the app writes the access line itself (route templates and request ids, no query)
    config = uvicorn.Config(app, host=host, log_config=None, access_log=False,
                            port=args.port if args.port is not None else settings.api_port)
    # uvicorn handles SIGTERM (graceful shutdown) and raises it again once it is done; a
    # stop asked for by SIGTERM (docker stop, systemd) then ends as a clean exit (0), not
    # as death by that signal (143)
    signal.signal(signal.SIGTERM, _stopped)
    await uvicorn.Server(config).serve()


def _stopped(signum: int, frame: object) -> None:
    raise SystemExit(EXIT_OK)


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
    url, light = _remote_url(argv)
    parser = build_parser(remote=url is not None and light)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    args.url = url
    if url and not getattr(args, "remote", False):
        return _fail([f"'{args.command}' works on the database itself; run it without "
                      f"--url (and ${URL_ENV})"], EXIT_USAGE)
    try:
        if args.command == "serve":
            with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a server stops
                asyncio.run(_serve(args))
            return EXIT_OK
        if args.command == "mcp":
            from .mcp import serve_mcp

            with contextlib.suppress(KeyboardInterrupt):
                asyncio.run(serve_mcp(args, _settings(args)))
            return EXIT_OK
        if getattr(args, "direct", None) is not None:  # db backup / restore: no store
            from .backup import run_direct

            output = asyncio.run(run_direct(args, _settings(args)))
        else:
            output = asyncio.run(_run(args))
    except NousMemoryError:
        if args.debug:
            traceback.print_exc()
        return _exit_for()
    except KeyboardInterrupt:
        return _fail(["interrupted"], 130)
    try:
        _print_output(output, args.json)
    except BrokenPipeError:  # e.g. piped into head: the reader has all it wants
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def _exit_for() -> int:
    """The one line and exit code of the error being handled."""
    exc = sys.exc_info()[1]
    if isinstance(exc, InvalidInputError):
        return _fail((str(p) for p in exc.problems), EXIT_USAGE)
    if isinstance(exc, NotFoundError):
        return _fail([str(exc)], EXIT_NOT_FOUND)
    if isinstance(exc, ConflictError):
        return _fail([str(exc)], EXIT_CONFLICT)
    return _fail([str(exc)], EXIT_ERROR)

