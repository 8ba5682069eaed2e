"""The edit form of a memory: which fields it shows (those a caller may change, read
from the kind's typed definition) and how posted text becomes the changes ``update``
takes.  Text is passed on as typed, so the store's own validation judges it and its
errors name the same fields the API names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import FieldProblem
from ...memories.kinds import DETAIL_MODELS, MANAGED_FIELDS, CommonFields, Kind
from ...memories.records import Memory
from .pages import Form, as_text

LONG_TEXT_CHARS = 500  # longer limits get a text area


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    widget: str  # text | area | lines | number | select
    required: bool
    options: tuple[str, ...] = ()
    integer: bool = False


def _unwrap(prop: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The property's own schema and whether it may be null."""
    nullable = False
    if "anyOf" in prop:
        options = [p for p in prop["anyOf"] if p.get("type") != "null"]
        nullable = len(options) < len(prop["anyOf"])
        prop = options[0] if options else {}
    if "$ref" in prop:
        prop = defs[prop["$ref"].rsplit("/", 1)[1]]
    return prop, nullable


def _spec(name: str, prop: dict[str, Any], defs: dict[str, Any], required: bool) -> FieldSpec:
    prop, _ = _unwrap(prop, defs)
    if "enum" in prop:
        return FieldSpec(name, "select", required, tuple(str(v) for v in prop["enum"]))
    kind = prop.get("type")
    if kind == "array":
        return FieldSpec(name, "lines", required)
    if kind in ("number", "integer"):
        return FieldSpec(name, "number", required, integer=kind == "integer")
    long = prop.get("maxLength", 0) > LONG_TEXT_CHARS
    return FieldSpec(name, "area" if long else "text", required)


def field_specs(kind: Kind) -> list[FieldSpec]:
    """The kind's own fields (those the store maintains left out), then the common ones."""
    schema = DETAIL_MODELS[kind].model_json_schema()
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    hidden = {"kind"} | MANAGED_FIELDS.get(kind, frozenset())
    specs = [_spec(name, prop, defs, name in required)
             for name, prop in schema["properties"].items() if name not in hidden]
    common = CommonFields.model_json_schema()
    for name, prop in common["properties"].items():
        if name == "summary" and kind is not Kind.EPISODE:
            continue  # computed from the fields for every other kind
        specs.append(_spec(name, prop, common.get("$defs", {}), False))
    return specs


def current_values(memory: Memory) -> dict[str, str]:
    values = memory.detail.model_dump(mode="json")
    values.update(importance=memory.importance, tags=memory.tags, summary=memory.summary)
    return {name: as_text(value) for name, value in values.items()}


def changes_from(form: Form, specs: list[FieldSpec], before: dict[str, str]
                 ) -> dict[str, Any]:
    """The fields whose text changed, converted to what ``update`` takes."""
    changes: dict[str, Any] = {}
    for spec in specs:
        raw = form.get(spec.name)
        if raw is None:
            continue
        text = raw.replace("\r\n", "\n")
        if text.strip() == before.get(spec.name, "").strip():
            continue
        changes[spec.name] = _convert(spec, text)
    return changes


def _convert(spec: FieldSpec, text: str) -> Any:
    if spec.widget == "lines":
        return [line.strip() for line in text.split("\n") if line.strip()]
    if not text.strip() and not spec.required:
        return None
    if spec.widget == "number":
        try:
            return int(text) if spec.integer else float(text)
        except ValueError:
            return text  # the store names the field and says what it should be
    return text


def errors_by_field(problems: list[FieldProblem], specs: list[FieldSpec]
                    ) -> tuple[dict[str, list[str]], list[str]]:
    """Each problem next to its field (``tags.0`` belongs to ``tags``); the rest apart."""
    names = {s.name for s in specs}
    by_field: dict[str, list[str]] = {}
    general: list[str] = []
    for problem in problems:
        head = problem.field.split(".", 1)[0].split("[", 1)[0]
        if head in names:
            by_field.setdefault(head, []).append(problem.reason)
        else:
            general.append(f"{problem.field}: {problem.reason}")
    return by_field, general
