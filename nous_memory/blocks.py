"""Memory blocks the store injects into prompts, marked so they can be stripped again.

Anything the store itself put into a conversation (recalled memories, summaries) is
wrapped in ``<nous-memory ...>`` tags; episode close strips these before extraction so
recalled memories are never learned a second time from the transcript.  Only whole
blocks are removed: an opening marker with no closing one (a user can type one) loses
just the marker, never the text after it.
"""

from __future__ import annotations

import re

TAG = "nous-memory"
# only the exact form ``wrap`` writes, so a user typing "<nous-memory" loses nothing
# a block inside a JSON string (a tool's result, stored as it came) has its quotes escaped
_OPEN = rf'<{TAG} kind=\\?"[a-z_]+\\?">'
_MARKER = re.compile(rf"{_OPEN}|</{TAG}>")


def wrap(text: str, kind: str) -> str:
    """Mark ``text`` as injected by the store (``kind``: context, summary, ...)."""
    return f'<{TAG} kind="{kind}">\n{text}\n</{TAG}>'


def unwrap(text: str, kind: str) -> str:
    """The inside of a block made by ``wrap(..., kind)``; other text is returned as is."""
    opening, closing = f'<{TAG} kind="{kind}">\n', f"\n</{TAG}>"
    if text.startswith(opening) and text.endswith(closing):
        return text[len(opening):-len(closing)]
    return text


_OPENING = re.compile(_OPEN)
_CLOSING = f"</{TAG}>"


def strip(text: str) -> str:
    """Remove injected blocks; a stray opening or closing marker loses only itself.
    One pass: an opening marker with no closing one after it ends the search for blocks
    (a text of many stray markers costs no more than its length)."""
    if TAG not in text:
        return text.strip()
    kept: list[str] = []
    at = 0
    for opening in _OPENING.finditer(text):
        if opening.start() < at:
            continue  # inside a block already cut
        closing = text.find(_CLOSING, opening.end())
        if closing < 0:
            break  # no block closes after here: the rest loses only its markers
        kept.append(text[at:opening.start()])
        at = closing + len(_CLOSING)
    kept.append(text[at:])
    return _MARKER.sub("", "".join(kept)).strip()
