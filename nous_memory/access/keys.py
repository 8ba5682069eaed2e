"""Keys made at run time: create (the secret is returned once and only its SHA-256 is
kept), list, revoke, rotate, and look up the key behind a presented secret.

A lookup reads the database each time (one probe of a unique index, well under a
millisecond), with a per-process cache of ``CACHE_S`` for the hot path: a revoked key is
refused by every replica within that time, without any signal between them.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import asyncpg
from pydantic import BaseModel, ConfigDict

from ..db import Database
from ..errors import ConflictError, DuplicateError, FieldProblem, InvalidInputError, NotFoundError
from ..memories.kinds import parse_agent_id

Role = Literal["read-only", "read-write", "owner"]
ROLES: tuple[Role, ...] = ("read-only", "read-write", "owner")
SECRET_PREFIX = "nmk_"  # tells a nous-memory key apart in a secret scanner
PREFIX_CHARS = 12  # what a listing shows of a secret: enough to tell keys apart
CACHE_S = 0.5  # how long a process trusts a lookup: revocation holds within this
CACHE_MAX = 10_000
LIVE_NAME_INDEX = "api_keys_live_name"  # schema.sql
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def may_act_for(agents: frozenset[str] | None, agent_id: str) -> bool:
    """The one rule of agent access: a key scoped to agents acts for those only; an
    unscoped key (None) for every agent.  API routes, the inspector and the model's
    tools all ask here."""
    return agents is None or agent_id in agents


def hash_secret(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


@dataclass(frozen=True, slots=True)
class KeyGrant:
    """What a presented key may do: its name (the audit trail's actor), its role and its
    agents (None: every agent)."""

    name: str
    role: Role
    agents: frozenset[str] | None

    def allows(self, agent_id: str) -> bool:
        return may_act_for(self.agents, agent_id)

    def can(self, needed: Role) -> bool:
        return ROLES.index(self.role) >= ROLES.index(needed)


class ApiKeyInfo(BaseModel):
    """A key as its owner sees it: never the secret or its digest."""

    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    prefix: str
    role: Role
    agents: list[str] | None
    created_at: datetime
    created_by: str
    revoked_at: datetime | None
    revoked_by: str | None

    @classmethod
    def of(cls, row: asyncpg.Record) -> ApiKeyInfo:
        return cls(id=row["id"], name=row["name"], prefix=row["prefix"], role=row["role"],
                   agents=None if row["agents"] is None else list(row["agents"]),
                   created_at=row["created_at"], created_by=row["created_by"],
                   revoked_at=row["revoked_at"], revoked_by=row["revoked_by"])


def _checked(name: str, role: str, agents: Sequence[str] | None
             ) -> tuple[str, Role, list[str] | None]:
    problems: list[FieldProblem] = []
    if not isinstance(name, str) or not _NAME.match(name):
        problems.append(FieldProblem("name", "1-64 letters, digits, '.', '_' or '-', "
                                             "starting with a letter or digit"))
    if role not in ROLES:
        problems.append(FieldProblem("role", f"one of {', '.join(ROLES)}"))
    parsed: list[str] | None = None
    if agents is not None:
        if not isinstance(agents, list | tuple) or not agents:
            problems.append(FieldProblem("agents", "a non-empty list of agent ids, or "
                                                   "leave it out for every agent"))
        else:
            try:
                parsed = sorted({parse_agent_id(a) for a in agents})
            except InvalidInputError as exc:
                problems.append(FieldProblem("agents", exc.reason))
    if problems:
        raise InvalidInputError(problems)
    return name, role, parsed  # type: ignore[return-value]  # checked against ROLES


class Keys:
    """The api_keys table, and the cached lookup every authenticated request makes."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._cache: dict[bytes, tuple[float, KeyGrant | None]] = {}

    async def create(self, name: str, role: str, agents: Sequence[str] | None = None, *,
                     actor: str) -> tuple[ApiKeyInfo, str]:
        """A new key and its secret (shown once: only its SHA-256 is stored)."""
        name, checked_role, parsed = _checked(name, role, agents)
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        try:
            row = await self._db.fetchrow("key_create", name, hash_secret(secret),
                                          secret[:PREFIX_CHARS], checked_role, parsed, actor)
        except DuplicateError as exc:
            if not exc.refused_by(LIVE_NAME_INDEX):
                raise
            raise ConflictError(f"a live key named {name} exists; revoke or rotate it"
                                ) from None
        assert row is not None
        return ApiKeyInfo.of(row), secret

    async def list(self, *, include_revoked: bool = False) -> list[ApiKeyInfo]:
        return [ApiKeyInfo.of(r) for r in await self._db.fetch("key_list", include_revoked)]

    async def revoke(self, name: str, *, actor: str) -> ApiKeyInfo:
        row = await self._db.fetchrow("key_revoke", name, actor)
        if row is None:
            raise NotFoundError("key", name)
        self._cache.clear()  # this process refuses it at once; others within CACHE_S
        return ApiKeyInfo.of(row)

    async def rotate(self, name: str, *, actor: str) -> tuple[ApiKeyInfo, str]:
        """Revoke the live key of ``name`` and make a new secret with its role and
        agents, in one transaction (the old secret stops working with the switch)."""
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        async with self._db.transaction() as conn:
            old = await conn.fetchrow("key_revoke", name, actor)
            if old is None:
                raise NotFoundError("key", name)
            row = await conn.fetchrow("key_create", name, hash_secret(secret),
                                      secret[:PREFIX_CHARS], old["role"], old["agents"], actor)
        assert row is not None
        self._cache.clear()
        return ApiKeyInfo.of(row), secret

    async def lookup(self, secret: str) -> KeyGrant | None:
        """The live key behind ``secret``, or None (unknown or revoked)."""
        return await self.lookup_digest(hash_secret(secret))

    async def lookup_digest(self, digest: bytes) -> KeyGrant | None:
        """``lookup`` by the SHA-256 (what a signed-in inspector session keeps)."""
        now = time.monotonic()
        cached = self._cache.get(digest)
        if cached is not None and now - cached[0] < CACHE_S:
            return cached[1]
        row = await self._db.fetchrow("key_lookup", digest)
        grant = None if row is None else KeyGrant(
            row["name"], row["role"], None if row["agents"] is None else frozenset(row["agents"]))
        if len(self._cache) >= CACHE_MAX:
            self._cache.clear()
        self._cache[digest] = (now, grant)
        return grant
