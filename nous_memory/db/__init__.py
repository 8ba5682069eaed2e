"""The only code that talks to asyncpg: pool, embedded server, migrations, named queries."""

from .connector import Connection, Database
from .embedded import EmbeddedServer
from .migrate import SchemaStatus, migrate, schema_status
from .queries import QUERIES, Queries

__all__ = [
    "QUERIES",
    "Connection",
    "Database",
    "EmbeddedServer",
    "Queries",
    "SchemaStatus",
    "migrate",
    "schema_status",
]
