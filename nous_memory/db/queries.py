"""Load the named queries (``-- name: foo`` blocks) once per process.

Each domain package keeps its SQL beside its code in its own ``queries.sql``; the
loader reads every one of them into a single namespace, so a name is unique across the
store and a statement is looked up the same way wherever it lives.  The loader reads
files, it imports nothing: ``db`` stays below the domains.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$")
FILE_NAME = "queries.sql"


class Queries:
    """Named SQL text; unknown names fail loudly instead of at the server."""

    def __init__(self, sources: Iterable[tuple[str, str]]) -> None:
        """``sources``: (where, text) pairs, ``where`` naming the file in errors."""
        self._sql: dict[str, str] = {}
        self._where: dict[str, str] = {}
        for where, text in sources:
            for name, sql in parse_queries(text, where).items():
                if name in self._sql:
                    raise ValueError(f"query {name!r} is defined in both "
                                     f"{self._where[name]} and {where}")
                self._sql[name], self._where[name] = sql, where

    def __getitem__(self, name: str) -> str:
        try:
            return self._sql[name]
        except KeyError:
            raise KeyError(f"no query named {name!r} in any {FILE_NAME}") from None

    def names(self) -> list[str]:
        return sorted(self._sql)

    def where(self, name: str) -> str:
        """The file that defines ``name`` (``memories/queries.sql``, ...)."""
        try:
            return self._where[name]
        except KeyError:
            raise KeyError(f"no query named {name!r} in any {FILE_NAME}") from None


def parse_queries(text: str, where: str = FILE_NAME) -> dict[str, str]:
    """Split one file into {name: sql}; comments after the name line are dropped."""
    queries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _NAME.match(line.strip())
        if match:
            name = match.group(1)
            if name in queries:
                raise ValueError(f"query {name!r} is defined twice in {where}")
            current = queries[name] = []
        elif current is not None and not line.lstrip().startswith("--"):
            current.append(line)
    result = {name: "\n".join(lines).strip().rstrip(";") for name, lines in queries.items()}
    empty = [name for name, sql in result.items() if not sql]
    if empty:
        raise ValueError(f"queries without SQL in {where}: {empty}")
    return result


def package_sources(package: str = "nous_memory") -> list[tuple[str, str]]:
    """Every ``queries.sql`` directly inside a subpackage of ``package``, in name order."""
    root = resources.files(package)
    found = []
    for child in sorted(root.iterdir(), key=lambda entry: entry.name):
        sql = child.joinpath(FILE_NAME)
        if child.is_dir() and sql.is_file():
            found.append((f"{child.name}/{FILE_NAME}", sql.read_text("utf-8")))
    return found


QUERIES = Queries(package_sources())
