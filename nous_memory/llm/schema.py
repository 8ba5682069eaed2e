"""JSON schemas for structured output, in the strict subset OpenAI-style servers accept.

Strict mode wants every object closed (``additionalProperties: false``) with every
property listed as required, and rejects keywords such as ``default``.  Pydantic
still validates the reply against the real model, so optional fields stay optional
for us even though the server is told to always fill them in.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pydantic import BaseModel

_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = ("items", "not", "additionalProperties", "contains")
_DROPPED = ("default",)
_MAX_INLINE_DEPTH = 32


def schema_name(model: type[BaseModel]) -> str:
    """The ``json_schema.name`` servers require: ``[A-Za-z0-9_-]{1,64}``."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", model.__name__)[:64]
    return name or "response"


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema rewritten for ``"strict": true`` (a new dict every call)."""
    schema = copy.deepcopy(model.model_json_schema())
    defs: dict[str, Any] = schema.get("$defs", {})
    for name, sub in list(defs.items()):
        defs[name] = _strict(sub, defs, 0)
    body = _strict({k: v for k, v in schema.items() if k != "$defs"}, defs, 0)
    if defs:
        body["$defs"] = defs
    return body


def describe_schema(model: type[BaseModel]) -> str:
    """System text for servers without json_schema: the schema itself, as data."""
    return ("Reply with one JSON object and nothing else (no prose, no code fences). "
            "It must validate against this JSON Schema:\n"
            + json.dumps(strict_json_schema(model), separators=(",", ":")))


def _strict(node: dict[str, Any], defs: dict[str, Any], depth: int) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1 and depth < _MAX_INLINE_DEPTH:
        # Strict mode does not allow keywords beside $ref: inline the target instead.
        target = defs.get(ref.rsplit("/", 1)[-1])
        if isinstance(target, dict):
            merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
            return _strict(merged, defs, depth + 1)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _strict(sub, defs, depth) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_strict(sub, defs, depth) if isinstance(sub, dict) else sub
                        for sub in value]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = _strict(value, defs, depth)
        else:
            out[key] = value
    if isinstance(out.get("properties"), dict):
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out
