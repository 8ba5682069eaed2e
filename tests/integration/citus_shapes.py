"""Statement shapes Citus refuses, read from the statement's parse tree.

``citus_plans`` says which shards a statement touches; a statement can be scoped to one
agent and still be refused by Citus's planner for its shape.  These are the rules Citus
13 applies (``multi_router_planner.c``, ``recursive_planning.c``), each of which refused
a named query on a real cluster once:

- a modification of a distributed table (UPDATE, DELETE, INSERT ... ON CONFLICT, also
  inside a WITH) may not call a volatile function; in an UPDATE's SET, WHERE or a
  DELETE's WHERE a stable function (``now()``, ``jsonb_build_object``) may not take a
  column as an argument, nor stand in a CASE or COALESCE; a DO UPDATE SET target is a
  column or immutable; RETURNING is immutable.  Pass the moment as a parameter instead;
- a row lock (FOR UPDATE / FOR SHARE) only in a statement routed to one shard group;
- no statement that writes reads or writes both a distributed table and a
  coordinator-local one (a read-only join Citus plans by pulling the local rows);
- no ``ctid`` (a row position names a row only within one shard);
- no recursive CTE over distributed tables unless routed to one shard group.

Function volatility comes from the server's catalog (``volatility``), the rest from
pglast's parse tree, so no cluster is needed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import asyncpg
import pglast
from pglast import ast

# the SQL value functions (CURRENT_TIMESTAMP, LOCALTIME, CURRENT_USER, ...): all stable
_STABLE_NODES = (ast.SQLValueFunction,)


async def volatility(conn: asyncpg.Connection) -> dict[tuple[str, int], str]:
    """Per function name and argument count, its most volatile overload: 'i', 's' or 'v'
    (``length(text)`` is immutable, ``length(bytea, name)`` stable)."""
    rows = await conn.fetch("SELECT proname, pronargs, max(provolatile::text) AS v "
                            "FROM pg_proc GROUP BY GROUPING SETS ((proname, pronargs), "
                            "(proname))")
    # (name, -1): every overload, for a variadic call (jsonb_build_object(a, b, c, d))
    return {(r["proname"], -1 if r["pronargs"] is None else r["pronargs"]): r["v"]
            for r in rows}


def walk(node: Any) -> Iterator[ast.Node]:
    """Every node under ``node``, ``node`` included, sub-queries included."""
    if isinstance(node, (tuple, list)):
        for item in node:
            yield from walk(item)
    elif isinstance(node, ast.Node):
        yield node
        for name in node.__slots__:
            value = getattr(node, name, None)
            if isinstance(value, (ast.Node, tuple, list)):
                yield from walk(value)


def _function_name(call: ast.FuncCall) -> str:
    return str(call.funcname[-1].sval)


def _function_level(call: ast.FuncCall, funcs: Mapping[tuple[str, int], str]) -> str:
    name = _function_name(call)
    return funcs.get((name, len(call.args or ())), funcs.get((name, -1), "v"))


def _level(node: Any, funcs: Mapping[tuple[str, int], str]) -> str:
    """The most volatile function anywhere in ``node``: 'i', 's' or 'v'."""
    level = "i"
    for sub in walk(node):
        if isinstance(sub, ast.FuncCall):
            level = max(level, _function_level(sub, funcs))
        elif isinstance(sub, _STABLE_NODES):
            level = max(level, "s")
    return level


def _has_column(node: Any) -> bool:
    return any(isinstance(sub, ast.ColumnRef) for sub in walk(node))


def _stable_with_columns(node: Any, funcs: Mapping[tuple[str, int], str]) -> str | None:
    """Citus's MasterIrreducibleExpression: a stable function over a column, or a CASE or
    COALESCE holding any non-immutable function."""
    for sub in walk(node):
        if isinstance(sub, (ast.CoalesceExpr, ast.CaseExpr)) and _level(sub, funcs) != "i":
            return "a non-immutable function inside CASE/COALESCE"
        if isinstance(sub, ast.FuncCall) and _function_level(sub, funcs) != "i" \
                and _has_column(sub.args):
            return f"{_function_name(sub)}() (not immutable) called with a column"
    return None


def _relations(node: Any) -> set[str]:
    return {str(n.relname) for n in walk(node) if isinstance(n, ast.RangeVar)}


def _modifications(node: Any) -> Iterator[ast.Node]:
    for sub in walk(node):
        if isinstance(sub, (ast.UpdateStmt, ast.DeleteStmt, ast.InsertStmt)):
            yield sub


def refusals(sql: str, *, distributed: set[str], local: set[str],
             funcs: Mapping[tuple[str, int], str], single_tenant: bool) -> list[str]:
    """Why Citus would refuse ``sql`` (empty: it would plan it).  ``single_tenant``: the
    plan classifier's verdict (``citus_plans``), which decides whether a row lock is
    routed to one shard group."""
    (raw,) = pglast.parse_sql(sql)
    tree = raw.stmt
    found: list[str] = []
    relations = _relations(tree)
    if not relations & distributed:
        return found
    for stmt in _modifications(tree):
        if str(stmt.relation.relname) not in distributed:
            continue
        what = f"{type(stmt).__name__[:-4].upper()} {stmt.relation.relname}"
        where = getattr(stmt, "whereClause", None)
        if _level(where, funcs) == "v":
            found.append(f"{what}: a volatile function in WHERE")
        if isinstance(stmt, ast.UpdateStmt):
            for target in stmt.targetList or ():
                if _level(target.val, funcs) == "v":
                    found.append(f"{what}: SET {target.name} calls a volatile function")
                reason = _stable_with_columns(target.val, funcs)
                if reason:
                    found.append(f"{what}: SET {target.name}: {reason}")
        if isinstance(stmt, (ast.UpdateStmt, ast.DeleteStmt)):
            reason = _stable_with_columns(where, funcs)
            if reason:
                found.append(f"{what}: WHERE: {reason}")
        conflict = getattr(stmt, "onConflictClause", None)
        if conflict is not None:
            for target in conflict.targetList or ():
                if not isinstance(target.val, ast.ColumnRef) and _level(target.val, funcs) != "i":
                    found.append(f"{what}: ON CONFLICT DO UPDATE SET {target.name} is "
                                 f"not immutable")
            if _level(conflict.whereClause, funcs) != "i":
                found.append(f"{what}: ON CONFLICT ... WHERE is not immutable")
        returning = getattr(stmt, "returningClause", None)
        returning = getattr(returning, "exprs", returning)
        if returning and _level(returning, funcs) != "i":
            found.append(f"{what}: RETURNING is not immutable")
    if not single_tenant and any(getattr(n, "lockingClause", None) for n in walk(tree)):
        found.append("a row lock (FOR UPDATE/SHARE) in a statement not routed to one "
                     "agent_id")
    modifies = any(True for _ in _modifications(tree))
    if modifies and relations & local:
        found.append(f"reads or writes coordinator-local {sorted(relations & local)} "
                     f"beside distributed {sorted(relations & distributed)}")
    if any(isinstance(n, ast.ColumnRef) and str(n.fields[-1].sval) == "ctid"
           for n in walk(tree) if isinstance(n, ast.ColumnRef)
           and isinstance(n.fields[-1], ast.String)):
        found.append("ctid: a row position names a row within one shard only")
    if not single_tenant and any(isinstance(n, ast.WithClause) and n.recursive
                                 for n in walk(tree)):
        found.append("a recursive CTE over distributed tables, not routed to one agent_id")
    return found
