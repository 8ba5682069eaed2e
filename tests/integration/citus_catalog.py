"""What Citus requires of a schema sharded by agent_id, read from a live catalog.

Each check returns the problems it finds (empty: the schema fits).  The rules are
Citus's: a unique or primary key of a distributed table must contain the distribution
column; a foreign key between distributed tables must equate their distribution columns
and may not SET NULL / SET DEFAULT (on delete) or act on update with them; identity
columns of distributed tables must be bigint (Citus gives each node its own range of
the sequence); a plain sequence default would be one counter shared by every shard; a
trigger on a distributed table runs on each shard alone and so cannot see other tenants
consistently.
"""

from __future__ import annotations

import asyncpg

from nous_memory.db.distribution import (
    COORDINATOR_LOCAL,
    DISTRIBUTED,
    DISTRIBUTION_COLUMN,
    REFERENCE,
)

_TABLES = """
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1"""

_COLUMNS = """
SELECT c.relname, a.attname, a.attnum, a.attnotnull, format_type(a.atttypid, a.atttypmod)
       AS type, a.attidentity <> '' AS is_identity, pg_get_expr(d.adbin, d.adrelid) AS default_expr
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND a.attnum > 0
  AND NOT a.attisdropped"""

# unique indexes include those behind primary keys and unique constraints
_UNIQUE_INDEXES = """
SELECT c.relname AS table_name, i.relname AS index_name,
       array(SELECT a.attname FROM unnest(x.indkey) k JOIN pg_attribute a
             ON a.attrelid = x.indrelid AND a.attnum = k) AS columns,
       pg_get_indexdef(x.indexrelid) AS definition
FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND x.indisunique"""

_FOREIGN_KEYS = """
SELECT k.conname, c.relname AS table_name, r.relname AS referenced,
       array(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY u(n, i)
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n
             ORDER BY u.i) AS columns,
       array(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY u(n, i)
             JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n
             ORDER BY u.i) AS referenced_columns,
       k.confdeltype::text AS confdeltype, k.confupdtype::text AS confupdtype,
       pg_get_constraintdef(k.oid) AS definition
FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND k.contype = 'f'"""

_TRIGGERS = """
SELECT c.relname AS table_name, t.tgname, p.proname, p.prosrc
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND NOT t.tgisinternal"""

_SEQUENCES_IN_DEFAULTS = """
SELECT c.relname AS table_name, a.attname, s.relname AS sequence_name
FROM pg_depend d JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
JOIN pg_attrdef ad ON ad.oid = d.objid AND d.classid = 'pg_attrdef'::regclass
JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
JOIN pg_class c ON c.oid = ad.adrelid"""

_SET_ACTIONS = {"n": "SET NULL", "d": "SET DEFAULT", "c": "CASCADE"}


async def table_roles(conn: asyncpg.Connection) -> list[str]:
    """Tables without exactly one role, and roles naming no table."""
    live = {r["relname"] for r in await conn.fetch(_TABLES)}
    roles = [*DISTRIBUTED, *COORDINATOR_LOCAL, *REFERENCE]
    problems = [f"{t} has {roles.count(t)} roles" for t in sorted(set(roles))
                if roles.count(t) != 1]
    problems += [f"table {t} has no stated role (distributed, reference or coordinator-"
                 f"local: nous_memory/db/distribution.py)" for t in sorted(live - set(roles))]
    problems += [f"a role is stated for {t}, which does not exist" for t in
                 sorted(set(roles) - live)]
    return problems


async def distribution_columns(conn: asyncpg.Connection) -> list[str]:
    """agent_id is each distributed table's first column and never NULL."""
    columns = {(r["relname"], r["attname"]): r for r in await conn.fetch(_COLUMNS)}
    problems = []
    for table in DISTRIBUTED:
        column = columns.get((table, DISTRIBUTION_COLUMN))
        if column is None:
            problems.append(f"{table} has no {DISTRIBUTION_COLUMN}")
        elif not column["attnotnull"] or column["attnum"] != 1:
            problems.append(f"{table}.{DISTRIBUTION_COLUMN} must be NOT NULL and the first "
                            f"column (nullable={not column['attnotnull']}, "
                            f"position={column['attnum']})")
    return problems


async def unique_keys(conn: asyncpg.Connection) -> list[str]:
    return [f"unique index {r['index_name']} on {r['table_name']} lacks "
            f"{DISTRIBUTION_COLUMN}: {r['definition']}"
            for r in await conn.fetch(_UNIQUE_INDEXES)
            if r["table_name"] in DISTRIBUTED and DISTRIBUTION_COLUMN not in r["columns"]]


async def foreign_keys(conn: asyncpg.Connection) -> list[str]:
    problems = []
    order = {table: i for i, table in enumerate(DISTRIBUTED)}
    for r in await conn.fetch(_FOREIGN_KEYS):
        table, referenced, name = r["table_name"], r["referenced"], r["conname"]
        if table not in DISTRIBUTED:
            if referenced in DISTRIBUTED:
                problems.append(f"{name}: {table} (not distributed) references the "
                                f"distributed {referenced}")
            continue
        if referenced in REFERENCE:
            continue
        if referenced not in DISTRIBUTED:
            problems.append(f"{name}: distributed {table} references {referenced}, which "
                            "is neither distributed nor a reference table")
            continue
        pairs = list(zip(r["columns"], r["referenced_columns"], strict=True))
        if (DISTRIBUTION_COLUMN, DISTRIBUTION_COLUMN) not in pairs:
            problems.append(f"{name}: {table} -> {referenced} does not equate "
                            f"{DISTRIBUTION_COLUMN}: {r['definition']}")
        if r["confdeltype"] in ("n", "d"):
            problems.append(f"{name}: ON DELETE {_SET_ACTIONS[r['confdeltype']]} on a key "
                            f"with the distribution column: {r['definition']}")
        if r["confupdtype"] in _SET_ACTIONS:
            problems.append(f"{name}: ON UPDATE {_SET_ACTIONS[r['confupdtype']]} on a key "
                            f"with the distribution column: {r['definition']}")
        if referenced != table and order[referenced] > order[table]:
            problems.append(f"{name}: {referenced} must be distributed before {table}")
    return problems


async def sequences(conn: asyncpg.Connection) -> list[str]:
    problems = []
    for r in await conn.fetch(_COLUMNS):
        if r["relname"] in DISTRIBUTED and r["is_identity"] and r["type"] != "bigint":
            problems.append(f"identity column {r['relname']}.{r['attname']} is {r['type']}; "
                            "Citus distributes bigint identity columns only")
    problems += [f"{r['table_name']}.{r['attname']} takes its default from sequence "
                 f"{r['sequence_name']}, one counter shared by every shard"
                 for r in await conn.fetch(_SEQUENCES_IN_DEFAULTS)
                 if r["table_name"] in DISTRIBUTED]
    return problems


async def triggers(conn: asyncpg.Connection) -> list[str]:
    return [f"trigger {r['tgname']} on {r['table_name']} runs {r['proname']}() on each "
            f"shard alone: {' '.join(r['prosrc'].split())[:200]}"
            for r in await conn.fetch(_TRIGGERS) if r["table_name"] in DISTRIBUTED]


CHECKS = (table_roles, distribution_columns, unique_keys, foreign_keys, sequences, triggers)
