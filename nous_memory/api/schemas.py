"""OpenAPI documentation of request bodies, built from the kinds' own models.

Bodies are validated by the store, not by these schemas, so that every bad input is
reported the same way; the schemas only describe what the store accepts.  They are
derived from ``kinds.DETAIL_MODELS`` and ``CommonFields`` so they cannot drift.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import models_json_schema

from ..memories.kinds import DETAIL_MODELS, MAX_BATCH_ITEMS, CommonFields, Kind
from ..memories.records import Memory

REF = "#/components/schemas/{model}"
CREATE = "MemoryCreate"
BATCH = "MemoryBatchCreate"
CHANGES = "MemoryChanges"


class MemoryList(BaseModel):
    """Memories created by one batch, in request order."""

    items: list[Memory]


class DatabaseHealth(BaseModel):
    model_config = ConfigDict(extra="allow")

    ok: bool
    embedded: bool
    dsn: str = Field(description="Connection string with the password redacted")
    server_version: str
    pgvector_version: str | None
    schema_version: int | None


class EmbeddingHealth(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str
    dimension: int


class Health(BaseModel):
    """The store's own health report plus ``status``."""

    model_config = ConfigDict(extra="allow")

    status: str = Field(examples=["ok"])
    database: DatabaseHealth | None = Field(
        default=None, description="Absent for a caller without a key when keys are set.")
    embedding: EmbeddingHealth | None = Field(
        default=None, description="Absent for a caller without a key when keys are set.")


class ReadinessChecks(BaseModel):
    model_config = ConfigDict(frozen=True)

    database: str = Field(description="ok, schema not current or unavailable")
    model: str = Field(description="ok or loading")
    worker: str = Field(description="off (no worker in this process), running or stopped")


class Readiness(BaseModel):
    """What ``/ready`` answers, with 200 or 503."""

    model_config = ConfigDict(frozen=True)

    status: Literal["ready", "not ready"]
    checks: ReadinessChecks


class Unhealthy(BaseModel):
    status: str = Field(examples=["unavailable"])
    detail: str


def _create_model(kind: Kind) -> type[BaseModel]:
    """The flat create body for one kind: ``kind``, its detail fields, the common fields."""
    detail = DETAIL_MODELS[kind]
    fields: dict[str, Any] = {
        "kind": (detail.model_fields["kind"].annotation,
                 Field(description="Selects the kind of memory")),
    }
    for name, info in detail.model_fields.items():
        if name != "kind":
            fields[name] = (info.annotation, info)
    for name, info in CommonFields.model_fields.items():
        if name != "summary" or kind is Kind.EPISODE:  # other kinds' summaries are computed
            fields[name] = (info.annotation, info)
    fields["user"] = (str | None, Field(  # people/: the store turns it into people=[user]
        default=None, description="Whose it is: one person (a user id or a name; or send "
                                  "the X-User header); ``people`` names several instead. "
                                  "Neither: the agent's, shared with everyone."))
    return create_model(
        f"{kind.value.capitalize()}Create",
        __config__=ConfigDict(extra="forbid"),
        __doc__=f"Create a {kind.value}; its summary and embedding are computed on write.",
        **fields,
    )


def _changes_schema(kind: Kind, create: dict[str, Any]) -> dict[str, Any]:
    """A kind's create schema minus ``kind``, requirements and defaults: a partial update."""
    schema = copy.deepcopy(create)
    schema.pop("required", None)
    schema["properties"].pop("kind", None)
    schema["properties"].pop("user", None)  # a create-time shorthand for people
    for prop in schema["properties"].values():
        prop.pop("default", None)
    schema["title"] = f"{kind.value.capitalize()}Changes"
    schema["description"] = (f"Fields of a {kind.value} to change; omitted fields stay as they "
                             "are and the summary is recomputed.")
    return schema


def request_schemas() -> dict[str, dict[str, Any]]:
    """Component schemas for the request bodies, keyed by component name."""
    models = {kind: _create_model(kind) for kind in Kind}
    _, top = models_json_schema([(m, "validation") for m in models.values()], ref_template=REF)
    schemas: dict[str, dict[str, Any]] = dict(top["$defs"])

    def ref(name: str) -> dict[str, str]:
        return {"$ref": REF.format(model=name)}

    for kind, model in models.items():
        changes = _changes_schema(kind, schemas[model.__name__])
        schemas[changes["title"]] = changes
    schemas[CREATE] = {
        "title": CREATE,
        "description": "One memory to create: ``kind`` plus that kind's fields.",
        "oneOf": [ref(m.__name__) for m in models.values()],
        "discriminator": {"propertyName": "kind",
                          "mapping": {k.value: REF.format(model=m.__name__)
                                      for k, m in models.items()}},
    }
    schemas[BATCH] = {
        "title": BATCH, "type": "object", "additionalProperties": False,
        "description": "Memories to create all together, or none if any is invalid.",
        "properties": {"items": {"type": "array", "maxItems": MAX_BATCH_ITEMS,
                                 "items": ref(CREATE)}},
        "required": ["items"],
    }
    schemas[CHANGES] = {
        "title": CHANGES,
        "description": "Fields to change, from the memory's own kind; the kind cannot change "
                       "and only episodes take a summary.",
        "anyOf": [ref(f"{k.value.capitalize()}Changes") for k in Kind],
    }
    return schemas


def request_body(component: str, examples: dict[str, Any] | None = None) -> dict[str, Any]:
    """``openapi_extra`` documenting a JSON request body by component name."""
    media: dict[str, Any] = {"schema": {"$ref": REF.format(model=component)}}
    if examples:
        media["examples"] = {name: {"value": value} for name, value in examples.items()}
    return {"requestBody": {"required": True, "content": {"application/json": media}}}


CREATE_EXAMPLES: dict[str, Any] = {
    "decision": {"kind": "decision", "description": "Chose Postgres + pgvector for unified storage",
                 "outcome": "success", "confidence": 0.85,
                 "pattern": "Unify to reduce surface area", "tags": ["architecture"]},
    "fact": {"kind": "fact", "content": "The staging cluster runs PostgreSQL 16",
             "subject": "staging", "confidence": 0.9},
    "episode": {"kind": "episode", "title": "Migrated the billing service",
                "detail": "Moved billing to the new cluster. Two retries were needed.",
                "outcome": "Done with no downtime"},
    "procedure": {"kind": "procedure", "name": "Deploy a hotfix",
                  "core_patterns": ["branch from the release tag", "run the smoke tests"]},
    "censor": {"kind": "censor", "trigger_pattern": "rm -rf /", "action": "block",
               "reason": "Destroys the host"},
}

CHANGE_EXAMPLES: dict[str, Any] = {
    "decision outcome": {"outcome": "failure", "confidence": 0.4},
    "importance and tags": {"importance": 0.9, "tags": ["critical"]},
}
