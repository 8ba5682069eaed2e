"""Whole-table moves of one agent's rows, with statements derived from the typed rows.

Export, import and erasure move every row of an agent through every table.  A statement
per table written by hand would be a second copy of the schema that silently misses the
next column, so these statements are derived from ``models.py`` (itself checked against
``schema.sql`` column by column by the test suite).  Identifiers come only from there,
never from input; every statement on a tenant table is scoped to one agent (``$1``).

Imports go through a staging table per target table (``stage_<table>``, a temporary
copy of its columns and CHECK constraints, dropped at commit): rows are staged there in
batches, compared with what the agent already has, and only then inserted, in one
transaction.  What the agent already has of the staged keys is first copied into a
second temporary table (``have_<table>``), so the comparisons join temporary tables only:
Citus joins no distributed table with a temporary one (it runs a statement whose
subquery reads only local tables by reading that subquery first).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, create_model
from sqlalchemy import inspect
from sqlmodel import SQLModel

from .connector import Connection
from .errors import translated
from .models import TABLE_MODELS

AGENT = "agent_id"
LINE = "line_no"  # the staging column that remembers each row's line in the file


@dataclass(frozen=True, slots=True)
class TableShape:
    """What the statements need to know about one table, read from its typed row."""

    name: str
    model: type[SQLModel]
    columns: tuple[str, ...]  # stored columns in schema order (generated ones left out)
    key: tuple[str, ...]  # the primary key
    identity: str | None  # a GENERATED ALWAYS AS IDENTITY column
    vectors: frozenset[str]  # pgvector columns
    binaries: frozenset[str]  # bytea columns
    attributes: Mapping[str, str]  # column name -> model attribute (metadata -> metadata_)
    checker: type[BaseModel]  # validates a row as the model does (see row_checker)

    @property
    def stage(self) -> str:
        return f"stage_{self.name}"

    @property
    def present(self) -> str:
        return f"have_{self.name}"


def _shape(model: type[SQLModel]) -> TableShape:
    table: Any = model.__table__  # type: ignore[attr-defined]
    stored = [c for c in table.columns if c.computed is None]
    attributes = {attr.columns[0].name: attr.key for attr in inspect(model).column_attrs}
    return TableShape(
        name=table.name, model=model, columns=tuple(c.name for c in stored),
        key=tuple(c.name for c in table.primary_key),
        identity=next((c.name for c in stored if c.identity is not None), None),
        vectors=frozenset(c.name for c in stored if str(c.type).startswith("VECTOR")),
        binaries=frozenset(c.name for c in stored if str(c.type) == "BLOB"),
        attributes=attributes, checker=row_checker(model))


def row_checker(model: type[SQLModel]) -> type[BaseModel]:
    """A plain pydantic model with exactly the typed row's fields (their types, defaults
    and constraints): it validates a row as ``model.model_validate`` does, at a twentieth
    of the cost, since it builds no SQLAlchemy-instrumented instance (0.1 ms a row
    matters across the hundreds of thousands of rows of an import)."""
    fields: dict[str, Any] = {name: (info.annotation, info)
                              for name, info in model.model_fields.items()}
    return create_model(f"{model.__name__}Check", **fields)


SHAPES: dict[str, TableShape] = {s.name: s for s in map(_shape, TABLE_MODELS)}


def _q(name: str) -> str:
    """A quoted identifier (names come from models.py; quoting is belt and braces)."""
    return '"' + name.replace('"', '""') + '"'


def _columns(names: Iterable[str], prefix: str = "") -> str:
    return ", ".join(prefix + _q(n) for n in names)


# ---------------------------------------------------------------------- reading and erasing


async def agent_tables(conn: Connection) -> list[str]:
    """Every table of the live database with an ``agent_id`` column, by name."""
    return [r["table_name"] for r in await conn.fetch("catalog_agent_tables")]


async def stream_agent_rows(conn: Connection, shape: TableShape, agent_id: str, *,
                            only: Mapping[str, Sequence[Any]] | None = None,
                            prefetch: int = 500) -> AsyncIterator[Mapping[str, Any]]:
    """The agent's rows of one table in key order, through a server-side cursor (call
    inside a transaction); ``only``: column -> accepted values."""
    where = [f"{_q(AGENT)} = $1"]
    args: list[Any] = [agent_id]
    for column, values in (only or {}).items():
        args.append(list(values))
        where.append(f"{_q(column)} = ANY(${len(args)})")
    sql = (f"SELECT {_columns(shape.columns)} FROM {_q(shape.name)} "
           f"WHERE {' AND '.join(where)} ORDER BY {_columns(shape.key)}")
    with translated():
        async for record in conn.raw.cursor(sql, *args, prefetch=prefetch):
            yield record


async def count_agent_rows(conn: Connection, table: str, agent_id: str) -> int:
    with translated():
        count: int = await conn.raw.fetchval(
            f"SELECT count(*) FROM {_q(table)} WHERE {_q(AGENT)} = $1", agent_id)
        return count


async def delete_agent_rows(conn: Connection, table: str, agent_id: str) -> int:
    with translated():
        status: str = await conn.raw.execute(
            f"DELETE FROM {_q(table)} WHERE {_q(AGENT)} = $1", agent_id)
        return int(status.rsplit(" ", 1)[-1])


# ---------------------------------------------------------------------- staging


async def create_stage(conn: Connection, shape: TableShape) -> None:
    """A temporary table with the table's stored columns, NOT NULL and CHECK constraints
    (no keys, no indexes, no triggers) plus the line number; dropped at commit."""
    with translated():
        await conn.raw.execute(
            f"CREATE TEMPORARY TABLE {_q(shape.stage)} "
            f"(LIKE {_q(shape.name)} INCLUDING CONSTRAINTS) ON COMMIT DROP")
        await conn.raw.execute(
            f"ALTER TABLE {_q(shape.stage)} ADD COLUMN {_q(LINE)} bigint NOT NULL")


async def copy_to_stage(conn: Connection, shape: TableShape,
                        rows: Sequence[tuple[Any, ...]]) -> None:
    """Stage rows (values in ``shape.columns`` order, then the line number); one
    pipelined statement per batch (COPY has no binary form of the jsonb codec)."""
    names = [*shape.columns, LINE]
    params = ", ".join(f"${i}" for i in range(1, len(names) + 1))
    with translated():
        await conn.raw.executemany(
            f"INSERT INTO {_q(shape.stage)} ({_columns(names)}) VALUES ({params})", rows)


async def load_present(conn: Connection, shape: TableShape, agent_id: str,
                       match: Sequence[str]) -> None:
    """Copy the agent's rows whose ``match`` values a staged row has into a temporary
    ``have_<table>`` (dropped at commit), which the comparisons below read."""
    keys = _columns(match)
    wanted = (f" AND ({_columns(match, 't.')}) IN (SELECT {keys} FROM {_q(shape.stage)})"
              if match else "")
    with translated():
        await conn.raw.execute(
            f"CREATE TEMPORARY TABLE {_q(shape.present)} (LIKE {_q(shape.name)}) "
            f"ON COMMIT DROP")
        await conn.raw.execute(
            f"INSERT INTO {_q(shape.present)} ({_columns(shape.columns)}) "
            f"SELECT {_columns(shape.columns, 't.')} FROM {_q(shape.name)} t "
            f"WHERE t.{_q(AGENT)} = $1{wanted}", agent_id)


def _joined(shape: TableShape, match: Sequence[str]) -> str:
    """The agent's existing rows of the table that match a staged row ``s`` (from
    ``load_present``)."""
    on = " AND ".join([f"t.{_q(AGENT)} = $1",
                       *(f"t.{_q(c)} = s.{_q(c)}" for c in match)])
    return f"{_q(shape.present)} t WHERE {on}"


async def repeated_key(conn: Connection, shape: TableShape,
                       match: Sequence[str]) -> tuple[int, int] | None:
    """(first line, repeating line) of two staged rows with the same ``match`` values."""
    keys = _columns(match) or "()"  # a table keyed by the agent alone: one row at most
    with translated():
        row = await conn.raw.fetchrow(
            f"SELECT min({_q(LINE)}) AS first, max({_q(LINE)}) AS again "
            f"FROM {_q(shape.stage)} GROUP BY {keys} HAVING count(*) > 1 "
            "ORDER BY 2 LIMIT 1")
    return None if row is None else (row["first"], row["again"])


async def differing_lines(conn: Connection, shape: TableShape, agent_id: str,
                          match: Sequence[str], compared: Sequence[str],
                          limit: int) -> list[int]:
    """Lines of staged rows whose ``match`` values the agent already has with other
    ``compared`` values (a conflict), first ones first."""
    mine, theirs = _columns(compared, "s."), _columns(compared, "t.")
    with translated():
        rows = await conn.raw.fetch(
            f"SELECT s.{_q(LINE)} AS line FROM {_q(shape.stage)} s "
            f"WHERE EXISTS (SELECT 1 FROM {_joined(shape, match)} "
            f"AND ROW({mine}) IS DISTINCT FROM ROW({theirs})) "
            f"ORDER BY 1 LIMIT $2", agent_id, limit)
    return [r["line"] for r in rows]


async def present_count(conn: Connection, shape: TableShape, agent_id: str,
                        match: Sequence[str]) -> int:
    """How many staged rows the agent already has (by ``match``)."""
    with translated():
        count: int = await conn.raw.fetchval(
            f"SELECT count(*) FROM {_q(shape.stage)} s "
            f"WHERE EXISTS (SELECT 1 FROM {_joined(shape, match)})", agent_id)
        return count


async def insert_absent(conn: Connection, shape: TableShape, agent_id: str,
                        match: Sequence[str], carried: Sequence[str]) -> int:
    """Insert, as the agent's, the staged rows it does not have (by ``match``), in line
    order; columns not ``carried`` take their defaults (an identity column carried
    keeps its value)."""
    values = [c for c in carried if c != AGENT]
    overriding = " OVERRIDING SYSTEM VALUE" if shape.identity in values else ""
    with translated():
        status: str = await conn.raw.execute(
            f"INSERT INTO {_q(shape.name)} ({_q(AGENT)}, {_columns(values)}){overriding} "
            f"SELECT $1, {_columns(values, 's.')} FROM {_q(shape.stage)} s "
            f"WHERE NOT EXISTS (SELECT 1 FROM {_joined(shape, match)}) "
            f"ORDER BY s.{_q(LINE)}", agent_id)
        return int(status.rsplit(" ", 1)[-1])


async def advance_identity(conn: Connection, shape: TableShape) -> None:
    """Move the identity sequence past every staged id, so rows the table makes later
    never take an imported id (never moves it back)."""
    if shape.identity is None:
        return
    ident = _q(shape.identity)
    with translated():
        await conn.raw.execute(
            f"SELECT CASE WHEN m > nextval(seq) THEN setval(seq, m) END "
            f"FROM (SELECT max({ident}) AS m, pg_get_serial_sequence($1, $2) AS seq "
            f"FROM {_q(shape.stage)}) x WHERE m IS NOT NULL", shape.name, shape.identity)
