"""Structured LLM calls over any OpenAI-compatible endpoint, with retries we control.

One method, ``structured``: messages in, a validated pydantic object out.  The openai
client's own retries are off so that every HTTP attempt is paced, classified and
recorded here (tokens and latency per agent, principle 3 of the design).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, cast

from pydantic import BaseModel

from .. import telemetry
from ..errors import (
    ConfigurationError,
    DatabaseUnavailableError,
    FieldProblem,
    InvalidInputError,
)
from .backoff import Backoff
from .errors import LLMOutputError, LLMRequestError, LLMUnavailableError
from .failures import Failure, classify
from .replies import InvalidOutput, Message, Mode, Reply, T, read_reply, validate
from .schema import describe_schema, schema_name, strict_json_schema
from .usage import CallOutcome, CallRecorder, LLMCall, short_error

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMResult(Generic[T]):
    """A validated answer.  Tokens are summed over every answered attempt (a repaired
    reply costs both); ``attempts`` counts HTTP requests; ``latency_ms`` is wall time."""

    value: T
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    attempts: int
    mode: Mode


@dataclass(slots=True)
class _Call:
    """Mutable bookkeeping of one ``structured`` call across its HTTP attempts."""

    agent_id: str
    purpose: str
    started: float
    max_attempts: int = 1
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _SchemaRejected(Exception):
    """The server does not take ``json_schema`` response formats."""


class LLMClient:
    """A small, retrying, recording wrapper around ``openai.AsyncOpenAI``."""

    def __init__(self, *, base_url: str, model: str, max_attempts: int, timeout_s: float,
                 api_key: str | None = None, backoff_base_s: float = 0.5,
                 backoff_max_s: float = 8.0,
                 recorder: CallRecorder | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 rng: random.Random | None = None) -> None:
        if not base_url or not model:
            raise ConfigurationError("LLMClient needs a base_url and a model")
        if max_attempts < 1 or timeout_s <= 0 or backoff_base_s < 0 or backoff_max_s < 0:
            raise ConfigurationError(
                "LLMClient needs max_attempts >= 1, timeout_s > 0 and non-negative backoff")
        self._model = model
        self._max_attempts = max_attempts
        self._timeout_s = timeout_s
        self._backoff = Backoff(base_s=backoff_base_s, max_s=backoff_max_s)
        self._recorder = recorder
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._json_schema_supported = True
        # imported with the first client: a process without an LLM never pays for it
        import openai

        self._openai = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "unused",
                                          max_retries=0, timeout=timeout_s)
        self._call_errors: tuple[type[BaseException], ...] = (openai.OpenAIError, TimeoutError)

    @property
    def model(self) -> str:
        return self._model

    @property
    def supports_json_schema(self) -> bool:
        """False once the server rejected a json_schema response format."""
        return self._json_schema_supported

    async def aclose(self) -> None:
        await self._openai.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def structured(self, *, agent_id: str, purpose: str, messages: list[Message],
                         schema: type[T], max_tokens: int = 1024,
                         max_attempts: int | None = None, repair: bool = True) -> LLMResult[T]:
        """Ask for a JSON object matching ``schema``; one repair round on invalid output.

        ``max_attempts`` lowers the client's retry budget for this call (callers with a
        cheap fallback retry less); ``repair=False`` raises on the first invalid reply.
        Raises LLMUnavailableError (transient trouble outlasted the retries),
        LLMRequestError (the endpoint refused the request) or LLMOutputError.
        """
        _check_arguments(agent_id, purpose, messages, max_tokens)
        call = _Call(agent_id=agent_id, purpose=purpose, started=time.perf_counter(),
                     max_attempts=min(max_attempts or self._max_attempts, self._max_attempts))
        conversation = [dict(m) for m in messages]
        reply = await self._send(call, schema, conversation, max_tokens)
        try:
            value = validate(schema, reply)
        except InvalidOutput as first:
            await self._report(call, reply, CallOutcome.INVALID_OUTPUT, str(first))
            if not repair:
                said = f"{purpose}: {self._model} returned invalid {schema.__name__}"
                raise LLMOutputError(f"{said}: {short_error(str(first))}",
                                     log_text=said) from None
            conversation += [
                {"role": "assistant", "content": reply.text or ""},
                {"role": "user", "content": (
                    f"Your previous reply could not be used: {first}\n"
                    "Reply again with only the corrected JSON object.")},
            ]
            reply = await self._send(call, schema, conversation, max_tokens)
            try:
                value = validate(schema, reply)
            except InvalidOutput as second:
                await self._report(call, reply, CallOutcome.INVALID_OUTPUT, str(second))
                said = f"{purpose}: {self._model} returned invalid {schema.__name__} twice"
                raise LLMOutputError(f"{said}: {short_error(str(second))}",
                                     log_text=said) from None
        await self._report(call, reply, CallOutcome.OK, None)
        return LLMResult(value=value, model=reply.model, prompt_tokens=call.prompt_tokens,
                         completion_tokens=call.completion_tokens,
                         latency_ms=_ms_since(call.started), attempts=call.attempts,
                         mode=reply.mode)

    async def _send(self, call: _Call, schema: type[BaseModel], conversation: list[Message],
                    max_tokens: int) -> Reply:
        """One logical request with its own retry budget, in the best mode the server has."""
        while True:
            mode: Mode = "json_schema" if self._json_schema_supported else "json_object"
            if mode == "json_schema":
                sent = conversation
                response_format: dict[str, Any] = {"type": "json_schema", "json_schema": {
                    "name": schema_name(schema), "schema": strict_json_schema(schema),
                    "strict": True}}
            else:
                sent = _with_schema_message(conversation, describe_schema(schema))
                response_format = {"type": "json_object"}
            try:
                return await self._attempts(call, mode, sent, response_format, max_tokens)
            except _SchemaRejected:
                log.info("%s does not support json_schema output; using json_object",
                         self._model)
                self._json_schema_supported = False

    async def _attempts(self, call: _Call, mode: Mode, sent: list[Message],
                        response_format: dict[str, Any], max_tokens: int) -> Reply:
        last: Failure | None = None
        for attempt in range(1, call.max_attempts + 1):
            call.attempts += 1
            created_at = datetime.now(UTC)
            started = time.perf_counter()
            try:
                async with asyncio.timeout(self._timeout_s):
                    completion = await self._openai.chat.completions.create(
                        model=self._model, messages=cast(Any, sent),
                        response_format=cast(Any, response_format), max_tokens=max_tokens)
            except self._call_errors as exc:
                failure = classify(exc, mode)
                await self._record(LLMCall(
                    agent_id=call.agent_id, purpose=call.purpose, model=self._model,
                    prompt_tokens=0, completion_tokens=0, tokens_estimated=False,
                    latency_ms=_ms_since(started), outcome=failure.outcome,
                    error=failure.error, created_at=created_at))
                if failure.schema_rejected:
                    raise _SchemaRejected from exc
                if not failure.retryable:
                    raise LLMRequestError(
                        f"{call.purpose}: {failure.error}",
                        log_text=f"{call.purpose}: refused ({failure.outcome})") from exc
                last = failure
                if attempt < call.max_attempts:
                    await self._sleep(self._backoff.delay(
                        attempt, retry_after=failure.retry_after, rng=self._rng))
                continue
            return read_reply(completion, mode=mode, model=self._model, sent=sent,
                              latency_ms=_ms_since(started), created_at=created_at)
        assert last is not None
        said = f"{call.purpose}: {self._model} unavailable after {call.max_attempts} attempts"
        raise LLMUnavailableError(f"{said}; last: {last.error}",
                                  log_text=f"{said}; last: {last.outcome}")

    async def _report(self, call: _Call, reply: Reply, outcome: CallOutcome,
                      error: str | None) -> None:
        call.prompt_tokens += reply.prompt_tokens
        call.completion_tokens += reply.completion_tokens
        await self._record(LLMCall(
            agent_id=call.agent_id, purpose=call.purpose, model=self._model,
            prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
            tokens_estimated=reply.tokens_estimated, latency_ms=reply.latency_ms,
            outcome=outcome, error=None if error is None else short_error(error),
            created_at=reply.created_at))

    async def _record(self, call: LLMCall) -> None:
        """Bookkeeping must never cost the caller its answer: failures are only logged."""
        telemetry.llm_call(call.purpose, call.model, call.outcome.value, call.prompt_tokens,
                           call.completion_tokens, call.latency_ms)
        if self._recorder is None:
            return
        try:
            await self._recorder.record(call)
        except DatabaseUnavailableError:  # the outage is logged once, where it starts
            log.debug("could not record LLM call for agent %s (%s): database unavailable",
                      call.agent_id, call.purpose)
        except Exception:
            log.warning("could not record LLM call for agent %s (%s)", call.agent_id,
                        call.purpose, exc_info=True)


def _check_arguments(agent_id: str, purpose: str, messages: list[Message],
                     max_tokens: int) -> None:
    problems = []
    if not agent_id.strip():
        problems.append(FieldProblem("agent_id", "must not be empty"))
    if not purpose.strip():
        problems.append(FieldProblem("purpose", "must not be empty"))
    if not messages:
        problems.append(FieldProblem("messages", "must not be empty"))
    for i, message in enumerate(messages):
        if not isinstance(message.get("role"), str) or not isinstance(
                message.get("content"), str):
            problems.append(FieldProblem(f"messages[{i}]", "needs string role and content"))
    if max_tokens < 1:
        problems.append(FieldProblem("max_tokens", "must be at least 1"))
    if problems:
        raise InvalidInputError(problems)


def _with_schema_message(conversation: list[Message], description: str) -> list[Message]:
    """The schema as a system message placed after the caller's leading system messages."""
    at = 0
    while at < len(conversation) and conversation[at].get("role") == "system":
        at += 1
    return [*conversation[:at], {"role": "system", "content": description},
            *conversation[at:]]


def _ms_since(started: float) -> int:
    return max(round((time.perf_counter() - started) * 1000), 0)
