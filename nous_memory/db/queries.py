"""Load the named queries of ``queries.sql`` (``-- name: foo`` blocks) once per process."""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$")


class Queries:
    """Named SQL text; unknown names fail loudly instead of at the server."""

    def __init__(self, text: str) -> None:
        self._sql = parse_queries(text)

    def __getitem__(self, name: str) -> str:
        try:
            return self._sql[name]
        except KeyError:
            raise KeyError(f"no query named {name!r} in queries.sql") from None

    def names(self) -> list[str]:
        return sorted(self._sql)


def parse_queries(text: str) -> dict[str, str]:
    """Split ``queries.sql`` into {name: sql}; comments after the name line are dropped."""
    queries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _NAME.match(line.strip())
        if match:
            name = match.group(1)
            if name in queries:
                raise ValueError(f"query {name!r} is defined twice in queries.sql")
            current = queries[name] = []
        elif current is not None and not line.lstrip().startswith("--"):
            current.append(line)
    result = {name: "\n".join(lines).strip().rstrip(";") for name, lines in queries.items()}
    empty = [name for name, sql in result.items() if not sql]
    if empty:
        raise ValueError(f"queries without SQL in queries.sql: {empty}")
    return result


QUERIES = Queries(resources.files(__package__).joinpath("queries.sql").read_text("utf-8"))
