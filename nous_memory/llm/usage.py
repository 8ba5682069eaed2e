"""What every LLM call cost: one immutable record per HTTP attempt, kept in Postgres.

Principle 3 of the design: cost per agent is a query.  Failed attempts are recorded
too (with zero tokens, since nothing was billed) so flaky endpoints show up in the
numbers instead of hiding behind a successful retry.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol

from ..db import Database
from ..tokens import count_tokens

ERROR_TEXT_LIMIT = 500


class CallOutcome(enum.StrEnum):
    """How one HTTP attempt ended; mirrored by the CHECK constraint on llm_calls.outcome."""

    OK = "ok"
    INVALID_OUTPUT = "invalid_output"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    TRANSPORT_ERROR = "transport_error"
    TIMEOUT = "timeout"
    REQUEST_ERROR = "request_error"

    @property
    def answered(self) -> bool:
        """True when the model produced a completion (and so consumed tokens)."""
        return self in (CallOutcome.OK, CallOutcome.INVALID_OUTPUT)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMCall:
    """One HTTP attempt: who asked, why, what it cost and how it ended."""

    agent_id: str
    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    tokens_estimated: bool
    latency_ms: int
    outcome: CallOutcome
    error: str | None
    created_at: datetime

    @property
    def tokens_source(self) -> str:
        """The llm_calls.tokens_source value: reported by the server, estimated, or none."""
        if self.tokens_estimated:
            return "estimated"
        return "reported" if self.outcome.answered else "none"


class CallRecorder(Protocol):
    """Where LLMCall records go.  Failures are logged by the client, never raised."""

    async def record(self, call: LLMCall) -> None: ...


class PostgresCallRecorder:
    """Appends each call to the ``llm_calls`` table (its own short autocommit statement)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, call: LLMCall) -> None:
        await self._db.execute(
            "insert_llm_call", call.agent_id, call.purpose, call.model, call.prompt_tokens,
            call.completion_tokens, call.tokens_source, call.latency_ms, call.outcome.value,
            call.error, call.created_at)


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRow:
    """Totals for one (purpose, model) of one agent."""

    purpose: str
    model: str
    calls: int
    ok_calls: int
    prompt_tokens: int
    completion_tokens: int
    estimated_calls: int
    latency_ms: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


async def usage_by_agent(db: Database, agent_id: str,
                         since: datetime | None = None) -> list[UsageRow]:
    """Per purpose and model: attempts, successes, tokens and summed latency."""
    rows = await db.fetch("llm_usage_by_agent", agent_id, since)
    return [UsageRow(purpose=r["purpose"], model=r["model"], calls=r["calls"],
                     ok_calls=r["ok_calls"], prompt_tokens=r["prompt_tokens"],
                     completion_tokens=r["completion_tokens"],
                     estimated_calls=r["estimated_calls"], latency_ms=r["latency_ms"])
            for r in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class DailyUsage:
    """Totals for one UTC day and purpose of one agent."""

    day: date
    purpose: str
    calls: int
    failed_calls: int
    prompt_tokens: int
    completion_tokens: int


async def usage_by_day(db: Database, agent_id: str, days: int = 30) -> list[DailyUsage]:
    """Per UTC day and purpose over the last ``days`` days, newest first."""
    rows = await db.fetch("llm_usage_by_day", agent_id, days)
    return [DailyUsage(day=r["day"], purpose=r["purpose"], calls=r["calls"],
                       failed_calls=r["failed_calls"], prompt_tokens=r["prompt_tokens"],
                       completion_tokens=r["completion_tokens"]) for r in rows]


def estimate_prompt_tokens(messages: Sequence[dict[str, str]]) -> int:
    """Exact cl100k count of the message texts (chat framing overhead not included)."""
    return sum(count_tokens(m.get("content") or "") for m in messages)


def short_error(text: str) -> str:
    """One line, bounded, for the error column and logs."""
    line = " ".join(text.split())
    return line if len(line) <= ERROR_TEXT_LIMIT else line[:ERROR_TEXT_LIMIT - 1] + "…"
