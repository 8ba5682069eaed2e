"""Every route of /openapi.json is typed: a client generated from the document (the
TypeScript one in clients/typescript, or anyone's) gets each request body and each 2xx
response right, instead of an untyped object it has to guess the shape of.

Untyped means an empty schema, or an object with neither properties nor a typed
``additionalProperties``; a ``$ref`` is followed, an array's items and each branch of a
union are checked too.  A route that writes without a body is listed here with why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nous_memory.api import create_app
from nous_memory.config import Settings
from nous_memory.conversation.policy import KNOBS

# POST routes that take no body: the path says everything.
BODILESS = {
    ("post", "/agents/{agent_id}/episodes/{episode_id}/close"): "the episode is in the path",
    ("post", "/agents/{agent_id}/memories/{memory_id}/restore"): "the memory is in the path",
    ("post", "/keys/{name}/rotate"): "the key is in the path",
}
WRITES = ("post", "put", "patch")


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    app = create_app(settings=Settings(data_dir=Path("/nonexistent-unused")))
    return app.openapi()


def untyped(schema: dict[str, Any], components: dict[str, Any], seen: frozenset[str]
            = frozenset()) -> str | None:
    """Why ``schema`` leaves a client guessing, or None when it is typed."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in seen:
            return None  # a recursive model: typed where it was first met
        return untyped(components[name], components, seen | {name})
    for union in ("oneOf", "anyOf", "allOf"):
        if union in schema:
            branches = [untyped(b, components, seen) for b in schema[union]]
            return next((why for why in branches if why), None)
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return "an array of anything" if not items else untyped(items, components, seen)
    if kind == "object" or (kind is None and "properties" in schema):
        extra = schema.get("additionalProperties")
        if schema.get("properties") or (isinstance(extra, dict) and extra):
            return None
        return "an object without properties"
    if kind is None and "const" not in schema and "enum" not in schema:
        return "an empty schema"
    return None


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, ops in spec["paths"].items()
            for method, op in ops.items()]


def test_every_request_body_and_success_response_is_typed(spec: dict[str, Any]) -> None:
    components = spec["components"]["schemas"]
    problems = []
    for method, path, op in operations(spec):
        body = op.get("requestBody")
        if body is None and method in WRITES and (method, path) not in BODILESS:
            problems.append(f"{method.upper()} {path}: no request body documented")
        for media_type, media in (body or {}).get("content", {}).items():
            why = untyped(media.get("schema", {}), components)
            if why:
                problems.append(f"{method.upper()} {path} body ({media_type}): {why}")
        for status, response in op["responses"].items():
            if not status.startswith("2"):
                continue
            for media_type, media in response.get("content", {}).items():
                why = untyped(media.get("schema", {}), components)
                if why:
                    problems.append(f"{method.upper()} {path} {status} ({media_type}): {why}")
    assert problems == []


def test_bodiless_writes_are_still_routes(spec: dict[str, Any]) -> None:
    """The exemptions name routes that exist and still take no body."""
    for method, path in BODILESS:
        assert "requestBody" not in spec["paths"][path][method]


def test_the_walk_catches_what_it_looks_for() -> None:
    components = {"Loose": {"type": "object", "additionalProperties": True},
                  "Tight": {"type": "object", "properties": {"a": {"type": "string"}}}}
    assert untyped({}, components) == "an empty schema"
    assert untyped({"$ref": "#/components/schemas/Loose"}, components)
    assert untyped({"type": "array", "items": {"$ref": "#/components/schemas/Loose"}},
                   components)
    assert untyped({"anyOf": [{"$ref": "#/components/schemas/Tight"}, {}]}, components)
    assert untyped({"$ref": "#/components/schemas/Tight"}, components) is None
    assert untyped({"type": "object", "additionalProperties": {"type": "integer"}},
                   components) is None


def test_working_memory_and_keys_name_their_models(spec: dict[str, Any]) -> None:
    """The routes that were untyped point at their models, which hold the store's fields."""
    paths, schemas = spec["paths"], spec["components"]["schemas"]

    def ref(schema: dict[str, Any]) -> str:
        return str(schema["$ref"]).rsplit("/", 1)[1]

    prompt = paths["/agents/{agent_id}/episodes/{episode_id}/prompt"]["post"]
    assert ref(prompt["requestBody"]["content"]["application/json"]["schema"]) == \
        "PromptRequest"
    assert ref(prompt["responses"]["200"]["content"]["application/json"]["schema"]) == "Prompt"
    assert set(schemas["PromptRequest"]["required"]) == {"system", "budget_tokens"}
    policy = paths["/agents/{agent_id}/conversation-policy"]
    assert set(schemas["ConversationPolicy"]["properties"]) == set(KNOBS)
    assert set(schemas["PolicyChanges"]["properties"]) == set(KNOBS)
    assert "required" not in schemas["PolicyChanges"]
    assert ref(policy["put"]["requestBody"]["content"]["application/json"]["schema"]) == \
        "PolicyChanges"
    created = paths["/keys"]["post"]["responses"]["201"]["content"]["application/json"]
    assert ref(created["schema"]) == "KeyWithSecret"
    assert schemas["KeyCreate"]["properties"]["role"]["enum"] == ["read-only", "read-write",
                                                                  "owner"]
