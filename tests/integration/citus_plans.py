"""Which shards a statement touches, read from PostgreSQL's own plan of it.

``EXPLAIN (GENERIC_PLAN, VERBOSE, FORMAT JSON)`` plans a statement with its ``$n``
parameters unbound.  The planner has already done the reasoning that matters: from
``m.agent_id = $1`` and ``f.agent_id = m.agent_id`` it derives ``f.agent_id = $1`` and
puts it on the scan of ``f`` (equivalence classes), and a condition under an OR stays
under the OR.  So a statement is *single-tenant* (Citus routes it to one shard group)
when every scan of a distributed table carries ``agent_id = $n`` as a top-level conjunct
(directly, or equal to the agent_id of a scan that does), always the same ``$n``, and
every row it inserts into a distributed table takes that ``$n`` as its agent_id.  A join
of two distributed tables that is not single-tenant must equate their agent_ids
(co-located), or Citus refuses it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pglast

# A helper in pg_temp: EXPLAIN GENERIC_PLAN needs the simple protocol for $n, which
# asyncpg does not offer; EXECUTE inside PL/pgSQL parses the text the same way.
_EXPLAIN_FUNCTION = """
CREATE OR REPLACE FUNCTION pg_temp.explain_generic(statement text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE plan json;
BEGIN
    EXECUTE 'EXPLAIN (GENERIC_PLAN, VERBOSE, FORMAT JSON) ' || statement INTO plan;
    RETURN plan::text;
END $f$"""

_CONDITION_KEYS = ("Filter", "Index Cond", "Recheck Cond", "TID Cond", "Hash Cond",
                   "Merge Cond", "Join Filter")
_JOIN_TYPES = {"Nested Loop", "Hash Join", "Merge Join"}
_COLUMN = r"(?:(?P<{0}>\w+)\.)?agent_id"
_PARAM = r"\(?\$(?P<param>\d+)\)?(?:::\w+)?"
_EQUALS_PARAM = [re.compile(rf"^{_COLUMN.format('a')} = {_PARAM}$"),
                 re.compile(rf"^{_PARAM} = {_COLUMN.format('a')}$")]
_EQUALS_COLUMN = re.compile(rf"^{_COLUMN.format('a')} = {_COLUMN.format('b')}$")


@dataclass
class Verdict:
    single_tenant: bool
    reasons: list[str] = field(default_factory=list)  # why not single-tenant
    colocation_errors: list[str] = field(default_factory=list)  # joins Citus refuses
    touches_distributed: bool = False


async def install(conn: asyncpg.Connection) -> None:
    await conn.execute(_EXPLAIN_FUNCTION)


async def plan_of(conn: asyncpg.Connection, sql: str) -> dict[str, Any]:
    text = await conn.fetchval("SELECT pg_temp.explain_generic($1)", sql)
    plan: dict[str, Any] = json.loads(text)[0]["Plan"]
    return plan


def is_plannable(sql: str) -> bool:
    """SELECT, INSERT, UPDATE, DELETE (with or without WITH); not SET and other utilities."""
    (statement,) = pglast.parse_sql(sql)
    return type(statement.stmt).__name__ in ("SelectStmt", "InsertStmt", "UpdateStmt",
                                             "DeleteStmt")


def conjuncts(condition: str) -> list[str]:
    """Top-level AND terms of a deparsed condition, outer parentheses removed."""
    text = _unwrap(condition.strip())
    cuts = [i for i, depth in _depths(text) if depth == 0 and text.startswith(" AND ", i)]
    bounds = zip([0] + [c + 5 for c in cuts], [*cuts, len(text)], strict=True)
    return [_unwrap(text[a:b].strip()) for a, b in bounds]


def _depths(text: str) -> Iterator[tuple[int, int]]:
    """(index, parenthesis depth after that character), string literals skipped."""
    depth, quoted = 0, False
    for i, ch in enumerate(text):
        if ch == "'":
            quoted = not quoted
        elif not quoted:
            depth += (ch == "(") - (ch == ")")
        if not quoted:
            yield i, depth


def _unwrap(text: str) -> str:
    """Drop parentheses around the whole text (not those of ``(a) AND (b)``)."""
    while text.startswith("(") and text.endswith(")") and not any(
            depth == 0 and i < len(text) - 1 for i, depth in _depths(text)):
        text = text[1:-1].strip()
    return text


@dataclass
class _Scan:
    alias: str
    relation: str
    params: set[str] = field(default_factory=set)


def _nodes(plan: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _conditions(node: Mapping[str, Any]) -> list[str]:
    """The node's own conditions, plus a bitmap scan's index conditions (not under OR)."""
    found = [term for key in _CONDITION_KEYS if key in node for term in conjuncts(node[key])]
    if node.get("Node Type") == "Bitmap Heap Scan":
        stack = list(node.get("Plans", []))
        while stack:
            child = stack.pop()
            if child.get("Node Type") == "Bitmap Index Scan" and "Index Cond" in child:
                found += conjuncts(child["Index Cond"])
            elif child.get("Node Type") == "BitmapAnd":
                stack += child.get("Plans", [])
    return found


def _scans_below(node: Mapping[str, Any], distributed: set[str]) -> set[str]:
    """Aliases of distributed scans in this subtree, not crossing into sub-plans."""
    out = set()
    if node.get("Relation Name") in distributed and node.get("Node Type") != "ModifyTable":
        out.add(node["Alias"])
    for child in node.get("Plans", []):
        if child.get("Parent Relationship") not in ("InitPlan", "SubPlan"):
            out |= _scans_below(child, distributed)
    return out


def classify(plan: Mapping[str, Any], distributed: set[str]) -> Verdict:
    scans: list[_Scan] = []
    edges: list[tuple[str, str]] = []
    params_by_alias: dict[str, set[str]] = {}
    for node in _nodes(plan):
        alias = node.get("Alias")
        for term in _conditions(node):
            for pattern in _EQUALS_PARAM:
                match = pattern.match(term)
                if match:
                    owner = match.group("a") or alias
                    if owner:
                        params_by_alias.setdefault(owner, set()).add(match.group("param"))
            match = _EQUALS_COLUMN.match(term)
            if match:
                edges.append((match.group("a") or alias or "", match.group("b") or alias or ""))
        if node.get("Relation Name") in distributed and node.get("Node Type") != "ModifyTable":
            scans.append(_Scan(alias=alias or node["Relation Name"],
                               relation=node["Relation Name"]))
    # agent_id equal to a constrained scan's agent_id is constrained by the same $n
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            for x, y in ((a, b), (b, a)):
                known = params_by_alias.get(y, set())
                if known - params_by_alias.get(x, set()):
                    params_by_alias.setdefault(x, set()).update(known)
                    changed = True
    verdict = Verdict(single_tenant=True)
    params: set[str] = set()
    for scan in scans:
        verdict.touches_distributed = True
        found = params_by_alias.get(scan.alias, set())
        if not found:
            verdict.reasons.append(f"scan of {scan.relation} ({scan.alias}) has no "
                                   f"top-level agent_id = $n condition")
        params |= found
    for node in _nodes(plan):
        if node.get("Node Type") == "ModifyTable" and node.get("Operation") == "Insert" \
                and node.get("Relation Name") in distributed:
            verdict.touches_distributed = True
            source = node["Plans"][0].get("Output", [""])[0]
            params |= _inserted_params(source, params_by_alias, verdict, node["Relation Name"])
    if len(params) > 1:
        verdict.reasons.append(f"agent_id is compared with several parameters: "
                               f"{sorted('$' + p for p in params)}")
    verdict.single_tenant = not verdict.reasons
    if not verdict.single_tenant:
        verdict.colocation_errors = _colocation_errors(plan, distributed, edges)
    return verdict


def _inserted_params(source: str, params_by_alias: Mapping[str, set[str]],
                     verdict: Verdict, relation: str) -> set[str]:
    """agent_id is the first column of every distributed table: the first output of the
    insert's source is the inserted agent_id."""
    for pattern in (re.compile(rf"^{_PARAM}$"),):
        match = pattern.match(source.strip())
        if match:
            return {match.group("param")}
    match = re.match(rf"^{_COLUMN.format('a')}$", source.strip())
    if match and params_by_alias.get(match.group("a") or ""):
        return set(params_by_alias[match.group("a") or ""])
    verdict.reasons.append(f"insert into {relation} takes agent_id from {source!r}, not "
                           f"from one parameter")
    return set()


def _colocation_errors(plan: Mapping[str, Any], distributed: set[str],
                       edges: list[tuple[str, str]]) -> list[str]:
    """Joins of two distributed tables whose agent_ids are not equated."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for a, b in edges:
        parent[find(a)] = find(b)
    errors = []
    for node in _nodes(plan):
        if node.get("Node Type") not in _JOIN_TYPES:
            continue
        sides = [c for c in node.get("Plans", [])
                 if c.get("Parent Relationship") in ("Outer", "Inner")]
        if len(sides) != 2:
            continue
        left, right = (_scans_below(side, distributed) for side in sides)
        for a in left:
            for b in right:
                if find(a) != find(b):
                    errors.append(f"{node['Node Type']} of {a} and {b} is not on agent_id")
    return errors
