"""``nous-memory db backup FILE`` and ``nous-memory db restore FILE``: the whole store,
embedded or at any URL, with PostgreSQL's own tools (``db.backup``).

They open no store: a restore must find its database empty, and opening a store would
create the schema first.  The embedded server is started (and its database created,
empty) when no URL is set.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from .output import Output

if TYPE_CHECKING:
    from ..config import Settings


def add_backup_commands(db_commands: argparse._SubParsersAction[argparse.ArgumentParser],
                        json_flag: argparse.ArgumentParser) -> None:
    backup = db_commands.add_parser(
        "backup", parents=[json_flag], help="write a backup of the whole store to FILE",
        description="An online, consistent, compressed backup of every agent (pg_dump in "
                    "one snapshot, with each table's row counts and checksums per agent); "
                    "writes go on meanwhile.")
    backup.add_argument("file", metavar="FILE", type=Path)
    backup.set_defaults(direct=_backup)
    restore = db_commands.add_parser(
        "restore", parents=[json_flag], help="restore a backup FILE into an empty database",
        description="Restore a backup into the configured database, which must be empty "
                    "(a new NOUS_MEMORY_DATABASE_URL, or a new data directory); all or "
                    "nothing.")
    restore.add_argument("file", metavar="FILE", type=Path)
    restore.add_argument("--force", action="store_true",
                         help="replace the tables of a database that is not empty")
    restore.add_argument("--verify", action="store_true",
                         help="then compare row counts and checksums per table and agent "
                              "with the backup's (exit 1 on any difference)")
    restore.set_defaults(direct=_restore)


async def _with_dsn(settings: Settings) -> tuple[str, object | None]:
    if settings.database_url:
        return settings.database_url, None
    from ..db import EmbeddedServer
    from ..db.setup import ensure_database

    server = await asyncio.to_thread(EmbeddedServer.acquire, settings.data_dir)
    try:
        await ensure_database(server, settings.database_name)
    except BaseException:
        await asyncio.to_thread(server.release)
        raise
    return server.dsn(settings.database_name), server


async def run_direct(args: argparse.Namespace, settings: Settings) -> Output:
    """Run a command that works on the database without a store."""
    dsn, server = await _with_dsn(settings)
    try:
        output: Output = await args.direct(dsn, args)
        return output
    finally:
        if server is not None:
            from ..db import EmbeddedServer

            assert isinstance(server, EmbeddedServer)
            await asyncio.to_thread(server.release)


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


async def _backup(dsn: str, args: argparse.Namespace) -> Output:
    from ..db.backup import backup

    done = await backup(dsn, args.file)
    agents = len({s.agent_id for s in done.sums if s.agent_id})
    data = {"file": str(done.path), "bytes": done.size_bytes,
            "seconds": round(done.seconds, 3), "rows": done.rows, "agents": agents,
            "tables": len({s.table for s in done.sums})}
    return Output(data, f"backup {done.path}: {_mb(done.size_bytes)}, {done.rows} rows of "
                        f"{agents} agents, in {done.seconds:.1f} s")


async def _restore(dsn: str, args: argparse.Namespace) -> Output:
    from ..db.backup import restore
    from ..errors import DatabaseError

    done = await restore(dsn, args.file, force=args.force, verify=args.verify)
    if done.mismatches:
        raise DatabaseError("the restored database differs from the backup: "
                            + "; ".join(done.mismatches[:20]))
    data = {"file": str(done.path), "seconds": round(done.seconds, 3), "rows": done.rows,
            "verified": done.verified}
    check = ", verified: every table's rows and checksums match" if done.verified else ""
    return Output(data, f"restored {done.path}: {done.rows} rows in {done.seconds:.1f} s"
                        f"{check}")
