"""Does the live database still have the tables the code was written against?

The SQLModel rows in ``models`` are the code's typed picture of every table, checked
against a database built from ``schema.sql`` by the test suite.  Migrations keep a
database on the schema's version, but they cannot see what happened to it since: a
column dropped or retyped by hand, a restore from another version's dump, a half-done
manual fix.  ``schema_drift`` compares the live catalog with the picture, so
``nous-memory db status`` can say so before a query fails halfway through a request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy.dialects import postgresql

from .connector import Connection
from .migrate import schema_sql
from .models import TABLE_MODELS

_VIEW = re.compile(r"^CREATE (?:OR REPLACE )?VIEW (\w+)", re.M | re.I)

# SQLAlchemy's PostgreSQL type names -> the catalog's udt_name
_SA_TO_PG = {
    "VARCHAR": "text", "TEXT": "text", "INTEGER": "int4", "BIGINT": "int8",
    "FLOAT": "float8", "DOUBLE PRECISION": "float8", "UUID": "uuid", "BOOLEAN": "bool",
    "TIMESTAMP WITH TIME ZONE": "timestamptz", "TEXT[]": "_text", "JSONB": "jsonb",
    "TSVECTOR": "tsvector", "BYTEA": "bytea", "UUID[]": "_uuid",
}
_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]

Column = tuple[str, bool]  # (catalog type, nullable)


def expected_tables() -> dict[str, tuple[dict[str, Column], set[str]]]:
    """{table: ({column: (type, nullable)}, primary key columns)} from the typed rows."""
    tables: dict[str, tuple[dict[str, Column], set[str]]] = {}
    for model in TABLE_MODELS:
        table: Any = model.__table__  # type: ignore[attr-defined]
        columns = {col.name: (_catalog_type(col.type), bool(col.nullable))
                   for col in table.columns}
        tables[table.name] = (columns, {col.name for col in table.primary_key})
    return tables


def _catalog_type(sa_type: Any) -> str:
    compiled = sa_type.compile(dialect=_DIALECT)
    if compiled.startswith("VECTOR("):  # the dimension is checked at open, against the model
        return "vector"
    return _SA_TO_PG[compiled]


def compare(expected: dict[str, tuple[dict[str, Column], set[str]]],
            live_columns: Iterable[tuple[str, str, str, bool]],
            live_keys: Iterable[tuple[str, str]]) -> list[str]:
    """Every difference, one sentence each; empty when the database matches."""
    columns: dict[str, dict[str, Column]] = {}
    for table, column, udt, nullable in live_columns:
        columns.setdefault(table, {})[column] = (udt, nullable)
    keys: dict[str, set[str]] = {}
    for table, column in live_keys:
        keys.setdefault(table, set()).add(column)
    problems: list[str] = []
    for table, (want, want_key) in sorted(expected.items()):
        have = columns.get(table)
        if have is None:
            problems.append(f"table {table} is missing")
            continue
        for name, (kind, nullable) in sorted(want.items()):
            if name not in have:
                problems.append(f"{table}.{name} is missing")
            elif have[name][0] != kind:
                problems.append(f"{table}.{name} is {have[name][0]}, expected {kind}")
            elif have[name][1] != nullable:
                problems.append(f"{table}.{name} is {'nullable' if have[name][1] else 'NOT NULL'}"
                                f", expected {'nullable' if nullable else 'NOT NULL'}")
        problems += [f"{table}.{name} is not known to this version"
                     for name in sorted(set(have) - set(want))]
        if keys.get(table, set()) != want_key:
            problems.append(f"{table} has primary key ({', '.join(sorted(keys.get(table, ())))})"
                            f", expected ({', '.join(sorted(want_key))})")
    problems += [f"table {table} is not known to this version"
                 for table in sorted(set(columns) - set(expected))]
    return problems


def expected_views(schema: str | None = None) -> set[str]:
    """The views ``schema.sql`` creates (reads go through them, e.g. memory_records)."""
    return set(_VIEW.findall(schema if schema is not None else schema_sql()))


async def schema_drift(conn: Connection) -> list[str]:
    """How the live schema differs from the typed rows and the schema's views; empty
    when it matches."""
    live_columns = await conn.fetch("catalog_columns")
    live_keys = await conn.fetch("catalog_primary_keys")
    live_views = {r["view_name"] for r in await conn.fetch("catalog_views")}
    problems = compare(expected_tables(),
                       ((r["table_name"], r["column_name"], r["udt_name"], r["nullable"])
                        for r in live_columns),
                       ((r["table_name"], r["column_name"]) for r in live_keys))
    return problems + [f"view {name} is missing"
                       for name in sorted(expected_views() - live_views)]
