"""The five kinds of memory: documented size limits and validated detail records (their
enums are in ``enums.py``, imported here for the modules that read them from here).

Validation happens here, before anything touches the database, so a rejected call
names the field and the reason and leaves stored data untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from ..errors import (
    FieldProblem,
    InvalidInputError,
    PayloadTooLargeError,
    a_or_an,
    is_size_reason,
    longer_than,
    reason_of,
)
from ..people.keys import Person
from .enums import (
    CensorAction as CensorAction,
)
from .enums import (
    DecisionOutcome as DecisionOutcome,
)
from .enums import (
    EpisodeState as EpisodeState,
)
from .enums import (
    EpisodeStorage as EpisodeStorage,
)
from .enums import (
    FactsExtractor as FactsExtractor,
)
from .enums import (
    FactsState as FactsState,
)
from .enums import (
    Kind as Kind,
)
from .enums import (
    SourceKind as SourceKind,
)
from .enums import (
    Status as Status,
)
from .enums import (
    SummarySource as SummarySource,
)
from .triggers import valid_trigger

_M = TypeVar("_M", bound=BaseModel)


# Documented limits (README "Limits").  Characters, not bytes.
MAX_AGENT_ID_CHARS = 128
MAX_LABEL_CHARS = 500  # titles, names, subjects, categories, sources, list items
MAX_TEXT_CHARS = 10_000  # content, descriptions, reasons, patterns, summaries
MAX_DETAIL_CHARS = 1_000_000  # episode detail
MAX_LIST_ITEMS = 100
MAX_TAGS = 32
MAX_PEOPLE = 64  # the people one memory belongs to (a group conversation's members)
MAX_TAG_CHARS = 64
MAX_BATCH_ITEMS = 5_000  # remember_many items per call
MAX_PAGE_SIZE = 500  # list page size
MAX_MESSAGE_CHARS = 100_000  # one transcript message, appended or edited


def no_nul(value: str) -> str:
    """Reject what PostgreSQL cannot store as text: NUL bytes, and lone UTF-16
    surrogates (JSON's "\\ud800"), which have no UTF-8 form."""
    if "\x00" in value:
        raise ValueError("contains a NUL byte, which PostgreSQL cannot store in text")
    if not is_utf8(value):
        raise ValueError("contains a lone UTF-16 surrogate, which is not valid Unicode text")
    return value


def is_utf8(value: str) -> bool:
    """Whether ``value`` has a UTF-8 form (no lone surrogates); C speed on large text."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_CLEAN = AfterValidator(no_nul)

Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                         max_length=MAX_LABEL_CHARS), _CLEAN]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                        max_length=MAX_TEXT_CHARS), _CLEAN]
LongText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                            max_length=MAX_DETAIL_CHARS), _CLEAN]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                       max_length=MAX_TAG_CHARS), _CLEAN]
Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, le=2**31 - 1)]
Texts = Annotated[list[Text], Field(max_length=MAX_LIST_ITEMS)]
Labels = Annotated[list[Label], Field(max_length=MAX_LIST_ITEMS)]


_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def aware_timestamp(value: datetime | None) -> datetime | None:
    """Naive timestamps are taken as UTC, so stored times are never ambiguous; times
    whose UTC form leaves years 1..9999 are refused (they could not be read back)."""
    if value is None:
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        in_utc = value.astimezone(UTC)
    except OverflowError:
        raise ValueError("outside the years 1 to 9999 in UTC") from None
    if not _EARLIEST <= in_utc <= _LATEST:
        raise ValueError("outside the years 1 to 9999 in UTC")
    return value


Timestamp = Annotated[datetime, AfterValidator(aware_timestamp)]


class _Detail(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DecisionDetail(_Detail):
    kind: Literal["decision"] = "decision"
    description: Text
    outcome: DecisionOutcome = DecisionOutcome.PENDING
    confidence: Unit | None = None
    pattern: Text | None = None
    reasons: Texts = []
    context: Text | None = None
    source_episode_id: UUID | None = None
    subject: Label | None = None  # what it is about: an episode's close matches on it


class FactDetail(_Detail):
    kind: Literal["fact"] = "fact"
    content: Text
    subject: Label | None = None
    category: Label | None = None
    confidence: Unit | None = None
    source: Label | None = None
    source_kind: SourceKind = SourceKind.USER_STATED
    source_episode_id: UUID | None = None
    # the message of the source episode it was learned from (its seq)
    source_seq: Count | None = None
    # kept by learn_fact; rejected as input (see MANAGED_FIELDS)
    confirmation_count: Count = 0
    last_confirmed_at: Timestamp | None = None
    supersedes_id: UUID | None = None
    superseded_by_id: UUID | None = None
    conflicts_with: list[UUID] = []
    # what it describes (facts/slots.py reads it from the content when not given)
    slot_subject: Label | None = None
    slot_attribute: Label | None = None
    slot_value: str | None = None
    slot_ended: bool = False
    # when it was said (default: when learned); until when it held (kept by learn_fact)
    valid_from: Timestamp | None = None
    valid_until: Timestamp | None = None
    # when a stated plan happens (read from the content, against valid_from)
    event_at: Timestamp | None = None


class EpisodeDetail(_Detail):
    kind: Literal["episode"] = "episode"
    state: EpisodeState = EpisodeState.CLOSED
    title: Label | None = None
    detail: LongText | None = None
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None
    participants: Labels = []
    outcome: Text | None = None
    lessons: Texts = []
    user_id: Label | None = None
    key_points: Texts = []
    topics: Labels = []
    # kept by the episode lifecycle; rejected as input (see MANAGED_FIELDS)
    facts_state: FactsState = FactsState.NOT_APPLICABLE
    message_count: Count = 0
    last_message_at: Timestamp | None = None
    storage: EpisodeStorage = EpisodeStorage.HOT  # kept by the maintenance jobs
    facts_extractor: FactsExtractor = FactsExtractor.NONE  # kept by close processing
    source_key: Label | None = None  # the imported session it holds (set by the import)

    @model_validator(mode="after")
    def _ends_after_start(self) -> EpisodeDetail:
        if self.started_at and self.ended_at and self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        return self


class ProcedureDetail(_Detail):
    kind: Literal["procedure"] = "procedure"
    name: Label
    goals: Texts = []
    core_patterns: Texts = []
    implementation_notes: Texts = []
    activation_count: Count = 0
    success_count: Count = 0
    failure_count: Count = 0
    effectiveness: Unit | None = None

    @model_validator(mode="after")
    def _outcomes_within_activations(self) -> ProcedureDetail:
        if self.success_count + self.failure_count > self.activation_count:
            raise ValueError("success_count + failure_count exceeds activation_count")
        return self


class CensorDetail(_Detail):
    kind: Literal["censor"] = "censor"
    trigger_pattern: Annotated[Text, AfterValidator(valid_trigger)]
    action: CensorAction
    reason: Text
    activation_count: Count = 0
    false_positive_count: Count = 0

    @model_validator(mode="after")
    def _false_positives_within_activations(self) -> CensorDetail:
        if self.false_positive_count > self.activation_count:
            raise ValueError("false_positive_count exceeds activation_count")
        return self


Detail = Annotated[
    DecisionDetail | FactDetail | EpisodeDetail | ProcedureDetail | CensorDetail,
    Field(discriminator="kind"),
]

DETAIL_MODELS: dict[Kind, type[_Detail]] = {
    Kind.DECISION: DecisionDetail,
    Kind.FACT: FactDetail,
    Kind.EPISODE: EpisodeDetail,
    Kind.PROCEDURE: ProcedureDetail,
    Kind.CENSOR: CensorDetail,
}


class CommonFields(BaseModel):
    """Fields every kind accepts; ``summary`` only for episodes (others use templates)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    importance: Unit = 0.5
    tags: Annotated[list[Tag], Field(max_length=MAX_TAGS)] = []
    summary: Text | None = None
    # whose it is (people/): person keys, sorted and once each; empty: the agent's
    people: Annotated[list[Person], Field(max_length=MAX_PEOPLE),
                      AfterValidator(lambda keys: sorted(set(keys)))] = []


COMMON_FIELDS = frozenset(CommonFields.model_fields)

# Detail fields the store maintains itself; callers cannot set them directly.
MANAGED_FIELDS: dict[Kind, frozenset[str]] = {
    Kind.FACT: frozenset({"confirmation_count", "last_confirmed_at", "supersedes_id",
                          "superseded_by_id", "conflicts_with", "valid_until"}),
    Kind.EPISODE: frozenset({"state", "facts_state", "message_count", "last_message_at",
                             "storage", "facts_extractor", "source_key"}),
}


def managed_problems(kind: Kind, fields: Mapping[str, Any], prefix: str = "") -> list[FieldProblem]:
    return [FieldProblem(f"{prefix}{name}", "maintained by the store; it cannot be set")
            for name in fields if name in MANAGED_FIELDS.get(kind, ())]


class NewMemory(BaseModel):
    """A validated request to create one memory."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    detail: Detail
    common: CommonFields


def parse_agent_id(agent_id: object) -> str:
    """Agent ids are non-empty printable text up to 128 characters."""
    if not isinstance(agent_id, str):
        raise InvalidInputError.single("agent_id", "must be a string")
    if not agent_id or not agent_id.strip():
        raise InvalidInputError.single("agent_id", "must not be empty")
    if len(agent_id) > MAX_AGENT_ID_CHARS:
        raise InvalidInputError.single(
            "agent_id", longer_than(MAX_AGENT_ID_CHARS, len(agent_id)))
    if not agent_id.isprintable():
        raise InvalidInputError.single("agent_id", "contains control characters")
    return agent_id


def parse_kind(kind: object, field: str = "kind") -> Kind:
    try:
        return Kind(str(kind))
    except ValueError:
        allowed = ", ".join(k.value for k in Kind)
        raise InvalidInputError.single(
            field, f"unknown kind; expected one of {allowed}") from None


def parse_new(kind: object, fields: Mapping[str, Any], prefix: str = "", *,
              allow_untitled: bool = False) -> NewMemory:
    """Validate one create request; every problem is reported, each with its field path."""
    parsed_kind = parse_kind(kind, f"{prefix}kind")
    if fields.get("user") is not None:  # one person's memory (people/): people=[user]
        if fields.get("people"):
            raise InvalidInputError.single(f"{prefix}user", "give user or people, not both")
        fields = {**{k: v for k, v in fields.items() if k != "user"}, "people": [fields["user"]]}
    elif "user" in fields:
        fields = {k: v for k, v in fields.items() if k != "user"}
    common_in = {k: v for k, v in fields.items() if k in COMMON_FIELDS}
    detail_in = {k: v for k, v in fields.items() if k not in COMMON_FIELDS}
    if "kind" in detail_in:
        raise InvalidInputError.single(f"{prefix}kind", "given twice")
    problems = managed_problems(parsed_kind, detail_in, prefix)
    common = _validate(CommonFields, common_in, prefix, problems)
    detail = _validate(DETAIL_MODELS[parsed_kind], detail_in, prefix, problems)
    if common is not None and common.summary is not None and parsed_kind is not Kind.EPISODE:
        problems.append(FieldProblem(
            f"{prefix}summary",
            f"{a_or_an(parsed_kind.value)} summary is computed from its fields; only episodes "
            "take one"))
    if (parsed_kind is Kind.EPISODE and isinstance(detail, EpisodeDetail) and common is not None
            and not allow_untitled and not (detail.title or detail.detail or common.summary)):
        problems.append(FieldProblem(f"{prefix}detail",
                                     "an episode needs a title, detail or summary"))
    _raise(problems)
    assert common is not None and detail is not None
    return NewMemory(kind=parsed_kind, detail=detail, common=common)  # type: ignore[arg-type]


def _validate(
    model: type[_M], data: Mapping[str, Any], prefix: str, problems: list[FieldProblem]
) -> _M | None:
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        problems.extend(problems_from(exc, prefix))
        return None


def problems_from(exc: ValidationError, prefix: str = "") -> list[FieldProblem]:
    """Turn pydantic's errors into field paths and reasons a caller can act on."""
    found = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"] if part != "kind" or len(err["loc"]) == 1)
        reason = reason_of(err)
        if not loc and reason.split(" ", 1)[0].isidentifier():
            loc = reason.split(" ", 1)[0]  # a whole-record check names its first field
        if err["type"] == "extra_forbidden":
            reason = "unknown field"
        found.append(FieldProblem(f"{prefix}{loc or 'value'}", reason))
    return found


def _raise(problems: list[FieldProblem]) -> None:
    if not problems:
        return
    if any(is_size_reason(p.reason) for p in problems):
        raise PayloadTooLargeError(problems)
    raise InvalidInputError(problems)


def validate_detail(kind: Kind, data: Mapping[str, Any]) -> _Detail:
    """Validate a whole detail record (used by update after merging the changes)."""
    problems: list[FieldProblem] = []
    detail = _validate(DETAIL_MODELS[kind], data, "", problems)
    _raise(problems)
    assert detail is not None
    return detail


def validate_common(data: Mapping[str, Any]) -> CommonFields:
    problems: list[FieldProblem] = []
    common = _validate(CommonFields, data, "", problems)
    _raise(problems)
    assert common is not None
    return common
