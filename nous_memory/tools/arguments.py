"""Tool arguments: JSON schemas built from the kinds' own models, and one validator.

The schema a model sees is the schema its arguments are checked against, so a bad call
is refused with the same field names the schema shows.  The store validates the values
again (lengths, patterns, RE2 triggers) and names fields the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from ..errors import (
    FieldProblem,
    InvalidInputError,
    a_or_an,
    longer_than,
    more_than,
    out_of_range,
)
from ..memories.kinds import DETAIL_MODELS, CommonFields, Kind

MAX_ARGUMENT_BYTES = 64_000  # one tool call's JSON; larger is refused before parsing

# the fields a model may set when it remembers something, per kind; counters and links
# the store maintains (activation counts, supersession) are left to the store
REMEMBER_FIELDS: dict[Kind, tuple[str, ...]] = {
    Kind.DECISION: ("description", "outcome", "confidence", "pattern", "reasons", "context"),
    Kind.FACT: ("content", "subject", "category", "confidence", "source"),
    Kind.PROCEDURE: ("name", "goals", "core_patterns", "implementation_notes"),
    Kind.CENSOR: ("trigger_pattern", "action", "reason"),
}
# read from the kinds' models, so the tools can never disagree with the store about it
REQUIRED_FIELDS: dict[Kind, tuple[str, ...]] = {
    kind: tuple(name for name in names if DETAIL_MODELS[kind].model_fields[name].is_required())
    for kind, names in REMEMBER_FIELDS.items()}
COMMON = ("importance", "tags")
FIELD_NOTES = {
    "description": "What was decided, in one or two sentences.",
    "outcome": "How the decision turned out so far (default pending).",
    "confidence": "How sure, 0 to 1.",
    "pattern": "The situation this decision applies to, for next time.",
    "reasons": "Why it was decided, one reason per item.",
    "context": "The circumstances it was taken in.",
    "content": "The fact as one self-contained sentence.",
    "subject": "Who or what the fact is about.",
    "category": "A short category, e.g. preference, location, family.",
    "source": "Where the fact came from.",
    "name": "The procedure's name, e.g. 'book a flight'.",
    "goals": "What the procedure achieves.",
    "core_patterns": "The steps or rules that make it work.",
    "implementation_notes": "Details, pitfalls, tools.",
    "trigger_pattern": "What the censor matches: a phrase, matched as whole words in any "
                       "case, or a regular expression between slashes (RE2 syntax, any "
                       "case), e.g. /pass(word|phrase)/.",
    "action": "What to do on a match: warn, block, or absolute (block, no override).",
    "reason": "Why the censor exists.",
}


def _inline(schema: Any, defs: Mapping[str, Any]) -> Any:
    """``schema`` with every ``$ref`` into ``$defs`` replaced by its target, titles dropped
    (function-calling clients accept plain schemas best)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_inline(item, defs) for item in schema]
    return schema


def _optional_dropped(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional field's schema without its null branch: omit the field instead."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1:
            schema = {**{k: v for k, v in schema.items() if k != "anyOf"}, **rest[0]}
    return {k: v for k, v in schema.items() if not (k == "default" and v is None)}


def _field_schemas(model: Any) -> dict[str, Any]:
    full = model.model_json_schema()
    defs = full.get("$defs", {})
    return {name: _optional_dropped(_inline(prop, defs))
            for name, prop in full["properties"].items()}


def remember_properties() -> dict[str, Any]:
    """One flat object: ``kind`` plus the union of the kinds' fields, each saying which
    kinds take it (a tagged union is poorly supported by function-calling models)."""
    kinds = list(REMEMBER_FIELDS)
    properties: dict[str, Any] = {"kind": {
        "type": "string", "enum": [k.value for k in kinds],
        "description": "What to remember: a decision taken, a fact about the user or the "
                       "world, a procedure (how to do something), or a censor (a pattern "
                       "to warn about or block)."}}
    users: dict[str, list[str]] = {}
    for kind in kinds:
        schemas = _field_schemas(DETAIL_MODELS[kind])
        for name in REMEMBER_FIELDS[kind]:
            properties.setdefault(name, schemas[name])
            users.setdefault(name, []).append(kind.value)
    for name, kinds_using in users.items():
        required = [k for k in kinds_using if name in REQUIRED_FIELDS[Kind(k)]]
        note = f"{FIELD_NOTES[name]} ({', '.join(kinds_using)}"
        if required:
            note += f"; required for {', '.join(required)}"
        properties[name] = {**properties[name], "description": note + ")"}
    common = _field_schemas(CommonFields)
    properties["importance"] = {**common["importance"],
                                "description": "0 (trivia) to 1 (essential); default 0.5."}
    properties["tags"] = {**common["tags"], "description": "Short labels for filtering."}
    return properties


def remember_problems(arguments: Mapping[str, Any]) -> list[FieldProblem]:
    """Fields given that the chosen kind does not take, and its missing required ones."""
    try:
        kind = Kind(str(arguments.get("kind")))
    except ValueError:
        return []  # the schema's enum already reports it
    allowed = set(REMEMBER_FIELDS[kind]) | set(COMMON) | {"kind", "agent_id"}
    problems = [FieldProblem(name, f"not a field of {a_or_an(kind.value)}")
                for name in arguments if name not in allowed]
    problems += [FieldProblem(name, f"required for {a_or_an(kind.value)}")
                 for name in REQUIRED_FIELDS[kind] if name not in arguments]
    return problems


def parse_arguments(raw: object) -> dict[str, Any]:
    """A model's arguments (a JSON object, as text or already decoded).  Anything else,
    even from a careless caller, is the caller's error, never the store's failure."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        raise InvalidInputError.single("arguments", "must be a JSON object or its text")
    size = len(raw.encode("utf-8", "surrogatepass"))
    if size > MAX_ARGUMENT_BYTES:
        raise InvalidInputError.single("arguments", longer_than(MAX_ARGUMENT_BYTES, size,
                                                                "bytes"))
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InvalidInputError.single("arguments", f"not valid JSON ({exc})") from None
    except RecursionError:  # nesting deeper than the parser's stack, well under the size cap
        raise InvalidInputError.single("arguments", "nested too deeply") from None
    if not isinstance(value, dict):
        raise InvalidInputError.single("arguments", "must be a JSON object")
    return value


class ArgumentChecker:
    """Checks one tool's arguments against its input schema; every problem at once."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        Draft202012Validator.check_schema(schema)
        self._validator = Draft202012Validator(schema)

    def check(self, arguments: Mapping[str, Any]) -> None:
        problems = [problem for error in
                    sorted(self._validator.iter_errors(arguments), key=_where)
                    for problem in _problems(error)]
        if problems:
            raise InvalidInputError(problems)


def _where(error: ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path)


def _problems(error: ValidationError) -> list[FieldProblem]:
    where = _where(error)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        allowed = set(schema.get("properties", {}))
        return [FieldProblem(".".join(filter(None, [where, str(name)])), "unknown argument")
                for name in sorted(error.instance) if name not in allowed]
    if error.validator == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else ""
        return [FieldProblem(".".join(filter(None, [where, missing])) or "arguments",
                             "required")]
    return [FieldProblem(where or "arguments", _reason(error))]


def _reason(error: ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "enum":
        return "must be one of " + ", ".join(map(str, schema.get("enum", [])))
    if error.validator == "type":
        expected = error.validator_value
        names = expected if isinstance(expected, Sequence) and not isinstance(
            expected, str) else [expected]
        return "must be " + " or ".join(a_or_an(str(n)) for n in names)
    value = error.instance
    limit: Any = schema.get(str(error.validator))
    if error.validator == "maxLength" and isinstance(value, str):
        return longer_than(int(limit), len(value))
    if error.validator == "minLength" and isinstance(value, str):
        return "must not be empty" if limit == 1 else \
            f"shorter than {limit} characters (got {len(value)})"
    if error.validator == "maxItems" and isinstance(value, list):
        return more_than(int(limit), len(value))
    if error.validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        if low is not None and high is not None:
            return out_of_range(low, high)
        return f"must be at least {low}" if low is not None else f"must be at most {high}"
    if error.validator == "uniqueItems":
        return "has an item more than once"
    # jsonschema's own messages quote the value; say which rule failed instead
    return f"does not match the schema ({error.validator})"
