"""Backups of the whole store with PostgreSQL's own pg_dump and pg_restore (the embedded
wheel's, the same major as the embedded server), online and consistent.

A backup file is a tar of two members: ``database.dump``, pg_dump's custom format
(compressed; ``pg_restore`` reads it on its own after ``tar xf``), and
``manifest.json``, each table's row count and content checksum per agent.  Both come
from one moment: the backup exports a snapshot, pg_dump reads through it, and the
checksums are taken in the same transaction, so every write acknowledged before the
backup began is in it and the manifest describes exactly the dump.  A restore goes into
an empty database (a non-empty one only when forced) in one transaction; ``verify``
then takes the checksums again and compares them with the manifest.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from ..errors import ConflictError, DatabaseError, DatabaseUnavailableError, InvalidInputError
from .connector import Connection
from .errors import translated
from .queries import QUERIES
from .tools import postgres_tool

FORMAT = "nous-memory backup"
FORMAT_VERSION = 1
MANIFEST, DUMP = "manifest.json", "database.dump"
_UNAVAILABLE_WORDS = ("terminating connection", "could not connect", "connection to server",
                      "server closed the connection", "the database system is",
                      "terminated abnormally")


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSum:
    """One table's rows of one agent ('' for a table without agents): count and checksum."""

    table: str
    agent_id: str
    rows: int
    checksum: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BackupResult:
    path: Path
    size_bytes: int
    seconds: float
    sums: tuple[TableSum, ...]

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.sums)


@dataclass(frozen=True, slots=True, kw_only=True)
class RestoreResult:
    path: Path
    seconds: float
    rows: int
    verified: bool  # checksums compared (``verify``)
    mismatches: tuple[str, ...]  # what differs, one line each; empty when identical


async def _connect(dsn: str) -> Connection:
    with translated():
        return Connection(await asyncpg.connect(dsn), QUERIES)


async def checksums(conn: Connection) -> list[TableSum]:
    """Every table's count and content checksum per agent, as ``conn`` sees them (call
    inside a transaction: one snapshot for all tables)."""
    await conn.fetchrow("backup_text_settings")
    sums: list[TableSum] = []
    for table in await conn.fetch("backup_checksum_statements"):
        for row in await conn.fetch_built(table["statement"]):
            sums.append(TableSum(table=table["table_name"], agent_id=row["agent_id"],
                                 rows=row["n"], checksum=row["checksum"]))
    return sorted(sums, key=lambda s: (s.table, s.agent_id))


def _tool_target(dsn: str) -> tuple[str, dict[str, str]]:
    """The DSN for a PostgreSQL program, its password moved to the environment (a
    command line is visible to every user of the machine)."""
    parts = urlsplit(dsn)
    env = dict(os.environ)
    if parts.password is not None:
        env["PGPASSWORD"] = parts.password
        netloc = parts.netloc.rsplit("@", 1)
        user = netloc[0].split(":", 1)[0]
        parts = parts._replace(netloc=f"{user}@{netloc[1]}")
    return urlunsplit(parts), env


async def _run_tool(name: str, *args: str, env: dict[str, str]) -> None:
    process = await asyncio.create_subprocess_exec(
        str(postgres_tool(name)), *args, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    _, err = await process.communicate()
    if process.returncode == 0:
        return
    full = err.decode(errors="replace")
    lines = [line.strip() for line in full.splitlines() if line.strip()]
    # its first error line says what happened; the rest is detail (the query it ran)
    text = next((line for line in lines if "error:" in line), lines[0] if lines else
                f"exit code {process.returncode}")
    if any(word in full for word in _UNAVAILABLE_WORDS):
        raise DatabaseUnavailableError(f"{name} lost the database: {text}")
    raise DatabaseError(f"{name} failed: {text}")


async def backup(dsn: str, path: Path) -> BackupResult:
    """Write a backup of the whole database at ``dsn`` to ``path`` (replaced atomically)."""
    if not path.parent.is_dir():  # said before the dump, not as a traceback after it
        raise InvalidInputError.single("file", "its directory does not exist")
    started = time.monotonic()
    target, env = _tool_target(dsn)
    conn = await _connect(dsn)
    with tempfile.TemporaryDirectory(prefix="nous-backup-") as work:
        dump = Path(work) / DUMP
        try:
            with translated():
                tx = conn.raw.transaction(isolation="repeatable_read", readonly=True)
                await tx.start()
            snapshot = await conn.fetchval("backup_export_snapshot")
            dumping = _run_tool("pg_dump", "--format=custom", "--no-owner",
                                "--no-privileges", f"--snapshot={snapshot}",
                                f"--file={dump}", f"--dbname={target}", env=env)
            sums, _ = await asyncio.gather(checksums(conn), dumping)
        finally:
            await conn.close()
        manifest = {"format": FORMAT, "version": FORMAT_VERSION,
                    "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "tables": [{"table": s.table, "agent_id": s.agent_id, "rows": s.rows,
                                "checksum": s.checksum} for s in sums]}
        size = await asyncio.to_thread(_write_archive, path, dump,
                                       json.dumps(manifest, indent=1).encode())
    return BackupResult(path=path, size_bytes=size, seconds=time.monotonic() - started,
                        sums=tuple(sums))


def _write_archive(path: Path, dump: Path, manifest: bytes) -> int:
    """The tar of manifest and dump, written beside ``path`` and renamed over it."""
    partial = path.with_name(path.name + ".partial")
    with tarfile.open(partial, "w") as tar:
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mtime = len(manifest), int(time.time())
        tar.addfile(info, io.BytesIO(manifest))
        tar.add(dump, arcname=DUMP)
    partial.replace(path)
    return path.stat().st_size


def _extract_dump(path: Path, into: str) -> Path:
    with tarfile.open(path, "r") as tar:
        tar.extract(DUMP, into, filter="data")
    return Path(into) / DUMP


def read_manifest(path: Path) -> list[TableSum]:
    """The checksums a backup file recorded; a clear error for anything else."""
    try:
        with tarfile.open(path, "r") as tar:
            member = tar.extractfile(MANIFEST)
            if member is None:
                raise KeyError(MANIFEST)
            manifest = json.loads(member.read())
    except (OSError, tarfile.TarError, KeyError, ValueError) as exc:
        raise InvalidInputError.single(
            "file", f"not a nous-memory backup ({type(exc).__name__}: {exc})") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != FORMAT_VERSION:
        raise InvalidInputError.single("file", "not a nous-memory backup of this version")
    return [TableSum(table=t["table"], agent_id=t["agent_id"], rows=t["rows"],
                     checksum=t["checksum"]) for t in manifest["tables"]]


def compare(expected: list[TableSum], found: list[TableSum]) -> list[str]:
    """What differs between two sets of checksums, one line each."""
    want = {(s.table, s.agent_id): s for s in expected}
    have = {(s.table, s.agent_id): s for s in found}
    lines: list[str] = []
    for key in sorted(want.keys() | have.keys()):
        a, b = want.get(key), have.get(key)
        where = f"{key[0]}" + (f" (agent {key[1]})" if key[1] else "")
        if a is None or b is None:
            lines.append(f"{where}: {'missing after the restore' if b is None else 'extra'}")
        elif a.rows != b.rows:
            lines.append(f"{where}: {a.rows} rows in the backup, {b.rows} restored")
        elif a.checksum != b.checksum:
            lines.append(f"{where}: same {a.rows} rows, different content")
    return lines


async def restore(dsn: str, path: Path, *, force: bool = False,
                  verify: bool = False) -> RestoreResult:
    """Restore a backup into the database at ``dsn``: an empty one, or (``force``) one
    whose tables are replaced.  All or nothing (one transaction)."""
    started = time.monotonic()
    expected = await asyncio.to_thread(read_manifest, path)
    target, env = _tool_target(dsn)
    conn = await _connect(dsn)
    try:
        relations = int(await conn.fetchval("database_relations"))
        if relations and not force:
            raise ConflictError(
                f"the database is not empty ({relations} tables, views or sequences); "
                "restore into an empty database, or force it to replace them")
        with tempfile.TemporaryDirectory(prefix="nous-restore-") as work:
            dump = await asyncio.to_thread(_extract_dump, path, work)
            await _run_tool("pg_restore", "--no-owner", "--no-privileges",
                            "--exit-on-error", "--single-transaction",
                            *(["--clean", "--if-exists"] if relations else []),
                            f"--dbname={target}", str(dump), env=env)
        mismatches: list[str] = []
        found: list[TableSum] = []
        if verify:
            with translated():
                async with conn.raw.transaction(isolation="repeatable_read", readonly=True):
                    found = await checksums(conn)
            mismatches = compare(expected, found)
    finally:
        await conn.close()
    return RestoreResult(path=path, seconds=time.monotonic() - started,
                         rows=sum(s.rows for s in (found or expected)), verified=verify,
                         mismatches=tuple(mismatches))
