"""LLM failures, kept apart so a caller can pick its fallback by cause.

All are server-side trouble (``ServerError``): the caller's request to the store was
fine, the model endpoint was not.  Each class says whether trying later can help.
"""

from __future__ import annotations

from ..errors import ServerError


class LLMError(ServerError):
    """Root of every failure of an LLM call.  ``log_text``: the message without the
    endpoint's or the model's own words (they can quote the prompt), for log lines."""

    def __init__(self, message: str, *, log_text: str | None = None) -> None:
        super().__init__(message)
        self.log_text = log_text


class LLMUnavailableError(LLMError):
    """Transport errors, timeouts, 429 or 5xx on every attempt; a later retry may work."""


class LLMRequestError(LLMError):
    """The endpoint refused the request (4xx); repeating it unchanged will fail again."""


class LLMOutputError(LLMError):
    """The model answered twice with output that does not match the schema."""
