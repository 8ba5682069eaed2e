"""Edit and delete messages of an OPEN episode without losing the raw text.

An edit keeps every earlier version in ``episode_messages.edits``; a delete is soft
(``deleted_at``).  Either one at or behind the watermark invalidates the summary chain
in the same transaction: the next pass rebuilds it from the raw messages.  Any change
bumps the state's version, so a fold computed from the old text cannot land.
"""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from ..db import Database
from ..errors import ConflictError, InvalidInputError, NotFoundError, longer_than
from ..memories.kinds import MAX_MESSAGE_CHARS, is_utf8
from ..tokens import count_tokens
from .results import MessageChange as MessageChange
from .storage import invalidate_in


def _check_seq(seq: object) -> int:
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < 2**31:
        raise InvalidInputError.single("seq", "must be an integer >= 0")
    return seq


def _check_content(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidInputError.single("content", "must be a string")
    if len(content) > MAX_MESSAGE_CHARS:
        raise InvalidInputError.single("content", longer_than(MAX_MESSAGE_CHARS, len(content)))
    if "\x00" in content:
        raise InvalidInputError.single("content", "contains a NUL character")
    if not is_utf8(content):
        raise InvalidInputError.single("content", "contains a lone UTF-16 surrogate, which is "
                                                  "not valid Unicode text")
    return content


async def change(db: Database, agent: str, episode: UUID, seq: object, *,
                 content: object = None, delete: bool = False) -> MessageChange:
    number = _check_seq(seq)
    text = None if delete else _check_content(content)
    tokens = count_tokens(text) if text is not None else 0
    async with db.transaction() as conn:
        row = await conn.fetchrow("episode_for_update", agent, episode)
        if row is None:
            raise NotFoundError("episode", episode)
        if row["state"] != "open":
            raise ConflictError(f"episode {episode} is {row['state']}; only messages of an "
                                "open episode can be edited or deleted")
        message = await conn.fetchrow("conv_message_for_update", agent, episode, number)
        if message is None or message["deleted_at"] is not None:
            raise NotFoundError("message", f"{episode}#{number}")
        if delete:
            at = await conn.fetchval("conv_message_delete", agent, episode, number)
        else:
            moment = datetime.now(UTC)
            earlier = [{"content": message["content"], "tokens": message["tokens"],
                        "edited_at": moment.isoformat()}]
            at = await conn.fetchval("conv_message_edit", agent, episode, number, text, tokens,
                                     earlier, moment)
        await conn.execute("conv_state_ensure", agent, episode)
        # Touch first: a fold in flight may hold the old text, so its compare-and-swap must
        # fail; and the row lock this takes means a fold that landed just before is seen
        # below (reading the watermark first could miss it and leave the old text folded).
        await conn.execute("conv_state_touch", agent, episode)
        state = await conn.fetchrow("conv_state_get", agent, episode)
        assert state is not None
        behind = number <= state["watermark_seq"]
        if behind:
            action = "deleted" if delete else "edited"
            await invalidate_in(conn, agent, episode,
                                f"message {number} {action} behind the watermark", None)
    return MessageChange(episode_id=episode, seq=number,
                         action="deleted" if delete else "edited", at=at,
                         invalidated=behind, versions=len(message["edits"] or []) + (
                             1 if delete else 2))
