"""Optional API keys, each allowed to act for every agent or for a listed few.

``NOUS_MEMORY_API_KEYS`` holds comma-separated entries ``KEY`` (any agent) or
``KEY:agentA|agentB`` (only those); a key cannot contain ``,``, ``:`` or spaces.  These
are the bootstrap keys (role ``owner``, named ``bootstrap-N`` by position); with them
set, keys made at run time (table ``api_keys``, ``nous_memory.access``) are accepted too,
each in its role: ``read-only`` reads and recalls, ``read-write`` also writes, ``owner``
also exports, imports, erases agents and manages keys.  A request's writes are audited
under its key's name.
Unset means no authentication, so the server then serves loopback only: binding any
other address without keys is refused unless the operator sets the loudly named
``insecure_no_auth_on_network`` opt-out.  A key has at least 16 characters.  Keys are
kept only as SHA-256 digests and every presented key is compared against all of them
in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from ..access import KeyGrant, Role, hash_secret
from ..db.audit import ACTOR
from ..errors import ConfigurationError, InvalidInputError
from ..memories.kinds import parse_agent_id

log = logging.getLogger("nous_memory.api")

API_KEY_HEADER = "X-API-Key"
MIN_KEY_CHARS = 16


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One configured key: its digest and the agents it may act for (None: all)."""

    digest: bytes
    agents: frozenset[str] | None
    name: str = "bootstrap"

    def grant(self) -> KeyGrant:
        return KeyGrant(self.name, "owner", self.agents)


class KeyRing:
    """The configured keys; ``lookup`` never short-circuits on a match."""

    def __init__(self, keys: list[ApiKey]) -> None:
        if not keys:
            raise ConfigurationError("api_keys holds no keys")
        self.keys = keys

    @classmethod
    def parse(cls, spec: str) -> KeyRing:
        """Parse the setting; messages name entries by position, never by key."""
        keys: list[ApiKey] = []
        seen: set[bytes] = set()
        for number, entry in enumerate(spec.split(","), start=1):
            where = f"api_keys entry {number}"
            key, colon, agent_list = (part.strip() for part in entry.partition(":"))
            if not key:
                raise ConfigurationError(f"{where}: empty key")
            if any(ch.isspace() for ch in key) or not key.isprintable():
                raise ConfigurationError(f"{where}: keys may not contain spaces or control "
                                         "characters")
            if len(key) < MIN_KEY_CHARS:
                raise ConfigurationError(f"{where}: a key needs at least {MIN_KEY_CHARS} "
                                         f"characters (it has {len(key)}); use for example "
                                         "`python -c 'import secrets; print(secrets."
                                         "token_urlsafe(32))'`")
            agents = _agents(agent_list, where) if colon else None
            digest = hash_secret(key)
            if digest in seen:
                raise ConfigurationError(f"{where}: the same key is listed twice")
            seen.add(digest)
            keys.append(ApiKey(digest, agents, f"bootstrap-{number}"))
        return cls(keys)

    def lookup(self, presented: str) -> ApiKey | None:
        return self.lookup_digest(hash_secret(presented))

    def lookup_digest(self, digest: bytes) -> ApiKey | None:
        found: ApiKey | None = None
        for key in self.keys:  # always compare against every key
            if hmac.compare_digest(digest, key.digest):
                found = key
        return found


def _agents(agent_list: str, where: str) -> frozenset[str]:
    names = [name.strip() for name in agent_list.split("|")]
    if not all(names):
        raise ConfigurationError(f"{where}: empty agent name after ':' or '|'")
    try:
        return frozenset(parse_agent_id(name) for name in names)
    except InvalidInputError as exc:
        raise ConfigurationError(f"{where}: invalid agent id ({exc.reason})") from None


def key_ring(spec: str | None) -> KeyRing | None:
    """None when authentication is off; ConfigurationError when the setting is invalid."""
    if spec is None:
        return None
    if not spec.strip():
        raise ConfigurationError("api_keys is blank; leave it unset to disable authentication")
    return KeyRing.parse(spec)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is only reachable from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name or an interface: it may well be reachable


def check_exposure(host: str, ring: KeyRing | None, *, insecure_opt_out: bool) -> None:
    """Refuse to serve memories to the network without authentication."""
    if ring is not None or is_loopback(host):
        return
    if not insecure_opt_out:
        raise ConfigurationError(
            f"refusing to serve on {host} without API keys: anyone who can reach it could "
            "read and change every agent's memories. Set NOUS_MEMORY_API_KEYS (see README, "
            "REST), bind 127.0.0.1, or, if another layer authenticates, set "
            "NOUS_MEMORY_INSECURE_NO_AUTH_ON_NETWORK=true (or --insecure-no-auth-on-network)")
    log.warning("SERVING %s WITHOUT AUTHENTICATION (insecure_no_auth_on_network is set): "
                "every agent's memories are open to anyone who can reach this address", host)


_bearer = HTTPBearer(auto_error=False, scheme_name="BearerKey",
                     description="`Authorization: Bearer KEY`")
_header = APIKeyHeader(name=API_KEY_HEADER, auto_error=False, scheme_name="ApiKeyHeader",
                       description=f"`{API_KEY_HEADER}: KEY`")


# What each route needs beyond the agent in its path: reads are any role's; these need
# more (by route template); every other method needs read-write.
READ_POSTS = frozenset({"/agents/{agent_id}/recall", "/agents/{agent_id}/context"})
OWNER_ROUTES = frozenset({"/agents/{agent_id}/export", "/agents/{agent_id}/import",
                          "/agents/{agent_id}", "/agents/{agent_id}/people/{user}",
                          "/agents/{agent_id}/secrets-policy",
                          "/agents/{agent_id}/episodes/{episode_id}/messages/{seq}/forget",
                          "/keys", "/keys/{name}",
                          "/keys/{name}/rotate"})


def required_role(method: str, route: str) -> Role:
    if route in OWNER_ROUTES:
        return "owner"
    if method in ("GET", "HEAD") or (method == "POST" and route in READ_POSTS):
        return "read-only"
    return "read-write"


async def grant_for_digest(app_state: Any, ring: KeyRing, digest: bytes) -> KeyGrant | None:
    """The bootstrap key, else the live run-time key, with this digest (None: neither)."""
    key = ring.lookup_digest(digest)
    if key is not None:
        return key.grant()
    store = getattr(app_state, "store", None)
    return None if store is None else await store.keys.lookup_digest(digest)


async def grant_for(app_state: Any, ring: KeyRing, presented: str) -> KeyGrant | None:
    return await grant_for_digest(app_state, ring, hash_secret(presented))


def require_key(ring: KeyRing) -> Callable[..., Awaitable[None]]:
    """A route dependency: 401 without a known key, 403 if it may not act for the agent
    or its role may not do this; the request's audit events then name the key."""

    async def check_key(
        request: Request,
        bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
        header: Annotated[str | None, Depends(_header)],
    ) -> None:
        presented = bearer.credentials if bearer is not None else header
        if not presented:
            raise HTTPException(
                401, f"missing API key; send 'Authorization: Bearer KEY' or '{API_KEY_HEADER}'",
                headers={"WWW-Authenticate": "Bearer"})
        grant = await grant_for(request.app.state, ring, presented)
        if grant is None:
            raise HTTPException(401, "unknown API key", headers={"WWW-Authenticate": "Bearer"})
        agent_id = str(request.path_params.get("agent_id", ""))
        if not grant.allows(agent_id):
            raise HTTPException(403, "this API key may not act for this agent")
        route = getattr(request.scope.get("route"), "path", "")
        needed = required_role(request.method, route)
        if not grant.can(needed):
            raise HTTPException(403, f"this API key's role ({grant.role}) may not do this; "
                                     f"it needs {needed}")
        request.state.key = grant
        ACTOR.set(grant.name)  # reset by the Observe middleware when the request ends

    return check_key


def presented_key(request: Request) -> str | None:
    """The key a request presents: ``Authorization: Bearer KEY``, else ``X-API-Key``
    (the order the route dependency reads them in)."""
    authorization = request.headers.get("authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return request.headers.get(API_KEY_HEADER) or None


async def presents_valid_key(request: Request, ring: KeyRing) -> bool:
    """Whether the request carries a known key (for routes that stay open, such as
    /health, but say more to a caller with a key)."""
    presented = presented_key(request)
    return presented is not None and await grant_for(request.app.state, ring,
                                                     presented) is not None
