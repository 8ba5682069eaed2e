"""Database-wide secrets kept in ``store_meta``: made once, shared by every process."""

from __future__ import annotations

import secrets

from .connector import Database


async def shared_secret(db: Database, name: str) -> str:
    """The random secret called ``name``, created on first use (the first writer wins)."""
    await db.execute("store_meta_add", name, secrets.token_urlsafe(48))
    value: str | None = await db.fetchval("store_meta_get", name)
    assert value is not None
    return value
