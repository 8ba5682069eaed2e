"""What a log line may say of an error: never the words inside a caller's, the database's
or a model's message (they can be a memory's), while the package's own names and ids
stay readable."""

from __future__ import annotations

import asyncpg

from nous_memory.errors import (
    ConflictError,
    FieldProblem,
    InvalidInputError,
    NotFoundError,
    loggable,
)
from nous_memory.llm.errors import LLMOutputError, LLMUnavailableError

TEXT = "Ana keeps her spare key under the blue flowerpot"


def test_field_names_and_ids_are_kept_words_are_not() -> None:
    bad = InvalidInputError([FieldProblem("content", f"starts with {TEXT!r}"),
                             FieldProblem("confidence", "must be between 0 and 1")])
    assert loggable(bad) == "InvalidInputError (content, confidence)"
    missing = NotFoundError("episode", "6f1d2c3b-8e4a-4f5b-9c7d-1a2b3c4d5e6f")
    assert loggable(missing) == f"NotFoundError: {missing}"
    assert loggable(ConflictError(f"duplicate of {TEXT}")) == "ConflictError"
    driver = asyncpg.UniqueViolationError(f"Key (content)=({TEXT}) already exists")
    assert loggable(driver) == "UniqueViolationError"


def test_llm_errors_log_their_own_words_only() -> None:
    down = LLMUnavailableError(f"episode_close: m unavailable after 2 attempts; last: HTTP "
                               f"500: upstream echoes {TEXT}",
                               log_text="episode_close: m unavailable after 2 attempts; "
                                        "last: server_error")
    assert TEXT in str(down)  # the message recorded with the call keeps everything
    assert loggable(down) == ("LLMUnavailableError: episode_close: m unavailable after 2 "
                              "attempts; last: server_error")
    assert loggable(LLMOutputError(f"bad output: {TEXT}")) == "LLMOutputError"
