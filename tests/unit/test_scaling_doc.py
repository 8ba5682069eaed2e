"""docs/scaling.md says what nous_memory/db/distribution.py says (one source, two views)."""

from __future__ import annotations

import re
from pathlib import Path

from nous_memory.db.distribution import (
    COORDINATOR_LOCAL,
    CROSS_TENANT_QUERIES,
    DISTRIBUTED,
    citus_script,
)

DOC = (Path(__file__).resolve().parents[2] / "docs" / "scaling.md").read_text()


def section(title: str) -> str:
    return DOC.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_operator_script_is_the_generated_one() -> None:
    blocks = [re.sub(r"^ {3}", "", b, flags=re.M)
              for b in re.findall(r"```sql\n(.*?)```", DOC, re.S)]
    assert citus_script() in blocks


def test_every_table_has_its_stated_place() -> None:
    placed = section("Where each table lives")
    distributed = placed.split("**Coordinator-local**", 1)[0]
    assert set(re.findall(r"`(\w+)`", distributed)) - {"agent_id"} == set(DISTRIBUTED)
    local = set(re.findall(r"^\| `(\w+)` \|", placed, re.M))
    assert local == set(COORDINATOR_LOCAL)


def test_every_cross_tenant_query_is_explained() -> None:
    listed = section("Which queries touch more than one agent")
    named = {name for cell in re.findall(r"^\| ([^|]+) \|", listed, re.M)
             for name in re.findall(r"`(\w+)`", cell)}
    assert named == set(CROSS_TENANT_QUERIES)
