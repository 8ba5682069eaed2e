"""Who is looking at the inspector, proven by a signed session cookie.

With API keys configured, signing in with a key gives a session cookie that names the
key by its digest (never the key itself), signed with HMAC-SHA256 under the server's
secret (``NOUS_MEMORY_UI_SESSION_SECRET``, else one kept in the database).  A session
dies when it expires or when its key is removed from the configuration.  Without keys
the page answers loopback clients only, as the API serves loopback only.

Every visitor, signed in or not, has a session holding a CSRF token: each form that
changes data carries it and is refused without it (sign-in included, so nobody can sign
a browser in under their own key).  The cookie is HttpOnly, SameSite=Strict, and Secure
unless the page is served over plain HTTP on a loopback address.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response

from ...access import KeyGrant, Role, hash_secret
from ...config import Settings
from ...db.audit import ACTOR
from ..auth import KeyRing, grant_for_digest, is_loopback
from ..routes import get_store

COOKIE = "nous_inspector"
SESSION_SECONDS = 12 * 3600


class PageError(Exception):
    """An HTTP error the inspector shows as a page (status, title, message)."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message


class SignInRequired(Exception):
    """The visitor has no signed-in session: send them to the sign-in page."""


@dataclass(frozen=True, slots=True)
class Session:
    """The decoded cookie: the key's digest (None before sign-in) and the CSRF token."""

    key_digest: str | None
    csrf: str
    expires: int

    def encode(self, secret: bytes) -> str:
        body = base64.urlsafe_b64encode(json.dumps(
            {"k": self.key_digest, "c": self.csrf, "e": self.expires},
            separators=(",", ":")).encode()).decode().rstrip("=")
        return f"{body}.{_sign(secret, body)}"

    @classmethod
    def decode(cls, value: str, secret: bytes) -> Session | None:
        body, _, signature = value.partition(".")
        if not body or not hmac.compare_digest(signature, _sign(secret, body)):
            return None
        try:
            data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(
                body + "=" * (-len(body) % 4)))
            session = cls(key_digest=data["k"], csrf=str(data["c"]), expires=int(data["e"]))
        except (ValueError, KeyError, TypeError, binascii.Error):
            return None
        return session if session.expires > time.time() else None

    @classmethod
    def fresh(cls, key_digest: str | None = None) -> Session:
        return cls(key_digest=key_digest, csrf=secrets.token_urlsafe(32),
                   expires=int(time.time()) + SESSION_SECONDS)


def _sign(secret: bytes, body: str) -> str:
    return hmac.new(secret, body.encode(), hashlib.sha256).hexdigest()


# without keys the inspector answers loopback only, and its visitor is the owner
LOOPBACK_OWNER = KeyGrant("inspector", "owner", None)
# before sign-in: no agent, nothing to do
NOBODY = KeyGrant("inspector", "read-only", frozenset())


@dataclass(frozen=True, slots=True)
class Viewer:
    """A visitor allowed to look, with what their key grants (``access.KeyGrant``
    decides which agents they see and what they may do)."""

    grant: KeyGrant
    session: Session
    signed_in: bool  # False when no keys are configured (loopback access)

    @property
    def agents(self) -> frozenset[str] | None:
        return self.grant.agents

    @property
    def role(self) -> Role:
        return self.grant.role

    @property
    def key_name(self) -> str | None:
        return self.grant.name if self.signed_in else None

    def allows(self, agent_id: str) -> bool:
        return self.grant.allows(agent_id)

    def require(self, role: Role) -> None:
        """Refuse what this key's role may not do (a read-only key changes nothing)."""
        if not self.grant.can(role):
            raise PageError(403, "Not allowed",
                            f"This key's role ({self.role}) may not do this; it needs {role}.")

    def check(self, agent_id: str) -> None:
        if not self.allows(agent_id):
            raise PageError(403, "Not allowed",
                            "This key may not see this agent's memories.")


class Gate:
    """Turns a request into a Viewer, or says why not."""

    def __init__(self, ring: KeyRing | None, settings: Settings) -> None:
        self.ring = ring
        self.settings = settings
        self._secret: bytes | None = None

    async def secret(self, request: Request) -> bytes:
        if self._secret is None:
            self._secret = (await get_store(request).session_secret()).encode()
        return self._secret

    async def session(self, request: Request) -> Session | None:
        value = request.cookies.get(COOKIE)
        return Session.decode(value, await self.secret(request)) if value else None

    async def viewer(self, request: Request) -> Viewer:
        """The visitor; PageError (403) or SignInRequired when they may not look."""
        session = await self.session(request)
        if self.ring is None:
            client = request.client.host if request.client else ""
            # the Host check stops DNS rebinding: a site whose name resolves to 127.0.0.1
            # would otherwise read these pages as its own
            local = is_loopback(client) and is_loopback(request.url.hostname or "")
            if not (local or self.settings.insecure_no_auth_on_network):
                raise PageError(403, "Loopback only",
                                "Without API keys the inspector answers this machine only, "
                                "addressed as localhost or a loopback address. Set "
                                "NOUS_MEMORY_API_KEYS to use it from elsewhere.")
            request.state.new_session = session is None
            return Viewer(LOOPBACK_OWNER, session or Session.fresh(), signed_in=False)
        grant = None
        if session is not None and session.key_digest is not None:
            try:
                digest = bytes.fromhex(session.key_digest)
            except ValueError:
                raise SignInRequired from None
            grant = await grant_for_digest(request.app.state, self.ring, digest)
        if grant is None or session is None:  # unknown, or revoked since sign-in
            raise SignInRequired
        ACTOR.set(grant.name)  # the request's audit events name the key (reset per request)
        return Viewer(grant, session, signed_in=True)

    async def anonymous(self, request: Request) -> Session:
        """The visitor's session before sign-in (made now if they have none)."""
        session = await self.session(request)
        if session is None:
            session = Session.fresh()
            request.state.new_session = True
        return session

    async def sign_in(self, request: Request, presented: str) -> Session | None:
        """A new session (new CSRF token) for a valid key, else None."""
        if self.ring is None:
            return None
        digest = hash_secret(presented)
        grant = await grant_for_digest(request.app.state, self.ring, digest)
        return None if grant is None else Session.fresh(digest.hex())

    async def set_cookie(self, request: Request, response: Response,
                         session: Session | None) -> None:
        secure = request.url.scheme == "https" or not is_loopback(request.url.hostname or "")
        if session is None:
            response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict",
                                   secure=secure)
            return
        response.set_cookie(COOKIE, session.encode(await self.secret(request)),
                            max_age=SESSION_SECONDS, path="/ui", httponly=True,
                            samesite="strict", secure=secure)


def check_csrf(session: Session, submitted: str | None) -> None:
    """Refuse a state-changing form whose token is missing or not this session's."""
    if not submitted or not hmac.compare_digest(submitted, session.csrf):
        raise PageError(403, "Form expired",
                        "This form's security token is missing or does not match your "
                        "session. Reload the page and try again.")
