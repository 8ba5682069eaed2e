"""The enums of memory records: kinds, statuses and the states an episode goes through
(their own module, so the record models beside them stay readable)."""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    DECISION = "decision"
    FACT = "fact"
    EPISODE = "episode"
    PROCEDURE = "procedure"
    CENSOR = "censor"


class Status(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    DELETED = "deleted"


class DecisionOutcome(StrEnum):
    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    ABANDONED = "abandoned"


class CensorAction(StrEnum):
    WARN = "warn"
    BLOCK = "block"
    ABSOLUTE = "absolute"


class EpisodeState(StrEnum):
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


class SourceKind(StrEnum):
    """How a fact reached the store: said by the user, extracted by the LLM, inferred."""

    USER_STATED = "user_stated"
    EXTRACTED = "extracted"
    INFERRED = "inferred"


class FactsState(StrEnum):
    """Whether close processing extracted facts and decisions from an episode."""

    NOT_APPLICABLE = "not_applicable"  # a remembered record, not a live transcript
    PENDING = "pending"
    EXTRACTED = "extracted"
    NOT_EXTRACTED = "not_extracted"  # no LLM, or it failed: a later upgrade may retry


class FactsExtractor(StrEnum):
    """How an episode's facts were extracted (an LLM upgrade replaces ``rules``)."""

    NONE = "none"
    RULES = "rules"  # the rule extractor, at a close without an LLM
    LLM = "llm"


class EpisodeStorage(StrEnum):
    """Where an episode's detail and transcript live (the maintenance jobs move them)."""

    HOT = "hot"
    TRIMMED = "trimmed"  # detail (or transcript) beyond the hot head is in cold storage
    ARCHIVED = "archived"  # detail and transcript are in cold storage
    RESTORED = "restored"  # brought back on request; the jobs leave it hot
    EXPIRED = "expired"  # the retention policy deleted its cold detail


class SummarySource(StrEnum):
    TEMPLATE = "template"
    GIVEN = "given"
    RULE = "rule"
    LLM = "llm"
