"""Reading a completion and judging it against the caller's schema.

Compatible servers differ from OpenAI in small ways (no ``usage``, no ``refusal``,
JSON wrapped in a code fence), so replies are read defensively and validation errors
are rendered short enough to quote back to the model in the repair round.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ValidationError

from ..tokens import count_tokens
from .usage import estimate_prompt_tokens

T = TypeVar("T", bound=BaseModel)
Mode = Literal["json_schema", "json_object"]
Message = dict[str, str]

_FEEDBACK_LIMIT = 1500


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One answered HTTP attempt, not yet validated."""

    text: str | None
    refusal: str | None
    finish_reason: str | None
    model: str
    mode: Mode
    prompt_tokens: int
    completion_tokens: int
    tokens_estimated: bool
    latency_ms: int
    created_at: datetime


class InvalidOutput(Exception):
    """The reply is not a valid instance of the schema; the message says why."""


def read_reply(completion: Any, *, mode: Mode, model: str, sent: list[Message],
               latency_ms: int, created_at: datetime) -> Reply:
    """The first choice's text and the token usage (counted locally when not sent)."""
    choices = getattr(completion, "choices", None) or []
    choice = choices[0] if choices else None
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    text = text if isinstance(text, str) else None
    refusal = getattr(message, "refusal", None)
    usage = getattr(completion, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    answer = getattr(usage, "completion_tokens", None)
    estimated = not (isinstance(prompt, int) and isinstance(answer, int)
                     and prompt >= 0 and answer >= 0)
    served = getattr(completion, "model", None)
    return Reply(
        text=text, refusal=refusal if isinstance(refusal, str) else None,
        finish_reason=getattr(choice, "finish_reason", None),
        model=served if isinstance(served, str) and served else model, mode=mode,
        prompt_tokens=estimate_prompt_tokens(sent) if estimated else cast(int, prompt),
        completion_tokens=count_tokens(text or "") if estimated else cast(int, answer),
        tokens_estimated=estimated, latency_ms=latency_ms, created_at=created_at)


def validate(schema: type[T], reply: Reply) -> T:
    """The parsed value, or InvalidOutput naming each problem (field path: reason)."""
    if reply.refusal:
        raise InvalidOutput(f"the model refused: {reply.refusal}")
    cut = " (the reply was cut off at max_tokens)" if reply.finish_reason == "length" else ""
    text = unfenced(reply.text or "")
    if not text:
        raise InvalidOutput(f"the reply was empty{cut}")
    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors(include_url=False))
        raise InvalidOutput((problems + cut)[:_FEEDBACK_LIMIT]) from None


def unfenced(text: str) -> str:
    """Strip a Markdown code fence some models wrap around JSON despite instructions."""
    text = text.strip()
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
        body = text[3:-3]
        newline = body.find("\n")
        return (body[newline + 1:] if newline >= 0 else body).strip()
    return text
