"""API keys over HTTP, for an owner key of every agent: create (the secret is in this
one response only), list, revoke and rotate.  Without configured keys (loopback only)
the caller is the machine's owner and may manage them too, ready for when keys are on.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from ..access import ApiKeyInfo, Role
from ..errors import InvalidInputError
from .body import json_object, unknown_fields
from .errors import problem_responses
from .routes import Store
from .schemas import REF, request_body

router = APIRouter(prefix="/keys", tags=["keys"])
Name = Annotated[str, Path(description="The key's name")]


class KeyCreate(BaseModel):
    """A new key; the store checks every value (422 naming the field)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="1-64 letters, digits, '.', '_' or '-', starting with a "
                                  "letter or digit; unique")
    role: Role
    agents: list[str] | None = Field(None, description="The agents it may act for; left "
                                                       "out or null: every agent")


class KeyWithSecret(BaseModel):
    """A key and its secret, which no other response shows again."""

    model_config = ConfigDict(frozen=True)

    key: ApiKeyInfo
    secret: str


CREATE_FIELDS = tuple(KeyCreate.model_fields)


def key_request_schemas() -> dict[str, dict[str, Any]]:
    _, top = models_json_schema([(KeyCreate, "validation")], ref_template=REF)
    return dict(top["$defs"])


def _actor(request: Request) -> str:
    key = getattr(request.state, "key", None)
    return key.name if key is not None else "api"


@router.post("", status_code=201, summary="Create a key (its secret is shown once)",
             openapi_extra=request_body("KeyCreate", {"phone": {
                 "name": "phone", "role": "read-write", "agents": ["assistant"]}}),
             responses=problem_responses(401, 403, 409, 422, 503))
async def create_key(request: Request, store: Store) -> KeyWithSecret:
    """Body: ``name``, ``role`` (read-only, read-write, owner) and ``agents`` (a list;
    left out: every agent).  The response holds the secret; only its hash is stored."""
    body = await json_object(request)
    problems = unknown_fields(body, CREATE_FIELDS)
    if problems:
        raise InvalidInputError(problems)
    info, secret = await store.create_key(
        body.get("name", ""), role=body.get("role", ""), agents=body.get("agents"),
        actor=_actor(request))
    return KeyWithSecret(key=info, secret=secret)


@router.get("", summary="List keys (never their secrets)",
            responses=problem_responses(401, 403, 503))
async def list_keys(store: Store, include_revoked: Annotated[bool, Query(
        description="Also revoked keys")] = False) -> list[ApiKeyInfo]:
    return await store.list_keys(include_revoked=include_revoked)


@router.delete("/{name}", summary="Revoke a key (every replica refuses it within a second)",
               responses=problem_responses(401, 403, 404, 503))
async def revoke_key(name: Name, request: Request, store: Store) -> ApiKeyInfo:
    return await store.revoke_key(name, actor=_actor(request))


@router.post("/{name}/rotate", summary="A new secret for a key; the old one stops working",
             responses=problem_responses(401, 403, 404, 503))
async def rotate_key(name: Name, request: Request, store: Store) -> KeyWithSecret:
    info, secret = await store.rotate_key(name, actor=_actor(request))
    return KeyWithSecret(key=info, secret=secret)
