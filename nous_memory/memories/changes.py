"""What an update may change, and what it recomputes: the rules of ``MemoryManager.update``.

A change is validated against the merged record (the same rules as a new one), the
tier-1 summary follows the fields it uses, and the audit trail gets every field's old
and new value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConflictError, InvalidInputError, PayloadTooLargeError, a_or_an
from ..tokens import count_tokens
from .kinds import (
    COMMON_FIELDS,
    EpisodeDetail,
    EpisodeStorage,
    Kind,
    SummarySource,
    managed_problems,
    validate_common,
    validate_detail,
)
from .records import Memory
from .summaries import summarize


def apply_changes(current: Memory, changes: Mapping[str, Any]) -> Memory:
    """Validate the merged record and recompute what derives from it."""
    if "kind" in changes and changes["kind"] != current.kind.value:
        raise InvalidInputError.single("kind", "cannot be changed; create a new memory")
    detail_changes = {k: v for k, v in changes.items() if k not in COMMON_FIELDS and k != "kind"}
    managed = managed_problems(current.kind, detail_changes)
    if managed:
        raise InvalidInputError(managed)
    common_changes = {k: v for k, v in changes.items() if k in COMMON_FIELDS}
    if "summary" in common_changes and current.kind is not Kind.EPISODE:
        raise InvalidInputError.single(
            "summary", f"{a_or_an(current.kind.value)} summary is computed from its fields")
    failures: list[InvalidInputError] = []
    try:  # every bad field is reported at once, the kind's and the common ones
        detail = validate_detail(current.kind, current.detail.model_dump() | detail_changes)
    except InvalidInputError as exc:
        failures.append(exc)
    try:
        common = validate_common({"importance": current.importance, "tags": current.tags}
                                 | common_changes)
    except InvalidInputError as exc:
        failures.append(exc)
    if failures:
        problems = [p for exc in failures for p in exc.problems]
        too_large = any(isinstance(exc, PayloadTooLargeError) for exc in failures)
        raise (PayloadTooLargeError if too_large else InvalidInputError)(problems)
    source: SummarySource
    if common.summary is not None:
        summary, source = common.summary, SummarySource.GIVEN
    elif isinstance(detail, EpisodeDetail) and current.summary_source is not SummarySource.RULE:
        summary, source = current.summary, current.summary_source  # given/LLM text stays
    else:
        summary, source = summarize(detail)  # type: ignore[arg-type]
    return current.model_copy(update={
        "detail": detail, "importance": common.importance, "tags": common.tags,
        "summary": summary, "summary_source": source,
        "summary_tokens": count_tokens(summary) if summary != current.summary
        else current.summary_tokens})


def refuse_cold_detail_edit(memory: Memory, changed: list[str]) -> None:
    """An episode whose detail is partly or wholly in cold storage is reassembled from its
    hot prefix and the cold part: editing the hot part would corrupt it."""
    storage = getattr(memory.detail, "storage", None)
    if ("detail" in changed and storage is not None
            and storage not in (EpisodeStorage.HOT, EpisodeStorage.RESTORED)):
        raise ConflictError(f"episode {memory.id} has its detail in cold storage "
                            f"({storage.value}); restore it before editing the detail")


def audit_values(memory: Memory) -> dict[str, Any]:
    values: dict[str, Any] = memory.detail.model_dump(mode="json", exclude={"kind"})
    values.update(summary=memory.summary, importance=memory.importance, tags=memory.tags)
    return values
