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


def strip(text: str) -> str:
    """Remove injected blocks, including a truncated one left open at the end."""
    cleaned = _UNCLOSED.sub("", _BLOCK.sub("", text))
    return cleaned.strip()
