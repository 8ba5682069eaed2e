"""LLM access: structured calls over any OpenAI-compatible endpoint, with usage records."""

from .client import LLMClient, LLMResult
from .errors import LLMError, LLMOutputError, LLMRequestError, LLMUnavailableError
from .schema import describe_schema, strict_json_schema
from .usage import (
    CallOutcome,
    CallRecorder,
    LLMCall,
    PostgresCallRecorder,
    UsageRow,
    usage_by_agent,
)

__all__ = [
    "CallOutcome",
    "CallRecorder",
    "LLMCall",
    "LLMClient",
    "LLMError",
    "LLMOutputError",
    "LLMRequestError",
    "LLMResult",
    "LLMUnavailableError",
    "PostgresCallRecorder",
    "UsageRow",
    "describe_schema",
    "strict_json_schema",
    "usage_by_agent",
]
