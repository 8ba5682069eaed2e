"""Memory blocks the store injects into prompts, marked so they can be stripped again.

Anything the store itself put into a conversation (recalled memories, summaries) is
wrapped in ``<nous-memory ...>`` tags; episode close strips these before extraction so
recalled memories are never learned a second time from the transcript.
"""

from __future__ import annotations

import re

TAG = "nous-memory"
# only the exact form ``wrap`` writes, so a user typing "<nous-memory" loses nothing
_OPEN = rf'<{TAG} kind="[a-z_]+">'
_BLOCK = re.compile(rf"{_OPEN}.*?</{TAG}>", re.S)
_UNCLOSED = re.compile(rf"{_OPEN}.*\Z", re.S)


def wrap(text: str, kind: str) -> str:
    """Mark ``text`` as injected by the store (``kind``: context, summary, ...)."""
    return f'<{TAG} kind="{kind}">\n{text}\n</{TAG}>'


def unwrap(text: str, kind: str) -> str:
    """The inside of a block made by ``wrap(..., kind)``; other text is returned as is."""
    opening, closing = f'<{TAG} kind="{kind}">\n', f"\n</{TAG}>"
    if text.startswith(opening) and text.endswith(closing):
        return text[len(opening):-len(closing)]
    return text


def strip(text: str) -> str:
    """Remove injected blocks, including a truncated one left open at the end."""
    cleaned = _UNCLOSED.sub("", _BLOCK.sub("", text))
    return cleaned.strip()
