"""Migration runner: ``schema.sql`` on an empty database, numbered migrations after that.

Idempotent and safe to run from several processes at once (one transaction under an
advisory lock).  The embedding dimension is fixed here and recorded in ``store_meta``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import EmbeddingMismatchError, PgvectorMissingError, SchemaError
from .connector import Connection
from .errors import translated

_log = logging.getLogger(__name__)

_VERSION_LINE = re.compile(r"^--\s*schema-version:\s*(\d+)\s*$", re.MULTILINE)
_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_DEFAULT_DIM = 384
_LOCK_KEY = "nous_memory.migrate"


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


@dataclass(frozen=True, kw_only=True, slots=True)
class SchemaStatus:
    version: int | None
    expected_version: int
    embedding_dim: int | None
    embedding_model: str | None

    @property
    def up_to_date(self) -> bool:
        return self.version == self.expected_version


def schema_sql() -> str:
    """The DDL: packaged copy in a wheel, the repo root's file in a source checkout."""
    packaged = resources.files(__package__).joinpath("schema.sql")
    if packaged.is_file():
        return packaged.read_text("utf-8")
    return (Path(__file__).resolve().parents[2] / "schema.sql").read_text("utf-8")


def schema_version(sql: str | None = None) -> int:
    match = _VERSION_LINE.search(sql if sql is not None else schema_sql())
    if match is None:
        raise SchemaError("schema.sql has no '-- schema-version: N' line")
    return int(match.group(1))


def migrations() -> list[Migration]:
    """Numbered upgrade files, in order; numbers must run 2..schema-version without gaps."""
    found: list[Migration] = []
    for entry in resources.files(__package__).joinpath("migrations").iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(version=int(match.group(1)), name=match.group(2),
                                   sql=entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    expected = list(range(2, schema_version() + 1))
    if [m.version for m in found] != expected:
        raise SchemaError(
            f"migrations {[m.version for m in found]} do not match schema.sql version "
            f"{schema_version()} (expected {expected})"
        )
    return found


async def migrate(
    conn: Connection, *, embedding_dim: int, embedding_model: str
) -> SchemaStatus:
    """Bring the database to the current schema and check the embedding dimension."""
    with translated():
        async with conn.raw.transaction():
            await conn.execute("migration_lock", _LOCK_KEY)
            current = await _current_version(conn)
            if current is None:
                await _initialise(conn, embedding_dim, embedding_model)
            else:
                await _upgrade(conn, current)
            return await _check_embedding(conn, embedding_dim, embedding_model)


async def schema_status(conn: Connection) -> SchemaStatus:
    with translated():
        version = await _current_version(conn)
        meta: dict[str, str] = {}
        if version is not None:
            meta = {r["key"]: r["value"] for r in await conn.fetch("store_meta_all")}
    dim = meta.get("embedding_dim")
    return SchemaStatus(version=version, expected_version=schema_version(),
                        embedding_dim=int(dim) if dim else None,
                        embedding_model=meta.get("embedding_model"))


async def _current_version(conn: Connection) -> int | None:
    if not await conn.fetchval("schema_version_table_exists"):
        return None
    version: int | None = await conn.fetchval("schema_version_current")
    return version


def _for_dim(sql: str, dim: int) -> str:
    """DDL for this database's embedding dimension (the files are written for 384)."""
    return sql if dim == _DEFAULT_DIM else sql.replace(f"vector({_DEFAULT_DIM})",
                                                       f"vector({dim})")


async def _initialise(conn: Connection, dim: int, model: str) -> None:
    if not await conn.fetchval("pgvector_available"):
        raise PgvectorMissingError(
            "this PostgreSQL server has no pgvector extension ('vector'); install pgvector "
            "(for example the pgvector/pgvector Docker image) or unset "
            "NOUS_MEMORY_DATABASE_URL to use the embedded server, which ships it"
        )
    if not 1 <= dim <= 2000:
        raise EmbeddingMismatchError(f"embedding dimension {dim} is outside 1..2000 (HNSW limit)")
    sql = _for_dim(schema_sql(), dim)
    await conn.raw.execute(sql)
    await conn.execute("schema_version_record", schema_version(sql), "schema.sql")
    await conn.execute("store_meta_set", "embedding_dim", str(dim))
    await conn.execute("store_meta_set", "embedding_model", model)
    _log.info("initialised schema version %s (embedding dim %s)", schema_version(sql), dim)


async def _upgrade(conn: Connection, current: int) -> None:
    expected = schema_version()
    if current > expected:
        raise SchemaError(
            f"the database has schema version {current}, newer than this code ({expected}); "
            "upgrade nous-memory"
        )
    dim = await conn.fetchval("store_meta_get", "embedding_dim")
    for migration in migrations():
        if migration.version > current:
            sql = migration.sql if dim is None else _for_dim(migration.sql, int(dim))
            await conn.raw.execute(sql)
            await conn.execute("schema_version_record", migration.version, migration.name)
            _log.info("applied migration %04d_%s", migration.version, migration.name)


async def _check_embedding(conn: Connection, dim: int, model: str) -> SchemaStatus:
    status = await schema_status(conn)
    if status.embedding_dim != dim:
        raise EmbeddingMismatchError(
            f"the database was initialised for {status.embedding_dim}-dimensional embedding "
            f"({status.embedding_model}); the configured embedder {model} gives {dim} "
            "dimensions. Use a model of the same dimension or a new database."
        )
    if status.embedding_model != model:
        _log.warning("embedding model changed from %s to %s; rows keep the model they were "
                     "embedded with", status.embedding_model, model)
        await conn.execute("store_meta_set", "embedding_model", model)
        status = await schema_status(conn)
    return status
