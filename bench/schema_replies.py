"""The smallest reply valid against a request's JSON schema: a scripted model that
answers every LLM path of the store (bench/operations.py).  Imported by the bench
scripts beside it."""

from __future__ import annotations

from typing import Any

from nous_memory.testing import JSONReply, ScriptStep


def schema_value(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The smallest value a JSON schema (as the LLM client sends it) accepts."""
    if "$ref" in schema:
        return schema_value(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return schema_value(schema[key][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: schema_value(props[name], defs) for name in schema.get("required", props)}
    if kind == "array":
        return [schema_value(schema.get("items", {}), defs)
                for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "ok" + "k" * max(0, schema.get("minLength", 0) - 2)
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def schema_reply(request: dict[str, Any]) -> ScriptStep:
    schema = (request.get("response_format") or {}).get("json_schema", {}).get("schema", {})
    return JSONReply(content=schema_value(schema, schema.get("$defs", {})) or {})
